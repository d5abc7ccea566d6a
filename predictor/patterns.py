"""ADEPT's scalability patterns (section VIII.C): stepwise phases and specially optimized sizes.

Stepwise scalability: data that fit the next level of the memory hierarchy run superlinearly
faster, which shows as a sharp rise of R (anomalies.py) that removing neither candidate calms.
Each such rise at i (between observations i+1 and i+2) starts a new phase; every phase gets
its own model instance, and a prediction uses the phase of the observation closest to the
target. It takes at least five observations over two phases, and a phase needs two sizes to
be fitted; steps that would leave a phase with fewer are not split on.

Specially optimized sizes: codes tuned for certain node counts are faster exactly there, at
regular intervals. With at least nine observations, a rule (powers of two, squares) is
detected when its sizes are consistently faster than the other sizes around them: for at
least `majority` of the rule's sizes that have other sizes on both sides, the runtime lies
more than `margin` below the log-log interpolation between those neighbours, and the other
sizes lie as clearly above the interpolation between the rule's sizes. Then the rule's
sizes are the valid input, the others are discarded, and the rule is reported as the
feasible sizes (a constraint for the policy layer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from predictor.downey import BoolArray, FloatArray, IntArray

MIN_STEPWISE = 5
MIN_OPTIMIZED = 9


def is_power_of_two(n: IntArray) -> BoolArray:
    out: BoolArray = (n > 0) & ((n & (n - 1)) == 0)
    return out


def is_square(n: IntArray) -> BoolArray:
    root = np.round(np.sqrt(n)).astype(np.int64)
    out: BoolArray = root * root == n
    return out


SIZE_RULES: dict[str, Callable[[IntArray], BoolArray]] = {
    "powers_of_two": is_power_of_two,
    "squares": is_square,
}


def phases_from_steps(n: IntArray, starts: list[int]) -> IntArray:
    """Phase index per observation (sizes n ascending); each size in `starts` begins a phase.

    Steps that would leave a phase with fewer than two observations are ignored; with fewer
    than MIN_STEPWISE observations there is a single phase.
    """
    phase = np.zeros(n.size, dtype=np.int64)
    if n.size < MIN_STEPWISE:
        return phase
    start = 0
    for size in sorted(starts):
        boundary = int(np.searchsorted(n, size))
        if boundary - start >= 2 and n.size - boundary >= 2:
            phase[boundary:] += 1
            start = boundary
    return phase


@dataclass(frozen=True)
class OptimizedSizes:
    rule: str
    keep: BoolArray


def _share_below(
    logn: FloatArray, logt: FloatArray, test: BoolArray, ref: BoolArray, margin: float
) -> float | None:
    """Share of `test` points (with `ref` points on both sides) more than `margin` below the
    log-log interpolation between the `ref` points; None when fewer than two such points."""
    r = np.flatnonzero(ref)
    inner = np.flatnonzero(test & (logn > logn[r[0]]) & (logn < logn[r[-1]]))
    if inner.size < 2:
        return None
    expected = np.interp(logn[inner], logn[r], logt[r])
    return float((logt[inner] < expected + np.log1p(-margin)).mean())


def optimized_sizes(
    n: IntArray, t: FloatArray, margin: float = 0.05, majority: float = 0.8
) -> OptimizedSizes | None:
    """The size rule whose sizes run consistently faster than their neighbours, if any.

    The test is symmetric, so that curvature is not mistaken for a pattern: on a smooth
    convex curve every interior point lies below the chord of its neighbours, whichever rule
    picked it. So the rule's sizes must lie below the chords of the other sizes, and the
    other sizes above the chords of the rule's sizes, each for a `majority` of them.
    """
    if n.size < MIN_OPTIMIZED:
        return None
    logn, logt = np.log(n.astype(float)), np.log(t)
    best: tuple[float, str, BoolArray] | None = None
    for rule, member in SIZE_RULES.items():
        special = member(n)
        if special.sum() < 3 or (~special).sum() < 3:
            continue
        faster = _share_below(logn, logt, special, ~special, margin)
        # The others above the rule's chords: below them on the reflected curve.
        slower = _share_below(logn, -logt, ~special, special, margin / (1 - margin))
        if faster is None or slower is None or min(faster, slower) < majority:
            continue
        share = min(faster, slower)
        if best is None or share > best[0]:
            best = (share, rule, special)
    if best is None:
        return None
    return OptimizedSizes(rule=best[1], keep=best[2])
