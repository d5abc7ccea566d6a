"""The v1 -> v2 key migration against the real redis-server (scratch db 15).

The v1 store is made the way v1 wrote it: a full cycle through the store (observations with
and without the new fields, a curve, a decision, a watermark, a decided guard with its TTL,
the guard's counts and a forgotten app's tombstone), then every key renamed to its v1 name.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.learning.learner import refit_app
from plugin.store import keys
from plugin.store.connection import connect
from plugin.store.curves import CurveStore, Observation, Retention
from plugin.store.decisions import DecisionRecord
from plugin.store.migrate import MigrationResult, migrate, migrate_if_needed, v2_name

from .daemon_harness import DaemonProcess
from .testbed import adaptalloc, scratch_url

pytestmark = pytest.mark.integration

NOW = 1_800_000_000.0
LULESH = AppKey("lulesh", "large")
CG = AppKey("cg", "1000")


def v1_name(v2_key: str) -> str:
    rest = v2_key[len(keys.PREFIX) :]
    if rest.startswith("app:{"):
        app, _, tail = rest[len("app:{") :].partition("}:")
        return f"{keys.V1_PREFIX}app:{app}:{tail}"
    assert v2_key.startswith(keys.GLOBAL), v2_key
    return keys.V1_PREFIX + v2_key[len(keys.GLOBAL) :]


def build_v1(client: Any) -> dict[str, Any]:
    """A v1 store (module docstring); returns what a reader sees, to compare after."""
    store = CurveStore(client, Retention(max_observations=50, max_age_s=None), clock=lambda: NOW)
    store.add_observations(
        LULESH,
        [Observation(str(100 + n), LULESH, n, 1000.0 / n + 20.0, NOW - n) for n in (1, 2, 4, 8)],
    )
    store.add_observations(
        CG,
        [
            Observation(str(200 + n), CG, n, 50.0 / n, NOW - n, size=1000.0, tasks=4 * n)
            for n in (1, 2, 4)
        ],
    )
    refit_app(store, LULESH)
    store.record_decision(DecisionRecord(job_id=7, app=str(LULESH), nodes=4))
    store.advance_watermark("sacct", NOW - 5)
    store.record_limit_raise(LULESH, {"job_id": 9}, growth=1.25, cap=4.0)
    client.set(keys.decided(7, 1_700_000_000), "1", ex=3600)
    gone = AppKey("old")
    store.add_observations(gone, [Observation("300", gone, 2, 5.0, NOW - 9)])
    store.forget(gone)
    seen = {
        "apps": [s.to_dict() for s in store.apps()],
        "lulesh": store.observations(LULESH),
        "cg": store.observations(CG),
        "curve": store.curve_record(LULESH),
        "decisions": [d.to_dict() for d in store.decisions()],
        "watermark": store.watermark("sacct"),
        "guard": store.guard_counts(LULESH),
    }
    for name in client.keys(keys.PREFIX + "*"):
        client.rename(name, v1_name(name))
    assert client.keys(keys.PREFIX + "*") == []
    return seen


def read_all(client: Any) -> dict[str, Any]:
    store = CurveStore(client, clock=lambda: NOW)
    return {
        "apps": [s.to_dict() for s in store.apps()],
        "lulesh": store.observations(LULESH),
        "cg": store.observations(CG),
        "curve": store.curve_record(LULESH),
        "decisions": [d.to_dict() for d in store.decisions()],
        "watermark": store.watermark("sacct"),
        "guard": store.guard_counts(LULESH),
    }


def test_key_names_map_to_the_tagged_schema() -> None:
    assert v2_name("adaptalloc:v1:app:lulesh@large:obs") == "adaptalloc:v2:app:{lulesh@large}:obs"
    assert v2_name("adaptalloc:v1:app:x:curve:gpu") == "adaptalloc:v2:app:{x}:curve:gpu"
    assert v2_name("adaptalloc:v1:apps") == "adaptalloc:v2:{global}:apps"
    assert v2_name("adaptalloc:v1:decided:7-17") == "adaptalloc:v2:{global}:decided:7-17"
    for bad in (
        "adaptalloc:v1:app:BAD KEY:obs",
        "adaptalloc:v1:app:x",
        "adaptalloc:v1:{x}",
        "other",
    ):
        assert v2_name(bad) is None


def test_migration_copies_v1_whole_keeps_it_and_is_idempotent(redis_client: Any) -> None:
    before = build_v1(redis_client)
    v1 = sorted(redis_client.keys(keys.V1_PREFIX + "*"))
    ticks: list[tuple[int, int]] = []
    result = migrate(redis_client, progress=lambda done, total: ticks.append((done, total)))
    assert (result.found, result.copied, result.skipped, result.unmapped) == (
        len(v1),
        len(v1),
        0,
        0,
    )
    assert ticks[-1] == (len(v1), len(v1))
    assert read_all(redis_client) == before
    assert sorted(redis_client.keys(keys.V1_PREFIX + "*")) == v1  # v1 kept
    # TTLs survive: the decided guard and the tombstone still expire.
    assert 0 < redis_client.ttl(keys.decided(7, 1_700_000_000)) <= 3600
    assert 0 < redis_client.ttl(keys.app_forgotten(AppKey("old"))) <= 24 * 3600
    assert redis_client.hget(keys.MIGRATION, "state") == "done"
    again = migrate(redis_client)
    assert (again.copied, again.skipped) == (0, len(v1))
    assert read_all(redis_client) == before
    assert migrate_if_needed(redis_client) is None  # done: nothing to do at start


def test_an_interrupted_migration_resumes_at_start(redis_client: Any) -> None:
    before = build_v1(redis_client)
    migrate(redis_client)
    # A crash halfway: some v2 keys missing, the record still says running.
    missing = [keys.app_observations(CG), keys.APPS, keys.app_curve(LULESH)]
    redis_client.delete(*missing)
    redis_client.hset(keys.MIGRATION, "state", "running")
    result = migrate_if_needed(redis_client)
    assert result is not None
    assert result.copied == len(missing)
    assert read_all(redis_client) == before


def test_automatic_migration_only_into_an_empty_v2(redis_client: Any) -> None:
    build_v1(redis_client)
    redis_client.zadd(keys.APPS, {"newer": NOW})  # v2 already in use, no migration record
    assert migrate_if_needed(redis_client) is None
    assert redis_client.exists(keys.app_observations(LULESH)) == 0
    redis_client.delete(keys.APPS)
    assert migrate_if_needed(redis_client) is not None
    assert redis_client.exists(keys.app_observations(LULESH)) == 1


def test_a_key_that_is_not_adaptalloc_s_is_left_in_v1_and_counted(redis_client: Any) -> None:
    redis_client.set("adaptalloc:v1:app:BAD KEY:obs", "x")
    redis_client.set("adaptalloc:v1:jobs", "y")
    result = migrate(redis_client)
    assert (result.copied, result.unmapped) == (1, 1)
    assert redis_client.get("adaptalloc:v1:app:BAD KEY:obs") == "x"


def test_store_migrate_command(redis_client: Any, tmp_path: Path) -> None:
    before = build_v1(redis_client)
    proc: subprocess.CompletedProcess[str] = adaptalloc(
        "store", "migrate", "--format", "json", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["state"] == "done"
    assert doc["copied"] == doc["found"] > 0
    assert doc["v1_kept"] is True
    assert read_all(redis_client) == before
    text = adaptalloc("store", "migrate", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "0 copied" in text.stdout
    assert "the v1 keys are kept" in text.stdout


def test_a_store_without_v1_is_scanned_once(redis_client: Any) -> None:
    assert migrate_if_needed(redis_client) is None
    assert redis_client.hgetall(keys.MIGRATION) == {"state": "done", "found": "0"}
    # Later v1 keys (restored from a backup) need the command; the start no longer scans.
    redis_client.set("adaptalloc:v1:jobs", "x")
    assert migrate_if_needed(redis_client) is None
    assert migrate(redis_client).copied == 1


def test_two_starts_at_once_copy_every_key_once(redis_client: Any) -> None:
    # Two HA daemons starting together: both migrate, each key is copied by one of them.
    before = build_v1(redis_client)
    found = len(redis_client.keys(keys.V1_PREFIX + "*"))
    clients = [connect(scratch_url(), check=True) for _ in range(2)]
    start = threading.Barrier(2)
    results: list[MigrationResult | None] = [None, None]

    def run(k: int) -> None:
        start.wait()
        results[k] = migrate_if_needed(clients[k])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    done = [r for r in results if r is not None]
    assert done  # at least one migrated; the other found it done, or joined the pass
    assert sum(r.copied for r in done) == found
    assert all(r.copied + r.skipped + r.gone == found for r in done)
    assert read_all(redis_client) == before
    assert redis_client.hget(keys.MIGRATION, "state") == "done"
    for client in clients:
        client.close()


class _ReadBeforeTheOtherBegan:
    """The real client, except that the first read of the migration record answers what it
    held before another start's pass began (nothing): the interleaving of two starts where
    one reads the record, the other writes "running" and copies the index, then the first
    sees the index."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._stale = True

    def hget(self, name: str, key: str) -> Any:
        if self._stale and name == keys.MIGRATION:
            self._stale = False
            return None
        return self._client.hget(name, key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_start_that_sees_another_pass_begin_joins_it(redis_client: Any) -> None:
    before = build_v1(redis_client)
    migrate(redis_client)
    # The other start is halfway: record "running", the index copied, an app's runs not yet.
    redis_client.delete(keys.app_observations(CG))
    redis_client.hset(keys.MIGRATION, "state", "running")
    # Before, this start took the index for v2 data no migration wrote, warned and went on
    # reading a v2 without cg's runs.
    result = migrate_if_needed(_ReadBeforeTheOtherBegan(redis_client))  # type: ignore[arg-type]
    assert result is not None
    assert result.copied == 1
    assert read_all(redis_client) == before


def test_the_daemon_migrates_at_start_without_its_learner(
    redis_client: Any, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    # A site upgrading with `daemon --no-learn`: before, only the learner migrated, and this
    # daemon read an empty v2 for ever.
    before = build_v1(redis_client)
    daemon = daemon_factory(args=("--no-learn",)).start()
    assert redis_client.hget(keys.MIGRATION, "state") == "done"
    assert read_all(redis_client) == before
    assert daemon.stop() == 0
