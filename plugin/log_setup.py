"""structlog configuration for the adaptalloc command line, done once in ``plugin.cli.root.main``.

Logs always go to standard error: standard output belongs to the command's result (with
``--format json``, exactly one JSON document). On a terminal the events are rendered by
structlog's console renderer for people; anywhere else (a pipe, a file, journald) they are
JSON lines, one event per line, for machines. ``--log-format json|console`` forces either.

Levels: a command's result is its output, so commands log WARNING and above by default;
``-v`` adds INFO (one event per command, with its timing), ``--debug`` DEBUG, ``--quiet``
keeps WARNING. The daemon is the exception: its log *is* its output (one ``decision`` event
per job, read by journald and the tests), so it logs INFO as JSON lines unless told otherwise.

Python warnings (numpy's RuntimeWarning on overflow, deprecations) are logged as
``python_warning`` events instead of being printed raw, so that standard error stays one
event per line for whatever collects it.

Under systemd (standard error connected to the journal: ``$JOURNAL_STREAM`` names its device
and inode, systemd.exec(5)) every line starts with its syslog priority, ``<4>`` for a
warning, ``<3>`` for an error (sd-daemon(3)'s SD_WARNING, SD_ERR): journald strips the prefix
(``SyslogLevelPrefix=yes``, the default) and files the line at that priority, so
``journalctl -u adaptalloc -p warning`` shows the daemon's warnings and errors only.

structlog is imported when logging is configured or a logger asked for, not with this
module: ``adaptalloc --version`` and ``--help`` never need it.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TextIO

__all__ = [
    "LEVELS",
    "LOG_FORMATS",
    "LONG_RUNNING",
    "SYSLOG_PRIORITY",
    "configure_logging",
    "format_for",
    "get_logger",
    "journal_stream",
    "level_for",
]

#: The levels the CLI offers, by name.
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
#: ``--log-format`` values: auto (console on a terminal, JSON lines otherwise), json, console.
LOG_FORMATS = ("auto", "json", "console")
#: Subcommands whose log is their output: INFO and JSON lines by default.
LONG_RUNNING = frozenset({"daemon"})
#: syslog priority of each structlog level (sd-daemon(3): SD_ERR "<3>", SD_WARNING "<4>").
SYSLOG_PRIORITY = {
    "critical": 2,
    "exception": 3,
    "error": 3,
    "warning": 4,
    "warn": 4,
    "info": 6,
    "debug": 7,
}
JOURNAL_ENV = "JOURNAL_STREAM"


def get_logger(name: str) -> Any:
    """structlog's logger `name` (structlog imported on first use)."""
    import structlog  # noqa: PLC0415 - kept out of the CLI's start-up

    return structlog.get_logger(name)


def level_for(debug: bool, quiet: bool, verbose: int = 0, command: str | None = None) -> int:
    """The logging level for the CLI's flags: --debug wins, then -v (INFO), then --quiet
    (WARNING); without any, WARNING, or INFO for a `command` in LONG_RUNNING."""
    if debug:
        return logging.DEBUG
    if verbose > 0:
        return logging.INFO
    if quiet:
        return logging.WARNING
    return logging.INFO if command in LONG_RUNNING else logging.WARNING


def format_for(log_format: str, command: str | None = None) -> str:
    """``--log-format`` resolved for `command`: "auto" stays auto, except for a LONG_RUNNING
    command, which writes JSON lines even on a terminal (what journald and tools read)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")
    if log_format == "auto" and command in LONG_RUNNING:
        return "json"
    return log_format


def journal_stream(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether `stream` is connected to systemd's journal: its device and inode are the
    ``$JOURNAL_STREAM`` systemd sets for a service's standard output and error."""
    env = os.environ if environ is None else environ
    device, sep, inode = env.get(JOURNAL_ENV, "").partition(":")
    if not (sep and device.isdigit() and inode.isdigit()):
        return False
    try:
        seen = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's StringIO)
        return False
    return (seen.st_dev, seen.st_ino) == (int(device), int(inode))


def with_priority(renderer: Callable[..., str]) -> Callable[..., str]:
    """`renderer`'s line prefixed with the event's syslog priority (``<4>`` for a warning)."""

    def render(logger: Any, method_name: str, event_dict: Any) -> str:
        level = str(event_dict.get("level", method_name)).lower()
        return f"<{SYSLOG_PRIORITY.get(level, 6)}>" + renderer(logger, method_name, event_dict)

    return render


def _renderer(stream: TextIO, log_format: str = "auto") -> Any:
    """Console renderer on a terminal, JSON lines otherwise; `log_format` may force either."""
    import structlog  # noqa: PLC0415 - kept out of the CLI's start-up

    if log_format == "json":
        return structlog.processors.JSONRenderer()
    if log_format == "console":
        return structlog.dev.ConsoleRenderer(colors=_isatty(stream))
    if _isatty(stream):
        return structlog.dev.ConsoleRenderer()
    return structlog.processors.JSONRenderer()


def _isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def _log_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A ``warnings.showwarning`` replacement: one structlog event per warning."""
    get_logger("py.warnings").warning(
        "python_warning",
        category=category.__name__,
        message=str(message),
        location=f"{filename}:{lineno}",
    )


def configure_logging(
    level: int = logging.INFO,
    stream: TextIO | None = None,
    capture_warnings: bool = True,
    log_format: str = "auto",
) -> None:
    """Configure structlog globally: events at `level` and above go to `stream` (stderr).

    May be called again (the CLI does, once it has parsed its flags); the last call wins.
    Loggers are not cached, so loggers created before a call follow it too. With
    `capture_warnings`, Python warnings are logged as ``python_warning`` events.
    `log_format` is one of LOG_FORMATS. On a stream connected to the journal every line
    starts with its syslog priority (module docstring).
    """
    import structlog  # noqa: PLC0415 - kept out of the CLI's start-up

    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")
    out = sys.stderr if stream is None else stream
    renderer = _renderer(out, log_format)
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    if isinstance(renderer, structlog.processors.JSONRenderer):
        # The console renderer formats exceptions itself; JSON needs them as data.
        processors.append(structlog.processors.dict_tracebacks)
    processors.append(with_priority(renderer) if journal_stream(out) else renderer)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    if capture_warnings:
        warnings.showwarning = _log_warning
