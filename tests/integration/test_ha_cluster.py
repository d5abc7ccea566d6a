"""Redis Cluster: two HA daemons, the learner and the CLI on a
``redis+cluster://`` URL (deploy/local/cluster.sh, three masters, started by this module).

The active daemon hangs (SIGSTOP) while jobs are submitted: the standby takes the lease
(lease.lua, both keys in the ``{global}`` slot) and decides with fenced decision writes
(WATCH the lease, then the once-guard and the stream in one MULTI: one slot); the resumed
daemon writes nothing. The promise, as with one Redis: every held job released within the
bound, within its range, exactly once (slurmctld's log), one decision record each, decided
by one daemon. Then a master of the cluster stops while jobs are held: the daemon fails
open (every held job released within its range, once, as ``store_unavailable``) and the
master is started again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.store import keys
from plugin.store.connection import connect, is_cluster

from .daemon_harness import DaemonProcess, with_redis_url
from .fault_harness import assert_within_range, log_offset, releases_logged, wait_released
from .test_ha import Factory, pair, submit_held
from .test_store_cluster import CLUSTER_SH, cluster_url
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI, SubmitJob, adaptalloc

pytestmark = pytest.mark.integration

__all__ = ["cluster_url"]  # the fixture, imported on purpose

APP = "it-cluster-master-down"
#: How long a SIGTERM'd Redis may take to exit: it shuts down in its next serverCron (hz 10,
#: so within ~0.1 s), and answers commands until then.
EXIT_WAIT_S = 10.0


def stopped(pid: int) -> None:
    """SIGTERM Redis node `pid` and wait until the process is gone (not our child)."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + EXIT_WAIT_S
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)
    pytest.fail(f"Redis node {pid} still runs {EXIT_WAIT_S:g} s after SIGTERM", pytrace=False)


def test_ha_daemons_on_a_cluster_take_over_and_release_each_once(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    cluster_url: str,
    tmp_path: Path,
) -> None:
    def factory(**kwargs: str) -> DaemonProcess:
        return with_redis_url(daemon_factory(**kwargs), cluster_url)

    active, standby = pair(factory)
    since = log_offset(local_cluster)
    active.signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    jobs = submit_held(slurm, submit_job, "it-ha-cluster")
    took = wait_released(slurm, jobs, stopped_at, "active hung, HA daemons on Redis Cluster")
    active.signal(signal.SIGCONT)
    time.sleep(3.0)  # the records of the last batch; the resumed daemon's first loop
    released = releases_logged(local_cluster, since)
    store: Any = connect(cluster_url)
    assert is_cluster(store)
    per_job = Counter(int(f["job_id"]) for _, f in store.xrange(keys.DECISIONS, "-", "+"))
    for job in jobs:
        assert released[job] == 1, (job, released[job])
        assert_within_range(slurm, job, 1, 4, 10)
        assert standby.decision(job) is not None, job
        assert active.decision(job) is None, job
        assert per_job[job] == 1, (job, per_job[job])
    assert took < 60.0
    print(f"standby released the {len(jobs)} held jobs {took:.1f} s after the active hung")
    shown = adaptalloc(
        "decisions", "--last", "50", "--format", "json", cwd=tmp_path, redis_url=cluster_url
    )
    assert shown.returncode == 0, shown.stderr
    assert set(jobs) <= {d["job_id"] for d in json.loads(shown.stdout)["decisions"]}


def test_a_master_down_while_jobs_are_held_fails_open(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    cluster_url: str,
) -> None:
    daemon = with_redis_url(daemon_factory(), cluster_url).start()
    store: Any = connect(cluster_url)
    # The master of the app's slot, which every decision on the app reads.
    master = store.get_node_from_key(keys.app_curve(AppKey.parse(APP)))
    pid_file = PROJECT_ROOT / ".local" / "cluster" / f"node-{master.port}.pid"
    since = log_offset(local_cluster)
    # Gone before the first job is submitted: a SIGTERM'd Redis answers commands until its
    # next serverCron (up to ~0.1 s, 10-84 ms measured on Redis 7.0), and a job decided in
    # that window read "no curve is stored" from the live master (the one run in four).
    stopped(int(pid_file.read_text().strip()))
    stopped_at = time.monotonic()
    try:
        jobs = submit_held(slurm, submit_job, APP)
        took = wait_released(slurm, jobs, stopped_at, "a Redis Cluster master down while held")
        released = releases_logged(local_cluster, since)
        for job in jobs:
            assert released[job] == 1, (job, released[job])
            assert_within_range(slurm, job, 1, 4, 10)
        assert daemon.alive()
        assert took < 60.0
        # Each job fails open as "store_unavailable": not an internal error (a ConnectionError
        # once escaped from the store's constructor), not "no curve" (the slot's master is
        # gone, nothing can answer for the app's keys).
        decided = [daemon.wait_decision(j) for j in jobs]
        outcomes = [(d.get("fail_open"), d.get("rule")) for d in decided]
        assert all(o == ("store_unavailable", None) for o in outcomes), (
            decided,
            daemon.log_text()[-3000:],
        )
        assert all(d.get("nodes") is None for d in decided), decided
        print("outcomes:", Counter(outcomes))
    finally:
        done = subprocess.run(  # noqa: S603 - our script, a fixed argument list
            [str(CLUSTER_SH), "up"], capture_output=True, text=True, timeout=180, check=False
        )
        assert done.returncode == 0, done.stderr
