"""plugin.report assembly: the figures are the predictor's, from the same observations.

Also the helpers the other test_report_* modules share (`make_inputs`, `curve_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from numpy.testing import assert_allclose

import predictor
from plugin.learning.learner import curve_from_fit
from plugin.report import assemble, fleet_row, size_grid
from plugin.report.model import AppInputs, Run
from plugin.store.decisions import DecisionRecord, StoredDecision
from predictor.band import envelope_band
from predictor.downey import relative_runtime_s
from predictor.objective import minimax_relative_error

SIZES = (2, 4, 8, 16, 32, 64)
T0 = 1_700_000_000.0


def make_runs(
    sizes: Sequence[int] = SIZES, repeats: int = 2, noise: float = 0.02, seed: int = 7
) -> tuple[Run, ...]:
    """Runs of a Downey application (A = 24, σ = 0.6, T(1) = 1 h), ids 1000, 1001, …"""
    rng = np.random.default_rng(seed)
    runs = []
    job = 1000
    for r in range(repeats):
        for n in sizes:
            t = 3600.0 * float(relative_runtime_s(n, 24.0, 0.6)) * (1 + noise * rng.normal())
            runs.append(Run(str(job), n, t, T0 + job * 10.0 + r))
            job += 1
    return tuple(runs)


def curve_of(runs: Sequence[Run]) -> predictor.Curve:
    """The curve the learner would store for these runs."""
    prepared = predictor.prepare([r.nodes for r in runs], [r.runtime_s for r in runs])
    return curve_from_fit(predictor.fit_observations(prepared))


def decision(job: int, low: int, high: int, nodes: int | None, **extra: Any) -> StoredDecision:
    """A decision as the store returns it (the record plugin/daemon/record.py writes)."""
    record = DecisionRecord(
        job_id=job,
        app="lulesh",
        min_nodes=low,
        max_nodes=high,
        time_limit_min=60,
        action="resize" if nodes is not None else "keep",
        nodes=nodes,
        new_time_limit_min=30 if nodes is not None else None,
        rule="efficiency",
        reason=f"efficiency stays above 50% up to {nodes} nodes",
        status="released",
        decided_at=T0 + job,
    )
    return StoredDecision(f"{int(T0 * 1000) + job}-0", replace(record, **extra))


def make_inputs(
    app: str = "lulesh",
    runs: Sequence[Run] | None = None,
    decisions: Sequence[StoredDecision] = (),
    with_curve: bool = True,
) -> AppInputs:
    the_runs = tuple(make_runs() if runs is None else runs)
    return AppInputs(
        app=app,
        runs=the_runs,
        curve=curve_of(the_runs) if with_curve else None,
        curve_note="" if with_curve else "not fitted yet",
        curve_version=3,
        fitted_at=T0,
        decisions=tuple(decisions),
    )


@pytest.fixture(scope="module")
def inputs() -> AppInputs:
    return make_inputs(decisions=[decision(k, 2, 64, 16) for k in range(5)])


@pytest.fixture(scope="module")
def report(inputs: AppInputs) -> Any:
    return assemble(inputs)


def test_size_rows_are_the_curves_figures(inputs: AppInputs, report: Any) -> None:
    curve = inputs.curve
    assert curve is not None
    n = np.array([row.n for row in report.sizes], dtype=float)
    assert [row.n for row in report.sizes] == list(SIZES)
    assert_allclose([r.predicted_runtime for r in report.sizes], curve.runtime(n), rtol=1e-9)
    assert_allclose([r.speedup for r in report.sizes], curve.speedup(n), rtol=1e-9)
    assert_allclose([r.efficiency for r in report.sizes], curve.efficiency(n), rtol=1e-9)
    assert all(row.runs == 2 for row in report.sizes)
    for row in report.sizes:
        times = [r.runtime_s for r in inputs.runs if r.nodes == row.n]
        assert row.runtime_mean == pytest.approx(np.mean(times), rel=1e-12)
        assert (row.runtime_min, row.runtime_max) == (min(times), max(times))
        assert row.observed_efficiency == pytest.approx(curve.t1 / (row.n * row.runtime_mean))


def test_figures_match_a_direct_predictor_fit_of_the_same_observations(report: Any) -> None:
    """The Downey curve the report shows equals predictor.fit on the same runs."""
    runs = make_runs()
    fit = predictor.fit([r.nodes for r in runs], [r.runtime_s for r in runs])
    assert report.curve.model == "downey"
    grid = np.array(report.grid.n, dtype=float)
    assert_allclose(report.grid.speedup, fit.speedup(grid), rtol=1e-9)
    assert_allclose(report.grid.efficiency, fit.efficiency(grid), rtol=1e-9)
    assert_allclose(report.grid.runtime, fit.runtime(grid), rtol=1e-9)
    assert report.curve.A == pytest.approx(fit.A, rel=1e-12)
    assert report.curve.sigma == pytest.approx(fit.sigma, rel=1e-12)
    assert report.curve.pws_n == fit.pws_n
    assert report.curve.max_useful_n == fit.max_useful_n


def test_the_grid_reaches_every_size_of_interest(inputs: AppInputs, report: Any) -> None:
    curve = inputs.curve
    assert curve is not None
    grid = report.grid.n
    assert grid[0] == 1
    assert list(grid) == sorted(set(grid))
    for k in (*SIZES, curve.pws_n, 16, 64):
        assert k in grid
    if curve.max_useful_n is not None:
        assert curve.max_useful_n in grid
    assert grid[-1] >= 64


def test_size_grid_clips_and_orders() -> None:
    grid = size_grid([0, 3, 10**9], 40)
    assert grid[0] == 1
    assert grid[-1] == 40
    assert 3 in grid
    assert len(size_grid([], 1)) >= 2  # a plot needs an x range


def test_observed_points_one_per_run(inputs: AppInputs, report: Any) -> None:
    curve = inputs.curve
    assert curve is not None
    assert len(report.points) == len(inputs.runs)
    for point, run in zip(
        report.points, sorted(inputs.runs, key=lambda r: (r.end_time, r.job_id)), strict=True
    ):
        assert point.job_id == run.job_id
        assert point.speedup == pytest.approx(curve.t1 / run.runtime_s)
        assert point.efficiency == pytest.approx(point.speedup / run.nodes)


def test_band_holds_only_instances_that_explain_every_run(report: Any) -> None:
    band = report.band
    assert band is not None, report.band_note
    assert band.instances > 1
    assert all(lo <= hi + 1e-12 for lo, hi in zip(band.speedup_lo, band.speedup_hi, strict=True))
    # The band contains the fitted curve wherever it is drawn.
    grid = dict(zip(report.grid.n, report.grid.speedup, strict=True))
    for k, lo, hi in zip(band.n, band.speedup_lo, band.speedup_hi, strict=True):
        assert lo * (1 - 1e-9) <= grid[k] <= hi * (1 + 1e-9), k
    # Near the runs the band is narrow: the runs pin the curve down.
    at16 = band.n.index(16)
    assert band.speedup_hi[at16] / band.speedup_lo[at16] < 1.2


def test_band_instances_are_within_delta_of_the_runs() -> None:
    """Every edge of the band is the speedup of an instance that explains the runs within δ."""
    runs = make_runs(repeats=1, noise=0.0)
    n = [r.nodes for r in runs]
    t = [r.runtime_s for r in runs]
    band, note = envelope_band(n, t, [1, 2, 4, 8, 16, 32, 64, 128, 256])
    assert band is not None, note
    fit = predictor.fit(n, t)
    assert fit.envelope is not None
    assert band.delta == fit.envelope.delta
    # Noise-free Downey runs: the true instance explains them exactly, so it lies within
    # the band at every size.
    true = 1.0 / relative_runtime_s(np.array(band.n, dtype=float), 24.0, 0.6)
    assert np.all(np.array(band.speedup_lo) <= true * (1 + 1e-6))
    assert np.all(true <= np.array(band.speedup_hi) * (1 + 1e-6))
    tau = relative_runtime_s(np.array(n, dtype=float), 24.0, 0.6)
    assert minimax_relative_error(tau, np.array(t)) <= band.delta


def test_no_curve_report_still_shows_the_runs() -> None:
    report = assemble(make_inputs(with_curve=False, decisions=[decision(1, 2, 8, 4)]))
    assert report.curve is None
    assert report.curve_note == "not fitted yet"
    assert report.grid is None
    assert report.band is None
    assert report.points == ()
    assert [row.n for row in report.sizes] == list(SIZES)
    assert all(row.speedup is None and row.efficiency is None for row in report.sizes)
    assert report.decision_summary.count == 1
    assert report.decision_summary.estimated == 0  # no curve, no estimate
    row = fleet_row(report)
    assert row.model is None
    assert not row.reliable
    assert row.reliability.startswith("no curve")


def test_band_is_skipped_when_not_wanted(inputs: AppInputs) -> None:
    report = assemble(inputs, band=False)
    assert report.band is None
    assert report.grid is not None
    assert report.band_note


def test_another_model_is_shown_without_an_envelope() -> None:
    """When model selection chose another model the curve is that model's and no band is drawn."""
    n = np.arange(1, 25, 2)
    t = 6.0 / n + 0.5 + 0.02 * n  # Sevcik's a/n + b + c·n exactly: runtime grows past n ≈ 17
    runs = tuple(
        Run(str(100 + i), int(k), v, T0 + i) for i, (k, v) in enumerate(zip(n, t, strict=True))
    )
    curve = curve_of(runs)
    if curve.model == "downey":
        pytest.fail("expected model selection to choose another model for this data set")
    report = assemble(make_inputs(runs=runs))
    assert report.curve is not None
    assert report.grid is not None
    assert report.curve.model == curve.model
    assert report.band is None
    assert curve.model in report.band_note
    assert curve.model in report.curve_note
    grid = np.array(report.grid.n, dtype=float)
    assert_allclose(report.grid.speedup, curve.speedup(grid), rtol=1e-9)


