"""Coverage of the 90% prediction intervals on the real strong-scaling curves.

The interval constants (predictor/intervals.py) were chosen on synthetic Downey curves; this
scores them where the truth is a measured runtime, not a model: tests/data/scaling, the
protocols of test_predictor_accuracy.py (interpolation from 3 sizes, extrapolation of the
larger half, leave-one-out of each interior size). Per protocol: the share of held-out
runtimes inside ADEPT's interval, inside it as it was before the misfit term (m = 0),
inside it without the span of an unidentified fit's plausible instances (intervals.py's
interval alone), and inside LM's. A measured runtime carries its own noise besides the
prediction's error, and these applications are not Downey curves, so coverage below 90% here
is the model's misfit showing, which `fit_error` reports per application.

Why 55% between the sizes (before the misfit term): a fit through 3 sizes has as many
parameters as points, its residuals are 0 whatever the curve's shape, and the interval was
the floor alone (0.7%, which exact Downey curves justify and real ones do not). The misfit
term m (intervals.py) is added only there; it was CHOSEN LEAVE-ONE-CURVE-OUT here (the
smallest m covering 90% of the other curves' targets of fits on 3 sizes or fewer, scored on
the held-out curve: printed below), so the held-out coverage is its honest score.

Measured 2026-11-23, 13 curves, ADEPT / before the misfit term / without the span / LM:
interpolation 95% / 55% / 95% / 47%, extrapolation 88% / 85% / 87% / 58%, leave-one-out
82% / 79% / 82% / 73%. m chosen per held-out curve 10-21%, median 18% (shipped), held-out
coverage 88.5%; the 87 targets of fits on 3 sizes or fewer: 91% covered (56% without). On
the synthetic suite (seed 2026, 16 cases per cell) coverage moves from 92.8% to 93.8%, inside
the aimed-for 85-95%: its 3-size fits over-cover, the price of an interval that holds on real
curves. `predict` carries m; the stored curve's interval, from whose upper end time limits are
read (policies/time_limit.py), does not yet: it would lengthen the limits of applications with
3 sizes or fewer by up to exp(1.645·0.18) = 1.34x, the team's decision (intervals.py).

A floor for every fit instead (the second printed choice): 5-10% (median 8.5%) before the
misfit term, 2-2.5% with it; at 8.5% the synthetic coverage rose to about 98.6%, outside
85-95%, so the floor stays at 0.7% and remaining gaps (leave-one-out 82%) are left to
`fit_error` and the team. The textbook residual correction for fits on M > 3 sizes,
r² · M/(M - 3) (three parameters fitted), raises leave-one-out to 92% but the synthetic
coverage to 95.8%, outside 85-95% (seed 2026, 16 cases per cell): measured, not shipped.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table

import predictor
from predictor.intervals import PARAMETERS, SPREAD, Spread, interval, log_distance_outside
from predictor.observations import prepare

from .test_predictor_accuracy import DATA, PROTOCOLS, splits

COLUMNS = ("ADEPT", "ADEPT w/o misfit", "ADEPT w/o span", "LM")
# Floors a of intervals.py's s(n) tried by the leave-one-curve-out choice (shipped: 0.007).
FLOORS = np.unique(np.r_[SPREAD["adept"].floor, np.round(np.arange(0.005, 0.2001, 0.005), 3)])
# Misfit terms m tried by the leave-one-curve-out choice (shipped: SPREAD["adept"].misfit).
MISFITS = np.unique(np.r_[SPREAD["adept"].misfit, np.round(np.arange(0.0, 0.4001, 0.01), 3)])
Z90 = 1.6448536269514722


def floor_hits(
    p: predictor.Predictions,
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    test: NDArray[np.int64],
    truth: NDArray[np.float64],
    n_min: float,
    n_max: float,
    floors: NDArray[np.float64] = FLOORS,
    misfit: NDArray[np.float64] | float = 0.0,
) -> NDArray[np.bool_]:
    """(values, targets): covered by ADEPT's interval were its floor each of `floors` (or its
    misfit term each of `misfit`), the span of plausible instances kept as shipped."""
    assert p.lower is not None
    assert p.upper is not None
    assert p.residual is not None
    span_lo = np.where(p.lower < lo, p.lower, np.inf)
    span_hi = np.where(p.upper > hi, p.upper, -np.inf)
    d = log_distance_outside(test.astype(float), n_min, n_max)
    b = SPREAD["adept"].per_log_distance
    m = np.reshape(misfit, (-1, 1))
    half = Z90 * np.sqrt(np.reshape(floors, (-1, 1)) ** 2 + p.residual**2 + (b * d) ** 2 + m**2)
    lower = np.minimum(p.runtime * np.exp(-half), span_lo)
    upper = np.maximum(p.runtime * np.exp(half), span_hi)
    out: NDArray[np.bool_] = (lower <= truth) & (truth <= upper)
    return out


def without_misfit() -> Spread:
    adept = SPREAD["adept"]
    return Spread(adept.floor, adept.per_log_distance, 0.0)


def covered(
    n: NDArray[np.int64],
    t: NDArray[np.float64],
    test: NDArray[np.int64],
    truth: NDArray[np.float64],
) -> tuple[dict[str, NDArray[np.bool_]], NDArray[np.bool_], NDArray[np.bool_] | None]:
    """Per column, whether each held-out runtime lies in the 90% interval; floor_hits over
    FLOORS; and, for a fit on at most PARAMETERS sizes, floor_hits over MISFITS (else None)."""
    obs = prepare(n, t)
    out: dict[str, NDArray[np.bool_]] = {}
    for method in ("adept", "lm"):
        p = predictor.predict_observations(obs, test, method=method)
        assert p.lower is not None
        assert p.upper is not None
        out["ADEPT" if method == "adept" else "LM"] = (p.lower <= truth) & (truth <= p.upper)
    with pytest.MonkeyPatch.context() as patch:  # the interval as it was before the misfit term
        patch.setitem(SPREAD, "adept", without_misfit())
        before = predictor.predict_observations(obs, test)
    assert before.lower is not None
    assert before.upper is not None
    out["ADEPT w/o misfit"] = (before.lower <= truth) & (truth <= before.upper)
    p = predictor.predict_observations(obs, test)
    assert p.residual is not None
    ends = (float(obs.n[0]), float(obs.n[-1]))
    lo, hi = interval(p.runtime, test.astype(float), p.residual, *ends, "adept", sizes=len(obs))
    out["ADEPT w/o span"] = (lo <= truth) & (truth <= hi)
    few = len(obs) <= PARAMETERS
    m = SPREAD["adept"].misfit if few else 0.0
    floors = floor_hits(p, lo, hi, test, truth, *ends, misfit=m)
    misfits = (
        floor_hits(p, lo, hi, test, truth, *ends, np.full(1, SPREAD["adept"].floor), MISFITS)
        if few
        else None
    )
    return out, floors, misfits


def held_out_choice(
    by_curve: dict[str, list[NDArray[np.bool_]]], values: NDArray[np.float64]
) -> tuple[list[float], list[NDArray[np.bool_]]]:
    """Per held-out curve, the smallest of `values` covering 90% of the other curves'
    targets, and the held-out curve's hits at it."""
    hits_of = {name: np.concatenate(v, axis=1) for name, v in by_curve.items()}
    chosen, held_out = [], []
    for name, hits in hits_of.items():
        others = np.concatenate([h for k, h in hits_of.items() if k != name], axis=1)
        enough = np.flatnonzero(others.mean(axis=1) >= 0.9)
        k = int(enough[0]) if enough.size else values.size - 1
        chosen.append(float(values[k]))
        held_out.append(hits[k])
    return chosen, held_out


