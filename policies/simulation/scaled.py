"""One curve shape per application, one scale per run: adaptive learned on limit-normalised runs.

Within one application the runs mix problem sizes: on the dev traces, at one requested size,
run times differ by a median 4.7× (NASA), 1,539× (Lublin) and 18× (CEA-Curie). Fitted as one
curve, that spread is misfit: the learner's curve is refused, unidentified or too far off to
use, and most jobs run as submitted. This module fits the shape only. Each run i is taken to be

    T_i = s_i · g(n_i),   s_i = L_i / REFERENCE_S

with g the application's shared Downey shape and s_i the run's scale, estimated from what the
daemon has at submit time: L_i, the user's own time limit of the request (seconds; the limit
the user wrote for the range's smallest size, before adaptalloc rescaled it). The learner
(learning.CurveLearner, unchanged: the same ADEPT fit at the daemon's cadence) sees the
normalised runs (n_i, REFERENCE_S · T_i / L_i); a new job with limit L is sized with that
curve scaled by s = L / REFERENCE_S, `ScaledCurve`:

    T(n) = s · g(n),   T±(n) = s · g±(n)   (the interval scales with it)

Sizing (efficiency, pws, cap, load_adaptive) and the rescaled limit L·T⁺(n)/T⁻(lo) are ratios of
the curve, so they see the shape only; the scale reaches the pessimistic-runtime floor of the
limit (never below T⁺(n)) and the exploration budget's node-hours. Nothing here reads a job's
true run time: only its limit, its range and the completed runs' (nodes, run time).

What this assumes (said in the benchmark): a user's limit is proportional to the run's size of
problem, at a ratio the application shares. Users over-ask by varying factors (a median of a
few times, Mu'alem and Feitelson, TPDS 2001), so that ratio is noise the fit's residual
carries, and the time limit's prediction interval widens with it. On traces without requested
times (NASA, Lublin here) the limit is modelled from the run time (workload.user_estimate), so
there it is a near-oracle of the scale: only CEA-Curie's real limits test the idea honestly.

What the daemon would have to change to run it (not done here, plugin/ untouched): the learner
records each run's user limit as submitted (the job's original --time, kept by job_submit.lua
before the daemon rewrites it, e.g. in the admin comment), fits the application's curve to
(nodes, REFERENCE_S · elapsed / original limit), and the decider multiplies that curve by the
new job's own limit / REFERENCE_S before `decide`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike

from policies.config import PolicySettings
from policies.simulation.adaptive import AdaptiveSizer
from policies.simulation.learning import CurveLearner
from policies.simulation.sizing import MoldableRequests
from policies.simulation.workload import JobCurves, TraceJob
from predictor import Curve
from predictor.downey import FloatArray, IntArray
from predictor.intervals import LEVEL

#: The policy's name (experiment.VARIANTS).
SCALED = "adaptive_scaled"
#: The unit of the normalised runs: one hour of user limit is REFERENCE_S seconds of "shape".
#: Any positive constant gives the same decisions up to float rounding (sizing and limits are
#: ratios); an hour keeps the normalised run times in the range of real ones the fit expects.
REFERENCE_S = 3600.0


@dataclass(frozen=True)
class ScaledCurve(Curve):
    """`base` (the application's shape, fitted on normalised runs) times `scale`: every
    runtime and interval end multiplied by it, T(1) too; the shape's other fields as they are."""

    base: Curve | None = None
    scale: float = 1.0

    @classmethod
    def of(cls, base: Curve, scale: float) -> ScaledCurve:
        if not (np.isfinite(scale) and scale > 0.0):
            raise ValueError(f"a curve's scale must be finite and > 0, got {scale!r}")
        values = {f.name: getattr(base, f.name) for f in fields(Curve)}
        values["t1"] = base.t1 * scale
        return cls(**values, base=base, scale=scale)

    def __post_init__(self) -> None:
        if self.base is None:
            raise ValueError("a scaled curve needs the shape it scales (ScaledCurve.of)")

    def _shape(self) -> Curve:
        if self.base is None:
            raise ValueError("a scaled curve needs the shape it scales (ScaledCurve.of)")
        return self.base

    def runtime(self, n: ArrayLike) -> FloatArray:
        out: FloatArray = self._shape().runtime(n) * self.scale
        return out

    def runtime_interval(self, n: ArrayLike, level: float = LEVEL) -> tuple[FloatArray, FloatArray]:
        low, high = self._shape().runtime_interval(n, level)
        return low * self.scale, high * self.scale


def normalised(runtime: float, user_limit: float) -> float:
    """REFERENCE_S · T / L: a run's time in units of its user's limit (module doc)."""
    return REFERENCE_S * runtime / user_limit


class ScaledSizer(AdaptiveSizer):
    """adaptive whose learner fits limit-normalised runs and whose curve is rescaled per job
    by its user's limit (module doc). The user's limit of job j is `requests.limit[j]`, what
    the request hands the daemon; the job's run time is never read before it ends."""

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        requests: MoldableRequests,
        curves: JobCurves,
        settings: PolicySettings,
        learner: tuple[CurveLearner, IntArray],
        name: str = SCALED,
    ) -> None:
        super().__init__(jobs, requests, curves, settings, learner, name=name)
        self.shapes = learner

    def _curve(self, job: int, lo: int, hi: int, now: float) -> Curve | None:
        learner, apps = self.shapes
        shape = learner.curve(int(apps[job]), now)
        if shape is None:
            return None
        return ScaledCurve.of(shape, self.requests.limit[job] / REFERENCE_S)

    def finished(self, job: int, nodes: int, runtime: float, killed: bool, now: float) -> None:
        """A completed run is an observation, normalised by its user's limit; a killed one
        is not (learning.py)."""
        if not killed:
            learner, apps = self.shapes
            value = normalised(runtime, self.requests.limit[job])
            learner.observe(int(apps[job]), nodes, value, now)
