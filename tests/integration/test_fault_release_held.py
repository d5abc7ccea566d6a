"""Fault matrix: ``adaptalloc daemon --release-held`` beside a live daemon, after a
crash between a job's record and its release, with a broken configuration (systemd's
ExecStopPost), and as the orphan timer after a SIGKILL that nobody restarts.

`--release-held` takes the state directory's lock: beside a live daemon it refuses (or, with
``--if-orphaned``, does nothing), so two processes never work on the same held jobs; a
daemon killed with SIGKILL loses the lock with its life, so the orphan timer
(deploy/systemd/adaptalloc-orphans.timer) releases what it left held.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .daemon_harness import (
    DaemonProcess,
    held,
    job_fields,
    journal_kept_before_release,
)
from .fault_harness import (
    assert_within_range,
    held_jobs,
    log_offset,
    releases_logged,
    wait_released,
)
from .testbed import LocalCluster, SlurmCLI, SubmitJob, adaptalloc

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
#: The orphan timer's period (deploy/systemd/adaptalloc-orphans.timer, OnUnitActiveSec).
TIMER_PERIOD_S = 30.0


def release_held(daemon: DaemonProcess, cwd: Path, *extra: str) -> Any:
    return adaptalloc(
        "daemon", "--release-held", "--state-dir", str(daemon.state_dir), *extra, cwd=cwd
    )


def hold_then_kill(daemon: DaemonProcess, submit: Callable[[], int], count: int) -> list[int]:
    """Jobs held by a frozen daemon, which is then killed (SIGKILL: no teardown, no restart)."""
    daemon.signal(signal.SIGSTOP)
    jobs = [submit() for _ in range(count)]
    daemon.kill()
    return jobs


def test_release_held_beside_a_live_daemon_refuses_and_touches_nothing(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
) -> None:
    """Before the fix it took no lock and released the job the live daemon was deciding."""
    since = log_offset(local_cluster)
    daemon = daemon_factory().start()
    daemon.signal(signal.SIGSTOP)  # mid-work, as a busy daemon would be
    try:
        job = submit_job("--nodes=1-3", "--comment=adaptalloc:v1 app=it-rh", wrap="true")
        assert held(job_fields(slurm, job))
        refused = release_held(daemon, tmp_path)
        skipped = release_held(daemon, tmp_path, "--if-orphaned")
        assert held(job_fields(slurm, job))
    finally:
        daemon.signal(signal.SIGCONT)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("adaptalloc: error: another adaptalloc daemon")
    assert "stop it first" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert skipped.returncode == 0, skipped.stderr
    assert "nothing released" in skipped.stdout
    decision = daemon.wait_decision(job)
    assert decision["status"] == "released"
    assert decision["fail_open"] is None  # the daemon's decision, not an admin's release
    assert releases_logged(local_cluster, since)[job] == 1


def test_release_held_finishes_jobs_between_their_record_and_their_release(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
) -> None:
    """A crash after the record replaced the held marker, before the release: before the fix
    --release-held looked for the marker only and released none of them ("released 0")."""
    daemon = daemon_factory().start()
    jobs = hold_then_kill(
        daemon,
        lambda: submit_job("--nodes=1-2", "--comment=adaptalloc:v1 app=it-window", wrap="true"),
        3,
    )
    reason = "journaled by a daemon killed before the release"
    journal_kept_before_release(slurm, jobs, daemon.state_dir, "it-window", reason)
    daemon.heartbeat.unlink(missing_ok=True)
    since = log_offset(local_cluster)
    began = time.monotonic()
    done = release_held(daemon, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "released 3 held jobs as submitted"
    wait_released(slurm, jobs, began, "--release-held after a crash between record and release")
    released = releases_logged(local_cluster, since)
    for job in jobs:
        assert released[job] == 1
        assert_within_range(slurm, job, 1, 2, None)
    assert not (daemon.state_dir / "inflight.json").exists()


@pytest.mark.parametrize("broken", ["config", "policy"])
def test_exec_stop_post_release_held_with_a_broken_file_still_releases(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
    broken: str,
) -> None:
    """The unit's ExecStopPost (``--release-held``) after a crash, with the configuration or
    the policy file it names broken: before the fix it exited 1 and released nothing."""
    daemon = daemon_factory().start()
    jobs = hold_then_kill(
        daemon,
        lambda: submit_job(
            "--nodes=2-4", "--time=10", "--comment=adaptalloc:v1 app=it-esp", wrap="true"
        ),
        2,
    )
    daemon.heartbeat.unlink(missing_ok=True)
    config = tmp_path / "broken.toml"
    if broken == "config":
        config.write_text("[daemon\nstate_dir = \n")
    else:
        policy = tmp_path / "broken-policy.toml"
        policy.write_text("efficiency_threshold = 7 = 8\n")
        config.write_text(f'[daemon]\npolicy_file = "{policy}"\n')
    since = log_offset(local_cluster)
    began = time.monotonic()
    done = release_held(daemon, tmp_path, "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "released 2 held jobs as submitted"
    wait_released(slurm, jobs, began, f"ExecStopPost --release-held, broken {broken}")
    released = releases_logged(local_cluster, since)
    for job in jobs:
        assert released[job] == 1
        fields = slurm.show_job(job)
        assert fields["NumNodes"] == "2-4" or fields["JobState"] != "PENDING"
        assert_within_range(slurm, job, 2, 4, 10)
    if broken == "config":
        assert "release_held_config" in done.stderr


def test_sigkill_with_no_restart_the_orphan_timer_releases_what_it_left_held(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
) -> None:
    """Nothing restarts the daemon: its heartbeat goes stale (the hook stops holding) and the
    timer's ``--release-held --if-orphaned`` releases the held jobs on its next run."""
    since = log_offset(local_cluster)
    daemon = daemon_factory().start()
    killed_at = time.monotonic()
    jobs = hold_then_kill(
        daemon,
        lambda: submit_job(
            "--nodes=1-3", "--time=10", "--comment=adaptalloc:v1 app=it-orphan", wrap="true"
        ),
        3,
    )
    assert held_jobs(slurm, jobs) == jobs
    done = release_held(daemon, tmp_path, "--if-orphaned")  # the timer's next run
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "released 3 held jobs as submitted"
    took = wait_released(slurm, jobs, killed_at, "SIGKILL, no restart: orphan timer run")
    print(f"worst case with the timer: {took + TIMER_PERIOD_S:.1f} s (one period later)")
    released = releases_logged(local_cluster, since)
    for job in jobs:
        assert released[job] == 1
        assert_within_range(slurm, job, 1, 3, 10)
        assert "adaptalloc:v1:released reason=released_by_admin" in str(
            job_fields(slurm, job).get("admin_comment") or ""
        ) or not job_fields(slurm, job)