def pooled_few(by_curve: dict[str, list[NDArray[np.bool_]]]) -> dict[str, list[NDArray[np.bool_]]]:
    """The hits of fits on few sizes at the shipped misfit term and at none."""
    at_m = int(np.flatnonzero(MISFITS == SPREAD["adept"].misfit)[0])
    at_0 = int(np.flatnonzero(MISFITS == 0.0)[0])
    rows = [h for v in by_curve.values() for h in v]
    return {"shipped": [h[at_m] for h in rows], "none": [h[at_0] for h in rows]}


def coverage_table(pooled: dict[str, dict[str, list[NDArray[np.bool_]]]], curves: str) -> Table:
    """Per protocol the targets and each column's share of them inside the 90% interval."""
    view = Table(title=f"90% interval coverage of held-out runtimes, {curves}")
    view.add_column("protocol")
    view.add_column("targets", justify="right")
    for column in COLUMNS:
        view.add_column(column, justify="right")
    for protocol, row in pooled.items():
        hits = {c: np.concatenate(v) for c, v in row.items()}
        view.add_row(protocol, str(hits["ADEPT"].size), *(f"{hits[c].mean():.0%}" for c in COLUMNS))
    return view


@pytest.mark.benchmark
def test_interval_coverage_on_real_curves(capsys: pytest.CaptureFixture[str]) -> None:
    pooled: dict[str, dict[str, list[NDArray[np.bool_]]]] = {
        p: {c: [] for c in COLUMNS} for p in PROTOCOLS
    }
    curves = sorted(DATA.glob("*.csv"))
    by_curve: dict[str, list[NDArray[np.bool_]]] = {}
    few_by_curve: dict[str, list[NDArray[np.bool_]]] = {}
    for path in curves:
        data = np.loadtxt(path, delimiter=",", skiprows=1)
        n, t = data[:, 0].astype(int), data[:, 1]
        obs = prepare(n, t)
        for protocol, cases in splits(obs.n).items():
            for train, test in cases:
                keep = np.isin(n, train)
                truth = obs.runtime[np.isin(obs.n, test)]
                columns, floors, misfits = covered(n[keep], t[keep], test, truth)
                # The recomputed intervals at the shipped floor are the shipped intervals.
                at_shipped = int(np.flatnonzero(FLOORS == SPREAD["adept"].floor)[0])
                assert np.array_equal(floors[at_shipped], columns["ADEPT"])
                for column, hits in columns.items():
                    pooled[protocol][column].append(hits)
                by_curve.setdefault(path.stem, []).append(floors)
                if misfits is not None:
                    at_m = int(np.flatnonzero(MISFITS == SPREAD["adept"].misfit)[0])
                    assert np.array_equal(misfits[at_m], columns["ADEPT"])
                    few_by_curve.setdefault(path.stem, []).append(misfits)
    view = coverage_table(pooled, f"{len(curves)} REAL curves")
    # Leave one curve out: the smallest floor (misfit term) whose coverage over the other
    # curves' targets (all protocols; fits on at most PARAMETERS sizes) reaches 90%, scored
    # on the held-out curve.
    floor_choice = held_out_choice(by_curve, FLOORS)
    misfit_choice = held_out_choice(few_by_curve, MISFITS)
    few_hits = {c: np.concatenate(v) for c, v in pooled_few(few_by_curve).items()}
    with capsys.disabled():
        Console(width=120).print(view)
        for name, (chosen, held_out), values in (
            ("floor a", floor_choice, FLOORS),
            (f"misfit m (fits on {PARAMETERS} sizes or fewer)", misfit_choice, MISFITS),
        ):
            constant = SPREAD["adept"].floor if values is FLOORS else SPREAD["adept"].misfit
            print(
                f"{name} chosen leave-one-curve-out for 90% on the other curves: "
                f"{min(chosen):.3f}-{max(chosen):.3f} (median {np.median(chosen):.3f}; shipped "
                f"{constant}); held-out coverage {np.concatenate(held_out).mean():.1%} over "
                f"{len(chosen)} curves"
            )
        print(
            f"fits on {PARAMETERS} sizes or fewer: {few_hits['shipped'].size} targets, covered "
            f"{few_hits['shipped'].mean():.0%} with m, {few_hits['none'].mean():.0%} without"
        )
    assert len(curves) >= 8
    for row in pooled.values():
        shipped, plain = np.concatenate(row["ADEPT"]), np.concatenate(row["ADEPT w/o span"])
        # The span only widens: whatever the plain interval covers, the shipped one does.
        assert np.all(shipped >= plain)
        # The misfit term only widens.
        assert np.all(shipped >= np.concatenate(row["ADEPT w/o misfit"]))
