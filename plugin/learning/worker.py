"""The learner, off the decision path: a thread that runs each round in a bounded worker.

Every ``learn_interval_s`` the thread has its worker process poll Slurm for finished jobs,
refit the apps whose runs changed (debounced: ``[learner] refit_debounce_s``) and, every
``age_out_interval_s``, age old observations out (plugin/learning/learner.py). The worker is a
separate process (one, kept between rounds) with its own Redis connection and Slurm reader,
so a learner that misbehaves cannot stall or kill the daemon's decisions:

* memory: the worker's address space is limited to `WORKER_MEMORY_BYTES`; a refit that wants
  more fails there with MemoryError (logged, counted), never in the daemon (whose kernel OOM
  kill would take every decision with it);
* time: a round running longer than `round_timeout` (five learn intervals, at least
  `ROUND_MIN_TIMEOUT_S`) has its worker killed; the next round starts a fresh one;
* CPU: the worker has its own interpreter, so a refit holds no lock the decision loop needs.

Any error is logged and counted: the learner never stops the daemon. The learner's state
(watermark, dirty apps) lives in Redis, so a killed round loses nothing but its own work.

A round also brings back live accuracy for the daemon's metrics (`RoundResult`): the jobs it
scored, and, when it scored any (or is the worker's first), the rolling windows over the
stored scores (plugin/learning/accuracy.py), computed here, off the daemon's process.
"""

from __future__ import annotations

import logging
import multiprocessing
import resource
import threading
import time
from dataclasses import dataclass
from multiprocessing.pool import Pool

import structlog

from plugin.config import Config
from plugin.errors import printable
from plugin.learning import accuracy
from plugin.learning.learner import Learner
from plugin.log_setup import configure_logging
from plugin.metrics import Metrics
from plugin.slurm import slurm_reader
from plugin.store.connection import connect
from plugin.store.curves import CurveStore, Retention
from plugin.store.migrate import migrate_if_needed

__all__ = [
    "WORKER_MEMORY_BYTES",
    "LearnerThread",
    "RoundResult",
    "build_learner",
    "learner_round",
]

log = structlog.get_logger("adaptalloc.daemon")

#: The worker's address-space limit (RLIMIT_AS). numpy, scipy and the store take about
#: 0.5 GiB of address space; an ADEPT refit is bounded to 32 sizes (docs/science/adept.md)
#: and needs tens of MiB more, so 2 GiB leaves wide room for the learner and none for a
#: runaway.
WORKER_MEMORY_BYTES = 2 << 30
#: A round may take this many learn intervals before its worker is killed ...
ROUND_TIMEOUT_INTERVALS = 5.0
#: ... and never less than this (a cold worker imports numpy and scipy first).
ROUND_MIN_TIMEOUT_S = 60.0
#: How often a waiting thread looks at the stop flag.
STOP_POLL_S = 0.2


def build_learner(config: Config, redis_url: str | None) -> Learner:
    """The learner the daemon runs: its own Redis client (the [redis] settings: retries and
    the longer timeouts) and Slurm reader."""
    client = connect(redis_url, config.redis, check=False)
    migrate_if_needed(client)  # v1 -> v2 keys at start (plugin/store/migrate.py); resumable
    store = CurveStore(
        client,
        Retention(config.learner.max_observations, config.learner.max_age_s),
        decisions_maxlen=config.learner.decisions_maxlen,
    )
    return Learner(store, slurm_reader(config.slurm.backend, config.slurm.timeout_s), config)


_worker_learner: Learner | None = None
#: Whether this worker has exported the accuracy windows once (a new worker does at once).
_worker_exported = False


@dataclass(frozen=True)
class RoundResult:
    """What one round brings back to the daemon: its refits, the jobs it scored (absolute
    percentage error or None, where against the interval) and the accuracy windows when
    they changed (None: keep the ones exported)."""

    refits: int = 0
    scored: tuple[tuple[float | None, str], ...] = ()
    gauges: accuracy.Gauges | None = None


