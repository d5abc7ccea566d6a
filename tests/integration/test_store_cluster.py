"""The curve store, the v1 -> v2 migration and the HA lease on a real Redis Cluster of
three masters (deploy/local/cluster.sh, started and stopped here).

The store's own tests (test_store.py) run here again, unchanged, on a cluster client: their
``redis_client`` fixture is this module's, and "the scratch database" is the cluster's
database 0. Those that need a single server (a private redis-server, a stream written by
hand) are not imported; test_store_migrate.py builds its v1 store with RENAMEs across slots,
so the migration has its own test here. The tests below add what only a cluster shows: an
app's keys and the global indexes on different masters, the daemon's fenced decision write
beside the HA lease, the migration's copy across slots, and the CLI on a cluster URL.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from plugin.appkey import AppKey
from plugin.daemon.lease import Lease
from plugin.daemon.record import DecisionRecorder
from plugin.learning.learner import refit_app
from plugin.store import keys
from plugin.store.connection import connect, is_cluster
from plugin.store.curves import CurveStore, Observation, Retention
from plugin.store.decisions import DecisionRecord
from plugin.store.migrate import migrate

from . import test_store as store_tests
from . import testbed
from .test_accuracy_store import (  # live accuracy's store tests, run again on the cluster
    test_a_decision_before_guards_held_entry_ids_is_not_scored,
    test_a_finished_job_is_scored_once_against_its_decision,
    test_a_timed_out_run_is_scored_as_a_lower_bound,
    test_scores_read_by_app_and_by_end_time,
)
from .test_store import (  # the store's tests, run again on the cluster
    Clock,
    clock,
    runs,
    store,
    test_a_bad_argument_to_the_script_writes_nothing,
    test_a_crash_after_the_claim_loses_no_run,
    test_a_crash_before_the_index_is_healed_by_the_next_read,
    test_a_failure_between_read_and_write_leaves_the_store_as_it_was,
    test_a_fit_from_older_observations_never_replaces_a_newer_one,
    test_a_forgotten_app_learns_new_runs_but_not_its_old_ones_again,
    test_a_job_counts_once_across_calls_and_apps,
    test_a_rebuilt_application_is_relearned,
    test_a_refit_cleared_after_newer_runs_were_indexed_keeps_them_dirty,
    test_an_app_on_two_node_types_gets_a_curve_per_type,
    test_censored_runs_are_kept_apart_and_never_fitted,
    test_decisions_are_capped_and_filtered_by_app,
    test_exact_keys_after_a_full_cycle,
    test_forget_removes_everything_of_the_app,
    test_new_runs_during_a_fit_keep_the_app_dirty,
    test_optional_fields_are_stored_under_short_keys,
    test_retention_keeps_the_newest_and_forgets_the_old,
    test_runs_at_one_size_store_no_curve_with_the_reason,
    test_sibling_sizes_are_the_same_name_with_numeric_sizes,
    test_the_curve_reads_back_as_a_predictor_curve,
    test_the_guard_counts_safety_and_watches,
    test_two_writers_at_once_stay_consistent,
)
from .testbed import PROJECT_ROOT

pytestmark = pytest.mark.integration

__all__ = [  # what it runs from test_store.py, test_accuracy_store.py (imported on purpose)
    "Clock",
    "clock",
    "store",
    "test_a_bad_argument_to_the_script_writes_nothing",
    "test_a_crash_after_the_claim_loses_no_run",
    "test_a_crash_before_the_index_is_healed_by_the_next_read",
    "test_a_decision_before_guards_held_entry_ids_is_not_scored",
    "test_a_failure_between_read_and_write_leaves_the_store_as_it_was",
    "test_a_finished_job_is_scored_once_against_its_decision",
    "test_a_fit_from_older_observations_never_replaces_a_newer_one",
    "test_a_forgotten_app_learns_new_runs_but_not_its_old_ones_again",
    "test_a_job_counts_once_across_calls_and_apps",
    "test_a_rebuilt_application_is_relearned",
    "test_a_refit_cleared_after_newer_runs_were_indexed_keeps_them_dirty",
    "test_a_timed_out_run_is_scored_as_a_lower_bound",
    "test_an_app_on_two_node_types_gets_a_curve_per_type",
    "test_censored_runs_are_kept_apart_and_never_fitted",
    "test_decisions_are_capped_and_filtered_by_app",
    "test_exact_keys_after_a_full_cycle",
    "test_forget_removes_everything_of_the_app",
    "test_new_runs_during_a_fit_keep_the_app_dirty",
    "test_optional_fields_are_stored_under_short_keys",
    "test_retention_keeps_the_newest_and_forgets_the_old",
    "test_runs_at_one_size_store_no_curve_with_the_reason",
    "test_scores_read_by_app_and_by_end_time",
    "test_sibling_sizes_are_the_same_name_with_numeric_sizes",
    "test_the_curve_reads_back_as_a_predictor_curve",
    "test_the_guard_counts_safety_and_watches",
    "test_two_writers_at_once_stay_consistent",
]

CLUSTER_SH = PROJECT_ROOT / "deploy" / "local" / "cluster.sh"
NOW = 1_800_000_000.0
# Three apps whose tags hash to slots on three different masters (checked below).
APPS = (AppKey("lulesh", "large"), AppKey("cg", "1000"), AppKey("wrf"))


def _redis_supports_cluster() -> bool:
    """Redis Cluster came with redis-server 3.0."""
    try:
        out = subprocess.run(
            ["redis-server", "--version"],  # noqa: S607 - found on PATH like the testbed's
            capture_output=True, text=True, timeout=10, check=False,
        ).stdout  # fmt: skip
    except OSError:
        return False
    found = re.search(r"v=(\d+)\.", out)
    return found is not None and int(found.group(1)) >= 3


def _cluster_sh(action: str) -> None:
    done = subprocess.run(  # noqa: S603 - our script, a fixed argument list
        [str(CLUSTER_SH), action], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def cluster_url() -> Iterator[str]:
    """A fresh three-master cluster (deploy/local/cluster.sh), stopped at teardown."""
    if not _redis_supports_cluster():
        pytest.skip("redis-server is missing or older than 3.0: no Redis Cluster support")
    _cluster_sh("down")
    _cluster_sh("up")
    env = (PROJECT_ROOT / ".local" / "cluster" / "env").read_text()
    found = dict(
        word.split("=", 1)
        for line in env.splitlines()
        for word in shlex.split(line.removeprefix("export "))
    )
    try:
        yield found["CLUSTER_URL"]
    finally:
        _cluster_sh("down")


@pytest.fixture
def redis_client(cluster_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The store's client on the cluster (plugin.store.connection), flushed around each test
    (test_store.py's tests take it under this name). Its KEYS asks every master, as a
    single server's answers for all keys; $REDIS_URL names the cluster for the tests that
    start a second client or the CLI."""
    client: Any = connect(cluster_url)
    assert is_cluster(client)
    every_key = client.keys
    client.keys = lambda pattern="*": every_key(pattern, target_nodes=RedisCluster.PRIMARIES)
    monkeypatch.setenv("REDIS_URL", cluster_url)
    for module in (store_tests, testbed):  # a cluster has no scratch database but db 0
        monkeypatch.setattr(module, "scratch_url", lambda db=0: cluster_url)
    client.flushall(target_nodes=RedisCluster.PRIMARIES)
    try:
        yield client
    finally:
        client.flushall(target_nodes=RedisCluster.PRIMARIES)
        client.close()


