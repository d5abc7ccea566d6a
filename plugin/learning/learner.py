"""The learning loop: finished jobs from Slurm become observations, dirty apps get refitted.

Every source of observations (the live learner, ``import sacct``, the benchmark) goes through
the same `Ingestor`: a job counts only when it COMPLETED (Slurm's word for "exited 0"; the
exit code is checked too where the source reports a trustworthy one), ran for more than 0 s
on between 1 and the configured maximum of nodes, ended within the retention age, and
yields a valid app key. A run stopped before it finished (TIMEOUT, PREEMPTED:
`CENSORED_STATES`) passes the same checks but is *censored*: its runtime is only a lower
bound ("at least this long"), so it is stored apart (`CurveStore.add_censored`) and never
fed to a fit as a completed run; `adaptalloc app` and the report show them. Rejections are
counted by reason and logged once per job, the reason escaped. A COMPLETED job with 0
allocated nodes is slurmdbd's not-yet-complete
record: it is *unsettled*, not rejected, and a later poll (the windows overlap) counts it.

`Learner.poll_once` is one step the daemon schedules: read jobs that ended since the
watermark minus an overlap, ingest them, raise the watermark (kept in Redis, so a new
learner resumes where the old one stopped; dedup by job id makes the overlap and two
learners at once harmless). `Learner.refit_dirty` refits apps whose observations changed,
debounced: an app is refitted once it has been dirty for `debounce_s`, so a burst of runs
costs one fit, and when the refit is due by the refit cadence (policies/refit_cadence.py:
``[learner] refit_growth`` g, ``refit_max_age_h`` H): the runs added since its curve's fit
reached max(1, ⌈g·n⌉), or one ran at a size the curve never saw, or it has no curve, or the
curve is H old; g = 0 refits on every change. An app not due stays dirty and is looked at
again next round. Refits run here, off the decision path; the daemon only reads curves.

Each poll also scores the finished jobs the daemon sized with a curve against the prediction
that decided them (plugin/learning/scoring.py: live accuracy); a scoring failure is logged
and never stops the learning.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

import predictor
from plugin.appkey import (
    MAX_USER_INFLUENCE,
    AppKey,
    AppKeyError,
    AppKeyRule,
    numeric_size,
    owner_of,
)
from plugin.config import Config
from plugin.errors import printable
from plugin.formats import daemon_record
from plugin.learning import sharing
from plugin.learning.scoring import Scorer, ScoringResult
from plugin.slurm import JobRecord, SlurmReader
from plugin.store.connection import StoreError
from plugin.store.curves import NODE_TYPE, AddResult, CurveStore, Observation
from plugin.store.score_stream import ScoreStore
from policies.refit_cadence import refit_due
from predictor.covariate import Censored
from predictor.heterogeneous import fit_heterogeneous

__all__ = [
    "CENSORED_STATES",
    "IngestStats",
    "Ingestor",
    "JobRejectedError",
    "Learner",
    "PollResult",
    "RefitOutcome",
    "UnsettledJobError",
    "covariate_fitted",
    "curve_from_fit",
    "refit_app",
    "runs_by_node_type",
]

log = structlog.get_logger("adaptalloc.learner")

#: Final states of runs stopped before they finished: their runtime is a lower bound.
CENSORED_STATES = frozenset({"TIMEOUT", "PREEMPTED"})
#: Job ids whose rejection was already logged, per ingestor (bounded).
_LOGGED_REJECTIONS = 10_000


class JobRejectedError(ValueError):
    """A job that is not an observation; `code` is the counted reason, str(exc) the detail."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


class UnsettledJobError(ValueError):
    """A job whose accounting record is not complete yet (counted by a later poll)."""


