"""Fault matrix, time: an environment that makes Slurm's times unreadable, and the
daemon's wall clock jumping forward and back, on the real testbed.

The clock jumps are the daemon's alone: the host's clock (and so slurmctld's) is left as it
is, and the daemon process runs with ``time.time`` offset by the number of seconds written in
a file the test controls (a daemon-side clock source; Slurm and Redis are the real ones). A
daemon whose clock is off from slurmctld's is what a jump on the daemon's host looks like to
the cluster.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
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
from .testbed import LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]

#: ``python -c`` program: the daemon with ``time.time`` moved by the seconds in argv[1]'s file.
SKEWED_CLOCK = """
import pathlib, runpy, sys, time
_offset_file = pathlib.Path(sys.argv.pop(1))
_real_time = time.time
def _skewed_time():
    try:
        return _real_time() + float(_offset_file.read_text() or 0)
    except (OSError, ValueError):
        return _real_time()
time.time = _skewed_time
sys.argv[0] = "adaptalloc"
runpy.run_module("plugin", run_name="__main__")
"""


def test_slurm_time_format_in_the_daemons_environment_leaves_the_watchdog_on(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    """``SLURM_TIME_FORMAT=relative`` makes squeue print SubmitTime as ``11:46:08``.

    Before the fix the daemon read no submit time at all, so a job held past max_hold_s
    while the daemon was stopped was decided as if it had just arrived: the watchdog was off.
    """
    daemon = as_env_daemon(
        daemon_factory(config="max_hold_s = 5\n"), env={"SLURM_TIME_FORMAT": "relative"}
    ).start()
    daemon.signal(signal.SIGSTOP)  # heartbeat fresh: the hook holds; nobody decides
    try:
        job = submit_job(
            "--nodes=1-3", "--time=10", "--comment=adaptalloc:v1 app=it-tf", wrap="true"
        )
        assert held(job_fields(slurm, job))
        time.sleep(6.5)  # past max_hold_s
    finally:
        daemon.signal(signal.SIGCONT)
    resumed = time.monotonic()
    decision = daemon.wait_decision(job)
    wait_released(slurm, [job], resumed, "SLURM_TIME_FORMAT=relative, job held past max_hold_s")
    assert decision["status"] == "released"
    assert decision["fail_open"] == "watchdog"
    assert_within_range(slurm, job, 1, 3, 10)
    assert len(decisions_of(daemon, job)) == 1


def _skewed_daemon(daemon_factory: Factory, offset_file: Path) -> DaemonProcess:
    offset_file.write_text("0")
    return as_env_daemon(
        daemon_factory(config="max_hold_s = 30\n"),
        bootstrap=SKEWED_CLOCK,
        bootstrap_args=(str(offset_file),),
    )


@pytest.mark.parametrize("jump_s", [3600, -3600], ids=["forward", "back"])
def test_a_clock_jump_on_the_daemons_host_strands_nothing(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
    jump_s: int,
) -> None:
    """Jobs held when the daemon's clock jumps an hour are released once, within their range;
    while the daemon's heartbeat is an hour off, the hook holds nothing new (a heartbeat from
    the future or an hour old is no heartbeat); when the clock is back, holds resume."""
    offset = tmp_path / "clock-offset"
    daemon = _skewed_daemon(daemon_factory, offset).start()
    since = log_offset(local_cluster)
    daemon.signal(signal.SIGSTOP)
    try:
        jobs = [
            submit_job(
                "--nodes=2-4", "--time=10", "--comment=adaptalloc:v1 app=it-clock", wrap="true"
            )
            for _ in range(3)
        ]
        assert all(held(job_fields(slurm, j)) for j in jobs)
        offset.write_text(str(jump_s))
    finally:
        daemon.signal(signal.SIGCONT)
    jumped = time.monotonic()
    wait_released(slurm, jobs, jumped, f"daemon clock jumped {jump_s:+d} s")
    for job in jobs:
        assert_within_range(slurm, job, 2, 4, 10)
        assert len(decisions_of(daemon, job)) == 1
    # Its heartbeat is an hour off now: the hook must not hold on it.
    time.sleep(3.0)  # a beat or two with the skewed clock
    stamp = int(daemon.heartbeat.read_text())
    assert abs(stamp - time.time() - jump_s) < 60
    during = submit_job("--nodes=2-4", "--comment=adaptalloc:v1 app=it-clock", wrap="true")
    assert not held(job_fields(slurm, during))
    # The clock is right again: the next beats are fresh and jobs are held and decided again.
    offset.write_text("0")

    def beat_right() -> bool:  # fresh_heartbeat() also takes a stamp from the future
        return daemon.fresh_heartbeat() and int(daemon.heartbeat.read_text()) <= time.time()

    daemon.wait_for("a heartbeat on the right clock", beat_right, 30.0)
    after = submit_job("--nodes=2-4", "--comment=adaptalloc:v1 app=it-clock", wrap="true")
    assert daemon.wait_decision(after)["status"] == "released"
    released = releases_logged(local_cluster, since)
    assert [released[j] for j in [*jobs, after]] == [1] * (len(jobs) + 1)
    assert released[during] == 0
    assert daemon.alive()
