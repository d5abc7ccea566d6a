"""One held job to one outcome: resize it, keep it as submitted, or release it failing open.

`Decider.decide` runs the steps of DESIGN.md's flow for one job and never raises: every
failure becomes a release as submitted with a reason code (reasons.py).

1. The range: a job whose range is no longer min < max is released (``not_moldable``).
2. The tags: a v1 tag that cannot be honoured releases the job (``bad_tag``); ``resize=no``
   too (``opted_out``; job_submit.lua does not hold those, this is a second check).
   Where Slurm enforces association/QOS limits, every job is released as submitted
   (``limits_enforced``, plugin/slurm/enforcement.py) unless the admin allows resizing.
3. The app key (plugin/appkey.py). A job without one (a generic name such as ``wrap`` and no
   tag) is not a failure: the policy's fallback decides it, like an app without a curve.
4. The curve, from Redis through `CurveSource` (short timeouts; once Redis fails, every read
   fails at once for ``redis_retry_s``, so a burst does not wait on a dead Redis job by job):
   ``store_unavailable``. On a job's partition (each listed one, or its only one) the curve
   is the app's curve on that node type when the learner fitted one, else the curve of all
   its runs, refused when those ran on nodes of another core count (policies/fallback.py):
   the job is then decided as an app without a curve. On a partition described in the
   adaptalloc TOML (``[node_types.NAME]``) where the app has no curve of its own, its curve
   on another described type converted by the roofline stands in instead (a *roofline
   prior*, shape.roofline_prior, policies/roofline.py), and the reason says so.
5. The policy (policies.decide) with the partition's load and limits; an exception is
   ``policy_error``. The size is checked against the user's own range before anything is
   applied (root may set sizes below the user's minimum): ``out_of_range`` otherwise.
   Three shapes of job take their own rule first (plugin/daemon/shape.py):
   a ``scaling=weak`` tag (Gustafson, policies/weak.py), a fixed task count over a node
   range (placement, policies/placement.py) and a list of partitions (completion,
   policies/partition.py), in that order of precedence: one rule per job (a weak or
   placed job listing several partitions keeps its list, and Slurm picks among them). A
   partition the policy picks must be one the user listed and Slurm knows; anything else
   is ``out_of_range`` too. A ``pattern=master-worker`` tag caps the size the curve's
   rules (and the fallback) give at the nodes the workers one master keeps busy need
   (shape.worker_cap, policies/master_worker.py), on each partition its own.

The exploration counters (policies.ExplorationBudget) are kept here, in memory, since the
daemon started: exploration's share is a share of what this daemon decided. A restart
starts them afresh (they are a rate limiter, not accounting).

A job sized by a rule that read the curve (`CURVE_RULES`) carries that curve's document
(`Outcome.curve_doc`: `predictor.Curve.to_dict` without the diagnostics, which neither its
runtime nor its interval read, a quarter of the bytes) into its decision record: the curve
that decided, whichever it was (the user's, the site's, a node type's, the chosen
partition's, or one borrowed from sibling sizes), so that the learner can score the run
against it once it finished (plugin/learning/scoring.py). A document is made once per curve
per batch (`CurveSource.document`): a burst's jobs of one app share it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import structlog

import policies
from plugin.appkey import AppKey, AppKeyError, AppKeyRule, numeric_size
from plugin.config import NodeTypeConfig
from plugin.daemon import marks, reasons, shape
from plugin.daemon.cluster import first_partition, listed_partitions
from plugin.errors import printable
from plugin.learning.borrow import BORROWED, curve_with_borrowing
from plugin.learning.priors import Prior
from plugin.slurm import JobRecord, Resize
from plugin.store.connection import StoreError
from plugin.store.curves import CurveRecord, CurveStore
from policies import ClusterState, Decision, ExplorationBudget
from policies.decide import unusable_because
from policies.decision import FALLBACK, RULES
from policies.fallback import curve_on_type
from policies.master_worker import MASTER_WORKER, WorkerCap
from policies.partition import Queue, wait_estimate
from policies.roofline import NodeType
from policies.second_size import Run, SecondSize, second_size
from predictor.diagnostics import Diagnostics

__all__ = ["CURVE_RULES", "Budget", "CurveSource", "Decider", "Outcome", "with_safety"]

log = structlog.get_logger("adaptalloc.daemon")
T = TypeVar("T")
#: App keys the decider remembers before it starts afresh (`Decider.app_key`): a burst's
#: jobs share a few (name, comment) pairs; a site's whole set of apps fits many times over.
KEY_MEMO_SIZE = 4096
#: The rules whose size comes from the curve's prediction: a job they sized is scored
#: against that curve once it finished (the fallback and partition_limit read no curve; a
#: master-worker cap is scored when a curve decided within it).
CURVE_RULES = (frozenset(RULES) - {FALLBACK}) | {MASTER_WORKER}
#: Curve documents `CurveSource.document` keeps before it starts afresh (one per curve in
#: a batch; a batch reads each app's curves once).
DOCUMENT_MEMO_SIZE = 1024
#: The keys of a curve's document that hold its diagnostics (left out of the snapshot).
DIAGNOSTICS = frozenset(Diagnostics().to_dict())

RESIZE = "resize"
KEEP = "keep"
RELEASE = "release"


@dataclass(frozen=True)
class Outcome:
    """What happens to one held job, and everything its decision record needs.

    action: "resize" (pin `resize`, record sized), "keep" (policy left it as submitted,
    record kept) or "release" (fail-open, `fail_open` is the reason code).
    """

    job: JobRecord
    action: str
    admin_comment: str
    reason: str
    rule: str | None = None
    fail_open: str | None = None
    resize: Resize | None = None
    app: AppKey | None = None
    curve_version: int | None = None
    curve_model: str | None = None
    cluster: ClusterState | None = None
    time_limit_reason: str = ""
    policy: str = ""
    budget: dict[str, Any] = field(default_factory=dict)
    recovered: bool = False
    tasks: int | None = None
    tasks_per_node: int | None = None
    scaling: str | None = None
    placement: dict[str, Any] | None = None
    #: The key whose curve decided, when not the job's own `app` (the site's curve).
    curve_app: AppKey | None = None
    #: The job's maximum time limit where it will run (partition MaxTime, QOS and
    #: association MaxWall), when a limit is set: the kill guard never raises past it.
    max_time_min: int | None = None
    #: The document of the curve whose prediction sized the job (module docstring).
    curve_doc: dict[str, Any] | None = None

    @property
    def job_id(self) -> int:
        return self.job.job_id

    @property
    def nodes(self) -> int | None:
        return self.resize.min_nodes if self.resize is not None else None

    @property
    def time_limit_min(self) -> int | None:
        return self.resize.time_limit_min if self.resize is not None else None


def with_safety(
    limit_min: int, user_limit_min: int | None, safety: float, maximum_min: int | None = None
) -> int:
    """``min(user limit, ceil(limit * safety), maximum)``: the app's kill-guard safety (grown
    each time the guard had to raise one of its limits, plugin/daemon/guard.py) applied to a
    limit the policy shortened; a limit not shorter than the user's is left as it is. The
    job's maximum (partition MaxTime, QOS and association MaxWall) applies last: a limit past
    it would let the job run longer than Slurm allows (as root) or never start (as the
    sizing user)."""
    if user_limit_min is None or limit_min >= user_limit_min or safety <= 1.0:
        return limit_min
    grown = min(user_limit_min, math.ceil(limit_min * safety))
    return grown if maximum_min is None else min(grown, maximum_min)


def _range(job: JobRecord) -> tuple[int | None, int | None]:
    return job.nodes_min, job.nodes_max


def _sizes(record: CurveRecord | None, settings: policies.PolicySettings) -> bool:
    """Whether `record`'s curve may size a job with `settings` (policies.decide's
    usability)."""
    return (
        record is not None
        and record.curve is not None
        and not unusable_because(record.curve, settings)
    )


def release_outcome(
    job: JobRecord, reason: str, detail: str, app: AppKey | None = None, **extra: Any
) -> Outcome:
    """The fail-open outcome: release as submitted, record `reason`."""
    low, high = _range(job)
    record = marks.released_record(reason, low, high)
    comment = marks.admin_comment(record, marks.prior_text(job.admin_comment), app)
    return Outcome(
        job=job,
        action=RELEASE,
        admin_comment=comment,
        reason=detail,
        fail_open=reason,
        app=app,
        **extra,
    )


class CurveSource:
    """Curves from the store for the decision path: a per-batch cache and a circuit breaker.

    `get` raises StoreError when Redis fails, and for `retry_s` seconds after a failure
    raises at once without asking Redis again.
    """

    def __init__(
        self,
        store: Callable[[], CurveStore],
        retry_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self._store_factory = store
        self._store: CurveStore | None = None
        self.retry_s = retry_s
        self.clock = clock
        self._down_until = -1e18
        self._down_reason = ""
        self._cache: dict[AppKey, CurveRecord | None] = {}
        self._typed: dict[tuple[AppKey, str], CurveRecord | None] = {}
        self._run_types: dict[AppKey, frozenset[str | None]] = {}
        self._typed_types: dict[AppKey, tuple[str, ...]] = {}
        self._safety: dict[AppKey, float] = {}
        self._documents: dict[int, tuple[Any, dict[str, Any]]] = {}
        self._on_failure = on_failure

    def begin_batch(self) -> None:
        """Forget cached curves: each batch reads each app's curve once."""
        self._cache = {}
        self._typed = {}
        self._run_types = {}
        self._typed_types = {}
        self._safety = {}
        self._documents = {}

    def document(self, curve: Any) -> dict[str, Any]:
        """`curve.to_dict()` without its diagnostics (what `Curve.from_dict` needs to give
        the same runtime and interval), made once per curve object of the batch (the jobs of
        a burst share their app's curve; the decision records only read it)."""
        held = self._documents.get(id(curve))
        if held is not None and held[0] is curve:
            return held[1]
        if len(self._documents) >= DOCUMENT_MEMO_SIZE:
            self._documents = {}
        doc = {k: v for k, v in curve.to_dict().items() if k not in DIAGNOSTICS}
        self._documents[id(curve)] = (curve, doc)  # the curve held: its id stays its own
        return doc

    def safety(self, app: AppKey) -> float:
        """The app's time-limit safety (1 when Redis fails: the curve read fails first)."""
        if app in self._safety:
            return self._safety[app]
        value = 1.0
        if not self.down:
            try:
                value = self.store().limit_safety(app)
            except StoreError:
                if self._on_failure is not None:
                    self._on_failure("safety")
        self._safety[app] = value
        return value

    @property
    def down(self) -> bool:
        return self.clock() < self._down_until

    def store(self) -> CurveStore:
        if self._store is None:
            self._store = self._store_factory()
        return self._store

    def get(self, app: AppKey) -> CurveRecord | None:
        if app in self._cache:
            return self._cache[app]
        record = self._read("curve", lambda: curve_with_borrowing(self.store(), app))
        self._cache[app] = record
        return record

    def _read(self, what: str, call: Callable[[], T]) -> T:
        """`call()` on the store; while Redis is down (a failure less than `retry_s` ago)
        StoreError at once, and a failure marks it down, is counted as `what` and re-raised."""
        if self.down:
            raise StoreError(f"Redis unavailable (retrying in a moment): {self._down_reason}")
        try:
            return call()
        except StoreError as exc:
            self._down_until = self.clock() + self.retry_s
            self._down_reason = printable(str(exc))[:200]
            if self._on_failure is not None:
                self._on_failure(what)
            log.warning("store_unavailable", error=self._down_reason, retry_s=self.retry_s)
            raise

    def typed(self, app: AppKey, node_type: str) -> CurveRecord | None:
        """The app's curve on `node_type` (a partition name) when the learner fitted one (the
        app ran on several types), else None; StoreError as `get`."""
        key = (app, node_type)
        if key not in self._typed:
            self._typed[key] = self._read(
                "curve", lambda: self.store().curve_record(app, node_type)
            )
        return self._typed[key]

    def typed_types(self, app: AppKey) -> tuple[str, ...]:
        """The node types the learner fitted a curve of the app on (none when it ran on one
        type only), read once a batch; StoreError as `get`."""
        if app not in self._typed_types:
            self._typed_types[app] = tuple(
                self._read("curve", lambda: self.store().node_types(app))
            )
        return self._typed_types[app]

    def run_node_types(self, app: AppKey) -> frozenset[str | None]:
        """The node types the app's stored runs ran on (None: a run without one), read once
        a batch; StoreError as `get`."""
        if app not in self._run_types:
            self._run_types[app] = frozenset(o.node_type for o in self.observations(app))
        return self._run_types[app]

    def observations(self, app: AppKey) -> list[Any]:
        """The app's observations (for placement and weak scaling); StoreError as `get`."""
        return self._read("observations", lambda: list(self.store().observations(app)))

    def one_size_runs(self, app: AppKey) -> list[Run]:
        """The app's runs for a second size (policies/second_size.py): only when its stored
        record has no curve (the learner's note says why); none without runs, or with a curve
        (refused on a node type, say). One more read, for those apps only."""
        record = self.get(app)
        if record is None or record.curve is not None:
            return []
        return [Run(o.nodes, o.runtime_s, o.limit_s) for o in self.observations(app)]

    def sibling_runs(self, app: AppKey) -> list[Any]:
        """The runs of the app's sibling sizes (same name, numeric size class), each with its
        problem size (the key's number when the run recorded none); StoreError as `get`."""
        siblings = self._read("observations", lambda: self.store().sibling_sizes(app))
        out: list[Any] = []
        for key, runs in siblings.items():
            number = numeric_size(key.size)
            for run in runs:
                size = getattr(run, "size", None)
                out.append(run if size is not None or number is None else replace(run, size=number))
        return out

    def reset(self, store: Callable[[], CurveStore]) -> None:
        """Use another store (after a configuration reload)."""
        self._store_factory = store
        self._store = None
        self._down_until = -1e18
        self.begin_batch()


