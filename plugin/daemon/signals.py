"""Signals, the rq way: the first SIGTERM (or SIGINT) asks for a graceful stop and re-arms the
handler so that a second one forces it; SIGHUP asks for a configuration reload.

Handlers only set flags and write the signal's number to a pipe; the forced stop raises
`ForcedStop`, a BaseException so that no ``except Exception`` on the decision path swallows
it. Once the daemon tears down (`quiet`), further signals are ignored, so teardown always
completes (and always removes the heartbeat).

A handler takes no lock. Python runs it in the main thread, between two bytecodes of whatever
that thread was doing, and the main thread spends its idle time inside the wake event's
``wait`` and ``clear`` (twenty times a second): a handler calling ``wake.set()`` there waits
for the event's lock that its own thread holds, for ever; logging (structlog's lock per file)
likewise. So a small relay thread reads the pipe, logs what was asked and wakes the loop.

The entry point (plugin/cli/__init__.py) blocks these signals before it loads the commands,
so that one sent while the daemon starts waits for the handlers; `install` unblocks them once
the handlers are in place (a signal that waited is delivered then), and `unblock` does it for
the daemon's modes that install none (--once, --release-held).
"""

from __future__ import annotations

import contextlib
import os
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


class _Relay:
    """A thread that, for each signal number written to its pipe, logs it and sets `wake`."""

    def __init__(self, wake: threading.Event) -> None:
        self.wake = wake
        self._read, self._write = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(self._write, False)  # a handler never blocks on a full pipe
        self._thread = threading.Thread(target=self._run, name="signal-relay", daemon=True)
        self._thread.start()

    def tell(self, signum: int) -> None:
        """From a handler: a system call, no lock. A full pipe already holds a wake-up."""
        with contextlib.suppress(OSError):
            os.write(self._write, bytes([signum]))

    def close(self) -> None:
        """After the handlers are restored (none writes any more): the reader sees the end."""
        os.close(self._write)
        self._thread.join(timeout=5.0)
        if not self._thread.is_alive():
            os.close(self._read)

    def _run(self) -> None:
        while received := os.read(self._read, 64):
            for signum in received:
                if signum in STOP_SIGNALS:
                    log.info(
                        "stop_requested",
                        signal=signal.Signals(signum).name,
                        note="finishing the jobs in hand; again to force",
                    )
                self.wake.set()


class Signals:
    """The daemon's signal state (see the module docstring)."""

    def __init__(self, wake: threading.Event) -> None:
        self.wake = wake
        self.stop_requested = False
        self.reload_requested = False
        self.quiet = False
        self._previous: dict[int, Any] = {}
        self._relay: _Relay | None = None

    def install(self) -> None:
        """Install the handlers (main thread only; elsewhere, e.g. in tests, a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            return
        self._relay = _Relay(self.wake)
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
        if self._relay is not None:
            self._relay.close()
            self._relay = None

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        if self.quiet:
            return
        if self.stop_requested:
            raise ForcedStop(signal.Signals(signum).name)  # logged where it is caught
        self.stop_requested = True
        self._tell(signum)

    def _on_reload(self, signum: int, frame: FrameType | None) -> None:
        self.reload_requested = True
        self._tell(signum)

    def _tell(self, signum: int) -> None:
        if self._relay is not None:
            self._relay.tell(signum)
