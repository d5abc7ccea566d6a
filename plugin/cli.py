"""The ``adaptalloc`` command: one click group, one subcommand per task.

The pipeline is visible in the modules: read (observations_csv) -> compute (predictor) ->
render (output) -> here, the command line, which is the only place that exits the process.

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

Adding a subcommand: in a module of its own (cli_<topic>.py) define a click command or
group with the shared pieces of cli_common, and attach it in the block at the end of this
file with one line.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click
import structlog

import predictor
from plugin import local_env
from plugin.cli_common import (
    MAX_TARGETS,
    elapsed_ms,
    emit_json,
    observation_options,
    observations_argument,
    parse_sizes,
    predict_at,
    predictor_call,
    read,
    sizes_callback,
    source_name,
    stdout_console,
)
from plugin.errors import AdaptallocError, InputError, printable
from plugin.log_setup import LOG_FORMATS, configure_logging, format_for, level_for
from plugin.output import (
    finite,
    fit_document,
    predictions_document,
    render_fit,
    render_predictions,
)

__all__ = ["EXIT_INPUT", "EXIT_INTERNAL", "MAX_TARGETS", "cli", "main", "parse_sizes", "run"]

PROG = "adaptalloc"
EXIT_OK = 0
EXIT_INPUT = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE in sysexits.h
EXIT_INTERRUPTED = 130
log = structlog.get_logger(PROG)


@dataclass
class RunState:
    """What the group callback learns from the command line and `run` needs afterwards."""

    debug: bool = False


# --- the group ----------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
        applied = local_env.load_env_file(Path(path))
    except local_env.LocalEnvError as exc:
        raise InputError(str(exc)) from exc
    log.debug("env_file_applied", path=printable(path), variables=sorted(applied))


# --- commands -------------------------------------------------------------------------------


@cli.command()
@observations_argument
@observation_options
def fit(obs_csv: str, method: str, output_format: str, max_rows: int) -> None:
    """Fit the Downey speedup model to the runs in OBS.csv.

    Prints the average parallelism A, the variance σ, the largest useful size, the
    processor working set and how well the curve matches the observations, ADEPT's
    anomalies and reliability judgment, and (with ADEPT) every model's cross-validated error.
    """
    started = time.perf_counter()
    obs = read(obs_csv, max_rows)
    result = predictor_call(lambda: predictor.fit_observations(obs, method=method))
    choice = predictor_call(lambda: predictor.choose_model(obs)) if method == "adept" else None
    if output_format == "json":
        emit_json(fit_document(result, choice))
    else:
        render_fit(result, stdout_console(), source_name(obs_csv), choice)
        sys.stdout.flush()
    log.info(
        "fit",
        path=printable(obs_csv),
        method=method,
        sizes=len(obs),
        runs=int(obs.runs.sum()),
        dropped=len(obs.dropped),
        A=finite(result.A),
        sigma=finite(result.sigma),
        identified=result.identified,
        status=result.status,
        fit_error=finite(result.fit_error),
        elapsed_ms=elapsed_ms(started),
    )


@cli.command()
@observations_argument
@click.option(
    "--at",
    "targets",
    required=True,
    type=str,
    callback=sizes_callback,
    metavar="N[,N...]",
    help=f"Sizes to predict, comma-separated whole numbers ≥ 1 (at most {MAX_TARGETS:,}).",
)
@observation_options
def predict(
    obs_csv: str, targets: tuple[int, ...], method: str, output_format: str, max_rows: int
) -> None:
    """Predict runtime, speedup and efficiency at the sizes given by --at.

    Sizes are reported in the order given, repeats included. With ADEPT each size gets
    its own model instance, weighted towards the observations nearest to it.
    """
    started = time.perf_counter()
    obs = read(obs_csv, max_rows)
    preds = predict_at(obs, targets, method)
    if output_format == "json":
        emit_json(predictions_document(preds))
    else:
        render_predictions(preds, stdout_console(), method, int(obs.n[-1]))
        sys.stdout.flush()
    log.info(
        "predict",
        path=printable(obs_csv),
        method=method,
        sizes=len(obs),
        runs=int(obs.runs.sum()),
        targets=len(targets),
        elapsed_ms=elapsed_ms(started),
    )


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
        log.error("internal_error", error=printable(summary), exc_info=exc)
        click.echo(f"{PROG}: internal error: {printable(summary)}", err=True)
    else:
        click.echo(
            f"{PROG}: internal error: {printable(summary)} (run with --debug for details)",
            err=True,
        )
    return EXIT_INTERNAL


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line (arguments from sys.argv when `argv` is None); return the exit code."""
    configure_logging(logging.WARNING)
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


# --- subcommands defined in their own modules (one line each) ---------------------------------
from plugin.cli_policy import decide, policy  # noqa: E402

cli.add_command(decide)
cli.add_command(policy)
from plugin.cli_store import app, apps, forget, import_group, learn  # noqa: E402

cli.add_command(apps)
cli.add_command(app)
cli.add_command(forget)
cli.add_command(import_group)
cli.add_command(learn)
from plugin.cli_simulate import simulate  # noqa: E402

cli.add_command(simulate)
from plugin.cli_report import report  # noqa: E402

cli.add_command(report)
from plugin.cli_daemon import daemon, decisions  # noqa: E402

cli.add_command(daemon)
cli.add_command(decisions)
from plugin.cli_doctor import doctor  # noqa: E402

cli.add_command(doctor)
from plugin.cli_install import install_files  # noqa: E402

cli.add_command(install_files)
