"""The daemon's stop signals wait for its handlers (plugin/cli/__init__.py blocks them before
the commands load, plugin/daemon/signals.py unblocks them once the handlers are in place), and
a handler takes no lock its own thread may hold. The real process is tested in
tests/integration/test_daemon_recovery.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from plugin.cli import DAEMON_SIGNALS, _subcommand
from plugin.daemon import signals

from .conftest import REPO_ROOT


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["daemon", "--no-learn"], "daemon"),
        (["-q", "--log-format", "json", "daemon"], "daemon"),
        (["--env-file", "daemon", "report", "daemon"], "report"),  # a file named daemon
        (["--log-format=json", "--debug", "-vv", "daemon"], "daemon"),
        (["decide", "--app", "daemon"], "decide"),
        (["--version"], None),
        ([], None),
    ],
)
def test_the_subcommand_word_skips_the_root_options(argv: list[str], word: str | None) -> None:
    assert _subcommand(argv) == word


def test_the_entry_point_blocks_what_the_daemon_handles() -> None:
    assert set(DAEMON_SIGNALS) == set(signals.HANDLED)


def test_a_signal_sent_while_blocked_reaches_the_handler_once_installed() -> None:
    assert threading.current_thread() is threading.main_thread()
    state = signals.Signals(threading.Event())
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, DAEMON_SIGNALS)
    try:
        # To this thread (pytest may run others, which do not block it); the daemon blocks
        # before any thread starts, so its threads inherit the mask.
        signal.pthread_kill(threading.get_ident(), signal.SIGHUP)  # pending, no handler yet
        assert signal.SIGHUP in signal.sigpending()
        assert not state.reload_requested
        state.install()
        assert signal.SIGHUP not in signal.sigpending()
        assert signal.SIGHUP not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        assert state.reload_requested
    finally:
        state.restore()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


#: In a fresh interpreter (a handler that hangs must not hang pytest): the main thread holds
#: the wake event's lock, as it does inside ``Event.wait`` and ``Event.clear`` while the
#: daemon idles, when SIGTERM arrives. ``_cond`` is the lock both take (CPython's Event).
HOLDING_THE_WAKE_LOCK = """
import signal, threading
from plugin.daemon.signals import Signals
wake = threading.Event()
state = Signals(wake)
state.install()
with wake._cond:
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
    for _ in range(1000):  # the handler runs here, in this thread
        pass
    assert state.stop_requested, "the handler did not run while the lock was held"
assert wake.wait(10), "the loop was not woken"
state.restore()
"""


def test_a_stop_signal_while_the_loop_holds_the_wake_lock_still_stops_it() -> None:
    """The handler ran inside the event's ``with`` and called ``wake.set()``: it waited for
    the lock its own thread held, and the daemon never stopped (a SIGTERM 50 ms after a
    heartbeat, on the testbed). Now the relay thread wakes the loop and logs the request."""
    proc = subprocess.run(  # noqa: S603 - our interpreter and a fixed program, no shell
        [sys.executable, "-c", HOLDING_THE_WAKE_LOCK],
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "stop_requested" in proc.stdout
