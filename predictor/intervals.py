"""Prediction intervals for predicted runtimes, calibrated on real curves by conformal prediction.

The error of a predicted runtime T(n) is measured in log space and scaled by a spread

    s(n) = sqrt(a² + r² + (b·d(n))² + m² + D(n)²),

r the RMS of log(T_model/t) of the target's instance over the observations (what the data say
about noise and misfit), d(n) = max(0, log(n/n_max), log(n_min/n)) the distance outside the
observed sizes in log n (extrapolation error grows with it), a a floor for what few residuals
cannot show, m a misfit term added only to fits on at most PARAMETERS sizes (a Downey fit
through 3 sizes has residuals 0 whatever the application's shape), and D(n) the largest
|log(T_alt(n)/T(n))| over the alternatives the data cannot rule out: where another model speaks
because the runs show a shape the Downey model cannot express (shape.py), the Downey curve's own
prediction; and an unidentified fit's plausible instances (adept.py, "Plausible instances"),
whose distance counts PLAUSIBLE_WEIGHT times. The interval at level L is

    T(n)·exp(±q·s(n)),

with q the split-conformal quantile of held-out scores |log(t/T(n))|/s(n) (Vovk et al.; Lei et
al. 2018, "Distribution-free predictive inference for regression"): of N calibration scores,
the ⌈L·(N+1)⌉-th smallest. Scores between and beyond the observed sizes behave differently (an
interpolated size has neighbours on both sides), and between the sizes so do those of fits on
at most PARAMETERS sizes, whose s(n) is m where the residuals say nothing, and of fits on more,
whose residuals understate the error at a size left out: so q has three classes, between the
sizes for few and for many sizes, and beyond them (`Calibration`). A fit on few sizes is
never narrower than the many-sizes interval of the same residual (`half_width`): its smaller
q was calibrated where residuals are 0, and less data must never narrow an interval.

Where the constants come from. a, b and m keep their earlier values (a and b chosen on the
synthetic suite with seed 101, m leave-one-curve-out on the real curves of tests/data/scaling);
they only shape s(n) now, its level is set by q. PLAUSIBLE_WEIGHT and the three q are CHOSEN by
tests/benchmarks/test_predictor_real.py on the development curves (tests/data/scaling and its
more/, sibling curves of one source treated as one unit): the weight, of 1, 0.5 and 0, that
gives the narrowest calibrated intervals beyond the sizes (0: spanning the plausible instances
made them wider without covering more); q from the targets of interpolation from 3 sizes and
of leave-one-out (between the sizes) and of extrapolation of the larger half (beyond them).
The benchmark SCORES them leave-one-group-out (each held-out group's constants chosen on the
others, the group's coverage measured; 92% between the sizes, 87% beyond, 90% left out one at
a time, pooled over all 34 curves) and on the unseen curves, which chose nothing. Other levels
than LEVEL scale q by the ratio of normal quantiles, z((1+L)/2)/z(0.95): the calibration is at
90%, and that scaling is an assumption about the scores' tails.

The LM baseline keeps its Gaussian interval (q = z((1+L)/2), its own a and b, no m, no D): it
exists to be compared against. `predict`'s intervals and the stored curve's
(Curve.runtime_interval, which time limits read) use the same function and constants.
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


@dataclass(frozen=True)
class Calibration:
    """Conformal multipliers q of s(n) at LEVEL: between the observed sizes for fits on at
    most PARAMETERS sizes ("few") and on more, and beyond the observed sizes."""

    inside_few: float
    inside_many: float
    outside: float

    def at(self, inside: bool, few: bool) -> float:
        if inside:
            return self.inside_few if few else self.inside_many
        return self.outside


SPREAD = {"adept": Spread(0.007, 0.24, 0.18), "lm": Spread(0.010, 0.40)}
#: Conformal multipliers at LEVEL, chosen on the development curves (module docstring;
#: tests/benchmarks/test_predictor_real.py prints the choice and its held-out coverage).
CALIBRATION: dict[str, Calibration] = {"adept": Calibration(1.07, 2.35, 2.3)}
#: How much the plausible instances of an unidentified fit widen s(n) (module docstring).
PLAUSIBLE_WEIGHT = 0.0
# Free parameters of a Downey fit (A, σ, scale): with as many sizes the residuals are 0.
PARAMETERS = 3


def log_distance_outside(targets: FloatArray, n_min: float, n_max: float) -> FloatArray:
    """d(n) = max(0, log(n/n_max), log(n_min/n))."""
    t = np.asarray(targets, dtype=float)
    out: FloatArray = np.maximum(0.0, np.maximum(np.log(t / n_max), np.log(n_min / t)))
    return out


def disagreement(runtime: FloatArray, alternatives: FloatArray | None) -> FloatArray:
    """D(n) = max_k |log(alternatives[:, k] / runtime)|, 0 without alternatives: (T,)."""
    rt = np.asarray(runtime, dtype=float)
    if alternatives is None or np.size(alternatives) == 0:
        return np.zeros(rt.shape)
    out: FloatArray = np.max(np.abs(np.log(alternatives / rt[..., None])), axis=-1)
    return out


def spread(
    targets: FloatArray,
    residual: FloatArray,
    n_min: float,
    n_max: float,
    method: str,
    sizes: int | None = None,
    runtime: FloatArray | None = None,
    alternatives: FloatArray | None = None,
    plausible: FloatArray | None = None,
) -> FloatArray:
    """s(n) of the module docstring at each target.

    sizes: the number of distinct observed sizes the fit used; m is added when it is at most
    PARAMETERS (None: not known, not added). alternatives: (T, K) runtimes the interval must
    reckon with beside `runtime` (T,) (the Downey curve's where another model speaks);
    plausible: (T, K') runtimes of an unidentified fit's plausible instances, whose distance
    counts PLAUSIBLE_WEIGHT times: D(n) = max(D_alternatives, PLAUSIBLE_WEIGHT·D_plausible)."""
    constants = SPREAD[method]
    d = log_distance_outside(targets, n_min, n_max)
    misfit = constants.misfit if sizes is not None and sizes <= PARAMETERS else 0.0
    D: FloatArray | float = 0.0
    if runtime is not None:
        D = disagreement(runtime, alternatives)
        if PLAUSIBLE_WEIGHT > 0.0:
            D = np.maximum(D, PLAUSIBLE_WEIGHT * disagreement(runtime, plausible))
    out: FloatArray = np.sqrt(
        constants.floor**2
        + np.asarray(residual, dtype=float) ** 2
        + (constants.per_log_distance * d) ** 2
        + misfit**2
        + D**2
    )
    return out


def multiplier(
    targets: FloatArray,
    n_min: float,
    n_max: float,
    method: str,
    level: float = LEVEL,
    sizes: int | None = None,
) -> FloatArray:
    """q at each target: the conformal q_in or q_out of the fit's size class (scaled to
    `level`; `sizes` None counts as many), or the normal quantile for a method without a
    calibration."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    z = float(ndtri(0.5 + level / 2.0))
    t = np.asarray(targets, dtype=float)
    calibration = CALIBRATION.get(method)
    if calibration is None:
        return np.full(t.shape, z)
    scale = z / float(ndtri(0.5 + LEVEL / 2.0))
    few = sizes is not None and sizes <= PARAMETERS
    inside = (t >= n_min) & (t <= n_max)
    out: FloatArray = scale * np.where(
        inside, calibration.at(True, few), calibration.at(False, few)
    )
    return out


def half_width(
    targets: FloatArray,
    residual: FloatArray,
    n_min: float,
    n_max: float,
    method: str,
    level: float = LEVEL,
    sizes: int | None = None,
    runtime: FloatArray | None = None,
    alternatives: FloatArray | None = None,
    plausible: FloatArray | None = None,
) -> FloatArray:
    """q·s(n), the interval's half width in log space.

    A fit on at most PARAMETERS sizes is never given a narrower interval than the same
    residuals would get from more sizes: its q is the smaller one, calibrated where residuals
    are 0, so where repeated runs give it a residual of its own the many-sizes width
    q_many·sqrt(a² + r² + (b·d)² + D²) is its floor. Less data never narrows an interval."""
    args = (targets, residual, n_min, n_max, method)
    extra = (runtime, alternatives, plausible)
    half: FloatArray = multiplier(targets, n_min, n_max, method, level, sizes) * spread(
        *args, sizes, *extra
    )
    if sizes is not None and sizes <= PARAMETERS:
        many = PARAMETERS + 1
        half = np.maximum(
            half,
            multiplier(targets, n_min, n_max, method, level, many) * spread(*args, many, *extra),
        )
    return half


def interval(
    runtime: FloatArray,
    targets: FloatArray,
    residual: FloatArray,
    n_min: float,
    n_max: float,
    method: str,
    level: float = LEVEL,
    sizes: int | None = None,
    alternatives: FloatArray | None = None,
    plausible: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """(lower, upper) runtimes: runtime·exp(∓q·s(n)) (module docstring)."""
    half = half_width(
        targets, residual, n_min, n_max, method, level, sizes, runtime, alternatives, plausible
    )
    return runtime * np.exp(-half), runtime * np.exp(half)
