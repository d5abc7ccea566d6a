"""Cold start from sibling problem sizes on real multi-size data (predictor/sizes.py).

Data (real, tests/data/scaling/sizes/, provenance in tests/data/scaling/README.md): NPB-MZ
SP-MZ and LU-MZ, classes W, A, B, C, each on 1, 2, 4, 6, 8, 10 MPI processes of one 3-host
cluster; problem size N = the class's aggregate grid points (32768 … 4300800).

1. **Leave one size out.** Each class in turn is the "new" size: its curve is borrowed from the
   other three (`plugin.learning.borrow.borrow_from_runs`: the model chosen by leave-one-out
   over the siblings in the new size's position) and scored against its real runs, as the
   mean |T̂/T - 1| over its six node counts. Beside it: both models' own errors, and a naive
   baseline (the nearest sibling's runs scaled by the ratio of sizes, T ∝ N).
2. **Runs before the own curve wins.** The new size's own runs arrive one by one (two orders:
   ascending n, and "spread": 1, 10, 4, 2, 8, 6); after k ≥ 2 runs its own curve (the
   learner's ADEPT fit) and the borrowed one are both scored on the runs not yet seen. The
   table gives the first k at which the own curve is at least as good, and stays so.

Constants: predictor/sizes.py has no tuned constant. The polynomial degree min(3, K-1) is the
paper's; the crossover grid of `fit_nt_pt` (P_c from 0.5 to 1e5, 241 points) spans any
cluster's processor counts and was not tuned; the rule "score the sizes in the target's
position" was chosen on the exact synthetic N-T/P-T data of tests/unit/predictor/
test_sizes.py (scored over all sizes, the wrong model won there). This benchmark only scores.
Measured runtimes past the speedup peak (n = 8, 10 here: slower than 6) are kept in the score:
no model here predicts a slowdown, and a scheduler meets those runs too.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import predictor
from plugin.learning.borrow import borrow_from_runs
from predictor.downey import FloatArray
from predictor.models.sized import fit_nt_pt
from predictor.sizes import fit_downey_interp, fit_power_law, fit_sizes

from .results import ResultTable, record

DATA = Path(__file__).resolve().parents[1] / "data" / "scaling" / "sizes"
FILES = ("npb_mz_sp_classes_ovs.csv", "npb_mz_lu_classes_ovs.csv")
ORDERS = {"ascending": (1, 2, 4, 6, 8, 10), "spread": (1, 10, 4, 2, 8, 6)}


def load(name: str) -> tuple[FloatArray, FloatArray, FloatArray, dict[float, str]]:
    with (DATA / name).open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    n = np.array([float(r["n"]) for r in rows])
    t = np.array([float(r["runtime"]) for r in rows])
    size = np.array([float(r["size"]) for r in rows])
    return n, t, size, {float(r["size"]): r["class"] for r in rows}


def error(predicted: FloatArray, observed: FloatArray) -> float:
    return float(np.mean(np.abs(predicted / observed - 1.0)))


def naive(
    size: FloatArray, n: FloatArray, t: FloatArray, target: float, at: FloatArray
) -> FloatArray:
    """The nearest sibling size (in log N) scaled by N*/N: T ∝ N at each node count."""
    others = np.unique(size[size != target])
    near = others[np.argmin(np.abs(np.log(others / target)))]
    lookup = {float(k): float(v) for k, v in zip(n[size == near], t[size == near], strict=True)}
    return np.array([lookup[float(k)] * target / near for k in at])


@pytest.mark.benchmark
@pytest.mark.parametrize("name", FILES)
def test_leave_one_size_out_and_runs_needed(name: str) -> None:
    n, t, size, classes = load(name)
    print(f"\n{name} (real: NPB-MZ, 4 classes x 6 process counts)")
    print(
        f"{'new':>4} {'N':>9} {'chosen':>14} {'model':>7} {'curve':>7} {'≤peak':>7} "
        f"{'downey':>7} {'nt_pt':>7} {'power':>7} {'naive':>7} {'≤peak':>7} "
        f"| own wins at k (ascending, spread)"
    )
    chosen_errors, naive_errors, peak_errors, naive_peak_errors = [], [], [], []
    rows: list[list[str]] = []
    for target in np.unique(size):
        held = size == target
        rest = ~held
        borrowed = borrow_from_runs(float(target), size[rest], n[rest], t[rest])
        fits = fit_sizes(size[rest], n[rest], t[rest], target=float(target))
        own_n, own_t = n[held], t[held]
        e_model = error(fits.runtime(target, own_n), own_t)
        e_borrowed = error(borrowed.curve.runtime(own_n), own_t)
        e_downey = error(
            fit_downey_interp(size[rest], n[rest], t[rest]).runtime(target, own_n), own_t
        )
        e_ntpt = error(fit_nt_pt(size[rest], n[rest], t[rest]).runtime(target, own_n), own_t)
        e_power = error(fit_power_law(size[rest], n[rest], t[rest]).runtime(target, own_n), own_t)
        e_naive = error(naive(size, n, t, float(target), own_n), own_t)
        rising = own_n <= own_n[np.argmin(own_t)]  # up to the measured speedup peak
        e_peak = error(borrowed.curve.runtime(own_n[rising]), own_t[rising])
        e_naive_peak = error(naive(size, n, t, float(target), own_n[rising]), own_t[rising])
        chosen_errors.append(e_borrowed)
        peak_errors.append(e_peak)
        naive_peak_errors.append(e_naive_peak)
        naive_errors.append(e_naive)
        wins = []
        for order in ORDERS.values():
            runtime = {float(k): float(v) for k, v in zip(own_n, own_t, strict=True)}
            first = None
            for k in range(2, len(order)):
                seen = np.array(order[:k], dtype=float)
                unseen = np.array(order[k:], dtype=float)
                truth = np.array([runtime[x] for x in unseen])
                fit = predictor.fit(seen, [runtime[x] for x in seen])
                own_error = error(fit.runtime(unseen), truth)
                borrowed_error = error(borrowed.curve.runtime(unseen), truth)
                # the first k from which the own curve is at least as good, and stays so
                first = (k if first is None else first) if own_error <= borrowed_error else None
            wins.append("never" if first is None else str(first))
        print(
            f"{classes[float(target)]:>4} {target:>9.0f} {borrowed.method:>14} "
            f"{100 * e_model:>6.1f}% {100 * e_borrowed:>6.1f}% {100 * e_peak:>6.1f}% "
            f"{100 * e_downey:>6.1f}% {100 * e_ntpt:>6.1f}% {100 * e_power:>6.1f}% "
            f"{100 * e_naive:>6.1f}% {100 * e_naive_peak:>6.1f}% | {', '.join(wins)}"
        )
        rows.append(
            [
                classes[float(target)],
                f"{target:.0f}",
                borrowed.method,
                *(
                    f"{100 * e:.1f}%"
                    for e in (e_model, e_borrowed, e_peak, e_downey, e_ntpt, e_power, e_naive)
                ),
                f"{100 * e_naive_peak:.1f}%",
                ", ".join(wins),
            ]
        )
        assert np.isfinite(e_borrowed)
    print(
        f"mean error of the borrowed curve {100 * np.mean(chosen_errors):.1f}% over all node "
        f"counts, {100 * np.mean(peak_errors):.1f}% up to the peak (naive T ∝ N from the "
        f"nearest size: {100 * np.mean(naive_errors):.1f}%, "
        f"{100 * np.mean(naive_peak_errors):.1f}%)"
    )
    summary = (
        f"Mean error of the borrowed curve {100 * np.mean(chosen_errors):.1f}% over all node "
        f"counts, {100 * np.mean(peak_errors):.1f}% up to each class's fastest run (naive "
        f"T ∝ N from the nearest size: {100 * np.mean(naive_errors):.1f}%, "
        f"{100 * np.mean(naive_peak_errors):.1f}%)."
    )
    record(
        "sizes",
        title="Borrowed curves for a problem size never run",
        source=__file__,
        full=True,
        tables=[
            ResultTable(
                f"{name}: each class left out in turn, its curve borrowed from the others",
                (
                    "class left out",
                    "N",
                    "model chosen",
                    "chosen model's error",
                    "borrowed curve",
                    "up to the peak",
                    "downey_interp",
                    "nt_pt",
                    "power_law",
                    "nearest × N*/N",
                    "nearest, up to the peak",
                    "own curve at least as good from k runs (ascending, spread)",
                ),
                rows,
            )
        ],
        notes=[
            summary,
            "Real data: NPB-MZ classes (tests/data/scaling/sizes/, provenance in "
            "tests/data/scaling/README.md), 4 classes × 6 process counts; errors are mean "
            "|relative runtime error| over the left-out class's runs. These codes slow down "
            "past 6 processes, which a Downey curve cannot follow. Nothing is chosen here.",
        ],
        section=name,
    )
