"""Coverage of the 90% prediction intervals on the real strong-scaling curves (issue 17).

The interval constants (predictor/intervals.py) were chosen on synthetic Downey curves; this
scores them where the truth is a measured runtime, not a model: tests/data/scaling, the
protocols of test_predictor_accuracy.py (interpolation from 3 sizes, extrapolation of the
larger half, leave-one-out of each interior size). Per protocol: the share of held-out
runtimes inside ADEPT's interval, inside it without the span of an unidentified fit's
plausible instances (intervals.py's interval alone), and inside LM's. A measured runtime
carries its own noise besides the prediction's error, and these applications are not Downey
curves, so coverage below 90% here is the model's misfit showing, which `fit_error` reports
per application. Nothing is asserted about the figures; nothing was chosen on them.

Measured 2026-11-23, 13 curves, ADEPT (without the span) / LM: interpolation 55% (50%) / 47%,
extrapolation 85% (83%) / 58%, leave-one-out 79% (79%) / 73%. Inside the observed sizes the
interval is mostly the residual of a fit through 3 points, near 0, plus intervals.py's floor
(0.7%), which exact Downey curves justify and real ones do not.

The floor that real curves ask for, chosen leave-one-curve-out (the smallest floor covering
90% of the other curves' held-out runtimes, scored on the held-out curve): 5-10%, median
8.5%, held-out coverage 90.1%. Not shipped: at 8.5% the synthetic suite's coverage rises from
94% to about 98.6% (seed 2026), outside issue 17's 85-95% there, and every time limit read
from the interval's upper end (policies/time_limit.py) grows; which calibration governs is a
decision for the team, with these two figures side by side.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table

import predictor
from predictor.intervals import SPREAD, interval, log_distance_outside
from predictor.observations import prepare

from .test_predictor_accuracy import DATA, PROTOCOLS, splits

COLUMNS = ("ADEPT", "ADEPT w/o span", "LM")
# Floors a of intervals.py's s(n) tried by the leave-one-curve-out choice (shipped: 0.007).
FLOORS = np.unique(np.r_[SPREAD["adept"].floor, np.round(np.arange(0.005, 0.2001, 0.005), 3)])
Z90 = 1.6448536269514722


def floor_hits(
    p: predictor.Predictions,
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    test: NDArray[np.int64],
    truth: NDArray[np.float64],
    n_min: float,
    n_max: float,
) -> NDArray[np.bool_]:
    """(FLOORS, targets): covered by ADEPT's interval were its floor each of FLOORS, the
    span of plausible instances kept as shipped."""
    assert p.lower is not None
    assert p.upper is not None
    assert p.residual is not None
    span_lo = np.where(p.lower < lo, p.lower, np.inf)
    span_hi = np.where(p.upper > hi, p.upper, -np.inf)
    d = log_distance_outside(test.astype(float), n_min, n_max)
    b = SPREAD["adept"].per_log_distance
    half = Z90 * np.sqrt(FLOORS[:, None] ** 2 + p.residual**2 + (b * d) ** 2)
    lower = np.minimum(p.runtime * np.exp(-half), span_lo)
    upper = np.maximum(p.runtime * np.exp(half), span_hi)
    out: NDArray[np.bool_] = (lower <= truth) & (truth <= upper)
    return out


def covered(
    n: NDArray[np.int64],
    t: NDArray[np.float64],
    test: NDArray[np.int64],
    truth: NDArray[np.float64],
) -> tuple[dict[str, NDArray[np.bool_]], NDArray[np.bool_]]:
    """Per column, whether each held-out runtime lies in the 90% interval; and floor_hits."""
    obs = prepare(n, t)
    out: dict[str, NDArray[np.bool_]] = {}
    floors = np.zeros((FLOORS.size, test.size), dtype=bool)
    for method in ("adept", "lm"):
        p = predictor.predict_observations(obs, test, method=method)
        assert p.lower is not None
        assert p.upper is not None
        assert p.residual is not None
        out["ADEPT" if method == "adept" else "LM"] = (p.lower <= truth) & (truth <= p.upper)
        if method == "adept":
            lo, hi = interval(
                p.runtime,
                test.astype(float),
                p.residual,
                float(obs.n[0]),
                float(obs.n[-1]),
                "adept",
            )
            out["ADEPT w/o span"] = (lo <= truth) & (truth <= hi)
            floors = floor_hits(p, lo, hi, test, truth, float(obs.n[0]), float(obs.n[-1]))
    return out, floors


@pytest.mark.benchmark
def test_interval_coverage_on_real_curves(capsys: pytest.CaptureFixture[str]) -> None:
    pooled: dict[str, dict[str, list[NDArray[np.bool_]]]] = {
        p: {c: [] for c in COLUMNS} for p in PROTOCOLS
    }
    curves = sorted(DATA.glob("*.csv"))
    by_curve: dict[str, list[NDArray[np.bool_]]] = {}
    for path in curves:
        data = np.loadtxt(path, delimiter=",", skiprows=1)
        n, t = data[:, 0].astype(int), data[:, 1]
        obs = prepare(n, t)
        for protocol, cases in splits(obs.n).items():
            for train, test in cases:
                keep = np.isin(n, train)
                truth = obs.runtime[np.isin(obs.n, test)]
                columns, floors = covered(n[keep], t[keep], test, truth)
                # The recomputed intervals at the shipped floor are the shipped intervals.
                at_shipped = int(np.flatnonzero(FLOORS == SPREAD["adept"].floor)[0])
                assert np.array_equal(floors[at_shipped], columns["ADEPT"])
                for column, hits in columns.items():
                    pooled[protocol][column].append(hits)
                by_curve.setdefault(path.stem, []).append(floors)
    view = Table(title=f"90% interval coverage of held-out runtimes, {len(curves)} REAL curves")
    view.add_column("protocol")
    view.add_column("targets", justify="right")
    for column in COLUMNS:
        view.add_column(column, justify="right")
    for protocol, row in pooled.items():
        pooled_hits = {c: np.concatenate(v) for c, v in row.items()}
        view.add_row(
            protocol,
            str(pooled_hits["ADEPT"].size),
            *(f"{pooled_hits[c].mean():.0%}" for c in COLUMNS),
        )
    # Leave one curve out: the smallest floor whose coverage over the other curves' targets
    # (all protocols) reaches 90%, scored on the held-out curve.
    hits_of = {name: np.concatenate(v, axis=1) for name, v in by_curve.items()}
    chosen, held_out = [], []
    for name, hits in hits_of.items():
        others = np.concatenate([h for k, h in hits_of.items() if k != name], axis=1)
        enough = np.flatnonzero(others.mean(axis=1) >= 0.9)
        k = int(enough[0]) if enough.size else FLOORS.size - 1
        chosen.append(float(FLOORS[k]))
        held_out.append(hits[k])
    with capsys.disabled():
        Console(width=120).print(view)
        print(
            f"floor a chosen leave-one-curve-out for 90% on the other curves: "
            f"{min(chosen):.3f}-{max(chosen):.3f} (median {np.median(chosen):.3f}; shipped "
            f"{SPREAD['adept'].floor}); held-out coverage "
            f"{np.concatenate(held_out).mean():.1%} over {len(chosen)} curves"
        )
    assert len(curves) >= 8
    for row in pooled.values():
        shipped, plain = np.concatenate(row["ADEPT"]), np.concatenate(row["ADEPT w/o span"])
        # The span only widens: whatever the plain interval covers, the shipped one does.
        assert np.all(shipped >= plain)
