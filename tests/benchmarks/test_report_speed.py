"""Speed of ``adaptalloc report`` for a fleet of apps in the real Redis (scratch db 15): 2,000
apps in the full run (``ADAPTALLOC_FULL_BENCH=1``, ~3 minutes here), 500 in the quick mode
(the default, what CI runs; the per-app figures are the same measure on fewer apps).

The fleet: synthetic apps with 6-20 runs each (Downey-like runtimes with noise, one
app in ten with a job array), a curve each (the learner's, fitted once per template of
runs and stored through the store's API), and 20,000 decisions in the stream. Printed:

* the CLI end to end: ``report --all --html`` (with the envelope band, the default),
  ``--no-band``, and ``--format csv`` — apps per second;
* where the time goes, per app: reading from Redis, assembling (with and without the
  band's refit), rendering the page, and the terminal report of one app;
* one speedup plot written by hand (svg.py) against the same plot from matplotlib's SVG
  backend, side by side — why the report writes its own SVG.

Only correctness is asserted (a page and an index row per app); the figures depend on the
machine.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from integration.testbed import adaptalloc
from rich.console import Console
from rich.table import Table

import predictor
from plugin.appkey import AppKey
from plugin.learning.learner import curve_from_fit
from plugin.report import app_inputs, assemble, fleet_inputs, render_app, render_app_page
from plugin.report.model import AppReport
from plugin.report.svg import speedup_plot
from plugin.store.curves import CurveStore, Observation, Retention
from plugin.store.decisions import DecisionRecord

from .results import full_run, mode_note

pytestmark = [pytest.mark.benchmark, pytest.mark.integration, pytest.mark.slow]

FULL = full_run()
APPS = 2_000 if FULL else 500
DECISIONS = 10 * APPS
TEMPLATES = 20
#: Apps timed step by step (the CLI runs cover the whole fleet).
SAMPLE = 200 if FULL else 100
SIZES = np.array([1, 2, 4, 8, 16, 32, 64])
NOW = 1_800_000_000.0


def fleet(store: CurveStore, seed: int = 11) -> None:
    """Store APPS apps, their curves and DECISIONS decisions (see the module docstring)."""
    rng = np.random.default_rng(seed)
    templates: list[tuple[Any, Any, predictor.Curve]] = []
    for k in range(TEMPLATES):
        A = 6.0 + 6.0 * k
        sizes = SIZES[rng.integers(0, 2) :]
        t = 3600.0 * np.maximum(1 / sizes, 1 / A) * (1 + sizes / (6 * A))
        t = t * rng.lognormal(0.0, 0.03, sizes.size)
        curve = curve_from_fit(predictor.fit_observations(predictor.prepare(sizes, t)))
        templates.append((sizes, t, curve))
    job = 1_000_000
    groups: dict[AppKey, list[Observation]] = {}
    for a in range(APPS):
        app = AppKey(f"app{a:04d}")
        sizes, t, _ = templates[a % TEMPLATES]
        runs = []
        for _ in range(int(rng.integers(1, 4))):
            for n, base in zip(sizes, t, strict=True):
                if rng.random() < 0.85:
                    runs.append(
                        Observation(str(job), app, int(n), base * rng.lognormal(0, 0.04), NOW + job)
                    )
                job += 1
        if a % 10 == 0:
            runs += [
                Observation(f"{job}_{k}", app, 8, float(t[3]) * rng.lognormal(0, 0.02), NOW + k)
                for k in range(8)
            ]
            job += 1
        groups[app] = runs
    store.add_batch(groups)
    for a, app in enumerate(groups):
        snapshot = store.refit_input(app)
        assert snapshot is not None
        store.save_curve(
            app,
            templates[a % TEMPLATES][2],
            snapshot.obs_version,
            n_observations=len(snapshot.observations),
            method="adept",
        )
    for d in range(DECISIONS):
        high = int(rng.choice([16, 32, 64, 128]))
        store.record_decision(
            DecisionRecord.from_dict(
                {
                    "job_id": 5_000_000 + d,
                    "app": f"app{d % APPS:04d}",
                    "min_nodes": 2,
                    "max_nodes": high,
                    "nodes": int(rng.integers(2, high + 1)),
                    "rule": "efficiency",
                    "reason": "efficiency above 50%",
                    "status": "released",
                }
            )
        )


def cli(*args: str, cwd: Path) -> float:
    """Run the CLI on the scratch database; returns the wall time in seconds."""
    started = time.perf_counter()
    proc = adaptalloc(*args, cwd=cwd, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return time.perf_counter() - started


def per_call(fn: Callable[[], Any], repeat: int) -> float:
    """Mean seconds per call."""
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat


def matplotlib_speedup_svg(report: AppReport) -> str:
    """The same speedup plot drawn with matplotlib's SVG backend (for comparison only)."""
    import matplotlib  # noqa: PLC0415 - a dev dependency, for this comparison

    matplotlib.use("svg")
    from matplotlib import pyplot as plt  # noqa: PLC0415

    assert report.grid is not None
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    try:
        if report.band is not None:
            ax.fill_between(report.band.n, report.band.speedup_lo, report.band.speedup_hi,
                            alpha=0.16)  # fmt: skip
        ax.plot(report.grid.n, report.grid.speedup, lw=2.5)
        ax.plot(report.grid.n, report.grid.n, ls=":", color="grey")
        ax.scatter([p.n for p in report.points], [p.speedup for p in report.points], s=16)
        if report.curve is not None:
            ax.axvline(report.curve.pws_n, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, max(report.grid.speedup) * 1.15)
        ax.set_xlabel("nodes")
        ax.set_ylabel("speedup")
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        return buffer.getvalue()
    finally:
        plt.close(fig)


