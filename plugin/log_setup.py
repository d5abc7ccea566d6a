"""structlog configuration for the adaptalloc command line, done once in ``plugin.cli.root.main``.

Logs always go to standard error: standard output belongs to the command's result (with
``--format json``, exactly one JSON document). On a terminal the events are rendered by
structlog's console renderer for people; anywhere else (a pipe, a file, journald) they are
JSON lines, one event per line, for machines.

Levels: INFO by default, DEBUG with ``--debug``, WARNING with ``--quiet``.

Python warnings (numpy's RuntimeWarning on overflow, deprecations) are logged as
``python_warning`` events instead of being printed raw, so that standard error stays one
event per line for whatever collects it.
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import Any, TextIO

import structlog

__all__ = ["LEVELS", "configure_logging", "level_for"]

#: The levels the CLI offers, by name.
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


def level_for(debug: bool, quiet: bool) -> int:
    """The logging level for the CLI's --debug and --quiet flags (--debug wins)."""
    if debug:
        return logging.DEBUG
    if quiet:
        return logging.WARNING
    return logging.INFO


def _renderer(stream: TextIO) -> Any:
    """Console renderer on a terminal, JSON lines otherwise."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return structlog.dev.ConsoleRenderer()
    return structlog.processors.JSONRenderer()


def _log_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A ``warnings.showwarning`` replacement: one structlog event per warning."""
    structlog.get_logger("py.warnings").warning(
        "python_warning",
        category=category.__name__,
        message=str(message),
        location=f"{filename}:{lineno}",
    )


def configure_logging(
    level: int = logging.INFO, stream: TextIO | None = None, capture_warnings: bool = True
) -> None:
    """Configure structlog globally: events at `level` and above go to `stream` (stderr).

    May be called again (the CLI does, once it has parsed --debug/--quiet); the last call
    wins. Loggers are not cached, so loggers created before a call follow it too. With
    `capture_warnings`, Python warnings are logged as ``python_warning`` events.
    """
    out = sys.stderr if stream is None else stream
    renderer = _renderer(out)
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    if isinstance(renderer, structlog.processors.JSONRenderer):
        # The console renderer formats exceptions itself; JSON needs them as data.
        processors.append(structlog.processors.dict_tracebacks)
    processors.append(renderer)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    if capture_warnings:
        warnings.showwarning = _log_warning
