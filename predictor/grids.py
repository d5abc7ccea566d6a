"""Evenly spaced values for the ADEPT search, without numpy's per-call generality.

`np.linspace` costs ~50 µs a call in argument handling, and one search makes a dozen calls for
grids of 11-128 values. `linspace` here does numpy's arithmetic for scalar end points in the
same order (y = arange(num)·step + start, step = (stop - start)/(num - 1), the last value set
to stop), so the grids, and every argmin over them, are the same bit for bit. `geomspace`
likewise follows np.geomspace for positive scalar end points (10 to the power of the linspace
of their log10, both ends set to start and stop).
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


def geomspace(start: float, stop: float, num: int) -> FloatArray:
    """np.geomspace(start, stop, num) for positive scalar start and stop (num ≥ 2), bit for bit."""
    y: FloatArray = np.power(10.0, linspace(np.log10(start), np.log10(stop), num))
    y[0], y[-1] = start, stop
    return y
