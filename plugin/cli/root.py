"""The ``adaptalloc`` command: the click group, the entry point, and the list of subcommands.

This is the only place that exits the process; the subcommands live in the modules of
plugin/cli/, one per command group, and raise.

Exit codes and error output:

* 0: success. With ``--format json`` standard output holds exactly one JSON document;
  logs go to standard error: warnings by default, one info event per command with -v.
* 1: anticipated errors: bad input files, values the predictor refuses, any
  :class:`~plugin.errors.AdaptallocError`. Exactly one line on standard error,
  ``adaptalloc: error: <what is wrong>``, and nothing on standard output.
* 2: usage errors (unknown option, bad option value): one line, with a pointer to --help.
* 70 (EX_SOFTWARE): an unexpected internal error. One line naming the exception; with
  ``--debug`` its traceback is logged (structlog, error level) first.
* 130: interrupted (Ctrl-C).

Adding a subcommand: in a module of its own (plugin/cli/<group>.py, or the room it serves)
define a click command or group with the shared pieces of plugin/cli/common.py, and add one
line to COMMANDS below: its name, module, attribute and the one line ``--help`` shows.

Start-up: a command's module is imported only when that command runs (or its options are
completed): ``--version``, ``--help`` and the completion of command names import click and
nothing of numpy, scipy, redis or rich (click's LazyGroup pattern; the one-line help comes
from COMMANDS, whose entries a unit test holds to the commands). structlog is imported once
a command runs. tests/benchmarks/test_cli_startup.py measures it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import click
from click.shell_completion import CompletionItem

from plugin.cli.env_file import LocalEnvError, load_env_file
from plugin.errors import AdaptallocError, InputError, printable
from plugin.log_setup import LOG_FORMATS, configure_logging, format_for, get_logger, level_for

__all__ = ["COMMANDS", "EXIT_INPUT", "EXIT_INTERNAL", "cli", "main", "run"]

PROG = "adaptalloc"
EXIT_OK = 0
EXIT_INPUT = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE in sysexits.h
EXIT_INTERRUPTED = 130

#: The subcommands: name -> (module, attribute, the line ``adaptalloc --help`` shows).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "app": ("plugin.cli.store", "app", "Show one app: runs, curve, reliability, decisions."),
    "apps": ("plugin.cli.store", "apps", "List the apps the store knows."),
    "daemon": ("plugin.cli.daemon", "daemon", "Size the moldable jobs the hook holds."),
    "decide": ("plugin.cli.policy", "decide", "Choose a moldable job's size and time limit."),
    "decisions": ("plugin.cli.daemon", "decisions", "The daemon's newest decisions."),
    "doctor": ("plugin.cli.doctor", "doctor", "Check an install end to end, with fixes."),
    "explain": ("plugin.cli.explain", "explain", "Why your job got its size and time limit."),
    "fit": ("plugin.cli.model", "fit", "Fit the Downey speedup model to OBS.csv."),
    "forget": ("plugin.cli.store", "forget", "Remove everything the store keeps of one app."),
    "import": ("plugin.cli.store", "import_group", "Backfill the store from sacct or a CSV."),
    "install-files": (
        "plugin.cli.install",
        "install_files",
        "Put the hook, configs, units, dashboard in place.",
    ),
    "learn": ("plugin.cli.store", "learn", "Read finished jobs into the store, refit."),
    "policy": ("plugin.cli.policy", "policy", "Policy configuration files."),
    "predict": ("plugin.cli.model", "predict", "Runtime, speedup, efficiency at given sizes."),
    "report": ("plugin.cli.report", "report", "How apps scale and what adaptalloc did."),
    "simulate": ("plugin.cli.simulate", "simulate", "Replay a trace under six sizing policies."),
    "store": ("plugin.cli.store", "store_group", "Maintain the curve store (key schema)."),
}


def log() -> Any:
    """The CLI's logger (structlog, imported when first needed)."""
    return get_logger(PROG)


@dataclass
class RunState:
    """What the group callback learns from the command line and `run` needs afterwards."""

    debug: bool = False


# --- the group ----------------------------------------------------------------------------


