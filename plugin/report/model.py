"""The report's data model: plain frozen values, from the store's inputs to the figures shown.

The pipeline (plugin/report/__init__.py) is query (query.py, the only module that reads
Redis) → assemble (assemble.py, pure) → render (terminal.py, html.py, svg.py, export.py).
This module holds what flows between the steps:

* `Run` and `AppInputs`: what the store holds about one app (its runs, its curve with the
  curve's metadata, the daemon's decision records as they were written);
* `AppReport`: everything a renderer shows about one app, already computed: per observed
  size (`SizeRow`), the curve on a size grid (`CurvePoints`), the ADEPT envelope band
  (`Band`), diagnostics, job arrays and groups (`JobGroup`), decisions (`DecisionRow`) and
  their summary (`DecisionSummary`);
* `FleetRow`: one app's line in the fleet index and in the one-row-per-app exports;
* `AccuracySection` (with `AccuracyPoint`): live accuracy, the finished jobs scored against
  the prediction of the curve that decided them, for one app or the fleet (accuracy.py).

Units: runtimes in seconds, node-hours in hours × nodes, times as Unix seconds. Figures
that cannot be computed (no curve, no decisions) are None, never NaN. Strings that came
from users (job ids, decision rules and reasons, notes, and the app name itself when a
report is assembled from anything but the validated store) are kept as they are: escaping
is the renderers' job, each for its medium.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import predictor
from plugin.learning.accuracy import Bought, Drift, Summary
from plugin.store.decisions import StoredDecision
from plugin.store.scores import Score
from policies.cold_start import Advice
from predictor.band import Band

__all__ = [
    "AccuracyPoint",
    "AccuracySection",
    "AppInputs",
    "AppReport",
    "Band",
    "CurveFacts",
    "CurvePoints",
    "DecisionRow",
    "DecisionSummary",
    "FleetRow",
    "JobGroup",
    "ObservedPoint",
    "ReliabilityWarning",
    "Run",
    "SizeRow",
]


# --- inputs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One finished run of the app, as the store keeps it."""

    job_id: str
    nodes: int
    runtime_s: float
    end_time: float