@dataclass
class IngestStats:
    """Counters of one ingest (or of a whole import)."""

    seen: int = 0
    added: int = 0
    duplicates: int = 0
    removed: int = 0
    unsettled: int = 0
    censored: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    apps: set[str] = field(default_factory=set)

    def merge(self, other: IngestStats) -> None:
        self.seen += other.seen
        self.added += other.added
        self.duplicates += other.duplicates
        self.removed += other.removed
        self.unsettled += other.unsettled
        self.censored += other.censored
        self.rejected.update(other.rejected)
        self.apps |= other.apps

    def counts(self) -> dict[str, int]:
        """Flat integer counters (for checkpoints and logs)."""
        return {
            "seen": self.seen,
            "added": self.added,
            "duplicates": self.duplicates,
            "removed": self.removed,
            "unsettled": self.unsettled,
            "censored": self.censored,
            "rejected": sum(self.rejected.values()),
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.counts(), "rejected_by_reason": dict(self.rejected), "apps": len(self.apps)}


def asked_limit(job: JobRecord) -> tuple[float | None, int | None]:
    """(the limit the job's user asked, seconds; the size it is read as written for), the
    covariate of a curve of heterogeneous runs (predictor/heterogeneous.py), or (None, None).

    A job the daemon decided carries the user's limit in its record (plugin/formats/
    daemon_record.py): Slurm's recorded limit is the one the daemon set. A job without any
    adaptalloc record (a rigid job, or history imported from before adaptalloc) ran with its
    user's limit, read as written for the least size it asked (accounting's requested nodes:
    a rigid job's size, a range's minimum, as time_limit_reference "min" reads it), else the
    size it got. A job whose record lacks the limit (an older record, a release) or that had
    no limit gives none."""
    recorded = daemon_record.users_limit(job.admin_comment)
    if recorded is not None:
        return 60.0 * recorded[0], recorded[1]
    if daemon_record.parse_record(job.admin_comment) or not job.time_limit_min:
        return None, None
    if job.time_limit_min < 1 or job.nodes_alloc < 1:
        return None, None
    asked = job.nodes_min
    written_for = asked if asked is not None and 1 <= asked <= job.nodes_alloc else job.nodes_alloc
    return 60.0 * job.time_limit_min, written_for


