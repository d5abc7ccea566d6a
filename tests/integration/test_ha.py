"""High availability: two daemons with ``[daemon] ha = true`` on the testbed's
state directory (shared, as on shared storage between two hosts) and one Redis; the lease
says which one decides (plugin/daemon/lease.py).

The promise, as in the fault matrix: every held job released within the bound, within its
range, exactly once (slurmctld's log), decided by one daemon only; the failover time is
printed (``FAILOVER ...``): the lease's TTL (default 10 s) bounds it, plus a poll and the
recovery sweep.
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

from .daemon_harness import START_TIMEOUT_S, DaemonProcess, held, job_fields
from .fault_harness import assert_within_range, log_offset, releases_logged, wait_released
from .testbed import LocalCluster, PrivateRedis, SlurmCLI, SubmitJob, adaptalloc

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
HA = "ha = true\n"
JOBS = 4


def wait_event(
    daemon: DaemonProcess, name: str, timeout: float = START_TIMEOUT_S
) -> dict[str, Any]:
    """The first `name` event in the daemon's log, waiting up to `timeout` s for it."""
    found: list[dict[str, Any]] = []

    def logged() -> bool:
        found[:] = daemon.events(name)
        return bool(found)

    daemon.wait_for(f"a {name} event", logged, timeout)
    return found[0]


def pair(daemon_factory: Factory) -> tuple[DaemonProcess, DaemonProcess]:
    """The active (took the lease, beats) and the standby, both started."""
    active = daemon_factory(config=HA).start()
    assert wait_event(active, "lease_acquired")["token"] >= 1
    standby = daemon_factory(config=HA).start(wait=False)
    started = wait_event(standby, "daemon_started")
    assert started["ha"] is True
    time.sleep(2.0)  # a couple of its lease polls: it stays a standby
    assert standby.events("lease_acquired") == []
    return active, standby


def submit_held(slurm: SlurmCLI, submit_job: SubmitJob, app: str) -> list[int]:
    return [
        submit_job("--nodes=1-4", "--time=10", f"--comment=adaptalloc:v1 app={app}", wrap="true")
        for _ in range(JOBS)
    ]


def assert_each_once(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    redis_client: Any,
    since: int,
    jobs: list[int],
    decider: DaemonProcess,
    other: DaemonProcess,
) -> None:
    """Every job released once, within its range, decided (and recorded) once, by `decider`."""
    released = releases_logged(local_cluster, since)
    for job in jobs:
        assert released[job] == 1, (job, released[job])
        assert_within_range(slurm, job, 1, 4, 10)
        assert decider.decision(job) is not None, job
        assert other.decision(job) is None, job
    per_job = Counter(int(f["job_id"]) for _, f in redis_client.xrange(keys.DECISIONS, "-", "+"))
    assert sorted(per_job[j] for j in jobs) == [1] * len(jobs)


def test_the_standby_takes_over_from_a_killed_active_and_releases_its_held_jobs(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    redis_client: Any,
) -> None:
    active, standby = pair(daemon_factory)
    since = log_offset(local_cluster)
    active.kill()  # SIGKILL: its lease stays in Redis until the TTL runs out
    killed_at = time.monotonic()
    jobs = submit_held(slurm, submit_job, "it-ha-kill")  # its heartbeat is still fresh: held
    acquired = wait_event(standby, "lease_acquired", 60.0)
    failover = time.monotonic() - killed_at
    took = wait_released(slurm, jobs, killed_at, "HA: active SIGKILLed, standby took over")
    print(f"FAILOVER active SIGKILLed: standby holds the lease {failover:.1f} s after the kill")
    assert acquired["token"] > active.events("lease_acquired")[0]["token"]
    assert took < 60.0
    assert_each_once(local_cluster, slurm, redis_client, since, jobs, standby, active)