def test_anomalies_and_warnings_come_from_the_curve() -> None:
    sizes = (2, 4, 8)  # all before the knee: reliability says where to run next
    runs = make_runs(sizes=sizes, repeats=1, noise=0.0)
    report = assemble(make_inputs(runs=runs))
    curve = curve_of(runs)
    assert [w.problem for w in report.warnings] == [
        r.problem for r in curve.diagnostics.reliability
    ]
    assert report.suggest_n == next(
        (r.suggest_n for r in curve.diagnostics.reliability if r.suggest_n), None
    )
    assert report.anomalies == curve.diagnostics.anomalies


def test_refit_due_is_said(inputs: AppInputs) -> None:
    stale = replace(inputs, refit_due=True)
    report = assemble(stale, band=False)
    assert report.curve is not None
    assert report.curve.refit_due
    assert "refit is due" in report.curve_note


def test_fleet_row_carries_the_figures(report: Any) -> None:
    row = fleet_row(report)
    s = report.decision_summary
    assert row.app == "lulesh"
    assert row.runs == len(SIZES) * 2
    assert row.node_hours == pytest.approx(sum(r.nodes * r.runtime_s for r in make_runs()) / 3600.0)
    assert row.decisions == 5
    assert row.efficiency_chosen == s.mean_efficiency_chosen
    assert row.node_hours_saved == s.node_hours_saved
    assert row.reliable == report.curve.reliable


