"""A large import against the real Redis: no script call grows with the input, and an
import that fails midway leaves no key outside the indexes and completes when run again.

How many rows each script call received is read from Redis' own SLOWLOG (slowlog.py); the
failures are real Redis conditions: a key of the wrong type under the dirty index (the
third step of the first chunk fails) and ``maxmemory`` reached partway (whichever step
writes next fails, before writing anything: Redis refuses a script's first write when out
of memory). The time each call took is printed by tests/benchmarks/test_store_scripts.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.store import keys
from plugin.store.connection import StoreError, connect
from plugin.store.curves import SCRIPT_ROWS, CurveStore, Retention

from .slowlog import recording
from .testbed import PrivateRedis

pytestmark = pytest.mark.integration
APP = AppKey("bulk")


def study(path: Path, rows: int, sizes: int = 1) -> Path:
    """An observation CSV of `rows` distinct runs (over `sizes` problem sizes: one app each
    when imported under a bare name)."""
    if sizes == 1:
        lines = ["n,runtime", *(f"{1 + i % 64},{100.0 + i * 0.001:.3f}" for i in range(rows))]
    else:
        lines = ["n,runtime,size"]
        lines += [f"{1 + i % 64},{100.0 + i * 0.001:.3f},{1000 * (1 + i % sizes)}"
                  for i in range(rows)]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def orphans(client: Any) -> list[str]:
    """Apps with keys but no entry in the app index, and each indexed app's problems."""
    indexed = set(client.zrange(keys.APPS, 0, -1))
    found = set()
    for key in client.scan_iter("adaptalloc:v2:app:{*}:*"):
        found.add(key[len("adaptalloc:v2:app:{") : key.index("}")])
    problems = [f"{app}: keys but not indexed" for app in sorted(found - indexed)]
    store = CurveStore(client)
    for app in sorted(indexed):
        problems += [f"{app}: {p}" for p in store.check(AppKey.parse(app))]
    return problems


def apps_and_runs(client: Any) -> dict[str, list[str]]:
    """Each indexed app's stored job ids."""
    apps: list[str] = client.zrange(keys.APPS, 0, -1)
    return {a: sorted(client.hkeys(keys.app_observations(AppKey.parse(a)))) for a in apps}


def test_each_script_call_gets_a_bounded_number_of_rows(redis_client: Any, tmp_path: Path) -> None:
    store = CurveStore(redis_client, Retention(max_observations=500, max_age_s=None))
    rows = 5 * SCRIPT_ROWS + 17
    with recording(redis_client) as calls:
        result = import_csv(store, study(tmp_path / "big.csv", rows), APP)
    assert result.stats.seen == rows
    by_script = {
        "claim": (store._claim.sha, 2),  # app, n, then the ids: one app here
        "add": (store._add.sha, 3),  # now, cap, oldest, then triples
        "index": (store._index.sha, 1 + 5),  # now, one app's group header, then released ids
    }
    for name, (sha, fixed) in by_script.items():
        counts = [c.argc for c in calls if c.sha == sha]
        assert counts, f"no {name} call recorded"
        per_row = 3 if name == "add" else 1
        assert max((argc - fixed) // per_row for argc in counts) <= SCRIPT_ROWS, (name, counts)
    assert len([c for c in calls if c.sha == store._add.sha]) == 6  # 5 full chunks and the rest
    assert store.summary(APP).observations == 500  # type: ignore[union-attr]
    assert orphans(redis_client) == []


def test_an_import_failing_at_the_index_step_leaves_no_orphan_and_completes_on_retry(
    redis_client: Any, tmp_path: Path
) -> None:
    store = CurveStore(redis_client, Retention(max_observations=10_000, max_age_s=None))
    path = study(tmp_path / "study.csv", 3 * SCRIPT_ROWS)
    redis_client.set(keys.DIRTY, "not a sorted set")  # index_app.lua fails on it
    with pytest.raises(StoreError):
        import_csv(store, path, APP)
    assert orphans(redis_client) == []
    assert redis_client.hlen(keys.app_observations(APP)) == SCRIPT_ROWS  # chunk 1 written
    redis_client.delete(keys.DIRTY)
    again = import_csv(store, path, APP)
    assert (again.stats.added, again.stats.duplicates) == (2 * SCRIPT_ROWS, SCRIPT_ROWS)
    assert store.summary(APP).observations == 3 * SCRIPT_ROWS  # type: ignore[union-attr]
    assert store.dirty_apps() == [APP]
    assert orphans(redis_client) == []


def test_an_import_out_of_memory_midway_completes_on_retry(
    private_redis: PrivateRedis, tmp_path: Path
) -> None:
    """Many apps (one per problem size), so the store grows with every chunk until Redis
    refuses writes; the retry, with memory again, ends where an import that never failed
    ends (the same apps, the same runs)."""
    private_redis.start()
    client = connect(private_redis.url)
    raw = redis.Redis.from_url(private_redis.url, decode_responses=True)
    retention = Retention(max_observations=100_000, max_age_s=None)
    path = study(tmp_path / "sizes.csv", 20 * SCRIPT_ROWS, sizes=40)
    used = int(raw.info("memory")["used_memory"])
    raw.config_set("maxmemory-policy", "noeviction")
    raw.config_set("maxmemory", used + 2_000_000)  # about a third of the import
    with pytest.raises(StoreError, match=r"(?i)oom|memory"):
        import_csv(CurveStore(client, retention), path, APP)
    partial = sum(raw.hlen(k) for k in raw.scan_iter("adaptalloc:v2:app:{*}:obs"))
    assert 0 < partial < 20 * SCRIPT_ROWS  # it failed midway
    raw.config_set("maxmemory", 0)  # (MULTI, which check() reads with, is refused when full)
    assert orphans(raw) == []
    again = import_csv(CurveStore(client, retention), path, APP)
    assert again.stats.added == 20 * SCRIPT_ROWS - partial
    after = apps_and_runs(raw)
    raw.flushdb()
    import_csv(CurveStore(client, retention), path, APP)
    clean = apps_and_runs(raw)
    assert after == clean
    assert len(clean) == 40
    assert orphans(raw) == []
