"""The learner, off the decision path: a thread with its own Redis connection and Slurm reader.

Every ``learn_interval_s`` it polls Slurm for finished jobs, refits the apps whose runs
changed (debounced: ``[learner] refit_debounce_s``) and, every ``age_out_interval_s``, ages
old observations out (plugin/learning/learner.py). A refit takes 0.1-0.3 s of CPU per app; the
decision loop keeps running meanwhile (the GIL is handed over every few milliseconds).
Any error is logged and counted, the connection rebuilt at the next round: the learner
never stops the daemon.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from plugin.errors import printable
from plugin.learning.learner import Learner
from plugin.metrics import Metrics

__all__ = ["LearnerThread"]

log = structlog.get_logger("adaptalloc.daemon")


class LearnerThread(threading.Thread):
    """Runs `Learner` steps on a timer until `stop` is set."""

    def __init__(
        self,
        make_learner: Callable[[], Learner],
        interval_s: float,
        age_out_s: float,
        metrics: Metrics,
        stop: threading.Event,
    ) -> None:
        super().__init__(name="adaptalloc-learner", daemon=True)
        self.make_learner = make_learner
        self.interval_s = interval_s
        self.age_out_s = age_out_s
        self.metrics = metrics
        self.stop_event = stop
        self._learner: Learner | None = None
        self._next_age_out = time.monotonic() + age_out_s

    def run(self) -> None:
        while not self.stop_event.wait(self.interval_s):
            self.step()

    def step(self) -> None:
        """One round: poll, refit, and age out when due. Never raises."""
        try:
            learner = self._learner or self.make_learner()
            self._learner = learner
            learner.poll_once()
            self.metrics.learner.labels("poll").inc()
            refits = learner.refit_dirty()
            self.metrics.learner.labels("refit").inc(len(refits))
            if time.monotonic() >= self._next_age_out:
                learner.age_out()
                self.metrics.learner.labels("age_out").inc()
                self._next_age_out = time.monotonic() + self.age_out_s
        except Exception as exc:  # the learner must never take the daemon down
            self._learner = None
            self.metrics.learner.labels("error").inc()
            log.warning("learner_error", error=printable(repr(exc))[:300])
