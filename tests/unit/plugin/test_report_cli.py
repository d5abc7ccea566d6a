"""``adaptalloc report`` without Redis: usage errors and an unreachable store are one line."""

from __future__ import annotations

import pytest

from .conftest import RunCli, assert_one_error_line

UNREACHABLE = "redis://127.0.0.1:1/0"


@pytest.mark.parametrize(
    "args",
    [
        ("report",),
        ("report", "lulesh", "--all"),
        ("report", "lulesh", "--per-job"),
        ("report", "--all", "--html", "site", "--format", "csv"),
        ("report", "--all", "--html", "site", "--per-job", "--format", "json"),
        ("report", "no such app"),
        ("report", "lulesh", "--format", "xml"),
    ],
)
def test_usage_errors(run_cli: RunCli, args: tuple[str, ...]) -> None:
    line = assert_one_error_line(run_cli(*args, "--redis-url", UNREACHABLE), exit_code=2)
    assert "report --help" in line


@pytest.mark.parametrize("args", [("report", "lulesh"), ("report", "--all", "--format", "csv")])
def test_an_unreachable_store_is_one_line(run_cli: RunCli, args: tuple[str, ...]) -> None:
    result = run_cli(*args, "--redis-url", UNREACHABLE)
    line = assert_one_error_line(result, exit_code=1)
    assert "redis" in line.lower()


def test_help_names_the_outputs(run_cli: RunCli) -> None:
    result = run_cli("report", "--help")
    assert result.returncode == 0
    for option in ("--all", "--html", "--format", "--per-job", "--decisions", "--no-band"):
        assert option in result.stdout
