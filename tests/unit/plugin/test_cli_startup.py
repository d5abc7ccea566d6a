"""The command line starts light: ``--version``, ``--help`` and the completion of command
names load no command module and none of numpy, scipy, redis, rich, jinja2 or structlog
(plugin/cli/root.py's lazy group; tests/benchmarks/test_cli_startup.py times it). A
correctness property, checked in a fresh interpreter: the modules a process imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO

import click
import pytest
from rich import box
from rich.console import Console
from rich.table import Table

from plugin.cli.render import BreakableName
from plugin.cli.root import COMMANDS

from .conftest import REPO_ROOT, RunCli

#: The environment of a shell completing ``adaptalloc d<TAB>`` (click's bash protocol).
COMPLETE_NAMES = {
    "_ADAPTALLOC_COMPLETE": "bash_complete",
    "COMP_WORDS": "adaptalloc d",
    "COMP_CWORD": "1",
}
HEAVY = ("numpy", "scipy", "redis", "rich", "jinja2", "structlog", "predictor", "policies")
#: Run in a fresh interpreter: the command line's entry with ARGS (and the environment), then
#: the heavy top-level packages and command modules it imported, as JSON.
PROBE = """
import json, sys
from plugin.cli.root import run
try:
    run(sys.argv[1:])
except SystemExit:
    pass
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(json.loads(HEAVY)))
commands = sorted(name for name in sys.modules if name.startswith("plugin.cli.")
                  and name not in ("plugin.cli.root", "plugin.cli.env_file"))
print(json.dumps({"heavy": loaded, "commands": commands}), file=sys.stderr)
"""


def _loaded(*args: str, **env: str) -> dict[str, list[str]]:
    proc = subprocess.run(  # noqa: S603 - our interpreter and a fixed program, no shell
        [sys.executable, "-c", PROBE.replace("HEAVY", repr(json.dumps(HEAVY))), *args],
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    last = proc.stderr.strip().splitlines()[-1]
    loaded: dict[str, list[str]] = json.loads(last)
    return loaded


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--version",), {}),
        (("--help",), {}),
        ((), COMPLETE_NAMES),
    ],
    ids=["version", "help", "complete command names"],
)
def test_start_up_loads_no_command_and_nothing_heavy(
    args: tuple[str, ...], env: dict[str, str]
) -> None:
    loaded = _loaded(*args, **env)
    assert loaded == {"heavy": [], "commands": []}


def test_a_command_loads_only_its_own_module() -> None:
    loaded = _loaded("fit", "--help")
    assert loaded["commands"] == ["plugin.cli.common", "plugin.cli.model", "plugin.cli.render"]
    assert "redis" not in loaded["heavy"]  # fit never opens the store


def test_the_commands_table_names_each_command_and_its_help() -> None:
    for name, (module, attribute, help_line) in COMMANDS.items():
        command = getattr(__import__(module, fromlist=[attribute]), attribute)
        assert isinstance(command, click.Command), name
        assert command.name == name
        assert 0 < len(help_line) <= 55, name
        assert not command.hidden


def test_help_lists_every_command_with_its_line(run_cli: RunCli) -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    listed = result.stdout.split("Commands:\n", 1)[1]
    for name, (_, _, help_line) in COMMANDS.items():
        assert f"  {name}" in listed
        assert help_line in " ".join(listed.split())


def test_an_unknown_command_is_a_usage_error(run_cli: RunCli) -> None:
    result = run_cli("fitt", "x.csv")
    assert result.returncode == 2
    assert "No such command 'fitt'" in result.stderr


def test_simulate_help_is_grouped_and_short(run_cli: RunCli) -> None:
    out = run_cli("simulate", "--help").stdout
    titles = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert titles == [
        "Usage: adaptalloc simulate [OPTIONS] TRACE.swf...",
        "Trace and machine:",
        "Workload model (synthetic):",
        "Policies:",
        "Node types:",
        "Sweeps at scale:",
        "Output:",
    ]
    assert len(out.splitlines()) <= 110  # 153 before
    assert "the documentation's what-if simulation page" in " ".join(out.split())
    for option in ("--pools", "--variants", "--refits", "--slurm-array", "--format", "--help"):
        assert option in out


def _header_table(width: int) -> str:
    names = ["rigid", "rigid_limits", "greedy", "adaptive_fixed_limits", "adaptive"]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("", overflow="fold")
    for name in [*names, "oracle [true curves]"]:
        table.add_column(BreakableName(name), justify="right", overflow="fold")
    table.add_row("mean bounded slowdown", *["94.4 min"] * 6)
    out = StringIO()
    Console(file=out, width=width, force_terminal=False).print(table)
    return out.getvalue()


def test_policy_names_break_at_underscores_instead_of_being_cut() -> None:
    narrow = _header_table(80)
    assert "…" not in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert "adaptive_" in narrow
    assert "fixed_" in narrow
    assert "[true" in narrow
    wide = _header_table(200)
    assert "adaptive_fixed_limits" in wide
    assert "oracle [true curves]" in wide
