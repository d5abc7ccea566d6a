"""ADEPT vs LM vs multi-start LM on real curves NOBODY TUNED ON.

The 13 curves of tests/data/scaling/unseen (provenance and the rule in its README: no
constant of the predictor is ever chosen on them) are scored with test_predictor_holdout's
protocols and variants, side by side in one run:

* interp: the smallest, middle and largest size given, the others predicted;
* interp, every 3rd: the smallest, the largest and each interior size in turn given;
* extrap: the smaller half given, the larger half predicted;

each on the curves as measured and with any n = 1 run removed ("T(1) not observed"; 4 of
these curves start above one anyway). Columns: ADEPT as shipped (the default search
settings), LM as shipped (predictor/lm.py), multi-start LM (peers.lm_multistart). The
leave-one-curve-out "ADEPT held out" column of the development set is left out: nothing is
tuned here, and it would cost six ADEPT fits per split. Figure: per curve the median
|runtime error| % over its splits' targets; the summary row the median over curves. Then
every (protocol, variant, curve) where ADEPT's error is above a peer's, largest gap first.
Real measurements only: no oracle, no synthetic model, no constant chosen on these curves
(the predictor's constants were all chosen before the set existed). Deterministic: two runs
print the same figures.

Measured 2026-11-26 (13 curves as measured; 10 without n = 1, where cg_multigpu, image_filters
and poisson2d keep 3 sizes), median over curves, ADEPT / LM / multi-start LM:

* interp: 3.6 / 3.6 / 3.9; without T(1): 5.2 / 5.2 / 5.2
* interp, every 3rd: 5.0 / 5.2 / 5.4; without T(1): 4.9 / 5.1 / 5.1
* extrap: 12.5 / 76.5 / 76.5; without T(1): 15.7 / 43.4 / 43.4

The outside gap (interp 8.0% vs 4.4%) does not reproduce on these unseen curves either:
ADEPT's median is the lowest or tied in every cell, and its extrapolation error is 3-6x smaller
than either LM's (the LMs, given two or three sizes of a near-linear curve, put the plateau far too
early: cg_multigpu 174%, kmeans 234%, vlasiator_mahti 83% against ADEPT's 2%, 9%, 2%).
Where ADEPT loses a curve by more than 2 points, against either LM:

* curves that turn up, extrapolated: flock_numba_joblib without T(1) (given 4 and 9, the
  runtime minimum, predicting 18-72 where the runtime doubles per doubling: 61.4% vs 40.9%)
  and flock_numba_ray (given 1, 4, 9, predicting 18-72 with the upturn at 72: 35.7% vs
  27.9%). ADEPT's instance runs to sigma = sigma_max (1e3, the search's bound) and keeps the
  runtime falling (flock_numba_ray: 2.26, 1.53, 1.16 s vs 2.54, 2.37, 3.52 measured);
  the LMs stop at a flat plateau (3.25 s), which is nearer a curve that turns up. No
  Downey curve rises, so neither is right; the plateau is the smaller miss.
* the same U-shaped curve interpolated every 3rd without T(1) (flock_numba_joblib, 36.7%
  vs 27.7%): at 36, past the minimum (8.08 s measured), ADEPT predicts about 5.1 s and
  multi-start LM 5.7-6.0 s; given [4, 36, 72] both fit almost no speedup (ADEPT A = 1.0:
  7.9 s at 9 and 18 where 4.8 and 5.0 were measured; multi-start LM 8.7 s). Both miss by
  30-80% there; ADEPT by a little more.
* a noisy plateau, extrapolated: giraph_iga_adi_12288 (given 1-5, predicting 6-10 where
  the runtime stalls between 205 and 263 thousand ms: 20.7% vs LM 11.3%, multi-start 16.6%);
  again sigma = sigma_max, runtime still falling.
* a 4-size curve with its last size slower (poisson2d_mpi_256, interp given 1, 4, 8:
  6.2% vs 4.1% / 4.4%, i.e. 10.1 s vs 9.6 s measured at 2).

vlasiator_lumi_light extrapolated (given 2-16, predicting 32-512 where it bottoms out at
256) is missed by all three alike (197.5% / 192.7% / 192.7%). With the middle size given
(interp) no curve is lost by more than 2.1 points. The pattern to act on is extrapolation
past the given sizes of curves whose runtime stops falling there, or rises.

Interval coverage (test_interval_coverage_on_unseen_curves: test_real_intervals.py's
protocols and columns on this set; the misfit term m was chosen on the development curves).
Measured 2026-11-27, share of held-out runtimes inside the 90% interval, ADEPT / before the
misfit term / without the plausible span / LM: interpolation from 3 sizes (42 targets) 100% /
57% / 100% / 50%; extrapolation of the larger half (42) 86% / 83% / 76% / 71%; leave-one-out
(55) 87% / 84% / 87% / 73%. As on the development curves (95%, 88%, 82%): 3-size fits
over-cover (m = 18% is wide there) and the others cover a little under 90%.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from rich.console import Console

import predictor

from .peers import lm, lm_multistart
from .test_predictor_accuracy import DATA
from .test_predictor_accuracy import PROTOCOLS as INTERVAL_PROTOCOLS
from .test_predictor_accuracy import splits as interval_splits
from .test_predictor_holdout import (
    CANDIDATES,
    PROTOCOLS,
    SHIPPED,
    VARIANTS,
    Predict,
    adept_with,
    curve_errors,
    tables,
)
from .test_real_intervals import COLUMNS as INTERVAL_COLUMNS
from .test_real_intervals import coverage_table, covered

UNSEEN = DATA / "unseen"
COLUMNS = ("ADEPT", "LM", "multi-start LM")
METHODS: dict[str, Predict] = {
    "ADEPT": adept_with(CANDIDATES[SHIPPED]),
    "LM": lm,
    "multi-start LM": lm_multistart,
}
Figures = dict[str, dict[str, dict[str, dict[str, float]]]]


def losses(figures: Figures, peer: str) -> list[tuple[float, str, str, str, float, float]]:
    """(ADEPT - peer in points, protocol, variant, curve, ADEPT, peer) wherever ADEPT's median
    error is the larger at the printed precision (0.1 point), the largest gap first."""
    out = [
        (round(row["ADEPT"], 1) - round(row[peer], 1), p, v, c, row["ADEPT"], row[peer])
        for p in PROTOCOLS
        for v in VARIANTS
        for c, row in figures[p][v].items()
        if round(row["ADEPT"], 1) > round(row[peer], 1)
    ]
    return sorted(out, reverse=True)


@pytest.mark.benchmark
def test_unseen_real_curves(capsys: pytest.CaptureFixture[str]) -> None:
    # figures[protocol][variant][curve][column]
    figures: Figures = {p: {} for p in PROTOCOLS}
    for variant in VARIANTS:
        for protocol, table in curve_errors(variant, METHODS, UNSEEN).items():
            figures[protocol][variant] = table
    with capsys.disabled():
        for view in tables(figures, COLUMNS, "REAL curves, unseen set"):
            Console(width=150).print(view)
        print(
            "the outside measurement (10 held-back curves, median |error| %): interp "
            "ADEPT 8.0 vs multi-start LM 4.4, extrap 25.3 vs 27.4"
        )
        for peer in ("LM", "multi-start LM"):
            print(f"where ADEPT's error is above {peer}'s (points; ADEPT vs {peer}):")
            for gap, p, v, c, mine, theirs in losses(figures, peer):
                print(f"  {gap:+7.1f}  {p}, {v}: {c} ({mine:.1f} vs {theirs:.1f})")
    for protocol in PROTOCOLS:
        for variant in VARIANTS:
            rows = figures[protocol][variant]
            assert len(rows) >= 8, (protocol, variant)
            assert all(np.isfinite(v) for row in rows.values() for v in row.values())


@pytest.mark.benchmark
def test_interval_coverage_on_unseen_curves(capsys: pytest.CaptureFixture[str]) -> None:
    """The 90% intervals of test_real_intervals.py scored on the unseen set: its misfit term
    m was chosen leave-one-curve-out on the development curves, never on these."""
    pooled: dict[str, dict[str, list[NDArray[np.bool_]]]] = {
        p: {c: [] for c in INTERVAL_COLUMNS} for p in INTERVAL_PROTOCOLS
    }
    paths = sorted(UNSEEN.glob("*.csv"))
    for path in paths:
        data = np.loadtxt(path, delimiter=",", skiprows=1)
        n, t = data[:, 0].astype(np.int64), data[:, 1]
        obs = predictor.prepare(n, t)
        for protocol, cases in interval_splits(obs.n).items():
            for given, test in cases:
                truth = obs.runtime[np.isin(obs.n, test)]
                keep = np.isin(n, given)
                hits, _, _ = covered(n[keep], t[keep], test, truth)
                for column, inside in hits.items():
                    pooled[protocol][column].append(inside)
    view = coverage_table(pooled, f"{len(paths)} REAL curves, unseen set")
    with capsys.disabled():
        Console(width=120).print(view)
    assert all(sum(v.size for v in row["ADEPT"]) > 0 for row in pooled.values())
