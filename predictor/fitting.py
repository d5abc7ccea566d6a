"""The predictor's public entry points: fit a curve, predict runtimes, one result type.

`fit` returns one Downey instance for all sizes (ADEPT with uniform weights, or the LM
baseline). `predict` follows ADEPT and fits one instance per target size with distance weights
(section V.B); with method="lm" it evaluates the single LM instance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from predictor.adept import FAST, SearchSettings, search
from predictor.downey import (
    FloatArray,
    IntArray,
    efficiency,
    max_useful_size,
    processor_working_set,
    relative_runtime,
    s_to_sigma,
)
from predictor.envelope import Domain, Envelope
from predictor.lm import fit_lm
from predictor.objective import max_relative_error
from predictor.observations import Observations, prepare

METHODS = ("adept", "lm")
# Targets per search call in predict: bounds memory (a search holds ~10^4 instances per target).
TARGET_BATCH = 256


@dataclass(frozen=True)
class Fit:
    """A fitted Downey instance and its diagnostics.

    t1 is the model's serial runtime (the observed one when t1_known). fit_error is the largest
    relative runtime error at the observed sizes (ADEPT Table 3). `identified` is False when
    the observations only determine the serial fraction (see adept.py, "the unidentified
    valley"). status is "ok" or "failed"; a failed fit keeps its last parameters and a message.
    """

    method: str
    A: float
    sigma: float
    t1: float
    t1_known: bool
    fit_error: float
    identified: bool
    status: str
    message: str
    observations: Observations
    envelope: Envelope | None = field(default=None, repr=False)
    model: str = "downey"

    @property
    def mode(self) -> str:
        """ "low" for σ ≤ 1, "high" otherwise (the two agree at σ = 1)."""
        return "low" if self.sigma <= 1.0 else "high"

    @property
    def max_useful_n(self) -> int | None:
        """Smallest whole size at which the speedup reaches A: ⌈2A-1⌉ or ⌈A+Aσ-σ⌉.

        None when the fit is not identified: the observations show no knee, and the
        representative's A says nothing about where one is.
        """
        if not self.identified:
            return None
        return int(np.ceil(max_useful_size(self.A, self.sigma) - 1e-9))

    @property
    def pws_n(self) -> int:
        """Processor working set size, the smallest n maximising S(n)²/n."""
        return int(processor_working_set(self.A, self.sigma))

    def runtime(self, n: ArrayLike) -> FloatArray:
        """Predicted runtime T(1)·τ(n) of this single instance, in the observations' unit."""
        return self.t1 * relative_runtime(n, self.A, self.sigma)

    def speedup(self, n: ArrayLike) -> FloatArray:
        return 1.0 / relative_runtime(n, self.A, self.sigma)

    def efficiency(self, n: ArrayLike) -> FloatArray:
        return efficiency(n, self.A, self.sigma)


@dataclass(frozen=True)
class Predictions:
    """Per-target predictions; every array has the targets' length.

    speedup is relative to each target instance's T(1), efficiency = speedup / n.
    """

    n: IntArray
    runtime: FloatArray
    speedup: FloatArray
    efficiency: FloatArray
    A: FloatArray
    sigma: FloatArray


def _normalised(obs: Observations) -> tuple[FloatArray, FloatArray, float]:
    """Sizes, runtimes divided by their geometric mean, and that mean.

    Every objective uses relative errors, so the fit does not depend on the unit; dividing
    keeps runtimes near 1 whatever unit they came in (1e-9 s or 1e9 s alike).
    """
    unit = float(np.exp(np.mean(np.log(obs.runtime))))
    return obs.n.astype(float), obs.runtime / unit, unit


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


def _targets(at: ArrayLike) -> IntArray:
    arr = np.atleast_1d(np.asarray(at, dtype=float))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("at must be a non-empty list of sizes")
    if not np.all(np.isfinite(arr)) or np.any(arr < 1) or np.any(arr != np.round(arr)):
        raise ValueError("at must hold whole sizes of at least 1")
    out: IntArray = arr.astype(np.int64)
    return out


def fit_observations(
    obs: Observations,
    method: str = "adept",
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
) -> Fit:
    """Fit one instance to prepared observations (see `fit`)."""
    _check_method(method)
    n, t, unit = _normalised(obs)
    if method == "lm":
        res = fit_lm(n, t)
        A, sigma, c = res.A, res.sigma, res.scale
        status, message, env, identified = (
            "ok" if res.converged else "failed",
            res.message,
            None,
            True,
        )
    else:
        found = search(n, t, None, settings, domain)
        A, sigma, c = float(found.A[0]), float(s_to_sigma(found.s[0])), float(found.scale[0])
        status, message, env = "ok", "", found.envelope
        identified = bool(found.identified[0])
    predicted = c * relative_runtime(n, A, sigma)
    return Fit(
        method=method,
        A=A,
        sigma=sigma,
        t1=c * unit,
        t1_known=obs.t1_known,
        fit_error=max_relative_error(predicted, t),
        identified=identified,
        status=status,
        message=message,
        observations=obs,
        envelope=env,
    )


def fit(
    n: ArrayLike,
    runtime: ArrayLike,
    method: str = "adept",
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
) -> Fit:
    """One Downey instance for all sizes from runs (n, runtime); repeated n are averaged.

    Raises ValueError for unusable input (see observations.validate); a fit that does not
    converge is returned with status "failed".
    """
    _check_method(method)
    return fit_observations(prepare(n, runtime), method, settings, domain)


def predict_observations(
    obs: Observations,
    at: ArrayLike,
    method: str = "adept",
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
) -> Predictions:
    """Predictions at sizes `at` from prepared observations (see `predict`)."""
    _check_method(method)
    targets = _targets(at)
    if method == "lm":
        single = fit_observations(obs, "lm")
        A = np.full(targets.size, single.A)
        sigma = np.full(targets.size, single.sigma)
        scale = np.full(targets.size, single.t1)
    else:
        # Each distinct size is searched once, in batches that bound memory.
        n, t, unit = _normalised(obs)
        distinct, back = np.unique(targets, return_inverse=True)
        parts = [
            search(n, t, chunk, settings, domain)
            for chunk in np.array_split(distinct.astype(float), -(-distinct.size // TARGET_BATCH))
        ]
        A = np.concatenate([p.A for p in parts])[back]
        sigma = s_to_sigma(np.concatenate([p.s for p in parts]))[back]
        scale = np.concatenate([p.scale for p in parts])[back] * unit
    tau = relative_runtime(targets, A, sigma)
    return Predictions(
        n=targets,
        runtime=scale * tau,
        speedup=1.0 / tau,
        efficiency=1.0 / (tau * targets),
        A=A,
        sigma=sigma,
    )


def predict(
    n: ArrayLike,
    runtime: ArrayLike,
    at: ArrayLike,
    method: str = "adept",
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
) -> FloatArray:
    """Predicted runtimes at sizes `at`; ADEPT fits one instance per target (section V.B)."""
    return predict_observations(prepare(n, runtime), at, method, settings, domain).runtime
