"""Moldable jobs that job_submit.lua must leave alone, submitted by the
unprivileged user as a user would.

A hold breaks an immediate allocation (``salloc -I``/``srun -I`` fail when they cannot
start in time, and 22.05 tells the hook of ``-I`` and ``-I1`` only), so no interactive
allocation is held, and the
daemon sizes a job from the idle nodes of its one partition, which does not describe what a
job may run on when it names a reservation, features, nodes to use or avoid, contiguous
nodes, or is one component of a heterogeneous job. Each of those passes
the hook untouched, while the heartbeat is fresh (the `daemon_heartbeat` fixture) and an
otherwise equal job would be held.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .job_submit_harness import (
    MARKER,
    Heartbeat,
    held,
    untouched,
)
from .testbed import SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

FEATURE = "aatestfeat"
FEATURE_NODES = "node[1-4]"


def test_the_control_job_is_held(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    """The same job as below without the option that makes it unholdable: held."""
    job = submit_job("--nodes=1-2", wrap="sleep 1", as_user=slurm.test_user)
    assert held(slurm, job)[0]


@pytest.mark.parametrize("immediate", [("--immediate",), ("--immediate=5",), ()])
@pytest.mark.parametrize("command", ["salloc", "srun"])
def test_an_interactive_allocation_with_a_node_range_is_granted(
    slurm: SlurmCLI, daemon_heartbeat: Heartbeat, command: str, immediate: tuple[str, ...]
) -> None:
    """Held, each would fail or hang: -I at once ("Job dependency problem"), -I5 after 5 s
    (salloc's own deadline, which slurmctld never sees), without -I for as long as the
    daemon takes (here no daemon runs: the heartbeat is a fixture's)."""
    proc = slurm.run(
        command,
        *immediate,
        "--nodes=1-2",
        "--chdir=/tmp",
        f"--job-name=adaptalloc-test-immediate-{command}",
        "/bin/true",
        check=False,
        as_user=slurm.test_user,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def reservation(slurm: SlurmCLI) -> Iterator[str]:
    """A reservation of two nodes for the test user, from now on; deleted at teardown."""
    name = f"adaptalloc_test_{os.getpid()}"
    slurm.run(
        "scontrol",
        "create",
        "reservation",
        f"ReservationName={name}",
        f"Users={slurm.test_user}",
        "Nodes=node[7-8]",
        "StartTime=now",
        "Duration=10",
    )
    try:
        yield name
    finally:
        slurm.run("scancel", f"--reservation={name}", check=False)
        slurm.wait_for(
            f"reservation {name} to be deleted",
            lambda: (
                slurm.run("scontrol", "delete", f"ReservationName={name}", check=False).returncode
                == 0
            ),
        )


def test_a_job_in_a_reservation_is_untouched(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, reservation: str
) -> None:
    job = submit_job(
        "--nodes=1-2", f"--reservation={reservation}", wrap="sleep 1", as_user=slurm.test_user
    )
    assert untouched(slurm, job)


@pytest.fixture
def node_feature(slurm: SlurmCLI) -> Iterator[str]:
    """A feature on half the nodes (set at run time: slurm.conf stays as it is); the
    features slurm.conf gave them (node1-4: std) are put back after."""
    shown = slurm.run("scontrol", "show", "node", "-o", "node1").stdout
    before = next(
        (w.split("=", 1)[1] for w in shown.split() if w.startswith("AvailableFeatures=")), ""
    )
    before = "" if before == "(null)" else before
    slurm.run(
        "scontrol",
        "update",
        f"NodeName={FEATURE_NODES}",
        f"AvailableFeatures={FEATURE}",
        f"ActiveFeatures={FEATURE}",
    )
    try:
        yield FEATURE
    finally:
        slurm.run(
            "scontrol",
            "update",
            f"NodeName={FEATURE_NODES}",
            f"AvailableFeatures={before}",
            f"ActiveFeatures={before}",
            check=False,
        )


def test_a_job_with_a_constraint_is_untouched(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, node_feature: str
) -> None:
    job = submit_job(
        "--nodes=1-2", f"--constraint={node_feature}", wrap="sleep 1", as_user=slurm.test_user
    )
    assert untouched(slurm, job)


@pytest.mark.parametrize(
    "option",
    [
        "--nodelist=node1",
        "--exclude=node8",
        "--contiguous",
    ],
)
def test_a_job_restricted_beyond_its_partition_is_untouched(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, option: str
) -> None:
    job = submit_job("--nodes=1-2", option, wrap="sleep 1", as_user=slurm.test_user)
    assert untouched(slurm, job), option


def components(slurm: SlurmCLI, leader: int) -> list[dict[str, str]]:
    """``scontrol show job -o LEADER``: one line, one dict, per hetjob component."""
    out = slurm.run("scontrol", "show", "job", "-o", str(leader)).stdout
    found = []
    for line in out.splitlines():
        fields = dict(word.partition("=")[::2] for word in line.split() if "=" in word)
        if fields:
            found.append(fields)
    return found


def test_no_component_of_a_heterogeneous_job_is_held(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    leader = submit_job(
        "--output=/dev/null",
        "--nodes=1-2",
        ":",
        "--nodes=1-2",
        "--output=/dev/null",
        "--chdir=/tmp",
        wrap="sleep 1",
        as_user=slurm.test_user,
    )
    parts = components(slurm, leader)
    assert [p["HetJobOffset"] for p in parts] == ["0", "1"]
    for part in parts:
        assert not part["Reason"].startswith("JobHeld"), part
        assert MARKER not in part.get("AdminComment", ""), part
