"""Fault matrix, Slurm: slurmctld stopped and restarted while jobs are held, and
``squeue``/``scontrol`` hanging until the daemon's timeout.

The hang is a door in front of the real Slurm: the daemon's PATH starts with a directory of
wrappers that ``exec`` the real command, or ``exec sleep`` while the test's flag file for
that command exists (one process either way, as a hung Slurm client is). The answers are
always the real Slurm's.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .daemon_harness import (
    DaemonProcess,
    held,
    job_fields,
)
from .fault_harness import (
    as_env_daemon,
    assert_within_range,
    decisions_of,
    log_offset,
    releases_logged,
    wait_released,
)
from .testbed import LocalCluster, SlurmCLI, SubmitJob, start_testbed

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
#: The daemon's Slurm timeout in these tests, and the health bound it implies.
SLURM_TIMEOUT_S = 3.0
UNHEALTHY_AFTER_S = 8.0
#: A stuck sweep stops the heartbeat within unhealthy_after_s plus one timed-out command.
HEARTBEAT_GONE_S = UNHEALTHY_AFTER_S + 2 * SLURM_TIMEOUT_S + 2.0
WRAPPED = ("squeue", "scontrol", "sinfo", "sacctmgr")


@pytest.fixture
def doors(tmp_path: Path) -> Iterator[Path]:
    """A directory of wrappers for Slurm's commands; touch ``hang-<command>`` in it to make
    that command hang. Every flag is removed at teardown."""
    wrappers = tmp_path / "slurm-doors"
    wrappers.mkdir()
    for name in WRAPPED:
        real = shutil.which(name)
        assert real is not None
        script = wrappers / name
        script.write_text(
            "#!/bin/sh\n"
            f'if [ -e "{wrappers}/hang-{name}" ]; then exec sleep 3600; fi\n'
            f'exec {real} "$@"\n'
        )
        script.chmod(0o755)
    try:
        yield wrappers
    finally:
        for flag in wrappers.glob("hang-*"):
            flag.unlink()


def door_daemon(daemon_factory: Factory, doors: Path) -> DaemonProcess:
    """A daemon behind the doors, on the cli backend: the doors stand in front of Slurm's
    commands, and the libslurm writer (plugin/slurm/libslurm_backend.py) reads admin comments
    and writes through slurmctld's RPCs instead, bounded by Slurm's MessageTimeout."""
    settings = (
        f"slurm_timeout_s = {SLURM_TIMEOUT_S}\nunhealthy_after_s = {UNHEALTHY_AFTER_S}\n"
        '[slurm]\nbackend = "cli"\n'
    )
    return as_env_daemon(
        daemon_factory(config=settings),
        env={"PATH": f"{doors}:{os.environ['PATH']}"},
    )


def test_slurmctld_stopped_and_restarted_while_jobs_are_held(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    since = log_offset(local_cluster)
    settings = f"unhealthy_after_s = {UNHEALTHY_AFTER_S}\n"
    daemon = daemon_factory(config=settings).start()
    daemon.signal(signal.SIGSTOP)
    try:
        jobs = [
            submit_job(
                "--nodes=1-3", "--time=10", "--comment=adaptalloc:v1 app=it-ctld", wrap="true"
            )
            for _ in range(3)
        ]
        assert all(held(job_fields(slurm, j)) for j in jobs)
        pid = local_cluster.slurmctld_pid()
        os.kill(pid, signal.SIGTERM)
        slurm.wait_for("slurmctld to stop", lambda: not Path(f"/proc/{pid}").exists(), 60)
    finally:
        daemon.signal(signal.SIGCONT)
    down_at = time.monotonic()
    try:
        # No sweep succeeds: the heartbeat goes (the hook could not run anyway).
        daemon.wait_for("the heartbeat to go", lambda: not daemon.heartbeat.exists(), 30.0)
        print(f"heartbeat removed {time.monotonic() - down_at:.1f} s after slurmctld stopped")
        assert daemon.events("sweep_failed")
        time.sleep(5.0)  # down for a while
    finally:
        restarted = time.monotonic()
        start_testbed()
    wait_released(slurm, jobs, restarted, "slurmctld stopped ~15 s, restarted (from up.sh)")
    daemon.wait_for("the heartbeat again", daemon.fresh_heartbeat, 30.0)
    released = releases_logged(local_cluster, since)
    for job in jobs:
        assert released[job] == 1
        assert len(decisions_of(daemon, job)) == 1
        assert_within_range(slurm, job, 1, 3, 10)
    assert daemon.alive()


@pytest.mark.parametrize("command", ["squeue", "scontrol"])
def test_a_slurm_command_hanging_to_its_timeout(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    doors: Path,
    command: str,
) -> None:
    """squeue hanging: no sweep succeeds; scontrol hanging: no admin comment can be read
    nor write made. Either way the heartbeat goes within its bound, and once the command
    answers again the held jobs are released, each once, within range."""
    since = log_offset(local_cluster)
    daemon = door_daemon(daemon_factory, doors).start()
    daemon.signal(signal.SIGSTOP)
    try:
        jobs = [
            submit_job(
                "--nodes=2-4", "--time=10", "--comment=adaptalloc:v1 app=it-hang", wrap="true"
            )
            for _ in range(2)
        ]
        assert all(held(job_fields(slurm, j)) for j in jobs)
        (doors / f"hang-{command}").touch()
    finally:
        daemon.signal(signal.SIGCONT)
    hung_at = time.monotonic()
    daemon.wait_for("the heartbeat to go", lambda: not daemon.heartbeat.exists(), HEARTBEAT_GONE_S)
    print(f"{command} hanging: heartbeat removed {time.monotonic() - hung_at:.1f} s later")
    unheld = submit_job("--nodes=2-4", "--comment=adaptalloc:v1 app=it-hang", wrap="true")
    assert not held(job_fields(slurm, unheld))
    assert all(held(job_fields(slurm, j)) for j in jobs)
    (doors / f"hang-{command}").unlink()
    opened = time.monotonic()
    wait_released(slurm, jobs, opened, f"{command} hanging, then answering again")
    daemon.wait_for("the heartbeat again", daemon.fresh_heartbeat, 30.0)
    released = releases_logged(local_cluster, since)
    for job in jobs:
        assert released[job] == 1
        assert len([d for d in decisions_of(daemon, job) if d["status"] == "released"]) == 1
        assert_within_range(slurm, job, 2, 4, 10)
    assert released[unheld] == 0
    assert daemon.stop() == 0