class Ingestor:
    """Validate jobs and store the valid ones as observations (see the module docstring).

    Parameters
    ----------
    store : CurveStore
    rule : AppKeyRule
        How a job becomes an app key.
    max_nodes : int or None
        Largest believable allocation (None: no upper bound).
    max_age_s : float or None
        Jobs that ended longer ago are refused (None: any age).
    """

    def __init__(
        self,
        store: CurveStore,
        rule: AppKeyRule,
        max_nodes: int | None,
        max_age_s: float | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.rule = rule
        self.max_nodes = max_nodes
        self.max_age_s = max_age_s
        self.clock = clock
        self._logged: OrderedDict[int, None] = OrderedDict()

    def observation(
        self, job: JobRecord, now: float | None = None, censored: bool = False
    ) -> Observation:
        """The job as an observation; raises JobRejectedError or UnsettledJobError.

        With `censored`, the job must have been stopped before it finished (CENSORED_STATES;
        its exit code is Slurm's kill, not the program's) and the runtime is a lower bound.
        """
        if censored:
            if job.state not in CENSORED_STATES:
                raise JobRejectedError("state", f"state {printable(job.state)[:20]} not censored")
        elif job.state != "COMPLETED":
            raise JobRejectedError("state", f"state {printable(job.state)[:20] or 'unknown'}")
        elif job.exit_code not in (None, 0) or job.exit_signal:
            detail = f"exit code {job.exit_code}, signal {job.exit_signal}"
            raise JobRejectedError("exit_code", detail)
        if not job.elapsed_s or job.elapsed_s <= 0:
            raise JobRejectedError("runtime", f"runtime {job.elapsed_s} s")
        if job.end_time is None:
            raise JobRejectedError("end_time", "no end time")
        if job.nodes_alloc < 1:
            raise UnsettledJobError("0 nodes allocated: accounting record not complete yet")
        if self.max_nodes is not None and job.nodes_alloc > self.max_nodes:
            raise JobRejectedError("nodes", f"{job.nodes_alloc} nodes > max_nodes {self.max_nodes}")
        current = self.clock() if now is None else now
        if self.max_age_s is not None and job.end_time < current - self.max_age_s:
            raise JobRejectedError("too_old", "ended before the retention age")
        try:
            app = self.rule.key_for(job)
            # A site key pools many users' runs: each keeps its user, whose weight in the fit
            # is bounded (plugin/learning/sharing.py). A user's own key says it already.
            user = owner_of(job.user) if app.owner is None else None
        except AppKeyError as exc:
            raise JobRejectedError("app_key", f"app key: {exc}") from exc
        limit_s, written_for = asked_limit(job)
        tasks = job.tasks if job.tasks is not None and job.tasks >= 1 else None
        per_node = (
            tasks // job.nodes_alloc if tasks is not None and tasks % job.nodes_alloc == 0 else None
        )
        return Observation(
            job_id=str(job.job_id),
            app=app,
            nodes=job.nodes_alloc,
            runtime_s=float(job.elapsed_s),
            end_time=float(job.end_time),
            source=job.source,
            size=numeric_size(app.size),
            tasks=tasks,
            tasks_per_node=per_node,
            node_type=job.partition if NODE_TYPE.fullmatch(job.partition) else None,
            user=user,
            limit_s=limit_s,
            written_for=written_for,
            preempted=censored and job.state == "PREEMPTED",
        )

    def _log_rejection(self, job: JobRecord, exc: JobRejectedError) -> None:
        if job.job_id in self._logged:
            return
        self._logged[job.job_id] = None
        if len(self._logged) > _LOGGED_REJECTIONS:
            self._logged.popitem(last=False)
        # App-key refusals may be hostile input: visible at info; the others are routine.
        emit = log.info if exc.code == "app_key" else log.debug
        emit("job_rejected", job_id=job.job_id, reason=exc.code, detail=printable(str(exc)))

    def ingest(self, jobs: Iterable[JobRecord]) -> IngestStats:
        """Validate and store `jobs` (each app's update atomic); returns the counters."""
        stats = IngestStats()
        now = self.clock()
        groups: dict[AppKey, list[Observation]] = {}
        censored: dict[AppKey, list[Observation]] = {}
        seen_ids: set[int] = set()
        for job in jobs:
            if job.job_id in seen_ids:  # the same job twice in one read
                stats.duplicates += 1
                continue
            seen_ids.add(job.job_id)
            stats.seen += 1
            lower_bound = job.state in CENSORED_STATES
            try:
                obs = self.observation(job, now, censored=lower_bound)
            except UnsettledJobError:
                stats.unsettled += 1
                continue
            except JobRejectedError as exc:
                stats.rejected[exc.code] += 1
                self._log_rejection(job, exc)
                continue
            (censored if lower_bound else groups).setdefault(obs.app, []).append(obs)
        if censored:
            stats.censored += self.store.add_censored(censored)
        result = self.store.add_batch(groups) if groups else AddResult()
        stats.added += result.added
        stats.duplicates += result.duplicates
        stats.removed += result.removed
        stats.apps.update(str(app) for app in groups)
        return stats


@dataclass(frozen=True)
class PollResult:
    """One learner step: where it read from, which window, what it found."""

    source: str
    since: float
    until: float
    watermark: float
    stats: IngestStats
    #: The jobs scored against the prediction that decided them (live accuracy).
    scoring: ScoringResult = field(default_factory=ScoringResult)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "since": self.since,
            "until": self.until,
            "watermark": self.watermark,
            **self.stats.to_dict(),
            **self.scoring.to_dict(),
        }


