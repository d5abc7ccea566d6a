"""A user cannot change a job's size or limits while the daemon sizes it (job_submit.lua's
slurm_job_modify).

The daemon reads a held job's node range, time limit, partition, QOS and account, checks
them against the limits, then sets NumNodes and TimeLimit as an admin, and slurmctld does
not check admin-set limits again. A change by the job's user landing between that read and
that update (a tighter QOS, another partition, a narrower range) would be sized past the
new limits or outside the new range; the hook refuses such changes while the job is held
for sizing. No daemon runs here: a fresh heartbeat (``daemon_heartbeat``) makes the hook
hold the job and nothing releases it, so the window stays open for the test.

Each change is also made to a job its user released from the hold (priority no longer 0,
the marker still in the admin comment): there it passes, so what refuses it is the hold.
"""

from __future__ import annotations

import pytest

from .job_submit_harness import MARKER, Heartbeat, held
from .testbed import SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

#: scontrol's message for Slurm's ESLURM_TRANSITION_STATE_NO_UPDATE, the hook's answer.
REFUSED = "can not be altered now"
#: Fields the tests compare before and after a refused change.
FIELDS = (
    "NumNodes", "TimeLimit", "Partition", "QOS", "Account", "Priority", "AdminComment",
    "Nice", "MinCPUsNode", "MinMemoryNode",
)  # fmt: skip
#: Changes an ordinary user may make to a pending job of theirs ({account}: its own). A Nice
#: made a held job runnable on 22.05; the tasks, CPUs and memory are what a node must give.
CHANGES = (
    "NumNodes=1-1",
    "NumNodes=2-3",
    "TimeLimit=5",
    "Partition=batch",
    "QOS=normal",
    "Account={account}",
    "Nice=10",
    "CPUsPerTask=2",
    "MinCPUsNode=2",
    "MinMemoryNode=100",
    "MinMemoryCPU=50",
)


def held_job(submit_job: SubmitJob, slurm: SlurmCLI) -> tuple[int, dict[str, str]]:
    """A moldable job of the unprivileged user, held and marked by the hook, pending for an
    hour (its begin time) so it stays put; and its fields."""
    job = submit_job(
        "--nodes=1-3", "--time=30", "--begin=now+3600", wrap="true", as_user=slurm.test_user
    )
    is_held, fields = held(slurm, job)
    assert is_held, fields
    assert fields["Priority"] == "0"
    assert MARKER in fields["AdminComment"].split()
    return job, fields


def update_as_user(slurm: SlurmCLI, job: int, change: str) -> tuple[int, str]:
    proc = slurm.run(
        "scontrol", "update", f"JobId={job}", change, check=False, as_user=slurm.test_user
    )
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("change", CHANGES)
def test_the_user_cannot_change_size_or_limits_while_the_job_is_held(
    change: str, slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    job, before = held_job(submit_job, slurm)
    code, err = update_as_user(slurm, job, change.format(account=before["Account"]))
    assert code != 0
    assert REFUSED in err
    after = slurm.show_job(job)
    assert {k: after[k] for k in FIELDS} == {k: before[k] for k in FIELDS}


@pytest.mark.parametrize("change", CHANGES)
def test_the_same_change_passes_once_the_user_released_the_job(
    change: str, slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    job, before = held_job(submit_job, slurm)
    slurm.run("scontrol", "release", str(job), as_user=slurm.test_user)
    released = slurm.show_job(job)
    assert released["Priority"] != "0"
    assert MARKER in released["AdminComment"].split()
    code, err = update_as_user(slurm, job, change.format(account=before["Account"]))
    assert (code, err.strip()) == (0, "")


def test_other_changes_and_the_daemons_own_pass_while_the_job_is_held(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    """A rename by the user passes, and so does root's resize and time limit (the daemon's
    own update: it runs as root or SlurmUser, never as the job's user)."""
    job, _ = held_job(submit_job, slurm)
    assert update_as_user(slurm, job, "JobName=renamed-while-held") == (0, "")
    slurm.run("scontrol", "update", f"JobId={job}", "NumNodes=2-2", "TimeLimit=20")
    is_held, after = held(slurm, job)
    assert is_held
    assert (after["JobName"], after["NumNodes"], after["TimeLimit"]) == (
        "renamed-while-held",
        "2-2",
        "00:20:00",
    )
