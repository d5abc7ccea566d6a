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


# numpy sums a contiguous axis pairwise in blocks of this many elements (8 accumulators) and
# splits recursively beyond PAIRWISE_BLOCK elements; sum_leading follows it up to there.
PAIRWISE_UNROLL = 8
PAIRWISE_BLOCK = 128


def sum_leading(x: FloatArray) -> FloatArray:
    """Σ over axis 0, bit for bit what x.sum(axis=-1) gives on the transposed array.

    numpy sums a contiguous last axis pairwise: under 8 elements one after the other, else
    8 running partial sums combined as ((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7)) and the rest added
    one by one. Summing the leading axis in that order keeps objective values, and so every
    argmin between instances with equal WSSRE (the valley's exact ties), identical to the
    last-axis layout, while each step is one array operation across all instances.
    """
    M = x.shape[0]
    if M < PAIRWISE_UNROLL:
        out: FloatArray = np.add.reduce(x, axis=0)  # x.sum(axis=0) without its Python wrapper
        return out
    if M > PAIRWISE_BLOCK:
        far: FloatArray = np.ascontiguousarray(np.moveaxis(x, 0, -1)).sum(axis=-1)
        return far
    acc = x[:PAIRWISE_UNROLL].copy()
    full = M - M % PAIRWISE_UNROLL
    for i in range(PAIRWISE_UNROLL, full, PAIRWISE_UNROLL):
        acc += x[i : i + PAIRWISE_UNROLL]
    out = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
    for i in range(full, M):
        out += x[i]
    return out


def wssre_leading(
    tau: FloatArray,
    t: FloatArray,
    w: FloatArray,
    scale: float | None = None,
    overwrite: bool = False,
) -> tuple[FloatArray, FloatArray]:
    """`wssre` with the observation axis first: tau (M, ...), t (M,), w (M, ...) broadcasting.

    The same operations in the same order as `wssre`, so the same values bit for bit; with
    the observations leading, each sum is M - 1 additions of whole arrays over the instances
    instead of one short reduction per instance. overwrite: tau is the caller's scratch
    (a fresh array it no longer needs) and holds the relative runtimes' ratios afterwards.
    """
    extra = (1,) * (tau.ndim - 1)
    r = np.divide(tau, t.reshape(t.shape + extra), out=tau if overwrite else None)
    wr = w * r
    # Where w adds no axis to r (the search's layouts), the temporaries reuse r's and wr's
    # memory: the same operations on the same operands in the same order, so the same bits,
    # without allocating an instances × observations array per step.
    reuse = wr.shape == r.shape
    if scale is None:
        c = sum_leading(wr) / sum_leading(np.multiply(wr, r, out=wr if reuse else None))
    else:
        c = np.full(np.broadcast_shapes(r.shape, np.shape(w))[1:], scale)
    if not reuse:
        err = 1.0 - c * r
        return sum_leading(w * err * err), c
    err = np.subtract(1.0, np.multiply(c, r, out=r), out=r)
    return sum_leading(np.multiply(np.multiply(w, err, out=wr), err, out=wr)), c


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
