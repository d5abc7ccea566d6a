"""job_submit.lua and the daemon's modes file: advise jobs are left as submitted (one spool
line with the range), enforce jobs are held, resolved as policies/mode.py resolves them.

No daemon runs here: the test writes the heartbeat and the modes file as the daemon would
(plugin/daemon/modes.py), and the `daemon_heartbeat` fixture removes both afterwards.
"""

from __future__ import annotations

import os

import pytest

from .job_submit_harness import Heartbeat, held, untouched
from .testbed import SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration


def _advise_lines(heartbeat: Heartbeat) -> list[list[str]]:
    text = heartbeat.spool.read_text() if heartbeat.spool.is_file() else ""
    return [line.split() for line in text.splitlines() if line.startswith("advise ")]


def test_an_advise_job_is_left_alone_with_its_range_in_the_spool(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    daemon_heartbeat.set_modes("# comment\ndefault advise\n")
    before = _advise_lines(daemon_heartbeat)
    held_before = daemon_heartbeat.spooled()
    job = submit_job("--nodes=2-6", "--time=7", wrap="sleep 1")
    assert untouched(slurm, job)
    fields = slurm.show_job(job)
    assert fields.get("AdminComment", "") in ("", "(null)")
    lines = _advise_lines(daemon_heartbeat)
    assert len(lines) == len(before) + 1
    word, _, uid, low, high, tasks, per_node = lines[-1]
    assert (word, uid, low, high) == ("advise", str(os.getuid()), "2", "6")
    assert (tasks, per_node) == ("0", "0")  # not set
    submit_job("--nodes=2-6", "--ntasks=12", "--ntasks-per-node=3", wrap="sleep 1")
    assert _advise_lines(daemon_heartbeat)[-1][5:] == ["12", "3"]
    assert daemon_heartbeat.spooled() == held_before  # no "held" line


def test_a_rigid_or_opted_out_job_gets_no_advise_line(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    daemon_heartbeat.set_modes("default advise\n")
    before = len(_advise_lines(daemon_heartbeat))
    submit_job("--nodes=2", wrap="sleep 1")
    submit_job("--nodes=2-6", "--comment=adaptalloc:v1 resize=no", wrap="sleep 1")
    assert len(_advise_lines(daemon_heartbeat)) == before


def test_a_partition_line_enforces_that_partition_only(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    daemon_heartbeat.set_modes("default advise\npartition batch enforce\n")
    in_batch = submit_job("--nodes=2-6", "--partition=batch", wrap="sleep 1")
    in_debug = submit_job("--nodes=2-6", wrap="sleep 1")  # the default partition
    listing_both = submit_job("--nodes=2-6", "--partition=batch,debug", wrap="sleep 1")
    assert held(slurm, in_batch)[0]
    assert untouched(slurm, in_debug)
    assert untouched(slurm, listing_both)  # enforced only when every listed one is


def test_the_default_partition_and_account_are_resolved_as_slurm_will(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    # root's default account is "root"; debug is the default partition.
    daemon_heartbeat.set_modes("default advise\npartition debug enforce\naccount root advise\n")
    assert untouched(slurm, submit_job("--nodes=2-6", wrap="sleep 1"))  # the account wins
    daemon_heartbeat.set_modes("default enforce\naccount aausers advise\n")
    assert held(slurm, submit_job("--nodes=2-6", wrap="sleep 1"))[0]
    assert untouched(slurm, submit_job("--nodes=2-6", "--account=aausers", wrap="sleep 1"))


@pytest.mark.parametrize("text", ["", "default\n", "default maybe\n", "partition debug enforce\n"])
def test_a_modes_file_without_a_readable_default_holds_nothing(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, text: str
) -> None:
    daemon_heartbeat.set_modes(text)
    job = submit_job("--nodes=2-6", "--partition=batch", wrap="sleep 1")
    assert untouched(slurm, job)


def test_without_a_modes_file_the_hook_enforces_as_before(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    daemon_heartbeat.set_modes(None)
    assert held(slurm, submit_job("--nodes=2-6", wrap="sleep 1"))[0]