def _master_of(client: Any, key: str) -> str:
    return str(client.get_node_from_key(key).name)


def test_the_cluster_spreads_the_apps_and_the_global_keys_over_its_masters(
    redis_client: Any,
) -> None:
    """Without this the tests here could pass on one master by luck."""
    masters = {_master_of(redis_client, keys.app_observations(app)) for app in APPS}
    masters.add(_master_of(redis_client, keys.APPS))
    assert len(redis_client.get_primaries()) == 3
    assert len(masters) == 3
    assert key_slot(keys.APPS.encode()) != key_slot(keys.app_observations(APPS[0]).encode())


def test_ingest_refit_read_and_forget_across_masters(redis_client: Any) -> None:
    store = CurveStore(
        redis_client, Retention(max_observations=50, max_age_s=None), clock=lambda: NOW
    )
    groups = {app: runs(app, 100 + 100 * i) for i, app in enumerate(APPS)}
    result = store.add_batch(groups)
    assert (result.added, result.duplicates) == (sum(len(v) for v in groups.values()), 0)
    # The same job ids again, and one of them under another app: each counted once.
    again = store.add_batch({APPS[0]: groups[APPS[0]], APPS[1]: [
        Observation(groups[APPS[0]][0].job_id, APPS[1], 3, 9.0, NOW - 1)
    ]})  # fmt: skip
    assert (again.added, again.duplicates) == (0, len(groups[APPS[0]]) + 1)
    assert sorted(store.dirty_apps(), key=str) == sorted(APPS, key=str)
    for app in APPS:
        assert refit_app(store, app).status == "written"
        assert store.curve(app) is not None
    assert store.dirty_apps() == []
    assert [s.app for s in store.apps()] == sorted(APPS, key=str)
    assert store.forget(APPS[1])
    assert APPS[1] not in [s.app for s in store.apps()]
    assert redis_client.hvals(keys.JOBS).count(str(APPS[1])) == 0
    assert not store.forget(APPS[1])
    assert store.add_observations(APPS[1], groups[APPS[1]]) == 0  # its old runs stay forgotten
    assert store.age_out() == 0


