"""Redis Sentinel: the daemons, the learner and the CLI reach Redis through a
``redis+sentinel://`` URL; a failover while jobs are held loses none of them.

The Sentinel set is the testbed's opt-in one (deploy/local/sentinel.sh: a master, a
replica, one sentinel), so the testbed's own Redis, which the other tests use, is never
failed over. Two HA daemons use it; the active one is stopped while jobs are submitted
and the master fails over meanwhile (``SENTINEL FAILOVER``), so every write after that
meets a new master: the lease, the decision records. The promise: every held job
released within the bound, within its range, exactly once (slurmctld's log), one decision
record each (on the new master), decided by one daemon.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from plugin.store import keys
from plugin.store.connection import connect

from .daemon_harness import DaemonProcess, with_redis_url
from .fault_harness import assert_within_range, log_offset, releases_logged, wait_released
from .test_ha import pair, submit_held
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI, SubmitJob, adaptalloc

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
SENTINEL_SH = PROJECT_ROOT / "deploy" / "local" / "sentinel.sh"


def _sentinel_sh(cluster: LocalCluster, action: str) -> None:
    done = subprocess.run(  # noqa: S603 - our script, a fixed argument list
        [str(SENTINEL_SH), action, "--state-dir", str(cluster.state_dir)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def sentinel_url(local_cluster: LocalCluster) -> Iterator[str]:
    """The URL of a fresh Sentinel set (deploy/local/sentinel.sh), stopped at teardown."""
    _sentinel_sh(local_cluster, "down")
    _sentinel_sh(local_cluster, "up")
    env = (local_cluster.state_dir / "sentinel" / "env").read_text()
    found = dict(
        word.split("=", 1)
        for line in env.splitlines()
        for word in shlex.split(line.removeprefix("export "))
    )
    try:
        yield found["SENTINEL_URL"]
    finally:
        _sentinel_sh(local_cluster, "down")


def sentinel_port(url: str) -> int:
    return int(url.rsplit("@", 1)[1].split("/", 1)[0].split(":")[1])


def master_port(url: str) -> int:
    sentinel: Any = redis.Redis(port=sentinel_port(url), decode_responses=True)
    return int(sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "adaptalloc")[1])


def test_a_sentinel_failover_while_jobs_are_held_releases_each_once(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    sentinel_url: str,
    tmp_path: Path,
) -> None:
    def factory(**kwargs: str) -> DaemonProcess:
        return with_redis_url(daemon_factory(**kwargs), sentinel_url)

    active, standby = pair(factory)
    old_master = master_port(sentinel_url)
    since = log_offset(local_cluster)
    active.signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    jobs = submit_held(slurm, submit_job, "it-ha-sentinel")
    sentinel: Any = redis.Redis(port=sentinel_port(sentinel_url), decode_responses=True)
    assert sentinel.execute_command("SENTINEL", "FAILOVER", "adaptalloc")
    deadline = time.monotonic() + 60
    while master_port(sentinel_url) == old_master:
        assert time.monotonic() < deadline, "Sentinel did not fail over"
        time.sleep(0.2)
    failed_over = time.monotonic() - stopped_at
    active.signal(signal.SIGCONT)
    took = wait_released(slurm, jobs, stopped_at, "Sentinel failover while held (HA daemons)")
    print(f"master moved {old_master} -> {master_port(sentinel_url)} {failed_over:.1f} s in")
    time.sleep(3.0)  # the records of the last batch
    released = releases_logged(local_cluster, since)
    store: Any = connect(sentinel_url)
    per_job = Counter(int(f["job_id"]) for _, f in store.xrange(keys.DECISIONS, "-", "+"))
    for job in jobs:
        assert released[job] == 1, (job, released[job])
        assert_within_range(slurm, job, 1, 4, 10)
        assert bool(active.decision(job)) != bool(standby.decision(job)), job
        # At most once: a record written to the old master in the failover's window is lost
        # with it (Sentinel's replication is asynchronous), and the daemon's log line stays
        # the source of truth (plugin/daemon/record.py); a record is never written twice.
        assert per_job[job] <= 1, (job, per_job[job])
    assert took < 60.0
    # The CLI reads the same records through the Sentinel URL.
    shown = adaptalloc(
        "decisions", "--last", "50", "--format", "json", cwd=tmp_path, redis_url=sentinel_url
    )
    assert shown.returncode == 0, shown.stderr
    listed = {d["job_id"] for d in json.loads(shown.stdout)["decisions"]}
    assert {job for job in jobs if per_job[job]} <= listed
    decided = [active.decision(j) or standby.decision(j) or {} for j in jobs]
    print("outcomes:", Counter(d.get("fail_open") or d.get("rule") for d in decided))