def test_report_speed_for_a_fleet(redis_client: Any, tmp_path: Path) -> None:
    store = CurveStore(redis_client, Retention(max_observations=500, max_age_s=None))
    started = time.perf_counter()
    fleet(store)
    seeded = time.perf_counter() - started

    html_s = cli("report", "--all", "--html", str(tmp_path / "site"), cwd=tmp_path)
    pages = sorted((tmp_path / "site").glob("app-*.html"))
    assert len(pages) == APPS
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert index.count("<tr class=") == APPS
    html_fast_s = cli(
        "report", "--all", "--html", str(tmp_path / "fast"), "--no-band", cwd=tmp_path
    )
    csv_s = cli("report", "--all", "--format", "csv", cwd=tmp_path)

    # Step by step, on a sample.
    started = time.perf_counter()
    total, stream = fleet_inputs(store)
    fleet_query_s = time.perf_counter() - started  # every summary and the decision stream
    started = time.perf_counter()
    inputs = [next(stream) for _ in range(SAMPLE)]
    query_s = (time.perf_counter() - started) / SAMPLE  # each app's runs
    assert total == APPS
    with_band = per_call(lambda: [assemble(i) for i in inputs], 1) / SAMPLE
    reports = [assemble(i) for i in inputs]
    without_band = per_call(lambda: [assemble(i, band=False) for i in inputs], 1) / SAMPLE
    page_s = per_call(lambda: [render_app_page(r) for r in reports], 1) / SAMPLE
    one = app_inputs(store, AppKey("app0010"))
    assert one is not None

    def terminal() -> None:
        out = io.StringIO()
        render_app(assemble(one, band=False), Console(file=out, width=120))

    terminal_s = per_call(terminal, 20)
    svg_s = per_call(lambda: speedup_plot(reports[0]), 200)
    mpl_s = per_call(lambda: matplotlib_speedup_svg(reports[0]), 10)

    table = Table(
        title=f"adaptalloc report, {APPS:,} apps, {DECISIONS:,} decisions ({mode_note(FULL)})"
    )
    table.add_column("what")
    table.add_column("time", justify="right")
    table.add_column("rate", justify="right")
    rows = [
        ("seeding the scratch store (not the report)", seeded, None),
        ("CLI report --all --html (band)", html_s, APPS / html_s),
        ("CLI report --all --html --no-band", html_fast_s, APPS / html_fast_s),
        ("CLI report --all --format csv", csv_s, APPS / csv_s),
        ("read every summary and the decision stream", fleet_query_s, None),
        ("per app: read its runs from Redis", query_s, 1 / query_s),
        ("per app: assemble with the band (refit)", with_band, 1 / with_band),
        ("per app: assemble without the band", without_band, 1 / without_band),
        ("per app: render the HTML page (3 plots)", page_s, 1 / page_s),
        ("terminal report of one app (assemble + rich)", terminal_s, 1 / terminal_s),
        ("one speedup plot, hand-written SVG", svg_s, 1 / svg_s),
        ("one speedup plot, matplotlib SVG backend", mpl_s, 1 / mpl_s),
    ]
    for name, seconds, rate in rows:
        shown = f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.2f} ms"
        table.add_row(name, shown, "" if rate is None else f"{rate:,.0f}/s")
    Console(width=100).print(table)
