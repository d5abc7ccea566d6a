"""Weak scaling: Gustafson's scaled speedup fitted from runs whose problem grows with the nodes.

Gustafson (the large-scale thesis, 4.6.2): on n nodes the runtime is a + b, a the sequential
part and b the per-node parallel part, held fixed as n grows because the problem grows with
n; the same problem run serially takes a + n·b, so the scaled speedup is

    S(n) = (a + n·b) / (a + b) = n − α(n − 1),      α = a / (a + b).

Fitting α needs a and b apart, which the runtimes of a pure weak-scaling series cannot give
(they are all a + b). The runs' problem sizes s can: with the parallel work proportional to s
and spread over n nodes, a run takes

    T(n, s) = a + k · s / n,

linear in (1, s/n); `fit_weak` fits (a, k) by least squares in relative error (ADEPT's
measure) with a, k ≥ 0, and needs two or more distinct work-per-node values s/n. Each run's
serial runtime is then a + k·s, and α is Gustafson's least-squares fit over the runs
(predictor.models.sized.fit_gustafson).

The rules a scheduler needs, for a job whose problem is scaled to its node count:

* efficiency E(n) = S(n)/n = 1 − α(n − 1)/n: falls from 1 towards 1 − α, never below it.
  The largest n with E(n) ≥ θ: every n when α ≤ 1 − θ, else n ≤ α / (α − (1 − θ)).
* processor working set: Downey's PWS maximises S(n)·E(n) = S(n)²/n; here
  d/dn [((1 − α)n + α)² / n] = ((1 − α)n + α)((1 − α)n − α)/n², positive for n > α/(1 − α),
  so S²/n grows without bound once past that point (below it, for α > 1/2, it first falls):
  the PWS is the largest size allowed, and there is no maximum useful size.
* time limit: T(n) = a + b does not depend on n, so unlike strong scaling (T(1)/S(n), which
  shrinks as n grows) a limit the user wrote for any size of the range holds for every size.
  The limit is kept as submitted; a weak-scaling decision changes only the node count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import FloatArray
from predictor.models.sized import fit_gustafson


@dataclass(frozen=True)
class WeakFit:
    """T(n, s) = serial_s + per_work_s · s / n and Gustafson's α over the runs."""

    serial_s: float
    per_work_s: float
    alpha: float
    runs: int
    fit_error: float

    def scaled_speedup(self, n: ArrayLike) -> FloatArray:
        """S(n) = n − α(n − 1)."""
        nv = np.asarray(n, dtype=float)
        out: FloatArray = nv - self.alpha * (nv - 1.0)
        return out

    def efficiency(self, n: ArrayLike) -> FloatArray:
        """E(n) = S(n)/n = 1 − α(n − 1)/n."""
        nv = np.asarray(n, dtype=float)
        out: FloatArray = self.scaled_speedup(nv) / nv
        return out

    def runtime(self, n: ArrayLike, size: ArrayLike) -> FloatArray:
        """T(n, s) = a + k·s/n."""
        out: FloatArray = self.serial_s + self.per_work_s * np.asarray(size, dtype=float) / (
            np.asarray(n, dtype=float)
        )
        return out


def largest_efficient(alpha: float, threshold: float, lo: int, hi: int) -> int:
    """The largest n in [lo, hi] with 1 − α(n − 1)/n ≥ θ (module docstring), else lo."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    if lo < 1 or hi < lo:
        raise ValueError(f"the range must be 1 ≤ lo ≤ hi, got {lo}-{hi}")
    slack = 1.0 - threshold
    if alpha <= slack:
        return hi
    bound = alpha / (alpha - slack)
    # E(n) is decreasing in n, so the bound is where it crosses θ; floor with a hair of
    # tolerance so an exact crossing (θ = E(n)) counts as efficient.
    top = math.floor(bound + 1e-9)
    return max(lo, min(hi, top))


def fit_weak(n: ArrayLike, size: ArrayLike, runtime: ArrayLike) -> WeakFit:
    """Fit (a, k) and α from weak-scaling runs (module docstring).

    Parameters
    ----------
    n, size, runtime : shape (m,) each: nodes ≥ 1, problem sizes > 0 (any unit, the same for
        every run), runtimes > 0 in seconds.

    Raises ValueError when shapes differ, values are out of range, or fewer than two distinct
    work-per-node values s/n separate a from k.
    """
    nv = np.asarray(n, dtype=float).ravel()
    sv = np.asarray(size, dtype=float).ravel()
    tv = np.asarray(runtime, dtype=float).ravel()
    if not nv.size == sv.size == tv.size:
        raise ValueError("n, size and runtime must have the same length")
    if not np.all(np.isfinite(nv)) or np.any(nv < 1):
        raise ValueError("n must be node counts ≥ 1")
    if not np.all(np.isfinite(sv)) or np.any(sv <= 0):
        raise ValueError("size must be positive problem sizes")
    if not np.all(np.isfinite(tv)) or np.any(tv <= 0):
        raise ValueError("runtime must be finite and positive")
    w = sv / nv
    if np.unique(np.round(w / w.max(), 12)).size < 2:
        raise ValueError(
            "size: the runs need two or more distinct problem sizes per node to separate "
            "the serial part from the parallel part"
        )
    scale = w.max()
    x = np.stack([np.ones_like(w), w / scale], axis=1) / tv[:, None]
    theta, *_ = np.linalg.lstsq(x, np.ones_like(tv), rcond=None)
    a, k = float(theta[0]), float(theta[1]) / scale
    if a < 0.0 or k < 0.0:
        # One bound is active: fit the other alone (relative LSQ of one column, closed form).
        if a < 0.0:
            col = w
            k, a = float(np.sum(col / tv) / np.sum((col / tv) ** 2)), 0.0
        else:
            a, k = float(np.sum(1.0 / tv) / np.sum(1.0 / tv**2)), 0.0
    if a + k == 0.0:
        raise ValueError("runtime: the runs fit neither a serial nor a parallel part")
    fitted = a + k * w
    serial = a + k * sv
    alpha = fit_gustafson(nv, fitted, serial).alpha if np.any(nv > 1) else 0.0
    return WeakFit(
        serial_s=a,
        per_work_s=k,
        alpha=alpha,
        runs=int(tv.size),
        fit_error=float(np.max(np.abs(fitted - tv) / tv)),
    )
