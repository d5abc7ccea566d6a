"""Corrupt store documents in the real Redis: the readers skip them, count them, say so.

Each case writes one good app (lu, fitted from a real study) and one corrupt document
beside it, then runs ``report``, ``apps``, ``app`` and ``decisions`` as subprocesses: each
must exit 0, still show the good data, and log ``store_records_skipped`` with the count
on stderr. Before, every case here ended in exit 70 with an internal error.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.learning.learner import refit_app
from plugin.store import keys
from plugin.store.curves import CurveStore, Observation, Retention
from plugin.store.decisions import DecisionRecord

from .testbed import adaptalloc

pytestmark = pytest.mark.integration

LU = AppKey("lu")
GOOD = AppKey("good")
NOW = 1_800_000_000.0
DEEP = "[" * 5000 + "]" * 5000  # json.loads raises RecursionError on it


def _seed(client: Any) -> CurveStore:
    store = CurveStore(client, Retention(max_observations=500, max_age_s=None))
    for app in (LU, GOOD):
        runs = [
            Observation(f"{app.name}{n}", app, n, 100.0 * (0.05 + 0.95 / n), NOW - 100 + n)
            for n in (1, 2, 4, 8, 16)
        ]
        store.add_observations(app, runs)
        assert refit_app(store, app).status == "written"
        store.record_decision(
            DecisionRecord(job_id=7, app=str(app), min_nodes=1, max_nodes=8, nodes=4)
        )
    return store


def _skipped(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    events = [json.loads(line) for line in proc.stderr.splitlines()]
    found = [e for e in events if e["event"] == "store_records_skipped"]
    assert len(found) == 1, proc.stderr
    event: dict[str, Any] = found[0]
    return event


CASES: dict[str, tuple[str, tuple[str, str | None], str]] = {
    # name: (redis command, (key, field), kind skipped)
    "curve garbage": ("hset", (keys.app_curve(LU), "curve"), "curves"),
    "curve a list": ("hset", (keys.app_curve(LU), "curve"), "curves"),
    "curve too deep": ("hset", (keys.app_curve(LU), "curve"), "curves"),
    "curve version": ("hset", (keys.app_curve(LU), "version"), "curves"),
    "observation a list": ("hset", (keys.app_observations(LU), "lu99"), "observations"),
    "observation 1e999": ("hset", (keys.app_observations(LU), "lu98"), "observations"),
    "observation too deep": ("hset", (keys.app_observations(LU), "lu97"), "observations"),
    "decision garbage": ("xadd", (keys.DECISIONS, None), "decisions"),
    "decision a list": ("xadd", (keys.DECISIONS, None), "decisions"),
    "decision too deep": ("xadd", (keys.DECISIONS, None), "decisions"),
}
VALUES = {
    "curve garbage": "{not json",
    "curve a list": "[1, 2]",
    "curve too deep": DEEP,
    "curve version": "abc",
    "observation a list": "[1]",
    "observation 1e999": '{"n": 1e999, "t": 1, "e": 1}',
    "observation too deep": DEEP,
    "decision garbage": "{garbage",
    "decision a list": "[1, 2, 3]",
    "decision too deep": DEEP,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_corrupt_documents_are_skipped_counted_and_reported(
    redis_client: Any, tmp_path: Path, case: str
) -> None:
    _seed(redis_client)
    command, (key, field), kind = CASES[case]
    if command == "hset":
        redis_client.hset(key, field, VALUES[case])
    else:
        redis_client.xadd(key, {"app": str(LU), "job_id": "8", "doc": VALUES[case]})

    runs = {
        "report lu": adaptalloc("report", "lu", "--format", "json", cwd=tmp_path),
        "report --all": adaptalloc("report", "--all", "--format", "json", cwd=tmp_path),
        "apps": adaptalloc("apps", "--format", "json", cwd=tmp_path),
        "app lu": adaptalloc("app", "lu", "--format", "json", cwd=tmp_path),
        "decisions": adaptalloc("decisions", "--format", "json", cwd=tmp_path),
    }
    reads_it = {
        "curves": ("report lu", "report --all", "apps", "app lu"),
        "observations": ("report lu", "report --all", "app lu"),
        "decisions": ("report lu", "report --all", "app lu", "decisions"),
    }[kind]
    for name, proc in runs.items():
        assert proc.returncode == 0, (name, proc.stderr)
        assert "Traceback" not in proc.stderr
        json.loads(proc.stdout)  # one JSON document, the good records in it
        if name in reads_it:
            event = _skipped(proc)
            assert event[kind] >= 1, (name, event)
            assert event["level"] == "warning"
    apps = json.loads(runs["apps"].stdout)["apps"]
    good = next(a for a in apps if a["app"] == str(GOOD))
    assert good["curve"] is not None
