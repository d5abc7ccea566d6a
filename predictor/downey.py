"""The Downey speedup model, both modes, vectorized over sizes and parameters.

Downey (1997), as written in the thesis (chapter 3.2, eqs. 3.4-3.7) and in ADEPT's Table 1.
A is the average parallelism, σ the variance parameter; σ ≤ 1 is the low-variance mode,
σ ≥ 1 the high-variance mode, and the two agree at σ = 1.

Speedup S(n) = T(1)/T(n):

    low,  1 ≤ n ≤ A:          A n / (A + σ(n-1)/2)
    low,  A ≤ n ≤ 2A-1:       A n / (σ(A-1/2) + n(1-σ/2))
    low,  n ≥ 2A-1:           A
    high, 1 ≤ n ≤ A+Aσ-σ:     n A(σ+1) / (σ(n+A-1) + A)
    high, n ≥ A+Aσ-σ:         A

Two facts make the code short and fast (both checked by the tests against the table above):

* Relative runtime τ(n) = T(n)/T(1) = 1/S(n) is, in every piece, of the form α + β/n, and it is
  convex in 1/n (it is the runtime of a parallelism profile), so it equals the *maximum* of its
  pieces. No branching per piece is needed.
* With the shape coordinate s = σ (low mode) or s = 2σ/(σ+1) (high mode), s ∈ [0, 2), the first
  piece of *both* modes is Amdahl's law with serial fraction f = s/(2A):
  τ(n) = f + (1-f)/n. The coordinate is continuous at σ = 1 (s = 1), so one search space covers
  both modes.

Note that ADEPT's Table 1 prints the second low-variance runtime piece without its constant
term; the thesis' eq. 3.4 (σ(A-1/2)/n + 1 - σ/2) is the one consistent with S = T(1)/T(n).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

FLOAT_MAX = float(np.finfo(float).max)


def sigma_to_s(sigma: ArrayLike) -> FloatArray:
    """Shape coordinate s from σ: s = σ for σ ≤ 1, s = 2σ/(σ+1) for σ ≥ 1 (σ = ∞ gives s = 2)."""
    sig = np.asarray(sigma, dtype=float)
    infinite = np.isinf(sig)
    finite_sig = np.where(infinite, 1.0, sig)  # σ + 1 ≥ 1, so nothing below divides badly
    high = np.where(infinite, 2.0, 2.0 * finite_sig / (finite_sig + 1.0))
    return np.where(sig <= 1.0, sig, high)


def s_to_sigma(s: ArrayLike) -> FloatArray:
    """σ from the shape coordinate s ∈ [0, 2): σ = s for s ≤ 1, σ = s/(2-s) for s ≥ 1."""
    sv = np.asarray(s, dtype=float)
    rest = 2.0 - sv
    # s/0 = ∞ at s = 2, set instead of divided: np.errstate costs ~5 µs a use in numpy 1.x.
    high = np.divide(sv, rest, out=np.full(sv.shape, np.inf), where=rest != 0.0)
    return np.where(sv <= 1.0, sv, high)


def relative_runtime_s(n: ArrayLike, A: ArrayLike, s: ArrayLike) -> FloatArray:
    """τ(n) = T(n)/T(1) in the (A, s) coordinates; all arguments broadcast.

    τ = max( f + (1-f)/n,                      first piece, both modes, f = s/(2A)
             1/A,                               the flat piece, S = A
             (1-u/2)/A + u(A-1/2)/(A n) )       second low-variance piece at u = min(s, 1)

    The second piece only exists in low mode. Evaluating it at u = min(s, 1) instead of masking
    it is exact: at s = 1 it coincides with the first piece, and the first piece grows with s,
    so for s > 1 it never wins the maximum.
    """
    nv = np.asarray(n, dtype=float)
    if isinstance(A, float) and isinstance(s, float) and A != 0.0:
        return _relative_runtime_one(nv, A, s)
    Av = np.asarray(A, dtype=float)
    sv = np.asarray(s, dtype=float)
    f = sv / (2.0 * Av)
    first = (1.0 - f) / nv
    u = np.minimum(sv, 1.0)
    second = u * (Av - 0.5) / nv
    if first.ndim == 0:  # scalars: nothing to write into
        out: FloatArray = np.maximum(
            np.maximum(f + first, ((1.0 - 0.5 * u) + second) / Av), 1.0 / Av
        )
        return out
    # The sizes × instances terms in place: the same operations in the same order (IEEE
    # addition commutes exactly), so the same bits, without a new array per step; on the
    # search's grids the allocations cost as much as the arithmetic.
    np.add(f, first, out=first)
    np.add(1.0 - 0.5 * u, second, out=second)
    np.divide(second, Av, out=second)
    np.maximum(first, second, out=first)
    return np.maximum(first, 1.0 / Av, out=first)


def _relative_runtime_one(n: FloatArray, A: float, s: float) -> FloatArray:
    """`relative_runtime_s` for one instance (A, s floats, A ≠ 0): the same IEEE operations
    in the same order, so the same bits, with the instance's terms in Python floats instead
    of 0-d arrays (a decision evaluates one curve; each 0-d operation costs ~1 µs)."""
    f = s / (2.0 * A)
    first = f + (1.0 - f) / n
    u = min(s, 1.0)  # min(nan, 1.0) is nan, as np.minimum gives
    second = ((1.0 - 0.5 * u) + u * (A - 0.5) / n) / A
    out: FloatArray = np.maximum(np.maximum(first, second), 1.0 / A)
    return out


def _sigma_to_s_one(sigma: float) -> float:
    """`sigma_to_s` for one float: the same operations, without 0-d arrays."""
    if sigma <= 1.0:
        return sigma
    return 2.0 if math.isinf(sigma) else 2.0 * sigma / (sigma + 1.0)


def relative_runtime(n: ArrayLike, A: ArrayLike, sigma: ArrayLike) -> FloatArray:
    """Normalised runtime T(n)/T(1) = 1/S(n) of the Downey model; arguments broadcast."""
    s = _sigma_to_s_one(sigma) if isinstance(sigma, float) else sigma_to_s(sigma)
    return relative_runtime_s(n, A, s)


def speedup(n: ArrayLike, A: ArrayLike, sigma: ArrayLike) -> FloatArray:
    """Speedup S(n) = T(1)/T(n) (thesis eqs. 3.5 and 3.7); arguments broadcast."""
    return 1.0 / relative_runtime(n, A, sigma)


def efficiency(n: ArrayLike, A: ArrayLike, sigma: ArrayLike) -> FloatArray:
    """Parallel efficiency E(n) = S(n)/n; arguments broadcast."""
    out: FloatArray = speedup(n, A, sigma) / np.asarray(n, dtype=float)
    return out


def max_useful_size(A: ArrayLike, sigma: ArrayLike) -> FloatArray:
    """Size beyond which S(n) = A: 2A-1 (low variance), A + Aσ - σ (high variance).

    ADEPT section III.B. Both expressions equal 2A-1 at σ = 1.
    """
    Av = np.asarray(A, dtype=float)
    sig = np.asarray(sigma, dtype=float)
    return np.where(sig <= 1.0, 2.0 * Av - 1.0, Av + (Av - 1.0) * sig)


def first_piece_end(A: ArrayLike, s: ArrayLike) -> FloatArray:
    """Largest n still on the first (Amdahl) piece: A in low mode, A + (A-1)σ in high mode.

    At σ = 1 exactly the two low-variance pieces coincide, so the Amdahl form holds to 2A-1.
    """
    Av = np.asarray(A, dtype=float)
    sv = np.asarray(s, dtype=float)
    sigma = s_to_sigma(np.minimum(sv, 2.0 - 1e-12))
    out: FloatArray = np.where(sv < 1.0, Av, Av + (Av - 1.0) * sigma)
    return out


def _piece_stationary_points(A: FloatArray, s: FloatArray) -> FloatArray:
    """Continuous maximisers of η = S²/n = 1/(n τ²) within each piece, stacked on the last axis.

    In a piece τ = α + β/n, n τ² is minimised at n = β/α. First piece: β/α = 2A/s - 1.
    Second low-variance piece: β/α = s(2A-1)/(2-s). The flat piece has no interior maximum;
    its left end (the maximum useful size) is included as a candidate instead.
    """
    # 2A/s overflows for s near the smallest doubles: such a curve is linear up to A anyway,
    # and the candidates are clipped to the maximum useful size below.
    tiny = s <= 2.0 * A / FLOAT_MAX
    first = np.where(tiny, np.inf, 2.0 * A / np.where(tiny, 1.0, s) - 1.0)
    second = np.where(s <= 1.0, s * (2.0 * A - 1.0) / (2.0 - s), 1.0)
    knee_low = np.where(s <= 1.0, A, 1.0)
    end = max_useful_size(A, s_to_sigma(s))
    return np.stack([first, second, knee_low, end], axis=-1)


def processor_working_set(A: ArrayLike, sigma: ArrayLike) -> IntArray:
    """Processor working set size: the smallest integer n maximising η(n) = S(n)²/n.

    Ghosal, Serazzi and Tripathi (1991), as used in ADEPT section III.B. η is maximised
    at a piece's stationary point n = β/α or at a piece boundary; the integers on either side of
    every such candidate are evaluated and the best one (smallest on ties) is returned.
    """
    Av, sig = np.broadcast_arrays(np.asarray(A, dtype=float), np.asarray(sigma, dtype=float))
    s = sigma_to_s(sig)
    end = max_useful_size(Av, sig)
    # np.clip's arithmetic (max, then min) without its Python-level argument handling.
    cont = np.minimum(np.maximum(_piece_stationary_points(Av, s), 1.0), end[..., None])
    cand = np.concatenate([np.floor(cont), np.ceil(cont), np.ones_like(cont[..., :1])], axis=-1)
    cand = np.maximum(cand, 1.0)
    eta = 1.0 / (cand * relative_runtime_s(cand, Av[..., None], s[..., None]) ** 2)
    best = eta.max(axis=-1, keepdims=True)
    # Ties within rounding go to the smallest n, as the definition asks.
    tied = eta >= best * (1.0 - 1e-12)
    result: IntArray = np.where(tied, cand, np.inf).min(axis=-1).astype(np.int64)
    return result