@dataclass(frozen=True)
class GuardCounts:
    """What the kill guard and the learner counted for one app (`CurveStore.guard_counts`).

    killed_at_our_limit: jobs killed at a time limit adaptalloc set, below the user's (the
    promise is 0). limits_raised: limits the kill guard gave back to a running job.
    censored_runs: runs stopped at a limit or preempted, kept as lower bounds, never fitted.
    limit_safety: the factor the daemon multiplies this app's shortened limits by.
    """

    limits_raised: int = 0
    killed_at_our_limit: int = 0
    censored_runs: int = 0
    limit_safety: float = 1.0

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> GuardCounts:
        def count(name: str) -> int:
            value = doc.get(name)
            return value if isinstance(value, int) and value >= 0 else 0

        safety = doc.get("limit_safety")
        ok = isinstance(safety, int | float) and safety >= 1.0
        return cls(
            count("limits_raised"),
            count("killed_at_our_limit"),
            count("censored_runs"),
            float(safety) if ok else 1.0,  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class AppInputs:
    """What the store holds about one app; assembled into an `AppReport` by assemble.py.

    curve: the stored curve (None: not fitted yet, not fittable, or unreadable; `curve_note`
    says which). decisions: the daemon's records for this app, newest first, as
    `CurveStore.decisions` returns them. scores: the app's finished jobs scored against the
    curve that decided them (plugin/store/scores.py), filed under the key whose curve
    decided; now: when the report is made (the rolling window ends there; None: at the
    newest score).
    """

    app: str
    runs: tuple[Run, ...]
    curve: predictor.Curve | None = None
    curve_note: str = ""
    curve_version: int | None = None
    fitted_at: float | None = None
    refit_due: bool = False
    decisions: tuple[StoredDecision, ...] = ()
    guard: GuardCounts = field(default_factory=GuardCounts)
    scores: tuple[Score, ...] = ()
    now: float | None = None


# --- the figures of one app -------------------------------------------------------------


@dataclass(frozen=True)
class CurveFacts:
    """The stored curve's parameters and the sizes that matter to a scheduler.

    model: "downey" or the model that model selection chose instead (then runtime, speedup,
    efficiency, max_useful_n and pws_n are that model's; A and σ still describe the Downey
    fit). max_useful_n is None when the runs show no knee.
    """

    model: str
    method: str
    A: float
    sigma: float
    t1: float
    t1_known: bool
    identified: bool
    fit_error: float
    max_useful_n: int | None
    pws_n: int
    reliable: bool
    phases: int
    version: int | None = None
    fitted_at: float | None = None
    refit_due: bool = False


@dataclass(frozen=True)
class SizeRow:
    """One observed size: the runs there against the curve.

    runtime_*: observed (seconds); predicted_runtime, speedup, efficiency: the curve's
    (exactly `Curve.runtime/speedup/efficiency` at n); observed_speedup and
    observed_efficiency: the curve's T(1) over the mean observed runtime (None without a
    curve). anomaly: ADEPT's kind for this size ("point", "decline", "ambiguous_final") or "".
    """

    n: int
    runs: int
    runtime_mean: float
    runtime_min: float
    runtime_max: float
    predicted_runtime: float | None = None
    speedup: float | None = None
    efficiency: float | None = None
    observed_speedup: float | None = None
    observed_efficiency: float | None = None
    anomaly: str = ""
    anomaly_weight: float | None = None


@dataclass(frozen=True)
class ObservedPoint:
    """One run as a plot marker: size, runtime, speedup and efficiency against the curve's T(1)."""

    job_id: str
    n: int
    runtime_s: float
    speedup: float
    efficiency: float
    anomaly: bool


@dataclass(frozen=True)
class CurvePoints:
    """The curve evaluated on a grid of whole sizes (ascending, 1 first)."""

    n: tuple[int, ...]
    runtime: tuple[float, ...]
    speedup: tuple[float, ...]
    efficiency: tuple[float, ...]


@dataclass(frozen=True)
class ReliabilityWarning:
    """A reliability problem (ADEPT Table 3): what, what to do, and the size to run next."""

    problem: str
    action: str
    suggest_n: int | None


@dataclass(frozen=True)
class JobGroup:
    """A job, or the tasks of a job array, or jobs submitted together, summarised.

    kind: "job" (one run), "array" (ids ``<array>_<task>``) or "group" (consecutive job
    ids of the same app on the same number of nodes: a loop of sbatch calls, or an array's
    tasks under their own ids). efficiency_*: against the curve's T(1) (None without a curve).
    """

    group_id: str
    kind: str
    tasks: int
    first_job: str
    last_job: str
    nodes: tuple[int, ...]
    runtime_min: float
    runtime_mean: float
    runtime_max: float
    efficiency_min: float | None
    efficiency_mean: float | None
    efficiency_max: float | None
    node_hours: float
    first_end: float
    last_end: float


@dataclass(frozen=True)
class DecisionRow:
    """One decision the daemon recorded, read defensively, with the curve's estimates.

    Any field the record lacks or holds in an unexpected form is None ("" for text).
    chosen is None when the job was released as submitted; chosen_upto is the top of the
    range the job was released with (Slurm picks its size in chosen..chosen_upto at start),
    None when it was pinned at chosen. rule: the policy rule, or
    ``fail-open: <reason>`` for a job the daemon released untouched. action and status: the
    daemon's ("resize", "keep", "release"; "released", "gone", ...). time_limit_min: the
    limit the daemon set, else the job's own. efficiency_* and node_hours_*
    are the *current* curve's predictions at the chosen size and at the requested maximum
    (None without a curve or without those sizes).
    """

    entry_id: str
    job_id: str
    time: float | None
    min_nodes: int | None
    max_nodes: int | None
    chosen: int | None
    rule: str
    reason: str
    time_limit_min: int | None
    action: str = ""
    status: str = ""
    chosen_upto: int | None = None
    efficiency_chosen: float | None = None
    efficiency_max: float | None = None
    node_hours_chosen: float | None = None
    node_hours_max: float | None = None

    @property
    def pinned(self) -> bool:
        """Whether the job was given one size (not left as submitted, not a range)."""
        return self.chosen is not None and self.chosen_upto is None

    @property
    def node_hours_saved(self) -> float | None:
        if self.node_hours_chosen is None or self.node_hours_max is None:
            return None
        return self.node_hours_max - self.node_hours_chosen


@dataclass(frozen=True)
class DecisionSummary:
    """The decisions of one app in figures (model estimates from the current curve).

    as_submitted: released as submitted; ranged: released with a narrowed range, whose size
    Slurm picked at start. estimated: decisions pinned at a size, with a requested maximum
    and a curve, over which the means and sums are taken; chosen_sizes counts pinned sizes.
    node_hours_saved: Σ max·T(max) - n·T(n), in node-hours, against running every one of
    those jobs at its requested maximum.
    """

    count: int = 0
    as_submitted: int = 0
    ranged: int = 0
    estimated: int = 0
    by_rule: tuple[tuple[str, int], ...] = ()
    chosen_sizes: tuple[tuple[int, int], ...] = ()
    mean_efficiency_chosen: float | None = None
    mean_efficiency_max: float | None = None
    node_hours_chosen: float | None = None
    node_hours_max: float | None = None
    node_hours_saved: float | None = None


@dataclass(frozen=True)
class AccuracyPoint:
    """One scored job as a plot marker: predicted against actual runtime (seconds).

    where: inside, above, below the 90% interval [lower_s, upper_s], or unknown (a censored
    run, `actual_s` a lower bound, that stopped inside it).
    """

    app: str
    job_id: int
    nodes: int
    predicted_s: float
    actual_s: float
    lower_s: float
    upper_s: float
    where: str
    censored: bool
    mode: str


@dataclass(frozen=True)
class AccuracySection:
    """Live accuracy of one app or of the fleet (plugin/learning/accuracy.py's figures).

    kept: over every score the store keeps; window: over the rolling window (the newest
    `window_jobs` jobs of the last `window_days` days), the figures the metrics and the
    doctor judge. drift: the app's window against the jobs before it (None for the fleet).
    apps: each app's window, most jobs first (the fleet only). points: the newest scored
    jobs, for the plot. bought: what sizing would have bought (advise) or bought (enforce),
    model estimates.
    """

    kept: Summary
    window: Summary
    points: tuple[AccuracyPoint, ...] = ()
    drift: Drift | None = None
    apps: tuple[tuple[str, Summary], ...] = ()
    bought: tuple[Bought, ...] = ()
    window_days: float = 7.0
    window_jobs: int = 200


@dataclass(frozen=True)
class AppReport:
    """Everything the report shows about one app (see the module docstring)."""

    app: str
    runs: int
    node_hours: float
    first_end: float | None
    last_end: float | None
    curve: CurveFacts | None
    curve_note: str
    sizes: tuple[SizeRow, ...]
    points: tuple[ObservedPoint, ...] = ()
    grid: CurvePoints | None = None
    band: Band | None = None
    band_note: str = ""
    anomalies: tuple[predictor.Anomaly, ...] = ()
    patterns: tuple[predictor.Pattern, ...] = ()
    warnings: tuple[ReliabilityWarning, ...] = ()
    groups: tuple[JobGroup, ...] = ()
    decisions: tuple[DecisionRow, ...] = ()
    decision_summary: DecisionSummary = field(default_factory=DecisionSummary)
    guard: GuardCounts = field(default_factory=GuardCounts)
    accuracy: AccuracySection | None = None
    #: What the app needs for a usable curve (policies/cold_start.py); None when its curve
    #: is usable.
    cold_start: Advice | None = None

    @property
    def suggest_n(self) -> int | None:
        """The size whose next run would teach the curve the most (the first warning's)."""
        return next((w.suggest_n for w in self.warnings if w.suggest_n is not None), None)


@dataclass(frozen=True)
class FleetRow:
    """One app in the fleet index and in the one-row-per-app exports.

    reliability: "reliable", "unreliable: <problems>", or why there is no curve.
    scored_jobs, coverage, error_median, bias: live accuracy over the app's rolling window
    (jobs known against the interval; None without scored jobs). cold_start: what the app
    needs for a usable curve (None when it has one).
    """

    app: str
    runs: int
    node_hours: float
    last_end: float | None
    model: str | None
    A: float | None
    sigma: float | None
    max_useful_n: int | None
    pws_n: int | None
    fit_error: float | None
    reliable: bool
    reliability: str
    suggest_n: int | None
    anomalies: int
    decisions: int
    efficiency_chosen: float | None
    efficiency_max: float | None
    node_hours_saved: float | None
    limits_raised: int = 0
    killed_at_our_limit: int = 0
    censored_runs: int = 0
    scored_jobs: int = 0
    coverage: float | None = None
    error_median: float | None = None
    bias: float | None = None
    cold_start: Advice | None = None
