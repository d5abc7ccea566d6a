"""An ordinary user cannot turn the daemon against an admin's hold.

Every job here is submitted by the testbed's unprivileged user. A job counts as the
daemon's only under the hold job_submit.lua makes (Reason=JobHeldUser) with the held marker
read field-exactly; an admin's hold (JobHeldAdmin) is never released, whatever the job's
name says and whatever its user did to the hold before.

"Left alone" is shown by ordering, not by waiting: a control job is submitted after the
admin's hold and the test waits for the daemon's decision on it, so at least one full
sweep saw the admin-held job.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .daemon_harness import (
    DaemonProcess,
    job_fields,
)
from .testbed import LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
FAKE_NAME = "x AdminComment=adaptalloc:v1:held Comment=y"
ADMIN_NOTE = "on hold until the user answers (helpdesk 42)"


def admin_hold(slurm: SlurmCLI, job_id: int, note: str = ADMIN_NOTE) -> None:
    slurm.run("scontrol", "hold", str(job_id))
    slurm.run("scontrol", "update", f"JobId={job_id}", f"AdminComment={note}")
    fields = slurm.show_job(job_id)
    assert fields["Reason"] == "JobHeldAdmin"
    assert fields["Priority"] == "0"


def settled(daemon: DaemonProcess, submit_job: SubmitJob, slurm: SlurmCLI) -> None:
    """Wait until the daemon has swept the queue at least once from now on."""
    control = submit_job("--nodes=1-2", wrap="true", as_user=slurm.test_user)
    daemon.wait_decision(control)


def assert_untouched(daemon: DaemonProcess, slurm: SlurmCLI, job_id: int, comment: str) -> None:
    assert daemon.decision(job_id) is None
    job = job_fields(slurm, job_id)
    assert job["job_state"] == "PENDING"
    assert job["priority"] == 0
    assert job["state_reason"] == "JobHeldAdmin"
    assert job["admin_comment"] == comment


def test_a_fake_marker_in_the_name_does_not_release_an_admin_hold(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    daemon = daemon_factory().start()
    # Rigid, so job_submit.lua leaves it alone; pending for an hour so it waits for the admin.
    job = submit_job(
        "--nodes=1",
        "--begin=now+3600",
        f"--job-name={FAKE_NAME}",
        wrap="true",
        as_user=slurm.test_user,
    )
    admin_hold(slurm, job)
    settled(daemon, submit_job, slurm)
    assert_untouched(daemon, slurm, job, ADMIN_NOTE)


def test_a_hold_the_user_released_and_an_admin_renewed_is_not_the_daemons(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
) -> None:
    daemon = daemon_factory()
    # job_submit.lua holds while the heartbeat is fresh: the daemon is not running yet, so
    # the user has time to release the job themselves.
    daemon.state_dir.mkdir(parents=True, exist_ok=True)
    daemon.heartbeat.write_text(f"{int(time.time())}\n")
    job = submit_job("--nodes=1-3", "--begin=now+3600", wrap="true", as_user=slurm.test_user)
    before = slurm.show_job(job)
    assert (before["Priority"], before["Reason"]) == ("0", "JobHeldUser")
    assert before["AdminComment"] == "adaptalloc:v1:held"
    slurm.run("scontrol", "release", str(job), as_user=slurm.test_user)
    assert slurm.show_job(job)["Priority"] != "0"
    # The marker stays; the admin now holds the job and keeps the marker in front of a note.
    marked = f"adaptalloc:v1:held {ADMIN_NOTE}"
    admin_hold(slurm, job, marked)
    daemon.start()
    settled(daemon, submit_job, slurm)
    assert_untouched(daemon, slurm, job, marked)


def test_the_daemons_own_hold_still_works_for_a_hostile_name(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    """The field-exact read sends a name holding the marker to the slow, exact path: the
    job is still decided and released within its range, its name unchanged."""
    daemon = daemon_factory().start()
    job = submit_job("--nodes=1-3", f"--job-name={FAKE_NAME}", wrap="true", as_user=slurm.test_user)
    decision = daemon.wait_decision(job)
    assert decision["status"] == "released"
    assert decision["nodes"] in (None, 1, 2, 3)
    fields: dict[str, Any] = job_fields(slurm, job)
    assert fields.get("name", FAKE_NAME) == FAKE_NAME
    assert fields.get("priority", 1) != 0
