"""Fitting objectives in runtime space with relative errors, the scale T(1) profiled out.

A model instance (A, s) gives relative runtimes τ_i = τ(n_i; A, s); the predicted runtime is
c·τ_i with c the model's T(1). Write r_i = τ_i / t_i for observed runtimes t_i.

* WSSRE (ADEPT section V.B): Σ w_i ((t_i - c τ_i)/t_i)² = Σ w_i (1 - c r_i)². For fixed (A, s) it
  is minimised in closed form by c* = Σ w r / Σ w r².
* Maximum relative error (ADEPT's δ test, section V.A): max_i |1 - c r_i|, minimised over c by
  c = 2/(min r + max r), giving (max r - min r)/(max r + min r).
* Distance weights (section V.B): W_i = q·max_j |n_target - n_j| - |n_target - n_i|; q = ∞ means
  uniform weights (a single instance for all targets).

When T(1) was observed the scale is not free: c = T(1) (DESIGN.md, numerical notes), and the
functions take it as `scale`.

All functions broadcast over leading axes; the observation axis is last.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import FloatArray


def distance_weights(n: ArrayLike, target: ArrayLike, q: float) -> FloatArray:
    """ADEPT weights, shape (..., M) for targets of shape (...) and sizes of shape (M,).

    Weights are normalised to sum to one, which leaves the argmin unchanged and keeps WSSRE
    values comparable across targets.
    """
    nv = np.asarray(n, dtype=float)
    tv = np.asarray(target, dtype=float)[..., None]
    if np.isinf(q):
        w = np.ones(np.broadcast_shapes(tv.shape, nv.shape))
    else:
        dist = np.abs(tv - nv)
        w = q * dist.max(axis=-1, keepdims=True) - dist
        # Every observation at the same distance (one target, two sizes symmetric around it):
        # all weights equal, which the formula gives as (q-1)·d; guard the d = 0 case.
        w = np.where(np.all(dist == 0, axis=-1, keepdims=True), 1.0, w)
    out: FloatArray = w / w.sum(axis=-1, keepdims=True)
    return out


def wssre(
    tau: FloatArray, t: FloatArray, w: FloatArray, scale: float | None = None
) -> tuple[FloatArray, FloatArray]:
    """WSSRE at the profiled scale (or at the given one) and that scale, over the last axis.

    Returns (wssre, c), each of the broadcast leading shape.
    """
    r = tau / t
    if scale is None:
        c = (w * r).sum(axis=-1) / (w * r * r).sum(axis=-1)
    else:
        c = np.full(np.broadcast_shapes(r.shape, np.shape(w))[:-1], scale)
    err = 1.0 - c[..., None] * r
    return (w * err * err).sum(axis=-1), c


def minimax_relative_error(
    tau: FloatArray, t: FloatArray, scale: float | None = None
) -> FloatArray:
    """min over c of max_i |t_i - c τ_i|/t_i = (max r - min r)/(max r + min r), r = τ/t.

    With a given scale c it is simply max_i |1 - c r_i|.
    """
    r = tau / t
    if scale is not None:
        fixed: FloatArray = np.abs(1.0 - scale * r).max(axis=-1)
        return fixed
    hi = r.max(axis=-1)
    lo = r.min(axis=-1)
    out: FloatArray = (hi - lo) / (hi + lo)
    return out


def max_relative_error(predicted: ArrayLike, actual: ArrayLike) -> float:
    """max |actual - predicted| / actual, ADEPT's fitting-error indicator (Table 3)."""
    p = np.asarray(predicted, dtype=float)
    a = np.asarray(actual, dtype=float)
    return float(np.max(np.abs(a - p) / a))
