"""Where the runs show a shape the Downey model cannot express, and the model that speaks there.

Every Downey curve has a runtime that falls less and less steeply in log-log space: in each
piece τ = α + β/n, so log τ is a convex function of log(1/n) (a maximum of log-convex pieces),
and the secant slope of one step, b = -Δlog T / Δlog n (1 = linear speedup over the step, 0 =
no speedup), never grows from one step to the next; and the runtime never rises (thesis §3.2,
ADEPT section III.B: "does not capture the declining section"). Runs that do either are
beyond the model, and fitting it anyway gives what real curves punish: a plateau continued
where the runs keep scaling, or a flat curve where they turn up. Two such shapes are read from
the observations a fit uses (the analysis' kept, full-weight points, sizes ascending):

* accelerating: the last step's slope exceeds the step before it by more than κ
  (`ShapeSettings.accelerate`) and by more than runtime noise explains: the runs scale better
  at their largest sizes than before (a superlinear stretch, or a slow first step such as one
  node against two). With independent relative noise η on each runtime, the difference of
  two consecutive slopes with log steps l1, l2 has standard deviation
  η·sqrt(1/l1² + (1/l1 + 1/l2)² + 1/l2²), and it must exceed z = 1.96 of those (two-sided 5%,
  the anomaly tests' level) at η = `noise` = 2%: closely spaced sizes (36 and 38 nodes)
  make a slope out of noise, and without the bound κ = 0.2 fired on 11% of exact Downey
  draws with random sizes and 0-5% noise (tests/unit/predictor/golden.py's 240 "sim" cases);
  η = 2% is the smallest of {1, 2, 3, 5}% that keeps those false alarms at or below 1%
  (0.8%; 1.0% on the synthetic suite's seeds 17-18; 5% would miss athenak_mpi_ranks). Past the
  largest size the last step speaks: Amdahl's law through the last two observations (Dowdy's
  T = c1 + c2/n, both coefficients ≥ 0; the first piece of a Downey instance fitted to that
  pair alone, which is what ADEPT's multi-phase modelling, section VIII.C, would fit to a last
  phase of two sizes). Inside the observed sizes ADEPT's fit stands.
* rising: ADEPT's analysis found the runtime rising after its minimum (a declining tail or an
  ambiguous final point, anomalies.py, beyond the noise of a difference). Sevcik's
  T = a/n + b + c·n (models/strong.py), fitted to every observation but individual anomalous
  points, speaks: at every size when the rising points stayed in ADEPT's fit (too few sizes
  to leave them out), else from the size of the smallest runtime on (before it, ADEPT's fit of
  the points before the rise stands).

The Downey curve's own prediction is then an alternative the interval must reach
(intervals.py), as an unidentified fit's plausible instances are: the runs say the Downey
model does not describe them, so where it and the speaker part is what is not known.

Chosen and scored (tests/benchmarks/test_predictor_real.py): κ and whether the rise rule is
on are chosen leave-one-group-out on the development curves (tests/data/scaling and its
more/), which also print the curves each choice came from; the unseen curves only score them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import BoolArray, FloatArray
from predictor.models import MODELS, ModelFit

REASONS = ("accelerating", "rising")


@dataclass(frozen=True)
class ShapeSettings:
    """Which shapes beyond the Downey model are acted on (module docstring).

    accelerate: κ, how much steeper (in log-log slope) the last step must be than the one
        before it; inf disables. Chosen leave-one-group-out from ACCELERATE_CANDIDATES.
    noise: η, the relative runtime noise the slope difference must rise above (z = 1.96).
    rise: whether Sevcik's model speaks where the runtime rises after its minimum.
    """

    accelerate: float = 0.2
    noise: float = 0.02
    rise: bool = True

    def __post_init__(self) -> None:
        if not self.accelerate > 0.0:
            raise ValueError(f"accelerate must be positive, got {self.accelerate}")
        if not 0.0 <= self.noise < 1.0:
            raise ValueError(f"noise must lie in [0, 1), got {self.noise}")


SHAPES = ShapeSettings()
#: The Downey curve alone, nothing else speaking (what ADEPT predicted before this module).
DOWNEY_ONLY = ShapeSettings(accelerate=float("inf"), rise=False)
#: What the leave-one-group-out choice of κ picks from (the benchmark prints its picks).
ACCELERATE_CANDIDATES = (0.2, 0.4, 0.8, float("inf"))


@dataclass(frozen=True)
class Speaker:
    """A model of the zoo that speaks instead of the Downey curve at sizes n ≥ start.

    sizes: the observed sizes that show the shape (accelerating: the last step's two; rising:
    the smallest runtime's size and the sizes after it)."""

    reason: str
    fit: ModelFit
    start: float
    sizes: tuple[int, ...] = ()

    def speaks(self, n: ArrayLike) -> BoolArray:
        out: BoolArray = np.asarray(n, dtype=float) >= self.start
        return out

    def runtime(self, n: ArrayLike) -> FloatArray:
        return self.fit.runtime(np.asarray(n, dtype=float))

    def over(self, n: ArrayLike, downey: FloatArray) -> FloatArray:
        """The runtime at n: the speaker's where it speaks, `downey` (the Downey curve's
        runtime at n) elsewhere."""
        nv = np.asarray(n, dtype=float)
        out: FloatArray = np.where(self.speaks(nv), self.runtime(nv), downey)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "fit": self.fit.to_dict(),
            "start": self.start,
            "sizes": list(self.sizes),
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Speaker:
        reason = str(doc["reason"])
        if reason not in REASONS:
            raise ValueError(f"unknown speaker reason {reason!r}")
        start = float(doc["start"])
        if not (np.isfinite(start) and start >= 1.0):
            raise ValueError("a speaker's start must be a size of at least 1")
        sizes = tuple(int(k) for k in doc.get("sizes", []))
        return cls(reason, ModelFit.from_dict(dict(doc["fit"])), start, sizes)


def step_slopes(n: FloatArray, t: FloatArray) -> FloatArray:
    """b_i = -log(t_{i+1}/t_i) / log(n_{i+1}/n_i) per step of sizes ascending."""
    out: FloatArray = -np.diff(np.log(t)) / np.diff(np.log(n))
    return out


#: Two-sided 5% normal quantile: how many standard deviations of noise the slope difference
#: must exceed (the anomaly tests' level, anomalies.py).
NOISE_Z = 1.959963984540054


def accelerating(n: FloatArray, t: FloatArray, kappa: float, noise: float = 0.0) -> bool:
    """Whether the last step is steeper than the one before by more than kappa and by more
    than NOISE_Z standard deviations of a slope difference at relative noise `noise`."""
    if n.size < 3 or not np.isfinite(kappa):
        return False
    b = step_slopes(n[-3:], t[-3:])
    l1, l2 = np.diff(np.log(n[-3:]))
    sd = noise * np.sqrt(1.0 / l1**2 + (1.0 / l1 + 1.0 / l2) ** 2 + 1.0 / l2**2)
    d = b[1] - b[0]
    return bool(d > kappa and d > NOISE_Z * sd)


def last_step(n: FloatArray, t: FloatArray) -> ModelFit:
    """Dowdy's T = c1 + c2/n through the last two observations (c1, c2 ≥ 0)."""
    w = np.zeros(n.size)
    w[-2:] = 0.5
    fitted = MODELS["dowdy"].fit(n, t, w, None)
    return ModelFit("dowdy", fitted.params, fitted.wssre, float(n[-1]))


def speaker(
    n: FloatArray,
    t: FloatArray,
    normal: BoolArray,
    usable: BoolArray,
    rising: bool,
    tail_kept: bool,
    settings: ShapeSettings = SHAPES,
) -> Speaker | None:
    """The model that speaks for observations (n, t) ascending, or None (module docstring).

    normal: the points ADEPT fits at full weight (kept, not anomalous); usable: every point
    but individual anomalous ones (weight 0); rising: ADEPT's analysis found a rise after the
    minimum; tail_kept: the rising points stayed in ADEPT's fit.
    """
    if rising and settings.rise and usable.sum() >= 3:
        nu, tu = n[usable], t[usable]
        w = np.full(nu.size, 1.0 / nu.size)
        fitted = MODELS["sevcik"].fit(nu, tu, w, None)
        low = float(nu[int(np.argmin(tu))])
        shown = tuple(int(k) for k in nu[nu >= low])
        return Speaker("rising", fitted, 1.0 if tail_kept else low, shown)
    nn, tn = n[normal], t[normal]
    if accelerating(nn, tn, settings.accelerate, settings.noise):
        shown = (int(nn[-2]), int(nn[-1]))
        return Speaker("accelerating", last_step(nn, tn), float(nn[-1]), shown)
    return None
