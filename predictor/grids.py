"""Evenly spaced values for the ADEPT search, without numpy's per-call generality.

`np.linspace` costs ~50 µs a call in argument handling, and one search makes a dozen calls for
grids of 11-128 values. `linspace` here does numpy's arithmetic for scalar end points in the
same order (y = arange(num)·step + start, step = (stop - start)/(num - 1), the last value set
to stop), so the grids, and every argmin over them, are the same bit for bit.
"""

from __future__ import annotations

import numpy as np

from predictor.downey import FloatArray


def linspace(start: float, stop: float, num: int) -> FloatArray:
    """np.linspace(start, stop, num) for scalar start and stop, bit for bit."""
    y: FloatArray = np.arange(num, dtype=float)
    if num > 1:
        delta = float(stop) - float(start)
        step = delta / (num - 1)
        if step == 0:  # numpy's path for denormal steps
            y /= num - 1
            y *= delta
        else:
            y *= step
    y += float(start)
    if num > 1:
        y[-1] = stop
    return y


def clip(x: FloatArray, lo: float, hi: float) -> FloatArray:
    """np.clip(x, lo, hi) for lo ≤ hi: min(max(x, lo), hi), NaN kept, as two ufunc calls."""
    out: FloatArray = np.minimum(np.maximum(x, lo), hi)
    return out
