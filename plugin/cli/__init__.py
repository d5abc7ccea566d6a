"""The ``adaptalloc`` command line: one module per command group.

root.py holds the click group, the entry point and the list of subcommands; common.py the
options and helpers every command shares (opening the store among them); render.py the text
and JSON output. Command modules import only common, render and the rooms below them.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["main"]

#: The signals the daemon handles (plugin/daemon/signals.py installs their handlers, then
#: unblocks them).
DAEMON_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: The root group's options that take a value (root.py).
_VALUED = ("--log-format", "--env-file")


def _subcommand(argv: Sequence[str]) -> str | None:
    """The subcommand word of ``adaptalloc [ROOT OPTIONS] WORD ...``, None when there is none."""
    words = iter(argv)
    for word in words:
        if word in _VALUED:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main() -> NoReturn:
    """The console script ``adaptalloc`` (pyproject: ``plugin.cli:main``): root.py's main.

    Imported on call, so that importing a module of this package does not load every command.
    For ``daemon``, the signals it handles are blocked first: loading the commands takes
    seconds on a busy host, and a SIGTERM then (systemd stopping a daemon it just started)
    killed it before its handlers were installed, with no teardown (exit -15). Blocked, the
    signal waits for the handlers (plugin/daemon/signals.py unblocks it), and stops the daemon
    gracefully.
    """
    if _subcommand(sys.argv[1:]) == "daemon":
        signal.pthread_sigmask(signal.SIG_BLOCK, DAEMON_SIGNALS)
    from plugin.cli.root import main as run_and_exit  # noqa: PLC0415

    run_and_exit()