@dataclass(frozen=True)
class Judged:
    """The partition a job is decided for when no choice among those it lists is made, read
    once per decision (`Decider._judged`): the listed partitions that may take it
    (`Decider._admitted`), the judged one (the one that admits it, else the first listed,
    cluster.first_partition) and its settings with the job's account's (policies.effective;
    a job listing ``a,b`` matches no ``[partition]`` table as a list)."""

    listed: list[str]
    where: str
    settings: policies.PolicySettings


@dataclass
class Budget:
    """The exploration counters since the daemon started (module docstring)."""

    counters: ExplorationBudget = field(default_factory=ExplorationBudget)

    def value(self) -> ExplorationBudget:
        return self.counters

    def count(self, nodes: int | None, runtime_s: float | None, explored: bool) -> None:
        """One decided job (`ExplorationBudget.after`)."""
        self.counters = self.counters.after(nodes, runtime_s, explored)

    def to_dict(self) -> dict[str, Any]:
        c = self.counters
        return {
            "jobs_decided": c.jobs_decided,
            "jobs_explored": c.jobs_explored,
            "node_hours_decided": round(c.node_hours_decided, 3),
            "node_hours_explored": round(c.node_hours_explored, 3),
        }


class Decider:
    """Decides held jobs (module docstring). Replace `rule` and `policy` on SIGHUP."""

    def __init__(
        self,
        rule: AppKeyRule,
        policy: policies.PolicyConfig,
        curves: CurveSource,
        budget: Budget | None = None,
        node_types: dict[str, NodeTypeConfig] | None = None,
    ) -> None:
        self.rule = rule
        self.policy = policy
        self.curves = curves
        self.budget = budget or Budget()
        #: The adaptalloc TOML's ``[node_types.NAME]``, by partition (the loop sets it, and
        #: again on SIGHUP): the roofline's numbers and the master-worker link bandwidth.
        self.node_types: dict[str, NodeTypeConfig] = node_types or {}
        self._where: tuple[
            Callable[[str], Queue | None] | None,
            Callable[[str], int | None] | None,
            Callable[[], Iterable[str]] | None,
        ] = (None, None, None)
        self._cluster: Callable[[JobRecord], ClusterState] = lambda job: ClusterState()
        self._core_counts: Callable[[], frozenset[int] | None] | None = None
        #: Release every job as submitted: Slurm enforces limits that a resize would lift
        #: (plugin/slurm/enforcement.py); the loop sets it from Slurm's configuration.
        self.resize_refused = False
        #: Slurm enforces (or may enforce: unknown counts) association and QOS limits, so no
        #: limit is shortened (policies/time_limit.py); the loop sets it with the above.
        self.limits_enforced = True
        #: `app_key`'s memo: (rule, {what the rule reads of a job: its key}).
        self._keys: tuple[AppKeyRule, dict[tuple[Any, ...], AppKey]] = (rule, {})

    def decide(
        self,
        job: JobRecord,
        cluster: Callable[[JobRecord], ClusterState],
        queue: Callable[[str], Queue | None] | None = None,
        cpus: Callable[[str], int | None] | None = None,
        known_partitions: Callable[[], Iterable[str]] | None = None,
        core_counts: Callable[[], frozenset[int] | None] | None = None,
    ) -> Outcome:
        """The outcome for one held job; never raises (an error is ``internal_error``).

        queue, cpus and known_partitions (optional) describe the partitions for the
        partition choice and the placement: a partition's queue, its nodes' CPUs, and the
        partitions Slurm knows that admit the job (a listed name outside them is never a
        candidate; plugin/daemon/access.py). core_counts (optional): the distinct CPU counts
        of the cluster's nodes; one count means no fallback can be refused, and the app's
        runs are not read to find out.
        """
        self._where = (queue, cpus, known_partitions)
        self._core_counts = core_counts
        self._cluster = self._enforcing(cluster)
        try:
            return self._decide(job, self._cluster)
        except Exception as exc:  # the decision path must fail open, whatever happened
            log.error("decision_error", job_id=job.job_id, error=printable(repr(exc))[:300])
            return release_outcome(job, reasons.INTERNAL_ERROR, f"internal error: {exc!r}"[:300])

    def _enforcing(
        self, cluster: Callable[[JobRecord], ClusterState]
    ) -> Callable[[JobRecord], ClusterState]:
        """`cluster` with ``limits_enforced`` set while Slurm enforces (or may enforce) limits,
        for every partition the job is decided on."""
        if not self.limits_enforced:
            return cluster
        return lambda job: replace(cluster(job), limits_enforced=True)

    def _tags(self, job: JobRecord) -> str | None:
        """A fail-open reason when the job's tags forbid deciding it, else None."""
        prior = marks.prior_text(job.admin_comment)
        for text, where in ((prior, "admin_comment"), (job.comment, "comment")):
            tag = shape.tag_in(text, where)
            if tag is not None and tag.resize is False:
                return reasons.OPTED_OUT
        return None

    def app_key(self, job: JobRecord) -> AppKey:
        """``rule.key_for`` of the job without job_submit.lua's held marker in its admin
        comment (a plain word, never a tag anyway); AppKeyError as key_for.

        The key depends only on the rule and on what it reads of the job (its admin comment
        and comment, for tags, and its template's fields), so it is remembered by those
        (`KEY_MEMO_SIZE` of them, per rule; an error is not remembered): the jobs of a burst
        share a handful; the copy of the job, and the parses of its tags here and in
        `_tags` and shape.job_scaling (`shape.tag_in`), were about a sixth of `decide`'s time
        per job (cProfile, the release benchmark's jobs).
        """
        rule, memo = self._keys
        if rule is not self.rule or len(memo) >= KEY_MEMO_SIZE:
            rule, memo = self._keys = (self.rule, {})
        prior = marks.prior_text(job.admin_comment)
        reads = (prior, job.comment, job.user, *(getattr(job, name) for name in rule.fields))
        key = memo.get(reads)
        if key is None:
            key = memo[reads] = rule.key_for(replace(job, admin_comment=prior))
        return key

    def _decide(self, job: JobRecord, cluster: Callable[[JobRecord], ClusterState]) -> Outcome:
        low, high = _range(job)
        if low is None or high is None or not 1 <= low < high:
            shown = f"{low}-{high}" if low is not None and high is not None else "unknown"
            return release_outcome(
                job, reasons.NOT_MOLDABLE, f"the job's node range ({shown}) is not a range"
            )
        try:
            opted_out = self._tags(job)
        except AppKeyError as exc:
            return release_outcome(job, reasons.BAD_TAG, f"bad tag: {exc}")
        if opted_out:
            return release_outcome(job, opted_out, "the job's tag says resize=no")
        if self.resize_refused:
            return release_outcome(
                job,
                reasons.LIMITS_ENFORCED,
                "Slurm enforces association/QOS limits that a resize by the daemon would lift",
            )
        app: AppKey | None = None
        missing = ""
        try:
            app = self.app_key(job)
        except AppKeyError as exc:
            missing = f"the job has no app key ({exc})"
        judged = self._judged(job)
        record: CurveRecord | None = None
        source = app
        if app is not None:
            try:
                source, record = self._record_for(app, job, judged.settings)
            except StoreError as exc:
                return release_outcome(
                    job, reasons.STORE_UNAVAILABLE, f"the curve store is unavailable: {exc}", app
                )
            if record is None:
                site = f" nor for the site's {app.app}" if app.owner is not None else ""
                missing = f"no curve is stored for app {app}{site}"
            elif record.curve is None:
                why = record.note or record.error or "none fitted yet"
                missing = f"app {source} has no usable curve ({printable(why)[:120]})"
        # A job is judged by one of the partitions it lists: its state with its settings.
        where = judged.where
        seen = job if where == first_partition(job.partition) else replace(job, partition=where)
        state = cluster(seen)
        return self._apply_policy(job, low, high, app, source, record, missing, state, judged)

    def _record_for(
        self, app: AppKey, job: JobRecord, settings: policies.PolicySettings
    ) -> tuple[AppKey, CurveRecord | None]:
        """The key and curve record that decide the job: its user's own when that curve can
        size it, else the site's when that one can (plugin/appkey.py, whose runs), else the
        user's own when it has a record (which then says why not), else the site's (whose
        runs the shapes with a rule of their own read, curve or not). StoreError as
        `CurveSource.get`."""
        own = self.curves.get(app)
        if app.owner is None or _sizes(own, settings):
            return app, own
        site = self.curves.get(app.site)
        if _sizes(site, settings) or own is None:
            return app.site, site
        return app, own

    def _apply_policy(
        self,
        job: JobRecord,
        low: int,
        high: int,
        app: AppKey | None,
        source: AppKey | None,
        record: CurveRecord | None,
        missing: str,
        state: ClusterState,
        judged: Judged,
    ) -> Outcome:
        """Decide the job of `app` with the curve of `source` (`_record_for`)."""
        curve = record.curve if record is not None else None
        extra: dict[str, Any] = {
            "curve_version": record.version if record is not None else None,
            "curve_model": curve.model if curve is not None else None,
            "curve_app": source if source != app and record is not None else None,
            "cluster": state,
            "policy": self.policy.source,
            "budget": self.budget.to_dict(),
        }
        limit = job.time_limit_min if job.time_limit_min and job.time_limit_min > 0 else None
        try:
            request = policies.Request(
                low, high, limit, job.partition, job.account, job.user, job_id=str(job.job_id)
            )
            listed, where, settings = judged.listed, judged.where, judged.settings
            shaped = self._shaped(job, request, source, state, settings, extra)
            if shaped is not None:
                decision, partition = shaped
                return self._outcome(
                    job, low, high, app, None, decision, extra, settings, partition
                )
            seeds = shape.job_seeds(job)
            cap_for = self._cap_for(job, source, seeds) if seeds.master_worker else None
            options = self._partition_options(job, request, source, curve, missing, cap_for)
            if options is not None:
                decision, partition, chosen, decided_by = options
                extra["placement"] = chosen
                return self._outcome(
                    job,
                    low,
                    high,
                    app,
                    decided_by,
                    decision,
                    extra,
                    settings,
                    partition,
                    decided_by,
                )
            prior: Prior | None = None
            if len(listed) == 1 and source is not None and record is not None:
                curve, refused, prior = self._curve_on(source, listed[0], curve, job)
                missing = refused or missing
                extra["curve_model"] = curve.model if curve is not None else None
            second = self._second_size(request, source, curve, state, settings, cap_for)
            if second is not None:
                return self._outcome(
                    job,
                    low,
                    high,
                    app,
                    None,
                    second.decision,
                    extra,
                    settings,
                    bound_s=second.runtime_s,
                )
            decision = shape.sized(
                request,
                curve,
                state,
                settings,
                self.budget.value(),
                missing or "no curve",
                cap_for(where, curve) if cap_for is not None else None,
            )
            if prior is not None:
                decision = replace(decision, reason=f"{decision.reason}; {prior.note}")
        except StoreError as exc:
            return release_outcome(
                job, reasons.STORE_UNAVAILABLE, f"the curve store is unavailable: {exc}", app
            )
        except Exception as exc:  # a policy bug must not keep a job held
            return release_outcome(
                job, reasons.POLICY_ERROR, f"policy error: {exc!r}", app, **extra
            )
        if record is not None and record.method == BORROWED:
            decision = replace(decision, reason=f"{decision.reason}; {record.note}")
        if source is not None and source != app and record is not None:
            decision = replace(
                decision,
                reason=f"{decision.reason}; the curve is the site's {source} (the user's own "
                "cannot size the job yet)",
            )
        return self._outcome(
            job, low, high, app, curve, decision, extra, judged.settings, decided_by=curve
        )

    def _count(
        self,
        decision: Decision,
        curve: Any,
        bound_s: float | None,
        asked: tuple[int, int] | None,
    ) -> None:
        """Count a decision in the exploration budget (policies.ExplorationBudget): every
        decided job, left as submitted included; the predicted node-hours of a counted one
        (`Decision.counted`) from its curve read for the user's limit as the policy read it
        (`asked`: minutes, the size it is written for; a covariate curve's `for_limit`, the
        runtime decide evaluated and the simulator counts), or from `bound_s` without one."""
        n = decision.nodes
        runtime = None
        if n is not None and decision.counted:
            runtime = bound_s
            if curve is not None:
                limit_s, written_for = (
                    (None, None) if asked is None else (60.0 * asked[0], asked[1])
                )
                runtime = float(curve.for_limit(limit_s, written_for).runtime(n))
        self.budget.count(n, runtime, decision.explored)

    def _second_size(
        self,
        request: policies.Request,
        source: AppKey | None,
        curve: Any,
        state: ClusterState,
        settings: policies.PolicySettings,
        cap_for: shape.CapFor | None,
    ) -> SecondSize | None:
        """The run at a second size when every stored run of the app ran at one size
        (policies/second_size.py); None otherwise, and for a master-worker job (its cap
        reads a curve). Only an app whose stored record has no curve has its runs read
        (`CurveSource.one_size_runs`): one more read, on the latency path, for those only."""
        if curve is not None or source is None or cap_for is not None:
            return None
        runs = self.curves.one_size_runs(source)
        return second_size(request, runs, state, settings, self.budget.value()) if runs else None

    def _shaped(
        self,
        job: JobRecord,
        request: policies.Request,
        app: AppKey | None,
        state: ClusterState,
        settings: policies.PolicySettings,
        extra: dict[str, Any],
    ) -> tuple[Decision, str | None] | None:
        """The weak-scaling or placement decision when the job has that shape, else None."""
        scaling = shape.job_scaling(job)
        tasks = shape.fixed_tasks(job)
        if scaling != "weak" and tasks is None:
            return None
        observations = self.curves.observations(app) if app is not None else []
        theta = settings.efficiency_threshold
        if scaling == "weak":
            extra["scaling"] = "weak"
            # A weak-scaling series grows its problem with n, and a numeric size= splits it
            # over sibling app keys (name@size): the fit takes the app's runs and theirs.
            if app is not None:
                observations = [*observations, *self.curves.sibling_runs(app)]
            why = "" if app is not None else "the job has no app key"
            return shape.weak_decision(request, observations, state, theta, why), None
        if tasks is None:  # weak returned above; this only narrows the type
            return None
        extra["tasks"] = tasks
        _, cpus, _ = self._where
        per_node = cpus(first_partition(job.partition)) if cpus is not None else None
        placed = shape.placement_decision(tasks, request, state, observations, theta, per_node)
        extra["tasks_per_node"] = placed.tasks_per_node
        extra["placement"] = placed.detail
        return placed.decision, None

    def _judged(self, job: JobRecord) -> Judged:
        """The job's `Judged`: one read of the partitions that admit it (`_admitted`, which
        looks up the user's groups for a job listing several)."""
        listed = self._admitted(listed_partitions(job.partition))
        where = listed[0] if len(listed) == 1 else first_partition(job.partition)
        return Judged(listed, where, policies.effective(self.policy, where, job.account))

    def _admitted(self, listed: list[str]) -> list[str]:
        """The listed partitions that admit the job when that leaves one of several (the
        job then runs there, and its node type's curve decides it), else `listed`."""
        _, _, known = self._where
        if known is None or len(listed) < 2:
            return listed
        names = set(known())
        admitted = [name for name in listed if name in names]
        return admitted if len(admitted) == 1 else listed

    def _partition_options(
        self,
        job: JobRecord,
        request: policies.Request,
        app: AppKey | None,
        generic: Any,
        missing: str,
        cap_for: shape.CapFor | None = None,
    ) -> tuple[Decision, str | None, dict[str, Any], Any] | None:
        """Each listed partition's own decision and the one with the earliest predicted
        completion (shape.partition_decision), with the curve it was decided on; None when
        the job lists one partition or the queues cannot be read."""
        queue, _, known = self._where
        listed = listed_partitions(job.partition)
        if queue is None or known is None or len(listed) < 2:
            return None  # shape.partition_decision chooses among two or more
        names = set(known())
        listed = [name for name in listed if name in names]

        refused: dict[str, str] = {}
        curves: dict[str, Any] = {}
        priors: dict[str, Prior] = {}

        def curve_for(name: str) -> Any:
            if app is None:
                curves[name] = generic
                return generic
            curves[name], refused[name], prior = self._curve_on(app, name, generic, job)
            if prior is not None:
                priors[name] = prior
            return curves[name]

        def wait_for(name: str, n: int) -> float:
            q = queue(name)
            return wait_estimate(q, n) if q is not None else math.inf

        pick = shape.partition_decision(
            request,
            listed,
            curve_for,
            lambda name: self._cluster(replace(job, partition=name)),
            lambda name: policies.effective(self.policy, name, job.account),
            wait_for,
            self.budget.value(),
            lambda name: refused.get(name) or missing or "no curve",
            cap_for,
        )
        if pick is None or pick.decision is None:
            return None
        decision = pick.decision
        chosen = priors.get(pick.partition or "")
        if chosen is not None:
            decision = replace(decision, reason=f"{decision.reason}; {chosen.note}")
        return decision, pick.partition, pick.detail, curves.get(pick.partition or "")

    def _curve_on(
        self, app: AppKey, name: str, generic: Any, job: JobRecord
    ) -> tuple[Any, str, Prior | None]:
        """The app's curve on partition `name`'s node type, why there is none, and the
        roofline prior it is when it is one.

        The curve of the runs on that type when the learner fitted one (the app ran on
        several types); else, on a type the adaptalloc TOML describes, the roofline prior
        from its curve on another described type (`_prior`); else the curve of all its runs,
        unless those runs are on nodes of a core count other than `name`'s
        (policies/fallback.py: the job is then decided as an app without a curve).
        StoreError as CurveSource.get.
        """
        typed = self.curves.typed(app, name)
        own = typed.curve if typed is not None else None
        why_no_prior = ""
        if own is None:
            found = self._prior(app, name, generic, job)
            if isinstance(found, Prior):
                return found.curve, "", found
            why_no_prior = found or ""
        _, cpus, _ = self._where
        target = cpus(name) if cpus is not None else None

        def run_cores() -> list[int | None]:
            counts = self._core_counts() if self._core_counts is not None else None
            if counts is not None and counts <= {target}:
                return []  # every node has this core count: nothing to refuse, nothing read
            types = self.curves.run_node_types(app)
            return [None if t is None or cpus is None else cpus(t) for t in types]

        curve, refusal = curve_on_type(own, generic, target, run_cores)
        if refusal:
            because = f"{refusal}; {why_no_prior}" if why_no_prior else refusal
            return None, f"app {app} has no curve on {printable(name)[:64]} ({because})", None
        return curve, "", None

    def _node_type(self, name: str) -> NodeType | None:
        """Partition `name` as the roofline sees it (its ``[node_types.NAME]`` and Slurm's
        CPUs per node), None when the adaptalloc TOML does not describe it."""
        config = self.node_types.get(name)
        if config is None:
            return None
        _, cpus, _ = self._where
        cores = cpus(name) if cpus is not None else None
        return NodeType(name, config.peak_gflops, config.bandwidth_gbs, cores)

    def _view(self, app: AppKey) -> shape.TypeView:
        """The app's curves per node type from the store (StoreError as CurveSource.get)."""

        def typed(kind: str) -> Any:
            record = self.curves.typed(app, kind)
            return record.curve if record is not None else None

        return shape.TypeView(
            typed,
            lambda: self.curves.typed_types(app),
            lambda: self.curves.run_node_types(app),
            self._node_type,
        )

    def _prior(self, app: AppKey, name: str, generic: Any, job: JobRecord) -> Prior | str | None:
        """shape.roofline_prior on `name` with the job's tagged intensity."""
        if not self.node_types:
            return None  # nothing described: nothing read
        settings = policies.effective(self.policy, name, job.account)
        intensity = shape.job_seeds(job).intensity
        return shape.roofline_prior(self._view(app), name, generic, settings, intensity)

    def _cap_for(self, job: JobRecord, app: AppKey | None, seeds: shape.Seeds) -> shape.CapFor:
        """The master-worker cap per partition (shape.worker_cap): the link bandwidth of the
        partition's ``[node_types.NAME]``, the job's tasks per node (Slurm's default: one),
        and for the tag's Tc on a partition other than the first listed, the two types'
        per-core roofline speed ratio (shape.tc_ratio)."""
        reference = first_partition(job.partition)
        per_node = job.ntasks_per_node or 1

        def cap_for(name: str, curve: Any) -> WorkerCap | str | None:
            config = self.node_types.get(name)
            link = config.link_gbs if config is not None else 0.0
            settings = policies.effective(self.policy, name, job.account)
            ratio = None
            if app is not None and seeds.figures is not None and name != reference:
                record = self.curves.get(app)
                generic = record.curve if record is not None else None
                ratio = shape.tc_ratio(self._view(app), generic, settings, seeds, reference, name)
            return shape.worker_cap(seeds, name, curve, settings, link, per_node, ratio, reference)

        return cap_for

    def _users_limit(
        self,
        job: JobRecord,
        low: int,
        high: int,
        settings: policies.PolicySettings,
        partition: str | None,
    ) -> tuple[int, int] | None:
        """(the user's limit in minutes, the size it is read as written for) for the record
        the learner reads back (plugin/formats/daemon_record.py); None without a limit. The
        size is read by the settings of the partition the job was decided for (`partition`
        when the decision placed it on one of those it lists, else the judged partition's
        `settings`), as decide read it."""
        if job.time_limit_min is None or job.time_limit_min < 1:
            return None
        if partition:
            settings = policies.effective(self.policy, partition, job.account)
        return job.time_limit_min, low if settings.time_limit_reference == "min" else high

    def _outcome(
        self,
        job: JobRecord,
        low: int,
        high: int,
        app: AppKey | None,
        curve: Any,
        decision: Decision,
        extra: dict[str, Any],
        settings: policies.PolicySettings,
        partition: str | None = None,
        decided_by: Any = None,
        bound_s: float | None = None,
    ) -> Outcome:
        """The outcome of `decision` under the judged partition's `settings`; `curve`: the
        curve whose runtime counts in the
        exploration budget (`bound_s` without one: a second size's runtime bound),
        `decided_by`: the curve the decision was made on (its document goes into the record
        when a rule of CURVE_RULES sized the job)."""
        prior = marks.prior_text(job.admin_comment)
        asked = self._users_limit(job, low, high, settings, partition)
        common = {
            "rule": decision.rule,
            "reason": decision.reason,
            "app": app,
            "time_limit_reason": decision.time_limit_reason,
            **extra,
        }
        if decision.nodes is None:
            self._count(decision, curve, bound_s, asked)
            kept = marks.kept_record(low, high, decision.rule, asked)
            comment = marks.admin_comment(kept, prior, app)
            return Outcome(job=job, action=KEEP, admin_comment=comment, **common)
        n = decision.nodes
        # A policy that releases with a range sets max_nodes: Slurm picks in [n, max_nodes] at
        # start time.
        top = n if decision.max_nodes is None else decision.max_nodes
        if not low <= n <= top <= high:  # never outside the user's range, whatever the policy
            chosen = f"{n}" if top == n else f"{n}-{top}"
            return release_outcome(
                job,
                reasons.OUT_OF_RANGE,
                f"the policy chose {chosen} nodes, outside the job's range {low}-{high}",
                app,
                **extra,
            )
        if partition is not None and partition not in listed_partitions(job.partition):
            return release_outcome(
                job,
                reasons.OUT_OF_RANGE,
                f"the policy chose partition {printable(partition)[:64]}, not one the job lists",
                app,
                **extra,
            )
        moved = partition if partition is not None and partition != job.partition else None
        limit = decision.time_limit_min
        if limit is not None:
            where = job if moved is None else replace(job, partition=moved)
            maximum = self._cluster(where).max_time_min
            if app is not None:
                safety = self.curves.safety(app)
                guarded = with_safety(limit, job.time_limit_min, safety, maximum)
                if guarded != limit:
                    common["time_limit_reason"] = (
                        f"{decision.time_limit_reason} Then x {safety:.3g}, this app's safety "
                        f"after the kill guard raised its limits: {limit} -> {guarded} min."
                    ).strip()
                    limit = guarded
            if maximum is not None and limit > maximum:  # every cap comes last
                common["time_limit_reason"] = (
                    f"{limit} min would exceed the job's maximum of {maximum} min (partition "
                    "MaxTime, QOS or association MaxWall), so the limit is left as written"
                )
                limit = None
            common["max_time_min"] = maximum
        resize = Resize(job.job_id, n, top, limit, partition=moved)
        if decided_by is not None and decision.rule in CURVE_RULES:
            common["curve_doc"] = self.curves.document(decided_by)
        self._count(decision, curve, bound_s, asked)
        sized = marks.sized_record(n, low, high, decision.rule, asked)
        comment = marks.admin_comment(sized, prior, app)
        return Outcome(job=job, action=RESIZE, admin_comment=comment, resize=resize, **common)
