"""The line to beat on real curves: ADEPT vs plain multi-start LM, constants held out.

An outside measurement, on 10 real curves the team does not have: median |runtime
error| for interpolation (3 sizes given) adaptalloc 8.0% vs plain multi-start LM 4.4%, and
extrapolation (the first half given) 25.3% vs 27.4%. This reproduces that protocol on the 13
curves of tests/data/scaling, side by side in one run:

* interp: the smallest, middle and largest size given, the others predicted
  (test_predictor_accuracy.splits);
* interp, every 3rd: the smallest, the largest and each interior size in turn given (every
  3-size split that brackets the rest: the outside measurement's 3 sizes are not named);
* extrap: the smaller half given, the larger half predicted.

Each on the curves as measured, and again with the n = 1 run removed ("T(1) not observed": the
outside curves need not start at one node, and ADEPT's handling of T(1) is one of the suspects).

Columns: ADEPT as shipped; "ADEPT held out": ADEPT with the constants CHOSEN LEAVE-ONE-CURVE-OUT,
i.e. for each scored curve the setting of CANDIDATES (q, parsimony_tol) with the smallest median
error over the OTHER curves of the same table and protocol, printed per curve; LM as shipped
(predictor/lm.py, the thesis' single start, T(1) fixed when observed); multi-start LM
(peers.lm_multistart: 10 starts, free scale, the lowest cost wins). Figure: per curve the
median |error| over its splits' targets; the summary row the median over curves.
Nothing here was tuned on these figures; no synthetic data are involved.
The same tables on 13 curves nobody tuned on: test_predictor_unseen.py.

Measured 2026-11-23 (13 curves as measured / 12 without n = 1: qualitedev keeps 3 sizes),
median over curves, ADEPT / held out / LM / multi-start LM:

* interp: 4.3 / 4.3 / 5.8 / 5.8; without T(1): 4.2 / 4.2 / 4.0 / 4.0
* interp, every 3rd: 6.6 / 6.6 / 8.9 / 6.7; without T(1): 5.3 / 5.2 / 5.9 / 5.2
* extrap: 20.8 / 20.7 / 139.0 / 47.1; without T(1): 14.8 / 14.8 / 62.4 / 52.4

The outside gap (8.0% vs 4.4%) does not reproduce here: ADEPT is ahead of both LMs where n = 1
is given and within 0.1-0.2 points of them without it (the only cells it does not win). The
leave-one-curve-out choice picks another setting in some protocols (q = 2 or uniform weights)
and scores within 0.1 points of the shipped constants everywhere: these figures are not an
artefact of choosing the constants on the curves they score, and retuning them gains nothing.
The suspects, each measured on these splits (figures in the commit that added this file):

* ADEPT's discrete grid vs LM's continuous optimum: a vectorized Levenberg-Marquardt polish
  of ADEPT's instance on the same weighted objective, kept inside the envelope, changed no
  curve by more than 0.1 points (synthetic suite, seed 2026: one cell by 0.1) at 1.5x the
  time: the search already lands on the optimum. Unconstrained, it moved one curve, for the
  worse (bfs1d interp 8.1% -> 12.7%). Not shipped;
* the parsimony rule (Amdahl with 3 sizes): parsimony_tol = 0 gives the same medians but for
  the dam-break curve without T(1) (1.9% -> 0.3%) and particle-mesh (every 3rd, 4.5 -> 4.0),
  and loses extrapolation badly (particle-mesh 10% -> 141%, LU 4% -> 163%);
* q = 1.1: q = 2 or uniform weights win on a few curves (bfs1d every 3rd, spm) and lose on
  others (karman, bfs1d middle); which is what the held-out choice weighs;
* T(1): an observed T(1) fixed as the scale (the thesis) interpolates worse (5.6% vs 4.3%);
  the shipped free scale is the better handling.
* choosing between ADEPT's and multi-start LM's prediction by leave-one-size-out on the given
  sizes (defined with 4 or more: extrapolation; 3-size interpolation has none to leave out):
  medians 20.8% as measured and 14.8% without T(1), ADEPT's own; not shipped.
Where ADEPT still loses a curve to LM (npb_cg without T(1): 19.9% vs 10.8%) multi-start LM
loses it too (21.6%): the lowest-cost Downey curve through those 3 points predicts worse than
the local minimum LM's single start happens to stop in; no fit on the objective fixes that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table

import predictor
from predictor.downey import FloatArray

from .peers import lm, lm_multistart
from .test_predictor_accuracy import DATA

# The settings the held-out choice picks from; the shipped one first (kept on ties).
CANDIDATES = {
    f"q={q:g},tol={tol:g}": predictor.SearchSettings(q=q, parsimony_tol=tol)
    for q in (predictor.FAST.q, 2.0, float("inf"))
    for tol in (predictor.FAST.parsimony_tol, 0.0)
}
SHIPPED = next(iter(CANDIDATES))
PROTOCOLS = ("interp", "interp, every 3rd", "extrap")
VARIANTS = ("as measured", "T(1) not observed")
COLUMNS = ("ADEPT", "ADEPT held out", "LM", "multi-start LM")
Split = tuple[NDArray[np.int64], NDArray[np.int64]]
Predict = Callable[[FloatArray, FloatArray, FloatArray], FloatArray]


def splits(sizes: NDArray[np.int64]) -> dict[str, list[Split]]:
    """Per protocol the (given, predicted) size splits of one curve (see the docstring)."""
    inner = [np.array([sizes[0], sizes[k], sizes[-1]]) for k in range(1, len(sizes) - 1)]
    middle = inner[len(sizes) // 2 - 1]  # test_predictor_accuracy's split
    half = max(len(sizes) // 2, 2)
    out: dict[str, list[Split]] = {
        "interp": [(middle, np.setdiff1d(sizes, middle))],
        "interp, every 3rd": [(g, np.setdiff1d(sizes, g)) for g in inner],
        "extrap": [(sizes[:half], sizes[half:])],
    }
    return {p: [(g, x) for g, x in cases if x.size] for p, cases in out.items()}


def curves(
    variant: str, folder: Path = DATA
) -> Iterator[tuple[str, NDArray[np.int64], FloatArray]]:
    """(name, n, runtime) of every curve of `folder` (not recursing) in the variant."""
    for path in sorted(folder.glob("*.csv")):
        data = np.loadtxt(path, delimiter=",", skiprows=1)
        if variant == "T(1) not observed":
            data = data[data[:, 0] > 1]
        if np.unique(data[:, 0]).size >= 4:
            yield path.stem, data[:, 0].astype(np.int64), data[:, 1]


def adept_with(settings: predictor.SearchSettings) -> Predict:
    def run(n: FloatArray, t: FloatArray, at: FloatArray) -> FloatArray:
        return predictor.predict(n, t, at, settings=settings)

    return run


def predictors() -> dict[str, Predict]:
    out = {name: adept_with(settings) for name, settings in CANDIDATES.items()}
    out["LM"] = lm
    out["multi-start LM"] = lm_multistart
    return out


def curve_errors(
    variant: str, methods: dict[str, Predict] | None = None, folder: Path = DATA
) -> dict[str, dict[str, dict[str, float]]]:
    """{protocol: {curve: {predictor: median |error| % over the curve's predicted sizes}}},
    for `methods` (default: predictors()) on the curves of `folder`."""
    methods = predictors() if methods is None else methods
    out: dict[str, dict[str, dict[str, float]]] = {p: {} for p in PROTOCOLS}
    for name, n, t in curves(variant, folder):
        obs = predictor.prepare(n, t)
        for protocol, cases in splits(obs.n).items():
            pooled: dict[str, list[FloatArray]] = {m: [] for m in methods}
            for given, target in cases:
                keep = np.isin(n, given)
                truth = obs.runtime[np.isin(obs.n, target)]
                at = target.astype(float)
                for m, method in methods.items():
                    pooled[m].append(np.abs(method(n[keep].astype(float), t[keep], at) / truth - 1))
            if cases:
                out[protocol][name] = {
                    m: 100.0 * float(np.median(np.concatenate(v))) for m, v in pooled.items()
                }
    return out


def held_out_choice(table: dict[str, dict[str, float]]) -> dict[str, str]:
    """Per curve, the candidate setting with the smallest median over the OTHER curves of
    their median errors (the shipped setting on ties)."""
    choice = {}
    for curve in table:
        others = [row for name, row in table.items() if name != curve]
        score = {c: float(np.median([row[c] for row in others])) for c in CANDIDATES}
        choice[curve] = min(CANDIDATES, key=lambda c: score[c])
    return choice


def chosen_line(choice: dict[str, str]) -> str:
    """Which setting was chosen for which held-out curves, compactly."""
    chosen: dict[str, list[str]] = {}
    for curve, c in choice.items():
        chosen.setdefault(c, []).append(curve)
    return "; ".join(
        f"{c} for {len(v)}" + ("" if len(v) == len(choice) else f" ({', '.join(v)})")
        for c, v in chosen.items()
    )


def tables(
    figures: dict[str, dict[str, dict[str, dict[str, float]]]],
    columns: tuple[str, ...],
    label: str,
) -> list[Table]:
    """One table per protocol of figures[protocol][variant][curve][column] (median |error| %),
    a row per curve and the median over curves, each variant's columns side by side."""
    views = []
    for protocol in PROTOCOLS:
        view = Table(title=f"{protocol}: median |runtime error| %, {label} (lower is better)")
        view.add_column("curve")
        for variant in VARIANTS:
            for column in columns:
                view.add_column(f"{column} ({variant})", justify="right")
        names = sorted({c for v in figures[protocol].values() for c in v})
        for curve in names:
            view.add_row(
                curve[:24],
                *(
                    f"{figures[protocol][v][curve][c]:.1f}"
                    if curve in figures[protocol][v]
                    else "-"
                    for v in VARIANTS
                    for c in columns
                ),
            )
        view.add_section()
        view.add_row(
            "median over curves",
            *(
                f"{np.median([row[c] for row in figures[protocol][v].values()]):.1f}"
                for v in VARIANTS
                for c in columns
            ),
        )
        views.append(view)
    return views


@pytest.mark.benchmark
def test_line_to_beat_on_real_curves(capsys: pytest.CaptureFixture[str]) -> None:
    # figures[protocol][variant][curve][column]
    figures: dict[str, dict[str, dict[str, dict[str, float]]]] = {
        p: {v: {} for v in VARIANTS} for p in PROTOCOLS
    }
    lines: list[str] = []
    for variant in VARIANTS:
        for protocol, table in curve_errors(variant).items():
            choice = held_out_choice(table)
            figures[protocol][variant] = {
                curve: {
                    "ADEPT": row[SHIPPED],
                    "ADEPT held out": row[choice[curve]],
                    "LM": row["LM"],
                    "multi-start LM": row["multi-start LM"],
                }
                for curve, row in table.items()
            }
            lines.append(f"  {protocol}, {variant}: {chosen_line(choice)}")
    views = tables(figures, COLUMNS, "REAL curves")
    with capsys.disabled():
        for view in views:
            Console(width=170).print(view)
        print(
            "the outside measurement (10 held-back curves, median |error| %): interp "
            "ADEPT 8.0 vs multi-start LM 4.4, extrap 25.3 vs 27.4"
        )
        print("'ADEPT held out': settings (q, parsimony_tol) chosen leave-one-curve-out:")
        for line in lines:
            print(line)
    for protocol in PROTOCOLS:
        for variant in VARIANTS:
            rows = figures[protocol][variant]
            assert len(rows) >= 8, (protocol, variant)
            assert all(np.isfinite(v) for row in rows.values() for v in row.values())
