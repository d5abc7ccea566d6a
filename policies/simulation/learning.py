"""What the daemon knows: curves learned from the simulation's own completed runs.

The learner (plugin/learning/learner.py, `refit_app`) turns an application's observations into
a curve with `predictor.prepare` then `predictor.fit_observations(method="adept")`, and keeps
`predictor.Curve.from_fit` of an "ok" fit; a data set the predictor refuses (runs at one size
only, too few runs) leaves the application without a curve. This module calls the same
functions on the same kind of data:

* an observation is one *completed* run: (nodes it really ran on, its run time). A run killed
  at its limit only says "at least this long"; it is never fed as a completed run;
* refits follow the daemon's cadence: an application whose observations changed is refitted
  once it has been dirty for `debounce_s` (the learner's refit_debounce_s, 60 s), lazily, when
  its next job is decided (the curve a decision sees is the one the daemon would have by then);
* to bound the cost (a refit takes 20-100 ms), an application is refitted only when its
  completed runs grew by `growth` (50%) since its last fit, or it had fewer than three sizes at
  its last fit and has gained one; and a fit sees its latest `window` (64) completed runs. The
  daemon refits on every change and keeps runs until they age out: our curves are staler.

What differs from the daemon, said so in every output: the learner's model choice
(`predictor.choose_model`, 200-600 ms a refit) is not run, the curve is ADEPT's.

`fits`, a memo the caller may share between learners (experiment.py shares one between the
policies of one experiment): a fit depends only on the runs it sees, and the policies of one
trace often refit an application on exactly the same runs (36% of the refits of the three
learned policies on the NASA trace tiled to 5,000 jobs), so each such fit runs once. A fit
sees its runs sorted by (size, run time), so that the same runs arrived in another order
share it; `predictor.prepare` averages per size, so the order changes only the rounding of
those sums (the tests check the curves against the learner's fit in arrival order).

A learned curve is a `MemoCurve`: the learner's `Curve`, field for field, that remembers its
evaluations, since every decision until the next refit asks it for much the same sizes.
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import ArrayLike

import predictor
from predictor import Curve
from predictor.downey import FloatArray
from predictor.intervals import LEVEL

#: The learner's default refit debounce, seconds (plugin config [learner] refit_debounce_s).
DEBOUNCE_S = 60.0
#: Refit again once the completed runs grew by this factor (or a needed new size appeared).
GROWTH = 1.5
#: A fit sees at most this many of the latest completed runs.
WINDOW = 64
#: Below this many sizes a new size is worth a refit (ADEPT needs several to identify A, σ).
_FEW_SIZES = 3
#: The fitting method the learner uses by default.
METHOD = "adept"
#: A memo of fits: (sizes, runtimes) of the runs a fit saw -> its curve (None: refused).
#: A memo key of an array of sizes: its shape and its bytes.
_Key = tuple[tuple[int, ...], bytes]
Fits = MutableMapping[tuple[tuple[int, ...], tuple[float, ...]], Curve | None]


@dataclass
class _App:
    """One application's observations and its latest fit."""

    nodes: list[int]
    runtimes: list[float]
    curve: Curve | None = None
    fitted_runs: int = 0
    fitted_sizes: int = 0
    dirty_since: float = math.inf


class CurveLearner:
    """Per application: completed runs in, the daemon's curve out (module doc)."""

    def __init__(
        self,
        apps: int,
        debounce_s: float = DEBOUNCE_S,
        growth: float = GROWTH,
        window: int = WINDOW,
        fits: Fits | None = None,
    ) -> None:
        self._apps = [_App([], []) for _ in range(apps)]
        self._fits: Fits = {} if fits is None else fits
        self.debounce_s = debounce_s
        self.growth = growth
        self.window = window
        #: Refits (each a fit, or a fit another learner sharing `fits` ran on the same runs),
        #: fits this learner ran, and refits the predictor refused or failed.
        self.refits = 0
        self.fitted = 0
        self.refused = 0

    def observe(self, app: int, nodes: int, runtime: float, now: float) -> None:
        """A completed run of `app` on `nodes` nodes that took `runtime` seconds."""
        a = self._apps[app]
        a.nodes.append(nodes)
        a.runtimes.append(runtime)
        if a.dirty_since == math.inf:
            a.dirty_since = now

    def curve(self, app: int, now: float) -> Curve | None:
        """The curve a decision at `now` sees: refitted first when due (module doc)."""
        a = self._apps[app]
        if now - a.dirty_since >= self.debounce_s and self._worth_refitting(a):
            self._refit(a)
        return a.curve

    def _worth_refitting(self, a: _App) -> bool:
        if len(a.nodes) >= self.growth * a.fitted_runs:
            return True
        return a.fitted_sizes < _FEW_SIZES and len(set(a.nodes[-self.window :])) > a.fitted_sizes

    def _refit(self, a: _App) -> None:
        self.refits += 1
        a.dirty_since = math.inf
        runs = sorted(zip(a.nodes[-self.window :], a.runtimes[-self.window :], strict=True))
        nodes, runtimes = tuple(n for n, _ in runs), tuple(t for _, t in runs)
        a.fitted_runs, a.fitted_sizes = len(a.nodes), len(set(nodes))
        key = (nodes, runtimes)
        if key not in self._fits:
            self.fitted += 1
            self._fits[key] = _fit(nodes, runtimes)
        a.curve = self._fits[key]
        if a.curve is None:
            self.refused += 1


def _fit(nodes: Sequence[int], runtimes: Sequence[float]) -> Curve | None:
    """The learner's curve of these runs, None when the predictor refuses them."""
    try:
        fit = predictor.fit_observations(predictor.prepare(nodes, runtimes), method=METHOD)
    except ValueError:  # refused, e.g. runs at one size only: "no curve", as refit_app
        return None
    return MemoCurve.of(Curve.from_fit(fit)) if fit.status == "ok" else None


@dataclass(frozen=True)
class MemoCurve(Curve):
    """The learner's curve, its evaluations remembered: the same values as the `Curve` it
    copies (every field equal), each computed once per distinct array of sizes.

    A learned curve is read by every decision until the next refit, and one application's
    requests repeat, so `decide` asks it for the same sizes again and again; one evaluation
    costs ~20 numpy calls (0.2 ms on this machine), the memo a hash of the sizes' bytes.
    """

    _runtime: dict[_Key, FloatArray] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _interval: dict[tuple[_Key, float], tuple[FloatArray, FloatArray]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def of(cls, curve: Curve) -> MemoCurve:
        """`curve` with a memo (its fields, not copies of its arrays)."""
        return cls(**{f.name: getattr(curve, f.name) for f in fields(Curve)})

    def plain(self) -> Curve:
        """The same curve without the memo (what the learner stores)."""
        return Curve(**{f.name: getattr(self, f.name) for f in fields(Curve)})

    def runtime(self, n: ArrayLike) -> FloatArray:
        nv = np.asarray(n, dtype=float)
        key = (nv.shape, nv.tobytes())
        out = self._runtime.get(key)
        if out is None:
            out = self._runtime[key] = super().runtime(nv)
        return out.copy()  # a caller may change its array; the memo's stays

    def runtime_interval(self, n: ArrayLike, level: float = LEVEL) -> tuple[FloatArray, FloatArray]:
        nv = np.atleast_1d(np.asarray(n, dtype=float))
        key = ((nv.shape, nv.tobytes()), level)
        out = self._interval.get(key)
        if out is None:
            out = self._interval[key] = super().runtime_interval(nv, level)
        return out[0].copy(), out[1].copy()
