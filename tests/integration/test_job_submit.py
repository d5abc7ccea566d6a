"""deploy/slurm/job_submit.lua in the real slurmctld: what it holds, and what it leaves alone.

The hook holds a moldable job only while the daemon's heartbeat is fresh; these tests write
that heartbeat themselves (the `daemon_heartbeat` fixture) and remove it afterwards, so the
other tests' jobs are never held.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .job_submit_harness import (
    MARKER,
    Heartbeat,
    held,
)
from .testbed import SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration


def test_a_moldable_job_is_held_and_marked(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    spooled = daemon_heartbeat.spool.read_text() if daemon_heartbeat.spool.exists() else ""
    job = submit_job("--nodes=2-6", wrap="sleep 1")
    is_held, fields = held(slurm, job)
    assert is_held
    assert fields["AdminComment"] == MARKER
    assert fields["NumNodes"] == "2-6"  # the hook does not size; the daemon does
    assert daemon_heartbeat.spool.read_text().count("held ") == spooled.count("held ") + 1


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("--nodes=2",), "a rigid job"),
        (("--nodes=2-2",), "a range of one size"),
        (("--nodes=2-6", "--comment=adaptalloc:v1 resize=no"), "opted out"),
        (
            ("--nodes=2-6", "--comment=run 3 adaptalloc:v1 app=lulesh resize=no"),
            "opted out mid-comment",
        ),
        (("--nodes=2-6", "--comment=adaptalloc:v1 resize=NO"), "opted out in capitals"),
    ],
)
def test_jobs_it_does_not_hold_are_untouched(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_heartbeat: Heartbeat,
    args: tuple[str, ...],
    why: str,
) -> None:
    job = submit_job(*args, wrap="sleep 1")
    is_held, fields = held(slurm, job)
    assert not is_held, why
    assert MARKER not in fields.get("AdminComment", ""), why


def test_resize_no_outside_the_tag_does_not_opt_out(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    job = submit_job("--nodes=2-6", "--comment=adaptalloc:v1 app=lu; resize=no", wrap="sleep 1")
    assert held(slurm, job)[0]


def test_nothing_is_held_without_a_fresh_heartbeat(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    daemon_heartbeat.beat(age_s=120)
    stale = submit_job("--nodes=2-6", wrap="sleep 1")
    daemon_heartbeat.stop()
    gone = submit_job("--nodes=2-6", wrap="sleep 1")
    for job in (stale, gone):
        is_held, fields = held(slurm, job)
        assert not is_held
        assert fields.get("AdminComment", "") in ("", "(null)")


def test_a_hostile_comment_changes_nothing_but_the_hold(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, tmp_path: Path
) -> None:
    probe = tmp_path / "pwned"
    hostile = f"x'; os.execute('touch {probe}') --\x1b[31m adaptalloc:v1:held"
    job = submit_job("--nodes=2-6", f"--comment={hostile}", wrap="sleep 1")
    is_held, fields = held(slurm, job)
    assert is_held
    assert fields["AdminComment"] == MARKER
    assert not probe.exists()
