"""What the daemon knows: curves learned from the simulation's own completed runs.

The learner (plugin/learning/learner.py, `refit_app`) turns an application's observations into
a curve with `predictor.prepare` then `predictor.fit_observations(method="adept")`, and keeps
`predictor.Curve.from_fit` of an "ok" fit; a data set the predictor refuses (runs at one size
only, too few runs) leaves the application without a curve. This module calls the same
functions on the same kind of data:

* an observation is one *completed* run: (nodes it really ran on, its run time). A run killed
  at its limit only says "at least this long"; it is never fed as a completed run (only
  the limit-use bound of heterogeneous runs counts it, below);
* refits follow the daemon's cadence (plugin/learning/worker.py, learner.py; plugin/config.py
  defaults): every `interval_s` (30 s, [daemon] learn_interval_s) the learner's round polls
  Slurm, so a run that ended at e is ingested at the first round ≥ e and marks its
  application dirty from then (the dirty mark keeps its first time); the same round then
  refits every application dirty for at least `debounce_s` (60 s, [learner]
  refit_debounce_s) on all its kept runs: the newest `window` (500, [learner]
  max_observations) that ended within `max_age_s` (365 days, [learner] max_age_days) of the
  round, when the refit is due by policies/refit_cadence.py's rule ([learner] refit_growth
  g, refit_max_age_h H: refit once the runs added since the last fit reach max(1, ⌈g·n⌉),
  or a run at a size the curve never saw arrives, or the curve has no fit or is H old; g = 0
  is the rule before the cadence, every change); an application not due stays dirty, looked at
  again at the next round where that can change (a run ingested, the curve H old). A
  decision at `now` sees the curve of the application's last refit round ≤ now.
  The rounds are replayed lazily, when a decision asks: a round no decision saw the result
  of is counted (`refits`) but not fitted (`fitted`), as its curve is replaced before use
  (unless the rule needs to know whether that fit gave a curve);
* `growth` (not the daemon's; None by default) is the cadence this module had before: refit
  only when the completed runs grew by that factor since the last fit (or a needed size
  appeared), lazily at the next decision once dirty for `debounce_s`, with its own `window`.
  Fewer fits, staler curves: kept to measure what the daemon's cadence costs and changes.

Heterogeneous runs. A run's user limit as written (seconds, before adaptalloc rescaled it) is
observed with it where the caller knows it, with the size it was written for (the range's
minimum: time_limit_reference = "min"), as the daemon's learner would record it; when every
kept run has one, the curve is `predictor.heterogeneous.fit_heterogeneous`'s (one Downey shape,
a per-run scale explained by the limit, the noise of repeated sizes and the lack-of-fit test
of the shape against it; predictor/covariate.py), and `decide` predicts each job with its own
limit (`Curve.for_limit`). Otherwise the plain ADEPT fit, as before. Runs killed at their
limits are kept apart, as the daemon's store keeps them, and the fit's limit-use bound counts
those ingested within the window of its runs (predictor/covariate.py, "killed runs count").

What differs from the daemon, said so in every output: the learner's model choice
(`predictor.choose_model`, 200-600 ms a refit) is not run, the curve is ADEPT's. Not
modelled either: the learner's cap of `refit_max_apps` (50) refits per round, the per-node-type
curves, and the hourly age-out of applications with no new runs (a run's age counts from its
ingest, at most one round after its end).

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

import bisect
import math
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import ArrayLike

import predictor
from policies.refit_cadence import REFIT_GROWTH, REFIT_MAX_AGE_S, refit_due, runs_needed
from policies.second_size import Run
from predictor import Curve
from predictor.covariate import Censored
from predictor.downey import FloatArray
from predictor.heterogeneous import fit_heterogeneous
from predictor.intervals import LEVEL

#: The learner's default refit debounce, seconds (plugin config [learner] refit_debounce_s).
DEBOUNCE_S = 60.0
#: The learner's rounds (poll, then refits), seconds (plugin config [daemon] learn_interval_s).
INTERVAL_S = 30.0
#: Runs an application keeps, the newest (plugin config [learner] max_observations).
WINDOW = 500
#: Runs older than this are aged out, seconds (plugin config [learner] max_age_days: 365).
MAX_AGE_S = 365 * 86400.0
#: The sparse cadence (module doc, not the daemon's): refit once the runs grew by this factor,
#: on at most SPARSE_WINDOW of the latest runs.
GROWTH = 1.5
SPARSE_WINDOW = 64
#: Below this many sizes a new size is worth a refit (ADEPT needs several to identify A, σ).
_FEW_SIZES = 3
#: The fitting method the learner uses by default.
METHOD = "adept"
#: A memo key of an array of sizes: its shape and its bytes.
_Key = tuple[tuple[int, ...], bytes]
#: A memo of fits: (sizes, runtimes, limits, killed runs) of the runs a fit saw -> its curve
#: (None: refused).
Fits = MutableMapping[
    tuple[
        tuple[int, ...],
        tuple[float, ...],
        tuple[tuple[float, int] | None, ...],
        tuple[tuple[int, float, float, int], ...],
    ],
    Curve | None,
]


@dataclass
class _App:
    """One application's observations (with when the learner ingested each) and its fit."""

    nodes: list[int] = field(default_factory=list)
    runtimes: list[float] = field(default_factory=list)
    #: Per run: (its user's limit, s; the size it was written for), None where unknown.
    limits: list[tuple[float, int] | None] = field(default_factory=list)
    seen: list[float] = field(default_factory=list)
    #: Runs killed at their limits, as (when ingested, nodes, s it ran, user's limit, the
    #: size it was written for), in ingest order: the limit-use bound's (module doc).
    killed: list[tuple[float, int, float, float, int]] = field(default_factory=list)
    curve: Curve | None = None
    #: Runs the latest refit round saw (daemon cadence: the first `cut` runs) / its curve's.
    cut: int = 0
    fitted_cut: int = 0
    fitted_runs: int = 0
    fitted_sizes: int = 0
    #: Runs the latest refit round kept (its window, after ageing: the rule's n).
    kept: int = 0
    dirty_since: float = math.inf
    fitted_round: float = 0.0
    #: Daemon cadence: the first round a refit not due may become due.
    next_check: float = 0.0