def test_the_guard_counts_reach_every_form_of_the_report(inputs: AppInputs) -> None:
    from rich.console import Console  # noqa: PLC0415

    from plugin.report.export import FLEET_COLUMNS, app_document, fleet_document  # noqa: PLC0415
    from plugin.report.model import GuardCounts  # noqa: PLC0415
    from plugin.report.terminal import render_app  # noqa: PLC0415

    counts = GuardCounts.from_dict(
        {"limits_raised": 3, "killed_at_our_limit": 1, "censored_runs": 2, "limit_safety": 1.5625}
    )
    assert counts == GuardCounts(3, 1, 2, 1.5625)
    assert GuardCounts.from_dict({"limits_raised": -1, "limit_safety": "x"}) == GuardCounts()
    made = assemble(replace(inputs, guard=counts), band=False)
    assert made.guard == counts
    row = fleet_row(made)
    assert (row.limits_raised, row.killed_at_our_limit, row.censored_runs) == (3, 1, 2)
    assert {"limits_raised", "killed_at_our_limit", "censored_runs"} <= set(FLEET_COLUMNS)
    assert fleet_document([row])["apps"][0]["killed_at_our_limit"] == 1
    assert app_document(made)["guard"] == {
        "limits_raised": 3,
        "killed_at_our_limit": 1,
        "censored_runs": 2,
        "limit_safety": 1.5625,
    }
    console = Console(record=True, width=100)
    render_app(made, console)
    text = " ".join(console.export_text().split())
    assert "Jobs killed at a time limit adaptalloc set: 1 (should be 0)" in text
    assert "limits raised back to the user's by the kill guard: 3" in text
    assert "x1.56 longer" in text
    assert "Censored runs (stopped at a limit or preempted; lower bounds, not fitted): 2." in text
