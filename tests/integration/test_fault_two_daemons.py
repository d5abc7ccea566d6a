"""Fault matrix: two daemons against one cluster, each with its own state directory
(as on two hosts, or a second unit started by mistake), the same Redis.

Both see the same held jobs in the queue. The promise: every job released once (slurmctld's
log), within its range, one decision record per job in the stream. Without HA both may
decide a job (the last writer's size and comment win); with ``[daemon] ha = true`` the
lease lets exactly one decide each job (plugin/daemon/lease.py).
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plugin.store import keys

from .daemon_harness import (
    DaemonProcess,
)
from .fault_harness import assert_within_range, log_offset, releases_logged, wait_released
from .testbed import LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
JOBS = 20


def elsewhere(daemon: DaemonProcess, state_dir: Path) -> DaemonProcess:
    """`daemon` with its own state directory (the hook does not read that one's heartbeat)."""
    at = daemon.args.index("--state-dir")
    daemon.args[at + 1] = str(state_dir)
    daemon.state_dir = state_dir
    daemon.heartbeat = state_dir / "heartbeat"
    return daemon


def test_two_daemons_on_one_cluster_release_each_job_once(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    redis_client: Any,
    tmp_path: Path,
) -> None:
    since = log_offset(local_cluster)
    first = daemon_factory().start()
    second = elsewhere(daemon_factory(), tmp_path / "second-state").start()
    for daemon in (first, second):
        daemon.signal(signal.SIGSTOP)  # both find the same held jobs when they resume
    try:
        jobs = [
            submit_job(
                "--nodes=1-4", "--time=10", "--comment=adaptalloc:v1 app=it-two", wrap="true"
            )
            for _ in range(JOBS)
        ]
    finally:
        for daemon in (second, first):
            daemon.signal(signal.SIGCONT)
    began = time.monotonic()
    wait_released(slurm, jobs, began, f"two daemons, {JOBS} jobs")
    time.sleep(3.0)  # let both finish recording
    first.stop()
    second.stop()
    released = releases_logged(local_cluster, since)
    both = [j for j in jobs if first.decision(j) and second.decision(j)]
    print(
        f"jobs decided by the first: {sum(1 for j in jobs if first.decision(j))}, "
        f"by the second: {sum(1 for j in jobs if second.decision(j))}, by both: {len(both)}"
    )
    for job in jobs:
        assert released[job] == 1, (job, released[job])
        assert_within_range(slurm, job, 1, 4, 10)
    per_job = Counter(int(f["job_id"]) for _, f in redis_client.xrange(keys.DECISIONS, "-", "+"))
    assert sorted(per_job[j] for j in jobs) == [1] * JOBS


def test_with_ha_two_daemons_never_race_one_decides_each_job(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    redis_client: Any,
    tmp_path: Path,
) -> None:
    """The same race as above with ``[daemon] ha = true``: the lease lets one decide."""
    since = log_offset(local_cluster)
    first = daemon_factory(config="ha = true\n").start()
    second = elsewhere(daemon_factory(config="ha = true\n"), tmp_path / "second-state")
    second.start(wait=False)
    second.wait_for("the second daemon's start", lambda: bool(second.events("daemon_started")), 60)
    for daemon in (first, second):
        daemon.signal(signal.SIGSTOP)
    try:
        jobs = [
            submit_job(
                "--nodes=1-4", "--time=10", "--comment=adaptalloc:v1 app=it-two-ha", wrap="true"
            )
            for _ in range(JOBS)
        ]
    finally:
        for daemon in (second, first):
            daemon.signal(signal.SIGCONT)
    began = time.monotonic()
    wait_released(slurm, jobs, began, f"two HA daemons, {JOBS} jobs")
    time.sleep(3.0)
    first.stop()
    second.stop()
    released = releases_logged(local_cluster, since)
    by_first = sum(1 for j in jobs if first.decision(j))
    by_second = sum(1 for j in jobs if second.decision(j))
    both = [j for j in jobs if first.decision(j) and second.decision(j)]
    print(f"HA: decided by the first: {by_first}, by the second: {by_second}, by both: {len(both)}")
    assert both == []
    assert by_first + by_second == JOBS
    for job in jobs:
        assert released[job] == 1, (job, released[job])
        assert_within_range(slurm, job, 1, 4, 10)
    per_job = Counter(int(f["job_id"]) for _, f in redis_client.xrange(keys.DECISIONS, "-", "+"))
    assert sorted(per_job[j] for j in jobs) == [1] * JOBS