class LazyGroup(click.Group):
    """A click group whose subcommands (COMMANDS) are imported only when used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, attribute, _ = entry
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module}.{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands' list of ``--help``, from COMMANDS (no command imported)."""
        rows = [(name, help_line) for name, (_, _, help_line) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Command names from COMMANDS (no command imported), then the group's options."""
        items = [
            CompletionItem(name, help=help_line)
            for name, (_, _, help_line) in sorted(COMMANDS.items())
            if name.startswith(incomplete)
        ]
        return items + click.Command.shell_complete(self, ctx, incomplete)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--debug", is_flag=True, help="Log debug events, and tracebacks of internal errors.")
@click.option("--quiet", "-q", is_flag=True, help="Log warnings and errors only (the default).")
@click.option("--verbose", "-v", count=True, help="Log info events too (the daemon always does).")
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="auto",
    show_default=True,
    help="Logs on stderr: console for people, json lines for machines; auto picks console on "
    "a terminal (the daemon: json).",
)
@click.option(
    "--env-file",
    metavar="FILE",
    default=None,
    help="Add the KEY=VALUE lines of FILE (e.g. the testbed's .local/env) to the environment; "
    "variables already set win. FILE must be owned by root or you, not group/world-writable, "
    "and set no LD_*/PYTHON* variable.",
)
@click.version_option(package_name="adaptalloc", prog_name=PROG)
@click.pass_context
def cli(
    ctx: click.Context,
    debug: bool,
    quiet: bool,
    verbose: int,
    log_format: str,
    env_file: str | None,
) -> None:
    """Adaptive allocation for Slurm: learn speedup curves, size moldable jobs.

    OBS.csv is an observation file: header n,runtime (runtime in seconds), one row per
    run, repeated n allowed, n = 1 optional, other columns ignored. Use - for stdin.

    adaptalloc reads its config file (--config, $ADAPTALLOC_CONFIG,
    /etc/adaptalloc/adaptalloc.toml) and its own environment, nothing else: no env file is
    picked up from the working directory.
    """
    ctx.ensure_object(RunState).debug = debug
    command = ctx.invoked_subcommand
    configure_logging(
        level_for(debug, quiet, verbose, command), log_format=format_for(log_format, command)
    )
    if env_file is not None:
        _apply_env_file(env_file)


def _apply_env_file(path: str) -> None:
    """Apply ``--env-file``: an untrusted or malformed file is an input error, never skipped."""
    try:
        applied = load_env_file(Path(path))
    except LocalEnvError as exc:
        raise InputError(str(exc)) from exc
    log().debug("env_file_applied", path=printable(path), variables=sorted(applied))


# --- entry point ----------------------------------------------------------------------------


def _error_line(message: str) -> None:
    """The one line an anticipated error produces, escaped so that it stays one line."""
    click.echo(f"{PROG}: error: {printable(message)}", err=True)


def _usage_error(exc: click.ClickException) -> int:
    """One line for a click usage error, pointing at the command's --help."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        exc.show()  # `adaptalloc` alone: the help text, as click does
        return exc.exit_code
    message = exc.format_message()
    ctx = getattr(exc, "ctx", None)
    if isinstance(ctx, click.Context):
        message = f"{message.rstrip('.')} (see '{ctx.command_path} --help')"
    _error_line(message)
    return exc.exit_code


def _internal_error(exc: Exception, debug: bool) -> int:
    """Report an unexpected exception: traceback logged with --debug, always one summary line."""
    summary = f"{type(exc).__name__}: {exc}"
    if debug:
        log().error("internal_error", error=printable(summary), exc_info=exc)
        click.echo(f"{PROG}: internal error: {printable(summary)}", err=True)
    else:
        click.echo(
            f"{PROG}: internal error: {printable(summary)} (run with --debug for details)",
            err=True,
        )
    return EXIT_INTERNAL


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line (arguments from sys.argv when `argv` is None); return the exit code.

    Logging is configured by the group's callback, once a command runs (``--version`` and
    ``--help`` log nothing and leave structlog unimported)."""
    state = RunState()
    try:
        result = cli.main(
            args=None if argv is None else list(argv),
            prog_name=PROG,
            standalone_mode=False,
            obj=state,
        )
    except click.exceptions.Abort:
        click.echo(f"{PROG}: interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        return _usage_error(exc)
    except AdaptallocError as exc:
        _error_line(str(exc))
        return EXIT_INPUT
    except Exception as exc:  # the last line of defence: never a bare traceback
        return _internal_error(exc, state.debug)
    return result if isinstance(result, int) else EXIT_OK


def main() -> NoReturn:
    """Console-script entry point (``adaptalloc``): run and exit with its code."""
    sys.exit(run())