@dataclass(frozen=True)
class RefitOutcome:
    """status: written, stale, forgotten, or no_curve (note says why)."""

    app: AppKey
    status: str
    version: int
    n_observations: int
    note: str = ""
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["app"] = str(self.app)
        return out


def curve_from_fit(fit: predictor.Fit) -> predictor.Curve:
    """What the store keeps for a fit, as predictor/__init__.py prescribes: the fit with its
    diagnostics and, for ADEPT fits, the model predictor.choose_model picks (ADEPT or a
    clearly better one; a few hundred ms, which is why refits run off the decision path)."""
    if fit.method != "adept":
        return predictor.Curve.from_fit(fit)
    try:
        choice = predictor.choose_model(fit.observations)
    except ValueError as exc:  # too little data to compare models: the ADEPT curve stands
        log.debug("model_choice_skipped", reason=printable(str(exc)))
        return predictor.Curve.from_fit(fit)
    return predictor.Curve.from_fit(fit, choice=choice)


def with_limits(runs: Sequence[Observation]) -> bool:
    """Every run carries its user's limit and the size it was written for: the runs are
    fitted as heterogeneous runs (predictor/heterogeneous.py), the limit their covariate."""
    return bool(runs) and all(r.limit_s is not None and r.written_for is not None for r in runs)


def covariate_fitted(runs: Sequence[Observation], method: str, fit_fn: Callable[..., Any]) -> bool:
    """Whether `runs` are fitted as heterogeneous runs, the covariate curve: every run carries
    its user's limit (`with_limits`), the method is ADEPT and the fit the predictor's own (a
    caller's own fit function, as tests pass, keeps the plain path)."""
    return method == "adept" and fit_fn is predictor.fit_observations and with_limits(runs)


def _fit_heterogeneous(
    runs: Sequence[Observation], censored: Sequence[Observation] = ()
) -> tuple[predictor.Curve | None, str]:
    """The covariate curve of runs that all carry their limits (or None and the reason);
    `censored`, runs stopped before they finished, count in its limit-use bound (those that
    carry their limits; predictor/covariate.py, "killed runs count"), and the largest size
    one of them was killed at, not preempted, is the curve's `stopped_n`."""
    stopped = [o for o in censored if o.limit_s is not None and o.written_for is not None]
    try:
        curve = fit_heterogeneous(
            [o.nodes for o in runs],
            [o.runtime_s for o in runs],
            [o.limit_s or 0.0 for o in runs],  # with_limits: every run has both
            [o.written_for or 0 for o in runs],
            censored=Censored.of(
                [o.nodes for o in stopped],
                [o.runtime_s for o in stopped],
                [o.limit_s or 0.0 for o in stopped],
                [o.written_for or 0 for o in stopped],
                [o.preempted for o in stopped],
            )
            if stopped
            else None,
        )
    except ValueError as exc:
        return None, printable(str(exc))
    if curve is None:
        return None, "fit failed: the runs adjusted for their limits give no curve"
    return curve, ""


def _fit_runs(
    runs: Sequence[Observation],
    method: str,
    fit_fn: Callable[..., Any],
    censored: Sequence[Observation] = (),
) -> tuple[predictor.Curve | None, str]:
    """A curve from runs (or None and the reason): the covariate curve where
    `covariate_fitted` (`censored` runs in its limit-use bound), else the method's fit."""
    if not runs:
        return None, "no observations"
    if covariate_fitted(runs, method, fit_fn):
        return _fit_heterogeneous(runs, censored)
    try:
        prepared = predictor.prepare([o.nodes for o in runs], [o.runtime_s for o in runs])
        result = fit_fn(prepared, method=method)
    except ValueError as exc:
        return None, printable(str(exc))
    if result.status != "ok":
        return None, f"fit failed: {printable(result.message)}"
    return curve_from_fit(result), ""


