"""``adaptalloc report`` against the real Redis (scratch db 15), run as a subprocess.

Apps go in through the store's own API (observations, `refit_app`, `record_decision`) and
through ``adaptalloc import csv``; the report's figures are checked against the curve the
store returns for the same app.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.testing import assert_allclose

from plugin.appkey import AppKey
from plugin.learning.learner import refit_app
from plugin.store.curves import CurveStore, Observation, Retention
from plugin.store.decisions import DecisionRecord

from .testbed import PROJECT_ROOT, adaptalloc

pytestmark = pytest.mark.integration

LU_CSV = PROJECT_ROOT / "tests" / "data" / "scaling" / "lan_thesis_npb_lu_W.csv"
NOW = 1_800_000_000.0
LULESH = AppKey("lulesh", "large")
HOSTILE_REASON = "<script>document.title='x'</script> \x1b[31m \"quoted\""
FORMULA_RULE = '=HYPERLINK("http://example.invalid","click")'


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def runtime(n: int) -> float:
    """A Downey-like application: A ≈ 20, T(1) = 1 h."""
    return 3600.0 * (0.04 + 0.96 / n) if n <= 24 else 3600.0 * (0.04 + 0.96 / 24)


@pytest.fixture
def store(redis_client: Any) -> CurveStore:
    """The scratch store with lulesh@large (runs, an array, a curve, decisions) and LU."""
    store = CurveStore(redis_client, Retention(max_observations=500, max_age_s=None))
    runs = [
        Observation(str(2000 + i), LULESH, n, runtime(n) * (1 + 0.01 * (i % 3)), NOW - 1e4 + i)
        for i, n in enumerate((1, 2, 4, 8, 16, 32, 64, 2, 8, 32))
    ]
    runs += [Observation(f"3000_{k}", LULESH, 8, runtime(8) + k, NOW - 5e3 + k) for k in range(6)]
    store.add_observations(LULESH, runs)
    assert refit_app(store, LULESH).status == "written"
    for k, (low, high, nodes) in enumerate([(2, 64, 16), (4, 64, 24), (2, 32, None)]):
        store.record_decision(
            DecisionRecord.from_dict(
                {
                    "job_id": 2000 + k,  # the first runs: their rows in --per-job carry it
                    "app": str(LULESH),
                    "min_nodes": low,
                    "max_nodes": high,
                    "time_limit_min": 120,
                    "action": "keep" if nodes is None else "resize",
                    "nodes": nodes,
                    "new_time_limit_min": None if nodes is None else 45,
                    "rule": FORMULA_RULE if k == 0 else "efficiency",
                    "reason": HOSTILE_REASON,
                    "status": "released",
                    "decided_at": NOW - 100 + k,
                }
            )
        )
    store.record_decision(DecisionRecord(job_id=9, app="other", nodes=4, rule="pws"))
    return store


def test_one_app_as_text(store: CurveStore, tmp_path: Path) -> None:
    text = ok(adaptalloc("report", str(LULESH), cwd=tmp_path))
    curve = store.curve(LULESH)
    assert curve is not None
    assert text.startswith("lulesh@large: 16 runs")
    assert f"Processor working set: {curve.pws_n:,} nodes" in text
    assert "job arrays and groups" in text
    assert "3000" in text
    assert "newest 3 decisions" in text
    assert "2-32 → as is" in text
    assert "\x1b" not in text


def test_one_app_as_json_has_the_stores_curve(store: CurveStore, tmp_path: Path) -> None:
    doc = json.loads(ok(adaptalloc("report", str(LULESH), "--format", "json", cwd=tmp_path)))
    curve = store.curve(LULESH)
    assert curve is not None
    n = np.array([s["n"] for s in doc["sizes"]], dtype=float)
    assert_allclose([s["speedup"] for s in doc["sizes"]], curve.speedup(n), rtol=1e-9)
    assert_allclose([s["efficiency"] for s in doc["sizes"]], curve.efficiency(n), rtol=1e-9)
    grid = np.array(doc["curve_points"]["n"], dtype=float)
    assert_allclose(doc["curve_points"]["speedup"], curve.speedup(grid), rtol=1e-9)
    assert doc["curve"]["pws_n"] == curve.pws_n
    assert doc["curve"]["max_useful_n"] == curve.max_useful_n
    assert doc["band"] is not None
    # At least the fitted instance. Since an observed T(1) is one more observation rather than
    # the fixed scale, ADEPT's minimal δ on these near-exact runs is met by about one instance
    # only, so the band is (nearly) the curve itself: a known limit of drawing the envelope at
    # δ, noted for the next change to the band (a prediction interval would show more).
    assert doc["band"]["instances"] >= 1
    # The savings are the curve's node-hours at the requested maximum minus at the chosen size.
    summary = doc["decision_summary"]
    assert (summary["count"], summary["as_submitted"], summary["estimated"]) == (3, 1, 2)
    expected = sum(
        (high * float(curve.runtime(high)) - nodes * float(curve.runtime(nodes))) / 3600.0
        for high, nodes in ((64, 16), (64, 24))
    )
    assert summary["node_hours_saved"] == pytest.approx(expected, rel=1e-9)
    assert {d["reason"] for d in doc["decisions"]} == {HOSTILE_REASON}  # data, unaltered
    array = [g for g in doc["groups"] if g["kind"] == "array"]
    assert len(array) == 1
    assert array[0]["tasks"] == 6


def test_every_app_as_csv_and_per_job(store: CurveStore, tmp_path: Path) -> None:
    ok(adaptalloc("import", "csv", str(LU_CSV), "--app", "npb-lu", cwd=tmp_path))
    apps = list(csv.DictReader(io.StringIO(ok(adaptalloc("report", "--all", "--format", "csv",
                                                         cwd=tmp_path)))))  # fmt: skip
    assert [row["app"] for row in apps] == ["lulesh@large", "npb-lu"]
    assert apps[0]["decisions"] == "3"
    assert apps[1]["decisions"] == "0"
    assert apps[1]["reliable"] == "true"

    text = ok(adaptalloc("report", "--all", "--format", "csv", "--per-job", cwd=tmp_path))
    assert text.split("\r\n", 1)[0].startswith("app,group_id,kind,tasks")
    jobs = list(csv.DictReader(io.StringIO(text, newline="")))
    lulesh = [j for j in jobs if j["app"] == "lulesh@large"]
    assert sum(int(j["tasks"]) for j in lulesh) == 16
    assert [j["tasks"] for j in lulesh if j["kind"] == "array"] == ["6"]
    first = next(j for j in lulesh if j["first_job"] == "2000")
    assert first["rule"] == "'" + FORMULA_RULE  # guarded for spreadsheets
    assert (first["requested_min"], first["requested_max"]) == ("2", "64")

    doc = json.loads(ok(adaptalloc("report", "--all", "--format", "json", cwd=tmp_path)))
    assert [a["app"] for a in doc["apps"]] == ["lulesh@large", "npb-lu"]


def test_a_static_site_for_every_app(store: CurveStore, tmp_path: Path) -> None:
    site = tmp_path / "site"
    doc = json.loads(
        ok(adaptalloc("report", "--all", "--html", site, "--format", "json", cwd=tmp_path))
    )
    assert doc["html"]["pages"] == 1
    index = (site / "index.html").read_text(encoding="utf-8")
    page = (site / "app-lulesh@large.html").read_text(encoding="utf-8")
    assert 'href="app-lulesh%40large.html"' in index
    assert "<script>document.title" not in page
    assert (
        "&lt;script&gt;document.title=&#39;x&#39;&lt;/script&gt; \\x1b[31m &#34;quoted&#34;" in page
    )
    assert page.count("<svg") == 3

    # One app into the same site: its page is replaced and links back to the index.
    out = ok(adaptalloc("report", str(LULESH), "--html", site, cwd=tmp_path))
    assert out.strip() == f"wrote {site / 'app-lulesh@large.html'}"
    assert 'href="index.html"' in (site / "app-lulesh@large.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("report",), 2),
        (("report", "lulesh@large", "--all"), 2),
        (("report", "lulesh@large", "--per-job"), 2),
        (("report", "--all", "--html", "x", "--format", "csv"), 2),
        (("report", "bad name!"), 2),
        (("report", "nosuchapp"), 1),
    ],
)
def test_errors_are_one_line(
    store: CurveStore, tmp_path: Path, args: tuple[str, ...], code: int
) -> None:
    proc = adaptalloc(*args, cwd=tmp_path)
    assert proc.returncode == code, proc
    assert proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("{")]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("adaptalloc: error: ")


def test_the_guard_counts_and_censored_runs_in_report_and_app(
    store: CurveStore, tmp_path: Path
) -> None:
    store.record_limit_raise(LULESH, {"job_id": 2001, "from_min": 45, "to_min": 120}, 1.25, 4.0)
    store.count_for_guard(LULESH, "killed")
    stopped = Observation("4000", LULESH, 16, 2700.0, NOW - 50, "sacct")
    preempted = Observation("4001", LULESH, 32, 1200.0, NOW - 40, "sacct", preempted=True)
    assert store.add_censored({LULESH: [stopped, preempted]}) == 2
    doc = json.loads(ok(adaptalloc("report", str(LULESH), "--format", "json", cwd=tmp_path)))
    assert doc["guard"] == {
        "limits_raised": 1,
        "killed_at_our_limit": 1,
        "censored_runs": 2,
        "limit_safety": 1.25,
    }
    fleet = json.loads(ok(adaptalloc("report", "--all", "--format", "json", cwd=tmp_path)))
    [row] = [r for r in fleet["apps"] if r["app"] == str(LULESH)]
    assert (row["limits_raised"], row["killed_at_our_limit"], row["censored_runs"]) == (1, 1, 2)
    text = " ".join(ok(adaptalloc("report", str(LULESH), cwd=tmp_path)).split())
    assert "Jobs killed at a time limit adaptalloc set: 1 (should be 0)" in text
    app = json.loads(ok(adaptalloc("app", str(LULESH), "--format", "json", cwd=tmp_path)))
    assert app["guard"]["censored_runs"] == 2
    recent = [(r["job_id"], r["preempted"]) for r in app["recent_censored_runs"]]
    assert recent == [("4001", True), ("4000", False)]
    shown = " ".join(ok(adaptalloc("app", str(LULESH), cwd=tmp_path)).split())
    assert "censored 4000: at least 2700 s on 16 nodes" in shown
    assert "censored 4001: at least 1200 s on 32 nodes" in shown
    assert shown.count(", preempted") == 1


def test_the_cold_start_advice_judges_by_the_sites_policy(
    redis_client: Any, tmp_path: Path
) -> None:
    """A curve whose fit error (runs no Downey curve follows within 10%: 14%) the built-in
    max_fit_error refuses gets cold-start advice; under a site policy that accepts that error
    it gets none."""
    store = CurveStore(redis_client, Retention(max_observations=500, max_age_s=None))
    app = AppKey("coldfit")
    times = {1: 3600.0, 2: 2000.0, 4: 700.0, 8: 900.0, 16: 400.0}
    runs = [
        Observation(f"7000_{i}", app, n, t, NOW - 1e4 + i) for i, (n, t) in enumerate(times.items())
    ]
    store.add_observations(app, runs)
    assert refit_app(store, app).status == "written"
    built_in = json.loads(ok(adaptalloc("report", "coldfit", "--format", "json", cwd=tmp_path)))
    assert built_in["cold_start"]["condition"] == "fit_error"
    policy = tmp_path / "policy.toml"
    policy.write_text("[defaults]\nmax_fit_error = 0.3\n", encoding="utf-8")
    config = tmp_path / "adaptalloc.toml"
    config.write_text(f'[daemon]\npolicy_file = "{policy}"\n', encoding="utf-8")
    site = json.loads(
        ok(
            adaptalloc(
                "report", "coldfit", "--format", "json", "--config", str(config), cwd=tmp_path
            )
        )
    )
    assert site["cold_start"] is None
