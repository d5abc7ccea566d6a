"""Fixtures for the plugin's unit tests: the real CLI as a subprocess, and data files.

``run_cli(*args, stdin=b"")`` runs ``python -m plugin`` (the same ``main`` as the installed
``adaptalloc`` console script) in a fresh interpreter and returns its exit code, stdout and
stderr. adaptalloc reads no env file it was not given (``--env-file``), so a developer's
testbed cannot change what the tests see.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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


@pytest.fixture
def run_cli(tmp_path: Path) -> RunCli:
    """Run ``adaptalloc`` with the given arguments; stdout/stderr are pipes (not terminals)."""

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