def _plain_curve(
    runs: Sequence[Observation], method: str, fit_fn: Callable[..., Any]
) -> predictor.Curve | None:
    """The method's own curve of `runs` (no model choice: cheap), None when they give none."""
    try:
        prepared = predictor.prepare([o.nodes for o in runs], [o.runtime_s for o in runs])
        result = fit_fn(prepared, method=method)
    except ValueError:
        return None
    return predictor.Curve.from_fit(result) if result.status == "ok" else None


def _fit_shared(
    runs: Sequence[Observation],
    method: str,
    fit_fn: Callable[..., Any],
    bound: float,
    censored: Sequence[Observation] = (),
) -> tuple[predictor.Curve | None, str]:
    """A site key's curve from its users' votes, flagged when one user moves it more than
    `bound` (plugin/learning/sharing.py); a key without users' runs fits as any other. Each
    user is left out of the model the curve was fitted with: the covariate curve of runs
    that all carry their limits (`covariate_fitted`: leaving a user out keeps that true),
    else the method's own fit without the model choice (cheap). `censored` runs count in the
    limit-use bound of a key without users' runs (`_fit_heterogeneous`); a site key's votes
    are one run per user, and its censored runs, no votes, are left out of it."""
    if not any(run.user is not None for run in runs):
        return _fit_runs(runs, method, fit_fn, censored)
    pooled = sharing.votes(runs)
    curve, note = _fit_runs(pooled, method, fit_fn)
    if curve is None:
        return curve, note
    covariate = covariate_fitted(pooled, method, fit_fn)

    def refit(some: Sequence[Observation]) -> predictor.Curve | None:
        return _fit_heterogeneous(some)[0] if covariate else _plain_curve(some, method, fit_fn)

    found = sharing.influence(pooled, refit)
    if found is not None and found.change > bound:
        log.info(
            "shared_curve_flagged",
            user=printable(found.user)[:64],
            change=None if math.isinf(found.change) else round(found.change, 3),
            nodes=found.nodes,
        )
    return sharing.flag_influence(curve, found, bound), note


def censored_within(
    censored: Sequence[Observation], runs: Sequence[Observation]
) -> list[Observation]:
    """The censored runs that ended within the time the kept runs span (from the oldest kept
    run on): the ones a fit of `runs` counts, as the store ages observations out."""
    if not runs:
        return []
    since = min(o.end_time for o in runs)
    return [o for o in censored if o.end_time >= since]


def runs_by_node_type(runs: Sequence[Observation]) -> dict[str, list[Observation]]:
    """The runs of each node type when they span more than one (else empty: one curve does)."""
    groups: dict[str, list[Observation]] = {}
    for run in runs:
        if run.node_type is not None:
            groups.setdefault(run.node_type, []).append(run)
    return groups if len(groups) > 1 else {}


