"""Levenberg-Marquardt baseline (thesis chapter 5), for comparison with ADEPT only.

Minimises the same objective as ADEPT with uniform weights, the sum of squared relative runtime
errors Σ ((t_i - c τ(n_i; A, σ))/t_i)², with scipy.optimize.least_squares(method="lm"). The
scale c is a third parameter (log c) when T(1) is unknown and T(1) otherwise. The start is the
thesis' (section 5.3): A0 = the largest observed speedup, σ0 = 0; without T(1), speedups are
estimated as if scaling were linear up to the smallest observed size.

LM has no bounds, so the model sees max(A, 1) and |σ|; a result on that fold is still reported
as the folded value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from predictor.downey import FloatArray, relative_runtime


@dataclass(frozen=True)
class LMResult:
    A: float
    sigma: float
    scale: float
    converged: bool
    message: str
    evaluations: int


def thesis_start(n: FloatArray, t: FloatArray) -> tuple[float, float, float]:
    """(A0, σ0, c0): the largest observed speedup, 0, and T(1) or its linear estimate."""
    c0 = float(t[0]) if n[0] == 1 else float(n[0] * t[0])
    return float(np.max(c0 / t)), 0.0, c0


def fit_lm(
    n: FloatArray, t: FloatArray, start: tuple[float, float] | None = None, max_nfev: int = 1000
) -> LMResult:
    """Fit (A, σ[, c]) by Levenberg-Marquardt from `start` = (A0, σ0) or the thesis' start."""
    # Imported here: 0.3 s of start-up for every CLI call, and only this baseline needs it.
    from scipy.optimize import least_squares  # noqa: PLC0415

    A0, s0, c0 = thesis_start(n, t)
    if start is not None:
        A0, s0 = start
    scale_known = bool(n[0] == 1)

    def unpack(p: FloatArray) -> tuple[float, float, float]:
        A = max(float(p[0]), 1.0)
        sigma = abs(float(p[1]))
        c = c0 if scale_known else float(np.exp(p[2]))
        return A, sigma, c

    def residuals(p: FloatArray) -> FloatArray:
        A, sigma, c = unpack(p)
        out: FloatArray = 1.0 - c * relative_runtime(n, A, sigma) / t
        return out

    p0 = np.array([A0, s0] if scale_known else [A0, s0, np.log(c0)])
    free = p0.size
    if n.size < free:
        return LMResult(A0, s0, c0, False, f"LM needs at least {free} sizes, got {n.size}", 0)
    with np.errstate(all="ignore"):
        res = least_squares(residuals, p0, method="lm", max_nfev=max_nfev)
    A, sigma, c = unpack(res.x)
    ok = bool(res.status > 0 and np.all(np.isfinite(res.x)))
    return LMResult(A, sigma, c, ok, str(res.message), int(res.nfev))
