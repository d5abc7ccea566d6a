"""A daemon-side thread that does one piece of work every few moments, off the loop.

The kill guard (guard.py) and the cluster prefetch (cluster.py) each run in one: the work
is done every `poll_s` while `wanted()` says so (the daemon decides: not a standby, the lease
held, jobs lately), and an exception is logged under the thread's own event name and tried
again next round, so the thread never dies of a bug.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Self

import structlog

from plugin.errors import printable

__all__ = ["PeriodicThread"]

log = structlog.get_logger("adaptalloc.daemon")


class PeriodicThread:
    """Calls `work()` every `poll_s` in a daemon thread named `name` while `wanted()`;
    an exception is logged as `failed_event` and the next round tries again."""

    def __init__(
        self,
        name: str,
        work: Callable[[], object],
        wanted: Callable[[], bool],
        poll_s: float,
        failed_event: str,
    ) -> None:
        self.work = work
        self.wanted = wanted
        self.poll_s = poll_s
        self.failed_event = failed_event
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Self:
        self.thread.start()
        return self

    def _run(self) -> None:
        while not self.stopping.wait(self.poll_s):
            try:
                if self.wanted():
                    self.work()
            except Exception as exc:  # a bug must not end the thread; logged, tried again
                log.error(self.failed_event, error=printable(str(exc))[:200])

    def stop(self, timeout_s: float = 5.0) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout_s)
