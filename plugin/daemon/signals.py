"""Signals, the rq way: the first SIGTERM (or SIGINT) asks for a graceful stop and re-arms the
handler so that a second one forces it; SIGHUP asks for a configuration reload.

Handlers only set flags and wake the loop; the forced stop raises `ForcedStop`, a
BaseException so that no ``except Exception`` on the decision path swallows it. Once the
daemon tears down (`quiet`), further signals are ignored, so teardown always completes (and
always removes the heartbeat).

The entry point (plugin/cli/__init__.py) blocks these signals before it loads the commands,
so that one sent while the daemon starts waits for the handlers; `install` unblocks them once
the handlers are in place (a signal that waited is delivered then), and `unblock` does it for
the daemon's modes that install none (--once, --release-held).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import structlog

__all__ = ["HANDLED", "ForcedStop", "Signals", "unblock"]

log = structlog.get_logger("adaptalloc.daemon")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
HANDLED = (*STOP_SIGNALS, signal.SIGHUP)


def unblock() -> None:
    """Unblock the handled signals (blocked by the entry point); a waiting one arrives now."""
    if threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)


class ForcedStop(BaseException):
    """A second stop signal: stop now, jobs in hand or not."""


class Signals:
    """The daemon's signal state (see the module docstring)."""

    def __init__(self, wake: threading.Event) -> None:
        self.wake = wake
        self.stop_requested = False
        self.reload_requested = False
        self.quiet = False
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Install the handlers (main thread only; elsewhere, e.g. in tests, a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            return
        handlers: dict[int, Callable[[int, FrameType | None], None]] = {
            signal.SIGTERM: self._on_stop,
            signal.SIGINT: self._on_stop,
            signal.SIGHUP: self._on_reload,
        }
        for sig, handler in handlers.items():
            self._previous[sig] = signal.signal(sig, handler)
        unblock()

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}

    def request_stop(self) -> None:
        """Ask for a graceful stop (what the first SIGTERM does)."""
        self.stop_requested = True
        self.wake.set()

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.quiet:
            return
        if self.stop_requested:
            log.warning("forced_stop", signal=name)
            raise ForcedStop(name)
        log.info("stop_requested", signal=name, note="finishing the jobs in hand; again to force")
        self.request_stop()

    def _on_reload(self, signum: int, frame: FrameType | None) -> None:
        self.reload_requested = True
        self.wake.set()