class CurveLearner:
    """Per application: completed runs in, the daemon's curve out (module doc)."""

    def __init__(
        self,
        apps: int,
        debounce_s: float = DEBOUNCE_S,
        growth: float | None = None,
        window: int | None = None,
        fits: Fits | None = None,
        interval_s: float = INTERVAL_S,
        max_age_s: float | None = MAX_AGE_S,
        refit_growth: float = REFIT_GROWTH,
        refit_max_age_s: float | None = REFIT_MAX_AGE_S,
    ) -> None:
        """`growth` None: the daemon's cadence, else the sparse one (module doc); `window`
        None: WINDOW for the daemon's, SPARSE_WINDOW for the sparse one. `refit_growth` (g)
        and `refit_max_age_s` (H, None: never) are the daemon cadence's rule
        (policies/refit_cadence.py); g = 0 refits on every change."""
        if interval_s <= 0.0 or debounce_s < 0.0:
            raise ValueError("interval_s must be > 0 and debounce_s ≥ 0")
        if refit_growth < 0.0 or (refit_max_age_s is not None and refit_max_age_s <= 0.0):
            raise ValueError("refit_growth must be ≥ 0 and refit_max_age_s > 0 or None")
        self.refit_growth = refit_growth
        self.refit_max_age_s = refit_max_age_s
        self._apps = [_App() for _ in range(apps)]
        self._fits: Fits = {} if fits is None else fits
        self.debounce_s = debounce_s
        self.growth = growth
        self.window = window if window is not None else WINDOW if growth is None else SPARSE_WINDOW
        self.interval_s = interval_s
        self.max_age_s = max_age_s
        #: Refits the daemon would run (sparse cadence: the refits run), the fits this
        #: learner ran (a fit another learner sharing `fits` ran on the same runs is not
        #: run again), and the refits the predictor refused or failed among those fitted.
        self.refits = 0
        self.fitted = 0
        self.refused = 0

    def observe(
        self,
        app: int,
        nodes: int,
        runtime: float,
        now: float,
        limit: float | None = None,
        written_for: int | None = None,
    ) -> None:
        """A completed run of `app` on `nodes` nodes that took `runtime` seconds, ended at
        `now` (daemon cadence: ingested by the next round); `limit`: its user's limit as
        written, seconds, for `written_for` nodes (None: unknown; module doc, heterogeneous
        runs)."""
        a = self._apps[app]
        seen = self.seen_at(now)
        a.nodes.append(nodes)
        a.runtimes.append(runtime)
        a.limits.append(None if limit is None else (limit, written_for or nodes))
        a.seen.append(seen)
        if a.dirty_since == math.inf:
            a.dirty_since = seen
        a.next_check = min(a.next_check, seen)

    def observe_killed(
        self, app: int, nodes: int, ran: float, now: float, limit: float, written_for: int
    ) -> None:
        """A run of `app` on `nodes` nodes killed at its limit after `ran` seconds, at `now`,
        its user's limit `limit` s written for `written_for` nodes: no observation of the
        shape, but the next refit's limit-use bound counts it (module doc). It marks nothing
        dirty: the daemon stores it apart, and its next refit reads it."""
        self._apps[app].killed.append((self.seen_at(now), nodes, ran, limit, written_for))

    def runs(self, app: int, now: float) -> list[Run]:
        """`app`'s completed runs in the store at `now` (ingested by then), oldest first: what
        the daemon's decider reads for a second size (policies/second_size.py)."""
        a = self._apps[app]
        kept = bisect.bisect_right(a.seen, now)
        return [
            Run(n, t, None if limit is None else limit[0])
            for n, t, limit in zip(a.nodes[:kept], a.runtimes[:kept], a.limits[:kept], strict=True)
        ]

    def seen_at(self, now: float) -> float:
        """When a run that ended at `now` is in the store (the daemon's cadence: the next
        learner round; the sparse one: at once)."""
        return now if self.growth is not None else self._round_at_or_after(now)

    def curve(self, app: int, now: float) -> Curve | None:
        """The curve a decision at `now` sees: refitted first when due (module doc)."""
        a = self._apps[app]
        if self.growth is not None:
            if now - a.dirty_since >= self.debounce_s and self._worth_refitting(a, self.growth):
                a.dirty_since = math.inf
                self.refits += 1
                self._refit(a, len(a.nodes), now)
            return a.curve
        while a.dirty_since < math.inf:
            due = max(self._round_at_or_after(a.dirty_since + self.debounce_s), a.next_check)
            if due > now:
                break
            cut = bisect.bisect_right(a.seen, due, lo=a.cut)
            if not self._due(a, cut, due):
                a.next_check = self._next_check(a, cut)
                continue
            self.refits += 1
            a.cut, a.fitted_round, a.next_check = cut, due, 0.0
            a.kept = cut - self._first_kept(a, cut, due)
            a.dirty_since = a.seen[cut] if cut < len(a.seen) else math.inf
        if a.cut != a.fitted_cut:
            self._refit(a, a.cut, a.fitted_round)
        return a.curve

    def _due(self, a: _App, cut: int, at: float) -> bool:
        """Whether the round at `at`, seeing the first `cut` runs, refits (refit_cadence.py)."""
        added = cut - a.cut
        if self.refit_growth == 0.0 or added >= runs_needed(a.kept, self.refit_growth):
            return True  # due whatever the last fit gave: no need to run it yet
        if a.cut != a.fitted_cut:  # the rule asks whether the last refit gave a curve
            self._refit(a, a.cut, a.fitted_round)
        return refit_due(
            growth=self.refit_growth,
            max_age_s=self.refit_max_age_s,
            fitted_runs=a.kept,
            added=cut - a.cut,
            observed=None if a.curve is None else a.curve.observed_n,
            new_sizes=a.nodes[a.cut : cut],
            age_s=at - a.fitted_round,
        )

    def _next_check(self, a: _App, cut: int) -> float:
        """After a round not due: the next round a run is ingested or the curve is H old."""
        nxt = a.seen[cut] if cut < len(a.seen) else math.inf
        if self.refit_max_age_s is not None:
            nxt = min(nxt, self._round_at_or_after(a.fitted_round + self.refit_max_age_s))
        return nxt

    def _round_at_or_after(self, t: float) -> float:
        return math.ceil(t / self.interval_s - 1e-9) * self.interval_s

    def _worth_refitting(self, a: _App, growth: float) -> bool:
        if len(a.nodes) >= growth * a.fitted_runs:
            return True
        return a.fitted_sizes < _FEW_SIZES and len(set(a.nodes[-self.window :])) > a.fitted_sizes

    def _first_kept(self, a: _App, cut: int, at: float) -> int:
        """The first of the runs a fit of the first `cut` at `at` keeps (window, age)."""
        first = max(0, cut - self.window)
        if self.growth is None and self.max_age_s is not None:
            first = bisect.bisect_left(a.seen, at - self.max_age_s, lo=first, hi=cut)
        return first

    def _refit(self, a: _App, cut: int, at: float) -> None:
        """Fit the application's kept runs among its first `cut` as of time `at` (the
        caller counts the refit: the daemon's cadence counts every round, fitted or not)."""
        first = self._first_kept(a, cut, at)
        runs = sorted(
            zip(a.nodes[first:cut], a.runtimes[first:cut], a.limits[first:cut], strict=True),
            key=lambda r: (r[0], r[1], (-1.0, 0) if r[2] is None else r[2]),
        )
        nodes = tuple(r[0] for r in runs)
        runtimes = tuple(r[1] for r in runs)
        limits = tuple(r[2] for r in runs)
        since = a.seen[first] if first < cut else at
        killed = tuple(sorted(k[1:] for k in a.killed if since <= k[0] <= at))
        a.fitted_cut, a.fitted_runs, a.fitted_sizes = cut, cut, len(set(nodes))
        key = (nodes, runtimes, limits, killed)
        if key not in self._fits:
            self.fitted += 1
            self._fits[key] = _fit(nodes, runtimes, limits, killed) if nodes else None
        a.curve = self._fits[key]
        if a.curve is None:
            self.refused += 1