def _gauges(learner: Learner, scored: bool) -> accuracy.Gauges | None:
    """The accuracy windows over the stored scores, when this round scored a job or the
    worker exported none yet; a failure to read them is logged and exports nothing."""
    global _worker_exported  # noqa: PLW0603 - per worker process, as the learner
    if not scored and _worker_exported:
        return None
    now = time.time()
    try:
        scores = learner.scorer.store.read(since=now - accuracy.WINDOW_DAYS * 86400.0)
    except Exception as exc:  # the metrics wait for the next round; learning goes on
        log.warning("accuracy_unreadable", error=printable(repr(exc))[:300])
        return None
    _worker_exported = True
    return accuracy.gauges(scores, now)


def _worker_init(memory_bytes: int) -> None:
    """In the worker, once: the memory limit, and JSON logs to stderr as the daemon's."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    configure_logging(logging.INFO, capture_warnings=False)


def learner_round(config: Config, redis_url: str | None, age_out: bool) -> RoundResult:
    """In the worker: one poll (scoring the jobs it finds), the refits due, the age-out when
    `age_out`. Raises what the learner raises (the thread logs it)."""
    global _worker_learner  # noqa: PLW0603 - one learner per worker process, kept between rounds
    try:
        learner = _worker_learner or build_learner(config, redis_url)
        _worker_learner = learner
        poll = learner.poll_once()
        refits = learner.refit_dirty()
        if age_out:
            learner.age_out()
    except BaseException:
        _worker_learner = None  # rebuilt (a fresh connection) at the next round
        raise
    scored = tuple((s.error, s.where) for s in poll.scoring.scores)
    return RoundResult(len(refits), scored, _gauges(learner, bool(scored)))


class LearnerThread(threading.Thread):
    """Runs `learner_round` in the worker on a timer until `stop` is set."""

    def __init__(
        self,
        config: Config,
        redis_url: str | None,
        interval_s: float,
        age_out_s: float,
        metrics: Metrics,
        stop: threading.Event,
        memory_bytes: int = WORKER_MEMORY_BYTES,
    ) -> None:
        super().__init__(name="adaptalloc-learner", daemon=True)
        self.config = config
        self.redis_url = redis_url
        self.interval_s = interval_s
        self.age_out_s = age_out_s
        self.metrics = metrics
        self.stop_event = stop
        self.memory_bytes = memory_bytes
        self.round_timeout = max(ROUND_TIMEOUT_INTERVALS * interval_s, ROUND_MIN_TIMEOUT_S)
        self._pool: Pool | None = None
        self._next_age_out = time.monotonic() + age_out_s

    def run(self) -> None:
        try:
            while not self.stop_event.wait(self.interval_s):
                self.step()
        finally:
            self._close()

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool = None

    def step(self) -> None:
        """One round in the worker: poll, refit, and age out when due. Never raises."""
        age_out = time.monotonic() >= self._next_age_out
        try:
            if self._pool is None:
                # spawn: a fresh interpreter, not a fork of a process with running threads
                context = multiprocessing.get_context("spawn")
                self._pool = context.Pool(1, _worker_init, (self.memory_bytes,))
            pending = self._pool.apply_async(learner_round, (self.config, self.redis_url, age_out))
            deadline = time.monotonic() + self.round_timeout
            while not pending.ready():
                if self.stop_event.is_set():
                    return
                if time.monotonic() > deadline:
                    self._close()
                    self.metrics.learner.labels("error").inc()
                    log.warning(
                        "learner_timeout",
                        timeout_s=self.round_timeout,
                        note="the learner's round was killed; the next one starts afresh",
                    )
                    return
                pending.wait(STOP_POLL_S)
            result: RoundResult = pending.get()
        except Exception as exc:  # the learner must never take the daemon down
            self.metrics.learner.labels("error").inc()
            log.warning("learner_error", error=printable(repr(exc))[:300])
            return
        self.metrics.learner.labels("poll").inc()
        self.metrics.learner.labels("refit").inc(result.refits)
        self.metrics.record_scores(result.scored)
        if result.gauges is not None:
            self.metrics.set_accuracy(result.gauges.fleet, result.gauges.apps)
        if age_out:
            self.metrics.learner.labels("age_out").inc()
            self._next_age_out = time.monotonic() + self.age_out_s
