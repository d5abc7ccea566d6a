"""Mixed problem sizes as `adaptalloc app` and `adaptalloc report` show them,
from a curve the learner fitted and stored in a real (private) redis-server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.learning.learner import refit_app
from plugin.store.curves import CurveStore, Observation, Retention

from .testbed import PrivateRedis, adaptalloc

pytestmark = pytest.mark.integration

NOW = 1_800_000_000.0
KEY = AppKey("solver", None)
ADVICE = 'adaptalloc:v1 app=NAME size=large"'


def runtime(n: int) -> float:
    return 3600.0 * (0.04 + 0.96 / n)


@pytest.fixture
def mixed_store(private_redis: PrivateRedis) -> str:
    """One app key whose runs are two problem sizes, the large one taking twice as long."""
    import redis  # noqa: PLC0415 - only integration tests need redis-py

    private_redis.start()
    client: Any = redis.Redis.from_url(private_redis.url, decode_responses=True)
    store = CurveStore(client, Retention(max_observations=500, max_age_s=None))
    runs = [
        Observation(f"{100 + i}", KEY, n, runtime(n) * (2.0 if i % 2 else 1.0), NOW - 1e4 + i)
        for i, n in enumerate(n for n in (1, 2, 4, 8, 16, 32) for _ in range(2))
    ]
    store.add_observations(KEY, runs)
    assert refit_app(store, KEY).status == "written"
    client.close()
    return private_redis.url


def ok(proc: Any) -> str:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out: str = proc.stdout
    return out


def test_app_shows_the_mixed_sizes_advice(mixed_store: str, tmp_path: Path) -> None:
    text = ok(adaptalloc("app", str(KEY), cwd=tmp_path, redis_url=mixed_store))
    assert "mixed_sizes" in text  # the reliable cell names the problem
    assert "differ by a factor 2" in " ".join(text.split())
    assert ADVICE in " ".join(text.split())


def test_report_text_and_json_carry_the_entry(mixed_store: str, tmp_path: Path) -> None:
    text = ok(adaptalloc("report", str(KEY), cwd=tmp_path, redis_url=mixed_store))
    assert ADVICE in " ".join(text.split())
    doc = json.loads(
        ok(adaptalloc("report", str(KEY), "--format", "json", cwd=tmp_path, redis_url=mixed_store))
    )
    # The report's warnings are (problem, action, suggest_n); the ratio is in the action.
    found = [r for r in _reliability(doc) if r.get("problem") == "mixed_sizes"]
    assert len(found) == 1, doc
    assert "differ by a factor 2" in found[0]["action"]
    assert ADVICE in found[0]["action"]
    assert found[0]["suggest_n"] is None


def _reliability(doc: Any) -> list[dict[str, Any]]:
    """Every dict under a "reliability" key anywhere in the report document."""
    out: list[dict[str, Any]] = []
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("reliability"), list):
                out += [r for r in item["reliability"] if isinstance(r, dict)]
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
    return out


def test_the_html_page_carries_the_advice(mixed_store: str, tmp_path: Path) -> None:
    site = tmp_path / "site"
    ok(adaptalloc("report", str(KEY), "--html", str(site), cwd=tmp_path, redis_url=mixed_store))
    pages = "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))
    assert "not reliable: mixed_sizes" in pages
    assert "size=large" in pages


def test_the_fleet_view_names_the_problem_in_words(mixed_store: str, tmp_path: Path) -> None:
    text = ok(adaptalloc("report", "--all", cwd=tmp_path, redis_url=mixed_store))
    assert "no: mixed sizes" in " ".join(text.split())