def refit_app(
    store: CurveStore,
    app: AppKey,
    method: str = "adept",
    fit: Callable[..., Any] | None = None,
    max_user_influence: float = MAX_USER_INFLUENCE,
) -> RefitOutcome:
    """Read an app's observations, fit, store the curve with a version check.

    `fit` defaults to predictor.fit_observations (tests pass a slower or failing one to
    simulate a crash mid-refit). A data set the predictor refuses (e.g. runs at one size
    only) stores "no curve" with the reason, so the app stops being dirty until new runs.
    When the runs span several node types (partitions), one curve per type is saved too
    (`CurveStore.curve(app, node_type)`), before the curve over all runs. A site key's runs
    of several users are fitted as votes, one user's influence bounded by
    `max_user_influence` (plugin/learning/sharing.py).
    """
    started = time.perf_counter()
    fit_fn = predictor.fit_observations if fit is None else fit

    snapshot = store.refit_input(app)
    if snapshot is None:
        return RefitOutcome(app, "forgotten", 0, 0)
    runs = snapshot.observations
    stopped = censored_within(store.censored_runs(app), runs)

    def fit_runs(some: Sequence[Observation]) -> tuple[predictor.Curve | None, str]:
        types = {o.node_type for o in some}
        alike = [o for o in stopped if len(types) > 1 or o.node_type in types]
        return _fit_shared(some, method, fit_fn, max_user_influence, alike)

    by_type = runs_by_node_type(runs)
    store.drop_node_types(app, set(store.node_types(app)) - set(by_type))
    for node_type, typed in by_type.items():
        typed_curve, typed_note = fit_runs(typed)
        store.save_curve(
            app,
            typed_curve,
            snapshot.obs_version,
            n_observations=len(typed),
            method=method,
            note=typed_note,
            node_type=node_type,
        )
    curve, note = fit_runs(runs)
    saved = store.save_curve(
        app,
        curve,
        snapshot.obs_version,
        n_observations=len(runs),
        method=method,
        note=note,
        added_total=snapshot.added_total,
    )
    status = "no_curve" if saved.status == "written" and curve is None else saved.status
    outcome = RefitOutcome(
        app,
        status,
        saved.version,
        len(runs),
        note,
        round((time.perf_counter() - started) * 1000.0, 1),
    )
    log.info("refit", **outcome.to_dict())
    return outcome


