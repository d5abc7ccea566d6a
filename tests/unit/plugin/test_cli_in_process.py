"""plugin.cli.root in-process: the internal-error path (which needs a fault injected), --at parsing,
and the logging set-up.

The commands themselves are tested through conftest.run_cli in test_cli.py and beside it.
"""

from __future__ import annotations

import io
import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
import structlog

import predictor
from plugin.cli.common import MAX_TARGETS, parse_sizes
from plugin.cli.root import EXIT_INTERNAL, run
from plugin.log_setup import configure_logging, format_for, level_for

from .conftest import LU_CSV


@pytest.fixture(autouse=True)
def no_local_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Keep a developer's .local/env out, and leave structlog as we found it."""
    monkeypatch.setenv("ADAPTALLOC_STATE_DIR", str(tmp_path))
    yield
    structlog.reset_defaults()


@pytest.fixture
def broken_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the predictor fail the way a bug would: an exception nobody anticipated."""

    def explode(*args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError("boom \x1b[31m")

    monkeypatch.setattr(predictor, "fit_observations", explode)


@pytest.mark.usefixtures("broken_fit")
def test_internal_error_is_one_line_and_exit_70(capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["fit", str(LU_CSV), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_INTERNAL == 70
    assert out == ""
    assert err == (
        "adaptalloc: internal error: RuntimeError: boom \\x1b[31m (run with --debug for details)\n"
    )


@pytest.mark.usefixtures("broken_fit")
def test_internal_error_with_debug_logs_the_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = run(["--debug", "fit", str(LU_CSV), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_INTERNAL
    assert out == ""
    lines = err.splitlines()
    event = json.loads(lines[0])  # stderr is captured, not a terminal: JSON
    assert event["event"] == "internal_error"
    assert event["level"] == "error"
    frames = event["exception"][0]
    assert frames["exc_type"] == "RuntimeError"
    assert any(frame["name"] == "explode" for frame in frames["frames"])
    assert lines[-1] == "adaptalloc: internal error: RuntimeError: boom \\x1b[31m"


def test_run_returns_zero_and_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--quiet", "fit", str(LU_CSV), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["model"] == "downey"
    assert err == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16,32,64", (16, 32, 64)),
        ("16, 32,  64", (16, 32, 64)),
        (" 8 ", (8,)),
        ("64,16,64", (64, 16, 64)),
        ("1", (1,)),
        ("0016", (16,)),
    ],
)
def test_parse_sizes(text: str, expected: tuple[int, ...]) -> None:
    assert parse_sizes(text) == expected


def test_parse_sizes_limit() -> None:
    assert len(parse_sizes(",".join(["2"] * MAX_TARGETS))) == MAX_TARGETS
    with pytest.raises(ValueError, match="at most 10,000 sizes, got 10,001"):
        parse_sizes(",".join(["2"] * (MAX_TARGETS + 1)))


@pytest.mark.parametrize("text", ["", "16,", "a", "1e3", "+4", "4.0", "-1", "0", "1 2"])
def test_parse_sizes_refuses(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (the messages are checked in test_cli)
        parse_sizes(text)


def test_level_for() -> None:
    assert level_for(debug=False, quiet=False) == logging.WARNING
    assert level_for(debug=False, quiet=False, verbose=1) == logging.INFO
    assert level_for(debug=False, quiet=True, verbose=1) == logging.INFO
    assert level_for(debug=True, quiet=False) == logging.DEBUG
    assert level_for(debug=False, quiet=True) == logging.WARNING
    assert level_for(debug=True, quiet=True) == logging.DEBUG
    # The daemon's log is its output: INFO unless --quiet.
    assert level_for(debug=False, quiet=False, command="daemon") == logging.INFO
    assert level_for(debug=False, quiet=True, command="daemon") == logging.WARNING


def test_format_for() -> None:
    assert format_for("auto", "fit") == "auto"
    assert format_for("auto", "daemon") == "json"
    assert format_for("console", "daemon") == "console"
    assert format_for("json", None) == "json"
    with pytest.raises(ValueError, match="log format must be one of"):
        format_for("xml")


def test_json_forced_on_a_terminal() -> None:
    stream = FakeTerminal()
    configure_logging(logging.INFO, stream, log_format="json")
    structlog.get_logger("test").info("shown", answer=42)
    assert json.loads(stream.getvalue())["answer"] == 42


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_json_lines_when_not_a_terminal() -> None:
    stream = io.StringIO()
    configure_logging(logging.INFO, stream)
    log = structlog.get_logger("test")
    log.debug("hidden")
    log.info("shown", answer=42)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    event = json.loads(lines[0])
    assert event["event"] == "shown"
    assert event["answer"] == 42
    assert event["level"] == "info"
    assert event["timestamp"].endswith("Z")


def test_console_renderer_on_a_terminal() -> None:
    stream = FakeTerminal()
    configure_logging(logging.WARNING, stream)
    log = structlog.get_logger("test")
    log.info("hidden")
    log.warning("careful", what="disk")
    text = stream.getvalue()
    assert "careful" in text
    assert "hidden" not in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.splitlines()[0])


def test_python_warnings_become_events() -> None:
    stream = io.StringIO()
    with warnings.catch_warnings():  # restores warnings.showwarning afterwards
        warnings.simplefilter("always")
        configure_logging(logging.INFO, stream)
        warnings.warn("careful \x1b[2J", UserWarning, stacklevel=1)
    event = json.loads(stream.getvalue())
    assert event["event"] == "python_warning"
    assert event["level"] == "warning"
    assert event["category"] == "UserWarning"
    assert event["message"] == "careful \x1b[2J"  # JSON escapes it: \u001b on the wire
    assert "\x1b" not in stream.getvalue()
