"""The daemon's stop signals wait for its handlers (plugin/cli/__init__.py blocks them before
the commands load, plugin/daemon/signals.py unblocks them once the handlers are in place).
The real process is tested in tests/integration/test_daemon_recovery.py."""

from __future__ import annotations

import signal
import threading

import pytest

from plugin.cli import DAEMON_SIGNALS, _subcommand
from plugin.daemon import signals


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