class Learner:
    """Feeds the store from Slurm; the daemon calls `poll_once` and `refit_dirty` on a timer.

    Parameters
    ----------
    store : CurveStore
    reader : SlurmReader
    config : Config
        ``[learner]`` and ``[appkey]`` settings.
    clock : callable
        Unix time now.
    """

    def __init__(
        self,
        store: CurveStore,
        reader: SlurmReader,
        config: Config | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.reader = reader
        self.config = config or Config()
        self.clock = clock
        self.rule = self.config.appkey.rule()
        self._source: str | None = None
        self._ingestor: Ingestor | None = None
        self._scorer: Scorer | None = None

    @property
    def source(self) -> str:
        """sacct when accounting is on (or configured), else squeue."""
        if self._source is None:
            wanted = self.config.learner.source
            if wanted == "auto":
                wanted = "sacct" if self.reader.accounting_enabled() else "squeue"
            self._source = wanted
        return self._source

    @property
    def ingestor(self) -> Ingestor:
        if self._ingestor is None:
            max_nodes = self.config.learner.max_nodes or len(self.reader.nodes()) or None
            self._ingestor = Ingestor(
                self.store, self.rule, max_nodes, self.config.learner.max_age_s, self.clock
            )
        return self._ingestor

    @property
    def scorer(self) -> Scorer:
        """Scores finished jobs on the store's Redis (plugin/learning/scoring.py)."""
        if self._scorer is None:
            self._scorer = Scorer(ScoreStore(self.store.client), CENSORED_STATES)
        return self._scorer

    def score(self, jobs: Sequence[JobRecord]) -> ScoringResult:
        """Score `jobs` (live accuracy); a failure is logged, never raised: scoring must not
        stop the learning (the next poll's overlap re-reads the newest jobs)."""
        try:
            return self.scorer.score(jobs)
        except StoreError as exc:
            log.warning("scoring_failed", error=printable(str(exc))[:200])
        except Exception as exc:  # a scoring bug must not stop the observations
            log.error("scoring_error", error=printable(repr(exc))[:300])
        return ScoringResult()

    def window(self) -> tuple[float, float]:
        """(since, until) of the next poll: watermark minus overlap, up to now.

        A learner catching up after a long stop reads at most ``import_window_h`` hours
        per poll, so that one poll never asks slurmdbd for weeks of jobs; the next polls
        continue from the watermark.
        """
        now = self.clock()
        mark = self.store.watermark(self.source)
        if mark is None:
            since = now - self.config.learner.initial_lookback_s
        else:
            since = mark - self.config.learner.overlap_s
        since = max(since, 0.0)
        return since, min(now, since + self.config.learner.import_window_h * 3600.0)

    def read(self, since: float, until: float) -> list[JobRecord]:
        """Finished jobs of the window, comments filled in from squeue where accounting
        lacks them (slurm.conf without ``AccountingStoreFlags=job_comment``)."""
        if self.source == "sacct":
            jobs = self.reader.finished_jobs(since, until, states=("COMPLETED", *CENSORED_STATES))
            return self.with_comments(jobs)
        return self.reader.recently_finished(since, until)

    def with_comments(self, jobs: Sequence[JobRecord]) -> list[JobRecord]:
        """Fill in comment/script from squeue for records that lack them."""
        wanted = self.rule.uses_comment or "script" in self.rule.fields
        missing = [j for j in jobs if j.comment is None or j.script is None]
        if not wanted or not missing:
            return list(jobs)
        known: Mapping[int, JobRecord] = {j.job_id: j for j in self.reader.jobs()}
        out = []
        for job in jobs:
            live = known.get(job.job_id)
            if live is not None and (job.comment is None or job.script is None):
                job = dataclasses.replace(  # noqa: PLW2901 - the enriched record replaces it
                    job,
                    comment=job.comment if job.comment is not None else live.comment,
                    script=job.script or live.script,
                )
            out.append(job)
        return out

    def poll_once(self) -> PollResult:
        """Read, validate and store the jobs that ended since the last poll."""
        started = time.perf_counter()
        since, until = self.window()
        jobs = self.read(since, until)
        stats = self.ingestor.ingest(jobs)
        scoring = self.score(jobs)
        mark = self.store.advance_watermark(self.source, until)
        result = PollResult(self.source, since, until, mark, stats, scoring)
        log.info(
            "learner_poll",
            **result.to_dict(),
            elapsed_ms=round((time.perf_counter() - started) * 1000.0, 1),
        )
        return result

    def refit_dirty(
        self, max_apps: int | None = None, debounce_s: float | None = None
    ) -> list[RefitOutcome]:
        """Refit up to `max_apps` apps dirty for at least `debounce_s` (config defaults) whose
        refit is due (`refit_is_due`), longest waiting first."""
        limit = max_apps if max_apps is not None else self.config.learner.refit_max_apps
        wait = debounce_s if debounce_s is not None else self.config.learner.refit_debounce_s
        now = self.clock()
        every = self.config.learner.refit_growth == 0.0
        ready = self.store.dirty_apps(ready_before=now - wait, limit=limit if every else None)
        outcomes: list[RefitOutcome] = []
        for app in ready:
            if len(outcomes) == limit:
                break
            if every or self.refit_is_due(app, now):
                outcomes.append(
                    refit_app(
                        self.store,
                        app,
                        self.config.learner.method,
                        max_user_influence=self.config.appkey.max_user_influence,
                    )
                )
        return outcomes

    def refit_is_due(self, app: AppKey, now: float) -> bool:
        """policies/refit_cadence.py's rule for a dirty app, from its stored curve record and
        the runs added since (an older record without the added count: due)."""
        settings = self.config.learner
        record = self.store.curve_record(app)
        if record is None or record.added_total is None or record.fitted_at is None:
            return True
        added, sizes = self.store.added_since(app, record.added_total)
        due = refit_due(
            growth=settings.refit_growth,
            max_age_s=settings.refit_max_age_s,
            fitted_runs=record.n_observations,
            added=added,
            observed=None if record.curve is None else record.curve.observed_n,
            new_sizes=sizes,
            age_s=now - record.fitted_at,
        )
        if not due:
            log.debug("refit_not_due", app=str(app), added=added, fitted_runs=record.n_observations)
        return due

    def age_out(self) -> int:
        """Apply the retention limits to every app (observations removed); apps that lost
        runs become dirty. New runs apply them on their own; this catches idle apps, and
        the daemon runs it now and then (``learn --once`` does too)."""
        return self.store.age_out()
