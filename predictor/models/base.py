"""What every alternative performance model provides: a fit, runtimes, the sizes that matter.

A ModelFit is a fitted instance of a named model: its parameters, its WSSRE on the data it
was fitted to, and runtime(n). The sizes a scheduler needs follow from runtime(n) the same
way for every model, evaluated over whole sizes up to a horizon:

* max_useful_n: the smallest size with the least runtime (past it the job gets no faster,
  and for models with a communication term it gets slower); None when the runtime still falls
  at the horizon;
* pws_n: the smallest size maximising S(n)²/n (Ghosal et al.), None likewise.

All fits use relative runtime errors, like ADEPT, so their scores are comparable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import FloatArray

RuntimeFn = Callable[[dict[str, float], FloatArray], FloatArray]
FitFn = Callable[[FloatArray, FloatArray, FloatArray, float | None], "ModelFit"]
# Sizes are searched up to this many times the largest observation.
HORIZON = 64


@dataclass(frozen=True)
class ModelFit:
    """A fitted model instance. params are in the observations' time unit."""

    model: str
    params: dict[str, float]
    wssre: float
    n_max: float = field(default=1.0)

    def runtime(self, n: ArrayLike) -> FloatArray:
        return MODELS[self.model].runtime(self.params, np.asarray(n, dtype=float))

    def _profile(self) -> tuple[FloatArray, FloatArray]:
        sizes = np.arange(1.0, max(2.0, HORIZON * self.n_max) + 1.0)
        return sizes, self.runtime(sizes)

    @property
    def max_useful_n(self) -> int | None:
        sizes, t = self._profile()
        k = int(np.argmin(t))
        return None if k == sizes.size - 1 else int(sizes[k])

    @property
    def pws_n(self) -> int | None:
        sizes, t = self._profile()
        eta = 1.0 / (sizes * t * t)  # S²/n up to the constant T(1)²
        k = int(np.argmax(eta >= eta.max() * (1 - 1e-12)))
        return None if k == sizes.size - 1 else int(sizes[k])

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "params": dict(self.params),
            "wssre": self.wssre,
            "n_max": self.n_max,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ModelFit:
        name = str(doc["model"])
        if name not in MODELS:
            raise ValueError(f"unknown model {name!r}")
        params = {str(k): float(v) for k, v in dict(doc["params"]).items()}
        if set(params) != set(MODELS[name].params):
            raise ValueError(f"model {name} needs parameters {', '.join(MODELS[name].params)}")
        return cls(name, params, float(doc["wssre"]), float(doc.get("n_max", 1.0)))


@dataclass(frozen=True)
class ModelSpec:
    """A model: its parameter names, how to fit it, how to evaluate it, and its source."""

    name: str
    params: tuple[str, ...]
    fit: FitFn
    runtime: RuntimeFn
    source: str
    min_sizes: int = 2


MODELS: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    MODELS[spec.name] = spec
    return spec


def relative_wssre(predicted: FloatArray, t: FloatArray, w: FloatArray) -> float:
    """Σ w (1 - predicted/t)² with w summing to one."""
    return float((w * (1.0 - predicted / t) ** 2).sum())
