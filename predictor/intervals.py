"""Prediction intervals for predicted runtimes .

The error of a predicted runtime is modelled in log space as normal with standard deviation

    s(n) = sqrt(a² + r² + (b·d(n))²),

r the RMS of log(T_model/t) of the target's instance over the observations (what the data say
about noise and misfit), d(n) = max(0, log(n/n_max), log(n_min/n)) the distance outside the
observed sizes in log n (extrapolation error grows with it), and a a floor for what few
residuals cannot show. The interval at level L is T·exp(±z·s(n)) with z the normal quantile
(1+L)/2. The constants a and b are per method: CHOSEN on the synthetic suite with seed 101
(8 cases per cell: tests/benchmarks/synthetic.py, exact Downey curves × lognormal noise 0-5%)
so that 90% intervals cover 90% of interpolation and of extrapolation targets, and SCORED on
other seeds by tests/benchmarks/test_synthetic_accuracy.py. They are calibrated on that
synthetic assumption: applications that deviate from the Downey model get intervals that are
too narrow, which `fit_error` (Table 3's high_fit_error) reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from predictor.downey import FloatArray

LEVEL = 0.9


@dataclass(frozen=True)
class Spread:
    """Constants of s(n) for one method (see the module docstring)."""

    floor: float  # a
    per_log_distance: float  # b


SPREAD = {"adept": Spread(0.007, 0.24), "lm": Spread(0.010, 0.40)}


def log_distance_outside(targets: FloatArray, n_min: float, n_max: float) -> FloatArray:
    """d(n) = max(0, log(n/n_max), log(n_min/n))."""
    t = np.asarray(targets, dtype=float)
    out: FloatArray = np.maximum(0.0, np.maximum(np.log(t / n_max), np.log(n_min / t)))
    return out


def interval(
    runtime: FloatArray,
    targets: FloatArray,
    residual: FloatArray,
    n_min: float,
    n_max: float,
    method: str,
    level: float = LEVEL,
) -> tuple[FloatArray, FloatArray]:
    """(lower, upper) runtimes: runtime·exp(∓z·s(n)), z = Φ⁻¹((1+level)/2)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    spread = SPREAD[method]
    d = log_distance_outside(targets, n_min, n_max)
    s = np.sqrt(spread.floor**2 + residual**2 + (spread.per_log_distance * d) ** 2)
    half = float(ndtri(0.5 + level / 2.0)) * s
    return runtime * np.exp(-half), runtime * np.exp(half)