def test_the_fenced_decision_write_and_the_lease_on_a_cluster(cluster_url: str) -> None:
    """lease.lua (both lease keys) and the daemon's fenced MULTI (WATCH the lease, then the
    once-guard and the stream) each stay in one slot, so both work on a cluster."""

    def client() -> redis.Redis:
        return connect(cluster_url)

    first, second = Lease(client, ttl_s=5.0, holder="a"), Lease(client, ttl_s=5.0, holder="b")
    assert first.acquire()
    assert not second.acquire()
    assert first.renew()
    recorder = DecisionRecorder(client)
    recorder.fence = first
    docs = [DecisionRecord(job_id=7, submit_time=1_700_000_000, app=str(APPS[0]), nodes=4)]
    assert recorder.record(docs) == 1
    assert recorder.record(docs) == 0  # once per job
    first.release()
    assert second.acquire()
    assert second.token is not None
    assert first.last_grant is not None
    assert second.token > first.last_grant.token
    recorder.fence = first  # the old holder's fenced write is refused, nothing is written
    assert recorder.record([DecisionRecord(job_id=8, submit_time=1, app="", nodes=2)]) == 0
    store = CurveStore(client())
    assert [d.record.job_id for d in store.decisions()] == [7]


def test_the_migration_copies_across_slots(redis_client: Any, tmp_path: Path) -> None:
    """v1 keys (no tags) and their v2 names lie in different slots: the cluster migration
    copies them from the client, keeps v1, and skips what v2 has when run again."""
    store = CurveStore(redis_client, clock=lambda: NOW)
    store.add_observations(APPS[0], runs(APPS[0], 100))
    refit_app(store, APPS[0])
    store.advance_watermark("sacct", NOW - 5)
    redis_client.set(keys.decided(7, 17), "1", ex=3600)
    before = (store.observations(APPS[0]), store.curve_record(APPS[0]), store.watermark("sacct"))
    v2_keys = list(redis_client.scan_iter(match=keys.PREFIX + "*"))
    for name in v2_keys:  # rename to the v1 name, across slots: DUMP, RESTORE, DEL
        rest = name[len(keys.PREFIX) :]
        if rest.startswith("app:{"):
            app, _, tail = rest[len("app:{") :].partition("}:")
            old = f"{keys.V1_PREFIX}app:{app}:{tail}"
        else:
            old = keys.V1_PREFIX + name[len(keys.GLOBAL) :]
        ttl = redis_client.pttl(name)
        redis_client.restore(old, max(ttl, 0), redis_client.dump(name))
        redis_client.delete(name)
    v1 = len(v2_keys)
    result = migrate(redis_client)
    assert (result.found, result.copied, result.skipped, result.unmapped) == (v1, v1, 0, 0)
    after = CurveStore(redis_client, clock=lambda: NOW)
    assert (
        after.observations(APPS[0]),
        after.curve_record(APPS[0]),
        after.watermark("sacct"),
    ) == before
    assert 0 < redis_client.ttl(keys.decided(7, 17)) <= 3600
    assert len(list(redis_client.scan_iter(match=keys.V1_PREFIX + "*"))) == v1  # v1 kept
    again = migrate(redis_client)
    assert (again.copied, again.skipped) == (0, v1)


def test_the_cli_reads_the_cluster(redis_client: Any, cluster_url: str, tmp_path: Path) -> None:
    store = CurveStore(redis_client, clock=lambda: NOW)
    store.add_observations(APPS[2], runs(APPS[2], 700))
    refit_app(store, APPS[2])
    done = subprocess.run(  # noqa: S603 - our CLI, a fixed argument list
        [str(PROJECT_ROOT / ".venv" / "bin" / "adaptalloc"), "apps", "--format", "json",
         "--redis-url", cluster_url],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert str(APPS[2]) in done.stdout


def test_scripts_a_master_forgot_are_loaded_again(redis_client: Any) -> None:
    """A master that restarted (or was promoted) has no scripts: the pipelined calls meet
    NOSCRIPT, and the store loads them on every master and runs the calls again."""
    store = CurveStore(redis_client, clock=lambda: NOW)
    redis_client.execute_command("SCRIPT FLUSH", target_nodes=RedisCluster.PRIMARIES)
    assert store.add_batch({app: runs(app, 100 + 100 * i) for i, app in enumerate(APPS)}).added
    assert sorted(store.dirty_apps(), key=str) == sorted(APPS, key=str)
    assert store.age_out() == 0
