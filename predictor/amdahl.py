"""Amdahl's law fitted in closed form with weighted relative runtime errors.

T(n) = a + b/n with a = c·f, b = c·(1-f): serial fraction f ∈ [0, 1], T(1) = c = a + b. This is
the first piece of the Downey model in both modes (downey.py, f = s/(2A)), and Dowdy's
T(n) = c1 + c2/n (thesis eq. 3.1).

Minimising Σ w_i (1 - (a + b/n_i)/t_i)² is linear least squares in (a, b) with regressors
x_i = 1/t_i and y_i = 1/(n_i t_i): the 2 × 2 normal equations
    [Σwx² Σwxy; Σwxy Σwy²] [a; b] = [Σwx; Σwy].
With T(1) known, b = c - a and a = Σ w (1 - c y)(x - y) / Σ w (x - y)². Solutions outside
f ∈ [0, 1] are replaced by the best fit on the violated bound (f = 0 or f = 1).
All functions broadcast over leading axes of the weights; observations are the last axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from predictor.downey import FloatArray


@dataclass(frozen=True)
class AmdahlFit:
    """Serial fraction f, T(1) = c, the WSSRE and the largest relative error, per weight row."""

    f: FloatArray
    c: FloatArray
    wssre: FloatArray
    max_error: FloatArray


def _on_bound(x: FloatArray, w: FloatArray, scale: float | None) -> FloatArray:
    """Best single coefficient k in T = k·(1/x-regressor) with a relative error; or the scale."""
    if scale is not None:
        return np.full(w.shape[:-1], scale)
    out: FloatArray = (w * x).sum(-1) / (w * x * x).sum(-1)
    return out


def fit_amdahl(
    n: FloatArray, t: FloatArray, w: FloatArray, scale: float | None = None
) -> AmdahlFit:
    """Weighted closed-form fit of T(n) = c(f + (1-f)/n); see the module docstring."""
    x = 1.0 / t
    y = 1.0 / (n * t)
    if scale is None:
        sxx, sxy, syy = (w * x * x).sum(-1), (w * x * y).sum(-1), (w * y * y).sum(-1)
        sx, sy = (w * x).sum(-1), (w * y).sum(-1)
        det = sxx * syy - sxy * sxy
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (sx * syy - sy * sxy) / det
            b = (sxx * sy - sxy * sx) / det
        a = np.where(np.isfinite(a), a, 0.0)
        b = np.where(np.isfinite(b), b, 0.0)
    else:
        d = x - y
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (w * (1.0 - scale * y) * d).sum(-1) / (w * d * d).sum(-1)
        a = np.where(np.isfinite(a), a, 0.0)
        b = scale - a
    # f < 0 (superlinear): perfect scaling, T = b/n. f > 1 (runtime grows): no speedup, T = a.
    b_only = _on_bound(y, w, scale)
    a_only = _on_bound(x, w, scale)
    a, b = np.where(a < 0, 0.0, a), np.where(a < 0, b_only, b)
    a, b = np.where(b < 0, a_only, a), np.where(b < 0, 0.0, b)
    c = a + b
    f = a / c
    pred = a[..., None] + b[..., None] / n
    rel = 1.0 - pred / t
    return AmdahlFit(f=f, c=c, wssre=(w * rel * rel).sum(-1), max_error=np.abs(rel).max(-1))
