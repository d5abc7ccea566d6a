"""Live accuracy in figures: scores (plugin/store/scores.py) summarised per app and fleet.

One definition for every reader, so that the report, the metrics and the doctor show the
same numbers for the same jobs:

* `summarize`: over a set of scores, the absolute percentage error |T̂ - T| / T (median,
  90th percentile, mean), the bias exp(mean log(T / T̂)) - 1 (the geometric mean ratio of
  actual to predicted, minus one: +10% means the runs took 10% longer than predicted), and
  the coverage of the 90% interval, inside / (inside + above + below). A censored run (its
  runtime a lower bound) has no error and no bias; it counts in the coverage only as
  *above* when even its lower bound passed the interval's upper end, else it is *unknown*
  and left out.
* `window`: the rolling window, the newest `WINDOW_JOBS` scores (`FLEET_WINDOW_JOBS` for
  the fleet) of jobs that ended in the last `WINDOW_DAYS` days. A verdict needs
  `MIN_JOBS` scores with a known coverage in it.
* `drift`: whether an app's error grew: its window against the `WINDOW_JOBS` scores
  before it, each with at least `MIN_JOBS` uncensored jobs; the median error must be at
  least `GROWTH_FACTOR` times and `GROWTH_POINTS` above the earlier one, and a one-sided
  Mann-Whitney U test must find the newer errors larger at p < `GROWTH_P` (so that a
  handful of noisy runs does not raise an alarm).
* `gauges`: the fleet's window and the windows of the `TOP_APPS` apps with the most jobs in
  it, what the daemon exports to Prometheus (bounded label cardinality).
* `bought`: "what sizing would have bought", per mode, over the uncensored scores: node-hours
  and runtime at the decided (advised) size as the curve predicts them, with the sums of
  the 90% intervals' ends (exact if the errors were perfectly correlated, as one curve's
  errors largely are; wider than 90% otherwise), against what the jobs used at the size
  they ran on, and the curve's prediction at that size beside it (its bias on these jobs).
  These are model estimates and are labelled so wherever they are shown.

The constants are settings of judgment, not fitted: 80-97% brackets a calibrated 90%
interval's coverage with room for the sampling spread of 30-200 jobs (the coverage of a
true 90% interval over 30 jobs falls between 80% and 96.7% nine times in ten, binomially;
over 200 jobs between 86.5% and 93.5%); a window of 200 jobs or 7 days is what a site's
weekly review reads.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from plugin.store.scores import MODES, Score

__all__ = [
    "COVERAGE_HIGH",
    "COVERAGE_LOW",
    "FLEET_WINDOW_JOBS",
    "GROWTH_FACTOR",
    "GROWTH_P",
    "GROWTH_POINTS",
    "MIN_JOBS",
    "TOP_APPS",
    "WINDOW_DAYS",
    "WINDOW_JOBS",
    "Bought",
    "Drift",
    "Gauges",
    "Interval",
    "Summary",
    "bought",
    "by_app",
    "drift",
    "gauges",
    "summarize",
    "window",
]

WINDOW_JOBS = 200
FLEET_WINDOW_JOBS = 1000
WINDOW_DAYS = 7.0
MIN_JOBS = 30
COVERAGE_LOW = 0.80
COVERAGE_HIGH = 0.97
GROWTH_FACTOR = 1.5
GROWTH_POINTS = 0.05
GROWTH_P = 0.01
TOP_APPS = 20


@dataclass(frozen=True)
class Summary:
    """Accuracy over a set of scores (module docstring); None where nothing is known.

    jobs: scores; censored: of which lower bounds; inside, above, below, unknown: against
    the 90% interval; coverage: inside / judged with judged = inside + above + below;
    error_*: absolute percentage error as a fraction (median, 90th percentile, mean) and
    bias, over the `jobs - censored` uncensored ones; first_end, last_end: their end times.
    """

    jobs: int = 0
    censored: int = 0
    inside: int = 0
    above: int = 0
    below: int = 0
    unknown: int = 0
    coverage: float | None = None
    error_median: float | None = None
    error_p90: float | None = None
    error_mean: float | None = None
    bias: float | None = None
    first_end: float | None = None
    last_end: float | None = None

    @property
    def judged(self) -> int:
        """Jobs whose place against the interval is known (the coverage's denominator)."""
        return self.inside + self.above + self.below

    @property
    def exact(self) -> int:
        """Uncensored jobs (the error's and the bias' count)."""
        return self.jobs - self.censored


def summarize(scores: Sequence[Score]) -> Summary:
    """The accuracy of `scores` (module docstring)."""
    if not scores:
        return Summary()
    actual = np.array([s.runtime_s for s in scores])
    predicted = np.array([s.predicted_s for s in scores])
    lower = np.array([s.lower_s for s in scores])
    upper = np.array([s.upper_s for s in scores])
    censored = np.array([s.censored for s in scores])
    ends = np.array([s.end_time for s in scores])
    above = actual > upper
    below = ~censored & (actual < lower)
    unknown = censored & ~above
    inside = ~(above | below | unknown)
    judged = int(np.count_nonzero(~unknown))
    exact = ~censored
    out = Summary(
        jobs=len(scores),
        censored=int(np.count_nonzero(censored)),
        inside=int(np.count_nonzero(inside)),
        above=int(np.count_nonzero(above)),
        below=int(np.count_nonzero(below)),
        unknown=int(np.count_nonzero(unknown)),
        coverage=float(np.count_nonzero(inside)) / judged if judged else None,
        first_end=float(ends.min()),
        last_end=float(ends.max()),
    )
    if not exact.any():
        return out
    errors = np.abs(predicted[exact] - actual[exact]) / actual[exact]
    log_ratio = np.log(actual[exact] / predicted[exact])
    return replace(
        out,
        error_median=float(np.median(errors)),
        error_p90=float(np.quantile(errors, 0.9)),
        error_mean=float(errors.mean()),
        bias=float(math.expm1(float(log_ratio.mean()))),
    )


def _newest_first(scores: Iterable[Score]) -> list[Score]:
    return sorted(scores, key=lambda s: (-s.end_time, -s.job_id))


def window(
    scores: Iterable[Score], now: float, jobs: int = WINDOW_JOBS, days: float = WINDOW_DAYS
) -> tuple[list[Score], list[Score]]:
    """(the rolling window, the scores before it), newest first by end time: the window
    holds the newest `jobs` scores of jobs that ended in the `days` before `now`."""
    ordered = _newest_first(scores)
    since = now - days * 86400.0
    recent = 0
    while recent < len(ordered) and recent < jobs and ordered[recent].end_time >= since:
        recent += 1
    return ordered[:recent], ordered[recent:]


def by_app(scores: Iterable[Score]) -> dict[str, list[Score]]:
    """The scores of each key whose curve decided, in their order."""
    out: dict[str, list[Score]] = {}
    for score in scores:
        out.setdefault(score.app, []).append(score)
    return out


@dataclass(frozen=True)
class Drift:
    """An app's window against the scores before it (module docstring)."""

    latest: Summary
    previous: Summary
    p_value: float | None = None
    grew: bool = False


def drift(scores: Iterable[Score], now: float) -> Drift:
    """Whether the error of one app's scores grew (module docstring)."""
    latest, rest = window(scores, now)
    previous = rest[:WINDOW_JOBS]
    new, old = summarize(latest), summarize(previous)
    if new.exact < MIN_JOBS or old.exact < MIN_JOBS:
        return Drift(new, old)
    from scipy.stats import mannwhitneyu  # noqa: PLC0415 - scipy.stats costs 0.3 s to import

    a = np.array([s.error for s in latest if s.error is not None])
    b = np.array([s.error for s in previous if s.error is not None])
    p_value = float(mannwhitneyu(a, b, alternative="greater").pvalue)
    med_new, med_old = new.error_median or 0.0, old.error_median or 0.0
    grew = (
        med_new >= GROWTH_FACTOR * med_old
        and med_new - med_old >= GROWTH_POINTS
        and p_value < GROWTH_P
    )
    return Drift(new, old, p_value, grew)


@dataclass(frozen=True)
class Gauges:
    """What the daemon exports: the fleet's window and the top apps' windows."""

    fleet: Summary = field(default_factory=Summary)
    apps: dict[str, Summary] = field(default_factory=dict)


def gauges(scores: Sequence[Score], now: float, top: int = TOP_APPS) -> Gauges:
    """The fleet's window (`FLEET_WINDOW_JOBS`) and the windows of the `top` apps with the
    most jobs in the fleet's window (ties: by name)."""
    fleet, _ = window(scores, now, FLEET_WINDOW_JOBS)
    counts: dict[str, int] = {}
    for score in fleet:
        counts[score.app] = counts.get(score.app, 0) + 1
    chosen = sorted(counts, key=lambda app: (-counts[app], app))[:top]
    groups = by_app(s for s in scores if s.app in set(chosen))
    apps = {app: summarize(window(groups[app], now)[0]) for app in chosen}
    return Gauges(summarize(fleet), apps)


@dataclass(frozen=True)
class Interval:
    """A model estimate with the sums of its 90% intervals' ends (module docstring)."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class Bought:
    """What sizing would have bought (advise) or bought (enforce), over the uncensored
    scores of one mode. Node-hours are sums; runtimes means per job.

    jobs: scores counted; censored: left out (their runtime is a lower bound); moved: jobs
    whose decided size differs from the size they ran on. realized_*: what the jobs used at
    the size they ran on (measured). predicted_*: the curve at that size (its bias on these
    jobs). advised_*: the curve at the decided size, the "what sizing would have bought"
    estimate; `saved_node_hours`: realized minus advised (positive: sizing would have saved).
    """

    mode: str
    jobs: int
    censored: int
    moved: int
    realized_node_hours: float
    realized_runtime_s: float
    predicted_node_hours: Interval
    advised_node_hours: Interval
    advised_runtime_s: Interval

    @property
    def saved_node_hours(self) -> Interval:
        """Realized minus advised node-hours: a model estimate (the interval's ends swap)."""
        a = self.advised_node_hours
        real = self.realized_node_hours
        return Interval(real - a.estimate, real - a.high, real - a.low)


def bought(scores: Iterable[Score]) -> dict[str, Bought]:
    """`Bought` per mode with at least one score (enforce first), see the module docstring."""
    out: dict[str, Bought] = {}
    listed = list(scores)
    for mode in MODES:
        mine = [s for s in listed if s.mode == mode]
        if not mine:
            continue
        exact = [s for s in mine if not s.censored]
        hours = np.array([s.nodes * s.runtime_s for s in exact]) / 3600.0
        at = np.array([[s.nodes * v for v in (s.predicted_s, s.lower_s, s.upper_s)] for s in exact])
        advised = [s.advised() or (s.nodes, s.predicted_s, s.lower_s, s.upper_s) for s in exact]
        there = np.array([[a[1], a[2], a[3]] for a in advised]).reshape(-1, 3)
        sizes = np.array([a[0] for a in advised], dtype=float)
        node_s = there * sizes[:, None]
        count = max(len(exact), 1)
        out[mode] = Bought(
            mode=mode,
            jobs=len(exact),
            censored=len(mine) - len(exact),
            moved=sum(1 for s, a in zip(exact, advised, strict=True) if a[0] != s.nodes),
            realized_node_hours=float(hours.sum()),
            realized_runtime_s=float(sum(s.runtime_s for s in exact)) / count,
            predicted_node_hours=_interval(at.reshape(-1, 3).sum(axis=0) / 3600.0),
            advised_node_hours=_interval(node_s.sum(axis=0) / 3600.0),
            advised_runtime_s=_interval(there.sum(axis=0) / count),
        )
    return out


def _interval(sums: NDArray[np.float64]) -> Interval:
    return Interval(float(sums[0]), float(sums[1]), float(sums[2]))
