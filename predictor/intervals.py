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

Misfit where the residuals cannot show it. With no more distinct sizes than the fit has
parameters (ADEPT: A, σ and the scale, which stays free when T(1) is observed; so 3 sizes)
the curve passes through every observation, r is 0 whatever the application's shape, and
the interval would be the floor alone. Real applications are not Downey curves, so there

    s(n) = sqrt(a² + r² + (b·d(n))² + m²)    (sizes ≤ PARAMETERS; m = 0 otherwise),

m a misfit term: the deviation of a real curve from the Downey curve through three of its
sizes, which three points cannot show. m was CHOSEN LEAVE-ONE-CURVE-OUT on the real curves
of tests/data/scaling (the smallest m whose 90% interval covers 90% of the other curves'
held-out runtimes from 3-size fits; 10-21% per held-out curve, median 18%) and is SCORED by
tests/benchmarks/test_real_intervals.py (3 sizes given: 55% -> 95% covered; held out 88.5%)
and by the synthetic suite, whose coverage it must keep within 85-95% (92.8% -> 93.8%,
seed 2026). With 4 sizes or more the residuals carry the misfit and m is not added.
`predict`'s intervals and the stored curve's (Curve.runtime_interval, which time limits read)
both carry it, so `predict` and the limit agree: a limit of an application with 3 sizes or
fewer is up to exp(1.645·0.18) = 1.34x longer than before, never above the user's own, and
fewer jobs are killed at a limit adaptalloc shortened.
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
    misfit: float = 0.0  # m, added where the fit has no residual degrees of freedom


SPREAD = {"adept": Spread(0.007, 0.24, 0.18), "lm": Spread(0.010, 0.40)}
# Free parameters of a Downey fit (A, σ, scale): with as many sizes the residuals are 0.
PARAMETERS = 3


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
    sizes: int | None = None,
) -> tuple[FloatArray, FloatArray]:
    """(lower, upper) runtimes: runtime·exp(∓z·s(n)), z = Φ⁻¹((1+level)/2).

    sizes: the number of distinct observed sizes the fit used; the misfit term m is added
    when it is at most PARAMETERS (None: not known, not added)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    spread = SPREAD[method]
    d = log_distance_outside(targets, n_min, n_max)
    misfit = spread.misfit if sizes is not None and sizes <= PARAMETERS else 0.0
    s = np.sqrt(spread.floor**2 + residual**2 + (spread.per_log_distance * d) ** 2 + misfit**2)
    half = float(ndtri(0.5 + level / 2.0)) * s
    return runtime * np.exp(-half), runtime * np.exp(half)
