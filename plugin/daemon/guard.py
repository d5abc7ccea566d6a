"""The kill guard: adaptalloc never kills a job earlier than the user's own limit would have.

When the daemon sizes a job it may shorten the time limit (the policy scales the user's
limit with the predicted runtime). A curve can be wrong, so the daemon watches every job it
released with a limit shorter than the user's:

* a watched job still running ``RAISE_MARGIN_S`` before its (shortened) limit gets the
  user's own limit back (``scontrol update JobId=X TimeLimit=<user's>``, as the daemon's
  operator user). slurmctld enforces limits in a background pass every 30 s and never before
  the limit, so a margin of one pass plus two guard intervals and a command timeout of slack
  raises it in time;
* never past Slurm's limits: the raise goes no higher than the job's maximum when it was
  decided (the tightest of partition MaxTime, QOS and association MaxWall, kept in the
  watch), and only while Slurm enforces no association or QOS limits (`may_raise`, set by
  the daemon from AccountingStorageEnforce). Only an operator may raise a running job's
  limit (Slurm 22.05, job_mgr.c ``_update_job``; a coordinator such as the sizing user may
  only lower it), and an operator's raise marks the limit as set by an administrator, which
  the wall-time and TRES-minute checks of enforced limits skip. Where limits are enforced
  the decider therefore shortens no limit (policies/time_limit.py), and a watch left from
  before is not raised: the job runs to the limit Slurm started it with;
* each raise is one ``limit_raised`` log event, an entry in the Redis stream
  ``adaptalloc:v2:{global}:guard:raises``, the ``adaptalloc_guard_raises_total`` counter, and grows
  the app's time-limit safety: ``safety <- min(MAX_SAFETY, safety * SAFETY_GROWTH)``. The
  decider multiplies the limits it shortens for that app by the safety, never above the
  user's limit (plugin/daemon/decider.py, `with_safety`): an app whose runs outlive their
  predicted limits gets longer ones;
* a watched job that Slurm shows as TIMEOUT with a limit still below the user's was killed
  at a limit adaptalloc set: counted (``killed``, ``adaptalloc_guard_kills_total``); the
  promise is that this stays 0.

Watches live in memory and in the Redis hash ``adaptalloc:v2:{global}:guard:watch`` (a restarted
daemon takes them up again). A job leaves the watch once raised, finished or gone. The
guard reads the watched jobs (`SlurmReader.jobs_of`: one ``slurm_load_jobs`` with the
libslurm binding, else ``squeue --json``) every ``GUARD_INTERVAL_S`` while it watches
anything, and never raises a limit above the user's.

``squeue --json`` serializes every job slurmctld remembers (and the daemon parses it all):
1-14 s with a few thousand jobs on the 2-core testbed, a core of squeue and the daemon's
GIL meanwhile. So the guard reads through libslurm where it can, and `GuardThread` ticks it
in its own thread, off the decision path (on the loop, each tick held every held job back
for the read's time, every GUARD_INTERVAL_S: tests/benchmarks/test_release_latency.py).
Each tick that reads logs ``guard_tick`` with the read's time.

The constants are engineering choices, not fitted: the margin comes from slurmctld's 30 s
enforcement pass; SAFETY_GROWTH and MAX_SAFETY are an assumption (a 25% longer limit per
raise, at most 4x) that no benchmark has scored yet.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import structlog

from plugin.appkey import AppKey, AppKeyError
from plugin.daemon.decider import RESIZE, Outcome
from plugin.daemon.periodic import PeriodicThread
from plugin.errors import printable
from plugin.metrics import Metrics
from plugin.slurm import JobRecord, SlurmClient, SlurmError
from plugin.store.connection import StoreError
from plugin.store.curves import CurveStore

__all__ = [
    "GUARD_INTERVAL_S",
    "MAX_SAFETY",
    "RAISE_MARGIN_S",
    "SAFETY_GROWTH",
    "GuardThread",
    "KillGuard",
    "Watch",
    "due",
]

log = structlog.get_logger("adaptalloc.daemon")

#: How often the guard reads the queue while it watches jobs, in seconds.
GUARD_INTERVAL_S = 5.0
#: Raise this long before the shortened limit: slurmctld's 30 s pass + 2 guard intervals + 5 s.
RAISE_MARGIN_S = 30.0 + 2 * GUARD_INTERVAL_S + 5.0
#: The app's limit safety grows by this factor per raise, up to MAX_SAFETY (an assumption).
SAFETY_GROWTH = 1.25
MAX_SAFETY = 4.0


@dataclass(frozen=True)
class Watch:
    """A job the daemon released with a shortened limit (version 2 of the stored JSON).

    max_limit_min: the job's maximum when it was decided (partition MaxTime, QOS and
    association MaxWall; None: none known). Version 1, written before the maximum was kept,
    reads back with None.
    """

    job_id: int
    submit_time: int
    app: str | None
    user_limit_min: int
    set_limit_min: int
    max_limit_min: int | None = None
    version: int = 2

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Watch:
        """The watch `doc` describes; ValueError when it is not a version 1 or 2 watch."""
        try:
            version = int(doc.get("version", 0))
            if version not in (1, 2):
                raise ValueError(f"watch version {doc.get('version')!r}")
            maximum = doc.get("max_limit_min") if version == 2 else None
            watch = cls(
                int(doc["job_id"]),
                int(doc["submit_time"]),
                None if doc.get("app") is None else str(doc["app"]),
                int(doc["user_limit_min"]),
                int(doc["set_limit_min"]),
                None if maximum is None else int(maximum),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a watch: {exc}") from exc
        if not 1 <= watch.set_limit_min < watch.user_limit_min:
            raise ValueError("a watch needs 1 <= set limit < user limit")
        if watch.max_limit_min is not None and watch.max_limit_min < 1:
            raise ValueError("a watch's maximum must be at least 1 minute")
        return watch

    @classmethod
    def of(cls, outcome: Outcome) -> Watch | None:
        """The watch for a released outcome, or None when it did not shorten the limit."""
        resize = outcome.resize
        user = outcome.job.time_limit_min
        if outcome.action != RESIZE or resize is None or resize.time_limit_min is None:
            return None
        if user is None or resize.time_limit_min >= user:
            return None
        app = None if outcome.app is None else str(outcome.app)
        return cls(
            outcome.job_id,
            outcome.job.submit_time or 0,
            app,
            user,
            resize.time_limit_min,
            outcome.max_time_min,
        )

    @property
    def raise_to(self) -> int:
        """The limit a raise gives back: the user's, never past the job's maximum."""
        if self.max_limit_min is None:
            return self.user_limit_min
        return min(self.user_limit_min, self.max_limit_min)


def due(watch: Watch, job: JobRecord, now: float, margin_s: float = RAISE_MARGIN_S) -> bool:
    """Raise now: the job runs with a limit below the user's, within `margin_s` of it.

    The limit is the one Slurm shows now (an admin may have changed it meanwhile).
    """
    if job.state != "RUNNING" or job.start_time is None or job.time_limit_min is None:
        return False
    if job.time_limit_min >= watch.raise_to:
        return False
    return now >= job.start_time + job.time_limit_min * 60.0 - margin_s


def _same_job(watch: Watch, job: JobRecord) -> bool:
    return not watch.submit_time or job.submit_time in (None, watch.submit_time)


class KillGuard:
    """Watches and raises (module docstring); `tick` is called from `GuardThread`, `watch`
    from the daemon's loop: the watches are shared under a lock held only for a dict
    operation, never across a Slurm or Redis call."""

    def __init__(
        self,
        slurm: SlurmClient,
        store: Callable[[], CurveStore],
        metrics: Metrics,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.slurm = slurm
        self._store_factory = store
        self._store: CurveStore | None = None
        self.metrics = metrics
        self.clock = clock
        self.watched: dict[int, Watch] = {}
        self.next_tick = 0.0
        self._lock = threading.Lock()
        #: Whether a raise is Slurm-checked like the user's own (module docstring): only
        #: while Slurm enforces no association or QOS limits. The daemon sets it from
        #: AccountingStorageEnforce; until then nothing is raised.
        self.may_raise = False

    def store(self) -> CurveStore:
        if self._store is None:
            self._store = self._store_factory()
        return self._store

    def _stored(self, op: str, call: Callable[[CurveStore], Any]) -> Any:
        """One best-effort store call: a failure is logged and counted, never raised."""
        try:
            return call(self.store())
        except StoreError as exc:
            self.metrics.store_failures.labels(op).inc()
            log.warning("guard_store_failed", op=op, error=printable(str(exc))[:200])
            return None

    def load(self) -> int:
        """Take up the watches a previous daemon stored; how many."""
        raw = self._stored("guard_load", lambda s: s.guard_watches()) or {}
        for text in raw.values():
            try:
                watch = Watch.from_dict(json.loads(text))
            except ValueError as exc:
                log.warning("guard_watch_unreadable", error=printable(str(exc))[:120])
                continue
            with self._lock:
                self.watched[watch.job_id] = watch
        self.metrics.guard_watched.set(len(self.watched))
        return len(self.watched)

    def watch(self, outcomes: Iterable[Outcome]) -> None:
        """Watch the released outcomes that shortened a limit."""
        for outcome in outcomes:
            watch = Watch.of(outcome)
            if watch is None:
                continue
            with self._lock:
                self.watched[watch.job_id] = watch
            self._save(watch)
        self.metrics.guard_watched.set(len(self.watched))

    def _save(self, watch: Watch) -> None:
        self._stored("guard_watch", lambda s: s.save_guard_watch(watch.job_id, watch.to_dict()))

    def _drop(self, job_id: int) -> None:
        with self._lock:
            self.watched.pop(job_id, None)
        self._stored("guard_watch", lambda s: s.drop_guard_watch(job_id))

    def tick(self, force: bool = False) -> int:
        """Every GUARD_INTERVAL_S (or when `force`d): read the queue, raise what is due,
        count kills, forget finished jobs. The number of limits raised."""
        now = self.clock()
        if not self.watched or (not force and now < self.next_tick):
            return 0
        self.next_tick = now + GUARD_INTERVAL_S
        with self._lock:
            watched = list(self.watched.items())
        started = time.perf_counter()
        try:
            jobs = {j.job_id: j for j in self.slurm.jobs_of([job_id for job_id, _ in watched])}
        except SlurmError as exc:
            log.warning("guard_read_failed", error=printable(str(exc))[:200])
            return 0
        read_ms = (time.perf_counter() - started) * 1000.0
        raised = 0
        for job_id, watch in watched:
            job = jobs.get(job_id)
            if job is None or not _same_job(watch, job):
                self._drop(job_id)
            elif job.state == "TIMEOUT":
                self._killed(watch, job)
            elif job.finished:
                self._drop(job_id)
            elif due(watch, job, now):
                raised += self._raise(watch, job, now)
        self.metrics.guard_watched.set(len(self.watched))
        log.info(
            "guard_tick",
            read_ms=round(read_ms, 1),
            jobs=len(jobs),
            watched=len(watched),
            raised=raised,
        )
        return raised

    def _app(self, watch: Watch) -> AppKey | None:
        try:
            return None if watch.app is None else AppKey.parse(watch.app)
        except AppKeyError:
            return None

    def _killed(self, watch: Watch, job: JobRecord) -> None:
        if job.time_limit_min is not None and job.time_limit_min < watch.user_limit_min:
            self.metrics.guard_kills.inc()
            log.error(
                "killed_at_our_limit",
                job_id=watch.job_id,
                app=watch.app,
                limit_min=job.time_limit_min,
                user_limit_min=watch.user_limit_min,
            )
            app = self._app(watch)
            if app is not None:
                self._stored("guard_count", lambda s: s.count_for_guard(app, "killed"))
        self._drop(watch.job_id)

    def _raise(self, watch: Watch, job: JobRecord, now: float) -> int:
        if not self.may_raise:
            log.warning(
                "limit_not_raised",
                job_id=watch.job_id,
                app=watch.app,
                limit_min=job.time_limit_min,
                user_limit_min=watch.user_limit_min,
                why="Slurm enforces association/QOS limits, which an operator's raise would lift",
            )
            self._drop(watch.job_id)
            return 0
        target = watch.raise_to
        try:
            self.slurm.set_time_limit(watch.job_id, target)
        except (SlurmError, ValueError) as exc:  # tried again at the next tick
            log.error("guard_raise_failed", job_id=watch.job_id, error=printable(str(exc))[:200])
            return 0
        elapsed = now - job.start_time if job.start_time is not None else None
        doc = {
            "job_id": watch.job_id,
            "app": watch.app,
            "from_min": job.time_limit_min,
            "to_min": target,
            "user_limit_min": watch.user_limit_min,
            "set_limit_min": watch.set_limit_min,
            "elapsed_s": None if elapsed is None else round(elapsed, 1),
            "nodes": job.nodes_alloc or None,
            "at": round(now, 3),
        }
        app = self._app(watch)
        safety = self._stored(
            "guard_raise",
            lambda s: s.record_limit_raise(app, doc, SAFETY_GROWTH, MAX_SAFETY),
        )
        self.metrics.guard_raises.inc()
        log.warning("limit_raised", **doc, safety=safety)
        self._drop(watch.job_id)
        return 1


class GuardThread(PeriodicThread):
    """Ticks `guard` in a thread of its own (module docstring), every `poll_s` while
    `may_write()` (the daemon decides: not a standby, the lease still held); the guard's
    own GUARD_INTERVAL_S spaces the reads (plugin/daemon/periodic.py)."""

    def __init__(
        self, guard: KillGuard, may_write: Callable[[], bool], poll_s: float = 1.0
    ) -> None:
        super().__init__("adaptalloc-guard", guard.tick, may_write, poll_s, "guard_tick_failed")
        self.guard = guard