def test_a_stopped_active_loses_the_lease_and_writes_nothing_when_it_resumes(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    redis_client: Any,
) -> None:
    active, standby = pair(daemon_factory)
    old_token = active.events("lease_acquired")[0]["token"]
    since = log_offset(local_cluster)
    active.signal(signal.SIGSTOP)  # hung: alive, lease not renewed, heartbeat going stale
    stopped_at = time.monotonic()
    jobs = submit_held(slurm, submit_job, "it-ha-stop")
    acquired = wait_event(standby, "lease_acquired", 60.0)
    failover = time.monotonic() - stopped_at
    took = wait_released(slurm, jobs, stopped_at, "HA: active SIGSTOPped, standby took over")
    print(f"FAILOVER active SIGSTOPped: standby holds the lease {failover:.1f} s after the stop")
    assert acquired["token"] > old_token
    active.signal(signal.SIGCONT)
    lost = wait_event(active, "lease_lost", 30.0)
    assert lost["token"] == old_token
    assert lost["holder_now"].startswith(f"{acquired['token']} ")  # Redis holds the new token
    time.sleep(3.0)  # what a resumed daemon would write, it would have written by now
    assert active.events("decision") == []
    assert len(active.events("heartbeat_on")) == 1  # not again after it resumed
    # The new holder's heartbeat survived the old one's step-down: the hook still holds.
    assert standby.fresh_heartbeat()
    late = submit_held(slurm, submit_job, "it-ha-stop")[:1]
    assert standby.wait_decision(late[0])["job_id"] == late[0]
    assert_each_once(local_cluster, slurm, redis_client, since, [*jobs, *late], standby, active)
    print(f"stale token {old_token} refused (holder now {lost['holder_now']}); took {took:.1f} s")


def test_a_graceful_stop_hands_the_lease_over_at_once(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    active, standby = pair(daemon_factory)
    stopping = time.monotonic()
    assert active.stop() == 0
    assert active.events("lease_released")
    wait_event(standby, "lease_acquired", 10.0)
    print(f"FAILOVER graceful stop: standby holds the lease {time.monotonic() - stopping:.1f} s on")
    standby.wait_for("the standby's heartbeat", standby.fresh_heartbeat, 10.0)
    job = submit_job("--nodes=1-4", "--time=10", "--comment=adaptalloc:v1 app=it-ha", wrap="true")
    assert standby.wait_decision(job)["job_id"] == job
    assert not held(job_fields(slurm, job))


def test_without_redis_one_daemon_fails_open_under_the_state_lock_the_other_refuses(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    private_redis: PrivateRedis,
) -> None:
    """No Redis, no lease: the daemon holding the state directory's lock decides as without
    HA (failing open: released as submitted), the other decides nothing."""
    private_redis.start()
    on_private = ("--redis-url", private_redis.url)
    first = daemon_factory(config=HA, args=on_private).start()
    wait_event(first, "lease_acquired")
    second = daemon_factory(config=HA, args=on_private).start(wait=False)
    wait_event(second, "daemon_started")
    since = log_offset(local_cluster)
    private_redis.stop()
    stopped_at = time.monotonic()
    fallback = wait_event(first, "lease_unavailable", 60.0)
    assert "state directory's lock" in fallback["note"]
    first.wait_for("the heartbeat again", first.fresh_heartbeat, 30.0)
    took = time.monotonic() - stopped_at
    print(f"FAILOVER Redis stopped: deciding under the lock {took:.1f} s on")
    jobs = submit_held(slurm, submit_job, "it-ha-noredis")
    wait_released(slurm, jobs, time.monotonic(), "HA without Redis: fail-open under the lock")
    released = releases_logged(local_cluster, since)
    for job in jobs:
        assert released[job] == 1, (job, released[job])
        assert_within_range(slurm, job, 1, 4, 10)
        assert first.wait_decision(job)["fail_open"] == "store_unavailable"
        assert second.decision(job) is None
    assert (
        "another daemon holds the state directory"
        in wait_event(second, "lease_unavailable")["note"]
    )


def test_release_held_takes_the_lease_of_a_dead_active_with_no_standby(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
) -> None:
    """ExecStopPost (``--release-held``) after a SIGKILL, no standby: it waits for the dead
    daemon's lease to expire, takes it and releases what is held; beside a live holder the
    orphan timer's ``--if-orphaned`` does nothing."""
    active = daemon_factory(config=HA).start()
    wait_event(active, "lease_acquired")
    config = ("--config", str(active.config_path), "--state-dir", str(active.state_dir))
    skipped = adaptalloc("daemon", "--release-held", "--if-orphaned", *config, cwd=tmp_path)
    assert skipped.returncode == 0, skipped.stderr
    assert "nothing released" in skipped.stdout
    since = log_offset(local_cluster)
    active.kill()
    killed_at = time.monotonic()
    jobs = submit_held(slurm, submit_job, "it-ha-release")
    assert all(held(job_fields(slurm, j)) for j in jobs)
    done = adaptalloc("daemon", "--release-held", *config, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    wait_released(slurm, jobs, killed_at, "HA: active SIGKILLed, no standby, ExecStopPost")
    released = releases_logged(local_cluster, since)
    for job in jobs:
        assert released[job] == 1, (job, released[job])
        assert_within_range(slurm, job, 1, 4, 10)
