"""Assembly: an app's store inputs become its report's figures. Pure: no Redis, no I/O.

Every predicted figure comes from the stored `predictor.Curve` itself (`Curve.runtime`,
`speedup`, `efficiency`, `max_useful_n`, `pws_n`, `diagnostics`), so the report shows what
the scheduler uses; observed figures are the runs' own numbers, with speedup and efficiency
taken against the curve's T(1) (the observed one when T(1) was run, else the model's). The
envelope band (predictor/band.py) is the one figure that needs the ADEPT fit again.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

import predictor
from plugin.report.accuracy import accuracy_section
from plugin.report.decisions import MAX_NODES, decision_row, estimate, summarise
from plugin.report.groups import group_runs
from plugin.report.model import (
    AppInputs,
    AppReport,
    CurveFacts,
    CurvePoints,
    DecisionRow,
    FleetRow,
    ObservedPoint,
    ReliabilityWarning,
    Run,
    SizeRow,
)
from policies.cold_start import Advice, advise
from policies.config import DEFAULTS, PolicySettings
from predictor.band import envelope_band

__all__ = ["assemble", "cold_start", "fleet_row", "size_grid"]

#: Points of the log-spaced part of the plot grid.
GRID_POINTS = 97
#: How far past the largest size of interest the plots reach.
GRID_MARGIN = 1.25


def size_grid(sizes: Iterable[int], upper: int) -> tuple[int, ...]:
    """Whole sizes from 1 to `upper`, log-spaced, with `sizes` (clipped) added; ascending."""
    top = max(2, min(int(upper), MAX_NODES))
    spaced = np.unique(np.round(np.geomspace(1.0, float(top), GRID_POINTS)).astype(np.int64))
    extra = [int(k) for k in sizes if 1 <= k <= top]
    return tuple(sorted({*(int(k) for k in spaced), *extra}))


def _facts(inputs: AppInputs, curve: predictor.Curve) -> CurveFacts:
    return CurveFacts(
        model=curve.model,
        method=curve.method,
        A=curve.A,
        sigma=curve.sigma,
        t1=curve.t1,
        t1_known=curve.t1_known,
        identified=curve.identified,
        fit_error=curve.fit_error,
        max_useful_n=curve.max_useful_n,
        pws_n=curve.pws_n,
        reliable=curve.reliable,
        phases=len(curve.phases),
        version=inputs.curve_version,
        fitted_at=inputs.fitted_at,
        refit_due=inputs.refit_due,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _size_rows(
    runs: Sequence[Run], curve: predictor.Curve | None, anomalies: dict[int, predictor.Anomaly]
) -> tuple[SizeRow, ...]:
    by_size: dict[int, list[float]] = defaultdict(list)
    for run in runs:
        by_size[run.nodes].append(run.runtime_s)
    sizes = sorted(by_size)
    if curve is not None and sizes:
        n = np.asarray(sizes, dtype=float)
        predicted = [float(v) for v in curve.runtime(n)]
        speedup = [float(v) for v in curve.speedup(n)]
        efficiency = [float(v) for v in curve.efficiency(n)]
    rows = []
    for i, k in enumerate(sizes):
        times = by_size[k]
        mean = statistics.fmean(times)
        anomaly = anomalies.get(k)
        row = SizeRow(
            n=k,
            runs=len(times),
            runtime_mean=mean,
            runtime_min=min(times),
            runtime_max=max(times),
            anomaly="" if anomaly is None else anomaly.kind,
            anomaly_weight=None if anomaly is None else anomaly.weight,
        )
        if curve is not None:
            row = replace(
                row,
                predicted_runtime=_finite(predicted[i]),
                speedup=_finite(speedup[i]),
                efficiency=_finite(efficiency[i]),
                observed_speedup=_finite(curve.t1 / mean),
                observed_efficiency=_finite(curve.t1 / (k * mean)),
            )
        rows.append(row)
    return tuple(rows)


def _points(
    runs: Sequence[Run], curve: predictor.Curve, anomalous: set[int]
) -> tuple[ObservedPoint, ...]:
    return tuple(
        ObservedPoint(
            job_id=run.job_id,
            n=run.nodes,
            runtime_s=run.runtime_s,
            speedup=curve.t1 / run.runtime_s,
            efficiency=curve.t1 / (run.nodes * run.runtime_s),
            anomaly=run.nodes in anomalous,
        )
        for run in runs
    )


def _grid_upper(
    runs: Sequence[Run], curve: predictor.Curve | None, decisions: Sequence[DecisionRow]
) -> int:
    """The largest size any figure refers to, with a margin."""
    sizes = [run.nodes for run in runs]
    sizes += [k for d in decisions for k in (d.chosen, d.max_nodes) if k is not None]
    if curve is not None:
        sizes += [curve.largest_observed, curve.pws_n]
        sizes += [curve.max_useful_n] if curve.max_useful_n is not None else []
        sizes += [r.suggest_n for r in curve.diagnostics.reliability if r.suggest_n is not None]
    return math.ceil(max(sizes, default=1) * GRID_MARGIN)


def _curve_points(curve: predictor.Curve, grid: tuple[int, ...]) -> CurvePoints:
    n = np.asarray(grid, dtype=float)
    return CurvePoints(
        n=grid,
        runtime=tuple(float(v) for v in curve.runtime(n)),
        speedup=tuple(float(v) for v in curve.speedup(n)),
        efficiency=tuple(float(v) for v in curve.efficiency(n)),
    )


def cold_start(
    inputs: AppInputs, decisions: Sequence[DecisionRow], settings: PolicySettings
) -> Advice | None:
    """What the app needs for a usable curve (policies/cold_start.py), or None when its
    stored curve is usable; the largest size asked is the largest requested maximum among
    its decisions (unknown without any)."""
    asked = [d.max_nodes for d in decisions if d.max_nodes is not None]
    advice = advise(
        [r.nodes for r in inputs.runs],
        [r.runtime_s for r in inputs.runs],
        inputs.curve,
        inputs.curve_note,
        settings,
        max(asked, default=None),
    )
    return None if advice.usable else advice


def assemble(
    inputs: AppInputs, band: bool = True, settings: PolicySettings = DEFAULTS
) -> AppReport:
    """The report of one app from its store inputs.

    band: compute the ADEPT envelope band (a refit of the runs, some 30 ms; only the plots
    need it). Decisions are estimated against the current curve (decisions.py). settings:
    the policy's, whose gate (policies/decide.py, `unusable_because`) the cold-start advice
    judges the stored curve by.
    """
    runs = sorted(inputs.runs, key=lambda r: (r.end_time, r.job_id))
    curve = inputs.curve
    decisions = estimate([decision_row(d) for d in inputs.decisions], curve)
    node_hours = sum(r.nodes * r.runtime_s for r in runs) / 3600.0
    base = AppReport(
        app=inputs.app,
        runs=len(runs),
        node_hours=node_hours,
        first_end=runs[0].end_time if runs else None,
        last_end=runs[-1].end_time if runs else None,
        curve=None,
        curve_note=inputs.curve_note or "not fitted yet",
        sizes=_size_rows(runs, None, {}),
        band_note="No curve, so no envelope band.",
        groups=group_runs(runs, None if curve is None else curve.t1),
        decisions=tuple(decisions),
        decision_summary=summarise(decisions),
        guard=inputs.guard,
        accuracy=accuracy_section(inputs.scores, inputs.now),
        cold_start=cold_start(inputs, decisions, settings),
    )
    if curve is None:
        return base

    diagnostics = curve.diagnostics
    anomalies = {a.n: a for a in diagnostics.anomalies}
    key_sizes = [r.nodes for r in runs] + [curve.pws_n]
    key_sizes += [curve.max_useful_n] if curve.max_useful_n is not None else []
    key_sizes += [k for d in decisions for k in (d.chosen, d.max_nodes) if k is not None]
    grid = size_grid(key_sizes, _grid_upper(runs, curve, decisions))
    notes = []
    if curve.model != "downey":
        notes.append(
            f"Model selection chose the {curve.model} model over ADEPT's Downey curve (it "
            "predicted these runs clearly better): the figures and plots are that model's."
        )
    if inputs.refit_due:
        notes.append("New runs arrived since this curve was fitted; a refit is due.")
    the_band, band_note = None, ""
    if curve.model != "downey":
        band_note = (
            f"No envelope band: the ADEPT envelope describes Downey instances, and the "
            f"{curve.model} model is shown."
        )
    elif not band:
        band_note = "Envelope band not computed."
    elif runs:
        the_band, band_note = envelope_band(
            [r.nodes for r in runs], [r.runtime_s for r in runs], grid
        )
    else:
        band_note = "No runs are stored any more, so no envelope band."
    return replace(
        base,
        curve=_facts(inputs, curve),
        curve_note=" ".join(notes),
        sizes=_size_rows(runs, curve, anomalies),
        points=_points(runs, curve, set(anomalies)),
        grid=_curve_points(curve, grid),
        band=the_band,
        band_note=band_note,
        anomalies=diagnostics.anomalies,
        patterns=diagnostics.patterns,
        warnings=tuple(
            ReliabilityWarning(r.problem, r.action, r.suggest_n) for r in diagnostics.reliability
        ),
    )


def _reliability_text(report: AppReport) -> str:
    if report.curve is None:
        return f"no curve: {report.curve_note}"
    if report.curve.reliable:
        return "reliable"
    return "unreliable: " + ", ".join(w.problem for w in report.warnings)


def fleet_row(report: AppReport) -> FleetRow:
    """The app's line in the fleet index and the one-row-per-app exports."""
    c = report.curve
    s = report.decision_summary
    live = None if report.accuracy is None else report.accuracy.window
    return FleetRow(
        app=report.app,
        runs=report.runs,
        node_hours=report.node_hours,
        last_end=report.last_end,
        model=None if c is None else c.model,
        A=None if c is None else c.A,
        sigma=None if c is None else c.sigma,
        max_useful_n=None if c is None else c.max_useful_n,
        pws_n=None if c is None else c.pws_n,
        fit_error=None if c is None else c.fit_error,
        reliable=c is not None and c.reliable,
        reliability=_reliability_text(report),
        suggest_n=report.suggest_n,
        anomalies=len(report.anomalies),
        decisions=s.count,
        efficiency_chosen=s.mean_efficiency_chosen,
        efficiency_max=s.mean_efficiency_max,
        node_hours_saved=s.node_hours_saved,
        limits_raised=report.guard.limits_raised,
        killed_at_our_limit=report.guard.killed_at_our_limit,
        censored_runs=report.guard.censored_runs,
        scored_jobs=0 if live is None else live.judged,
        coverage=None if live is None else live.coverage,
        error_median=None if live is None else live.error_median,
        bias=None if live is None else live.bias,
        cold_start=report.cold_start,
    )