def _fit(
    nodes: Sequence[int],
    runtimes: Sequence[float],
    limits: Sequence[tuple[float, int] | None] = (),
    killed: Sequence[tuple[int, float, float, int]] = (),
) -> Curve | None:
    """The learner's curve of these runs, None when the predictor refuses them: the
    heterogeneous runs' fit when every run has its limit (module doc; `killed`, runs killed
    at their limits as (nodes, s ran, limit, written for), count in its limit-use bound),
    else ADEPT's."""
    known = [x for x in limits if x is not None]
    try:
        if known and len(known) == len(nodes):
            stopped = Censored.of(*zip(*killed, strict=True)) if killed else None
            curve = fit_heterogeneous(
                nodes,
                runtimes,
                [x[0] for x in known],
                [x[1] for x in known],
                censored=stopped,
            )
            return None if curve is None else MemoCurve.of(curve)
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
    _jobs: dict[tuple[float | None, int | None], Curve] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def of(cls, curve: Curve) -> MemoCurve:
        """`curve` with a memo (its fields, not copies of its arrays)."""
        return cls(**{f.name: getattr(curve, f.name) for f in fields(Curve)})

    def for_limit(self, limit_s: float | None, written_for: int | None = None) -> Curve:
        """`Curve.for_limit`, remembered per (limit, size): jobs repeat their users' round
        limits, and each job's curve (itself a MemoCurve) keeps its own memo."""
        if self.covariate is None:
            return self
        key = (limit_s, written_for)
        out = self._jobs.get(key)
        if out is None:
            out = self._jobs[key] = super().for_limit(limit_s, written_for)
        return out

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

    def runtime_interval(
        self, n: ArrayLike, level: float = LEVEL, runtime: FloatArray | None = None
    ) -> tuple[FloatArray, FloatArray]:
        nv = np.atleast_1d(np.asarray(n, dtype=float))
        key = ((nv.shape, nv.tobytes()), level)
        out = self._interval.get(key)
        if out is None:
            out = self._interval[key] = super().runtime_interval(nv, level, runtime)
        return out[0].copy(), out[1].copy()
