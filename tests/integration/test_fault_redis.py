"""Fault matrix, Redis restarted empty (its data lost) or hanging while jobs are held.

A redis-server of the test's own, without persistence (tests/integration/testbed.py's
PrivateRedis): stopped and started again, it comes back empty. The curves are gone, so the
held jobs are decided by the policy's fallback (or released as submitted while Redis is
away), each once, within range; the daemon keeps running and beating, and writes its
decision records into the new, empty Redis.

Frozen instead (SIGSTOP: the port still accepts, nothing answers), every Redis call waits for
the daemon's ``redis_timeout_s`` and fails; the held jobs are released as submitted.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from plugin.store import keys

from .daemon_harness import (
    DaemonProcess,
    held,
    job_fields,
)
from .fault_harness import (
    assert_within_range,
    decisions_of,
    log_offset,
    releases_logged,
    wait_released,
)
from .test_daemon import learn_curve
from .testbed import LocalCluster, PrivateRedis, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]


def sizing_daemon(
    local_cluster: LocalCluster,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    private_redis: PrivateRedis,
) -> tuple[DaemonProcess, int]:
    """A daemon on the private Redis, holding NPB LU's curve as it-lu, seen to size a job
    with it; and the slurmctld log's offset from before it started."""
    private_redis.start()
    learn_curve(private_redis.url, "it-lu", "lan_thesis_npb_lu_W.csv")
    since = log_offset(local_cluster)
    daemon = daemon_factory(
        config="redis_retry_s = 1.0\n", args=("--redis-url", private_redis.url)
    ).start()
    before = submit_job("--nodes=1-8", "--comment=adaptalloc:v1 app=it-lu", wrap="true")
    assert daemon.wait_decision(before)["action"] == "resize"  # the curve was there
    return daemon, since


def test_redis_restarted_empty_while_jobs_are_held(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    private_redis: PrivateRedis,
) -> None:
    daemon, since = sizing_daemon(local_cluster, submit_job, daemon_factory, private_redis)
    daemon.signal(signal.SIGSTOP)
    try:
        jobs = [
            submit_job("--nodes=2-6", "--time=30", "--comment=adaptalloc:v1 app=it-lu", wrap="true")
            for _ in range(3)
        ]
        assert all(held(job_fields(slurm, j)) for j in jobs)
        private_redis.stop()
        private_redis.start()  # empty: no persistence
    finally:
        daemon.signal(signal.SIGCONT)
    restarted = time.monotonic()
    wait_released(slurm, jobs, restarted, "Redis restarted empty")
    released = releases_logged(local_cluster, since)
    for job in jobs:
        decision = decisions_of(daemon, job)
        assert len(decision) == 1
        assert decision[0]["rule"] == "fallback" or decision[0]["fail_open"] == "store_unavailable"
        assert released[job] == 1
        assert_within_range(slurm, job, 2, 6, 30)
    assert daemon.alive()
    assert daemon.fresh_heartbeat()
    # The records of what was decided after the restart are in the new Redis.
    client: Any = redis.Redis.from_url(private_redis.url, decode_responses=True)
    slurm.wait_for(
        "the decision records in the new Redis",
        lambda: (
            {int(f["job_id"]) for _, f in client.xrange(keys.DECISIONS, "-", "+")}
            >= {j for j in jobs if decisions_of(daemon, j)[0]["rule"] == "fallback"}
        ),
        30,
    )


def test_a_hanging_redis_while_jobs_are_held(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    private_redis: PrivateRedis,
) -> None:
    """Redis frozen (SIGSTOP: its port accepts, nothing answers): every read times out after
    the daemon's redis_timeout_s, so the held jobs are released as submitted, each once and
    within the bound; the daemon keeps running and beating; thawed, it sizes with the curve
    again."""
    daemon, since = sizing_daemon(local_cluster, submit_job, daemon_factory, private_redis)
    private_redis.signal(signal.SIGSTOP)
    try:
        hung = time.monotonic()
        jobs = [
            submit_job("--nodes=2-6", "--time=30", "--comment=adaptalloc:v1 app=it-lu", wrap="true")
            for _ in range(3)
        ]
        wait_released(slurm, jobs, hung, "Redis hanging")
        released = releases_logged(local_cluster, since)
        for job in jobs:
            decision = decisions_of(daemon, job)
            assert len(decision) == 1
            assert decision[0]["fail_open"] == "store_unavailable"
            assert released[job] == 1
            assert_within_range(slurm, job, 2, 6, 30)
        assert daemon.alive()
        assert daemon.fresh_heartbeat()
    finally:
        private_redis.signal(signal.SIGCONT)
    time.sleep(1.5)  # past redis_retry_s
    after = submit_job("--nodes=1-8", "--comment=adaptalloc:v1 app=it-lu", wrap="true")
    assert daemon.wait_decision(after)["action"] == "resize"
