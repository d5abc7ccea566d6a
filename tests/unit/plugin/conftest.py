"""Fixtures for the plugin's unit tests: the real CLI, in this process or as a subprocess,
and data files.

``run_cli(*args, stdin=b"")`` runs the command line in this process: `plugin.cli.root.run`,
the function the installed ``adaptalloc`` console script and ``python -m plugin`` call, with
stdin, stdout and stderr swapped for buffers (click's CliRunner isolation; neither is a
terminal) in tmp_path as working directory, and returns its exit code, stdout and stderr.
``run_cli_process`` runs ``python -m plugin`` in a fresh interpreter, for the tests where
the process boundary is the point (the environment an ``--env-file`` sets, the module entry
point itself). adaptalloc reads no env file it was not given (``--env-file``), so a
developer's testbed cannot change what the tests see.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog
from click.testing import CliRunner

from plugin.cli.root import run as run_command_line

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = REPO_ROOT / "tests" / "data" / "scaling"
LU_CSV = DATA_DIR / "lan_thesis_npb_lu_W.csv"
CLI_TIMEOUT_S = 300


@dataclass(frozen=True)
class CliResult:
    """What one run of the command line produced."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.splitlines()


RunCli = Callable[..., CliResult]


def _fresh_interpreter_warning_filters() -> None:
    """The warning filters of ``python -m plugin``, not pytest's (which turn the predictor's
    RuntimeWarnings into errors): the CLI logs warnings, it does not fail on them."""
    warnings.resetwarnings()
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.simplefilter("ignore", category)


@pytest.fixture
def run_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """Run the command line in this process with the given arguments (see the module)."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str | Path, stdin: bytes = b"") -> CliResult:
        saved_logging = structlog.get_config()
        saved_showwarning = warnings.showwarning
        try:
            with (
                CliRunner().isolation(input=stdin) as (stdout, stderr, _output),
                warnings.catch_warnings(),
            ):
                _fresh_interpreter_warning_filters()
                code = run_command_line([str(a) for a in args])
                sys.stdout.flush()
                sys.stderr.flush()
                return CliResult(
                    code,
                    stdout.getvalue().decode("utf-8"),
                    stderr.getvalue().decode("utf-8"),
                )
        finally:
            # The command configured logging onto the swapped stderr; put the test's back.
            structlog.configure(**saved_logging)
            warnings.showwarning = saved_showwarning

    return run


@pytest.fixture
def run_cli_process(tmp_path: Path) -> RunCli:
    """Run ``python -m plugin`` with the given arguments in a fresh interpreter; stdout/stderr
    are pipes (not terminals)."""

    def run(*args: str | Path, stdin: bytes = b"") -> CliResult:
        # The working tree's plugin/, whether or not (or however) the package is installed.
        pythonpath = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        env = dict(
            os.environ,
            PYTHONIOENCODING="utf-8",
            PYTHONPATH=pythonpath,
        )
        proc = subprocess.run(  # noqa: S603 (our own interpreter and module, no shell)
            [sys.executable, "-m", "plugin", *map(str, args)],
            input=stdin,
            capture_output=True,
            env=env,
            cwd=tmp_path,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
        return CliResult(
            proc.returncode,
            proc.stdout.decode("utf-8"),
            proc.stderr.decode("utf-8"),
        )

    return run


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, bytes | str], Path]:
    """Write `content` to a file named `name` in tmp_path and return its path."""

    def write(name: str, content: bytes | str) -> Path:
        path = tmp_path / name
        data = content.encode("utf-8") if isinstance(content, str) else content
        path.write_bytes(data)
        return path

    return write


def json_document(result: CliResult) -> dict[str, Any]:
    """The run succeeded and stdout is exactly one JSON object (json.loads refuses extra data)."""
    assert result.returncode == 0, result
    assert "Traceback" not in result.stderr
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def log_events(result: CliResult) -> list[dict[str, Any]]:
    """stderr is not a terminal here, so every log line is a JSON event."""
    return [json.loads(line) for line in result.stderr_lines]


def assert_one_error_line(result: CliResult, exit_code: int = 1) -> str:
    """The run failed cleanly: `exit_code`, one ``adaptalloc: error:`` line, empty stdout."""
    assert result.returncode == exit_code, result
    assert result.stdout == "", result
    assert "Traceback" not in result.stderr
    lines = result.stderr_lines
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("adaptalloc: error: "), lines[0]
    assert "\x1b" not in lines[0]
    return lines[0]
