"""The ``adaptalloc`` command: one click group, one subcommand per task.

The pipeline is visible in the modules: read (observations_csv) -> compute (predictor) ->
render (output) -> here, the command line, which is the only place that exits the process.

Exit codes and error output:

* 0: success. With ``--format json`` standard output holds exactly one JSON document;
  logs (one structlog event per command) always go to standard error.
* 1: anticipated errors: bad input files, values the predictor refuses, any
  :class:`~plugin.errors.AdaptallocError`. Exactly one line on standard error,
  ``adaptalloc: error: <what is wrong>``, and nothing on standard output.
* 2: usage errors (unknown option, bad option value): one line, with a pointer to --help.
* 70 (EX_SOFTWARE): an unexpected internal error. One line naming the exception; with
  ``--debug`` its traceback is logged (structlog, error level) first.
* 130: interrupted (Ctrl-C).

Adding a subcommand: write a function decorated with ``@cli.command()``, reuse the option
decorators below, read through observations_csv, render through output.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import click
import numpy as np
import structlog
from rich.console import Console

import predictor
from plugin import local_env
from plugin.errors import AdaptallocError, InputError, TooManyRowsError, printable, quote_value
from plugin.log_setup import configure_logging, level_for
from plugin.observations_csv import (
    DEFAULT_MAX_ROWS,
    MAX_SIZE,
    load_observations,
    read_observations,
    read_observations_stream,
)
from plugin.output import (
    finite,
    fit_document,
    predictions_document,
    render_fit,
    render_predictions,
    to_json,
)

__all__ = ["EXIT_INPUT", "EXIT_INTERNAL", "MAX_TARGETS", "cli", "main", "parse_sizes", "run"]

PROG = "adaptalloc"
EXIT_OK = 0
EXIT_INPUT = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE in sysexits.h
EXIT_INTERRUPTED = 130
#: Most target sizes `predict --at` accepts.
MAX_TARGETS = 10_000

_SIZE = re.compile(r"[0-9]+")
log = structlog.get_logger(PROG)
T = TypeVar("T")


@dataclass
class RunState:
    """What the group callback learns from the command line and `run` needs afterwards."""

    debug: bool = False


# --- option types and shared options ----------------------------------------------------


def parse_sizes(text: str) -> tuple[int, ...]:
    """Parse ``--at``: comma-separated whole numbers ≥ 1, spaces allowed, order and repeats kept.

    Raises
    ------
    ValueError
        One line naming the offending entry (escaped and truncated).
    """
    entries = [entry.strip() for entry in text.split(",")]
    if len(entries) > MAX_TARGETS:
        raise ValueError(f"at most {MAX_TARGETS:,} sizes, got {len(entries):,}")
    sizes: list[int] = []
    for position, entry in enumerate(entries, start=1):
        if not entry:
            raise ValueError(f"size {position} is empty; give sizes like 16,32,64")
        if not _SIZE.fullmatch(entry):
            raise ValueError(f"{quote_value(entry)} is not a whole number of nodes")
        size = int(entry) if len(entry) <= 12 else MAX_SIZE + 1
        if size < 1:
            raise ValueError(f"sizes must be at least 1, got {entry}")
        if size > MAX_SIZE:
            raise ValueError(f"sizes must be at most {MAX_SIZE:,}, got {quote_value(entry)}")
        sizes.append(size)
    return tuple(sizes)


def _sizes_callback(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    """click callback for ``--at 16,32,64``: parse with `parse_sizes`."""
    try:
        return parse_sizes(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _observations_argument(func: Callable[..., T]) -> Callable[..., T]:
    return click.argument(
        "obs_csv", metavar="OBS.csv", type=click.Path(allow_dash=True, path_type=str)
    )(func)


def _common_options(func: Callable[..., T]) -> Callable[..., T]:
    """--method, --format and --max-rows, shared by the commands that read observations."""
    func = click.option(
        "--max-rows",
        type=click.IntRange(min=1),
        metavar="ROWS",
        default=DEFAULT_MAX_ROWS,
        show_default=True,
        help="Refuse observation files with more data rows than this.",
    )(func)
    func = click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="text: tables and sentences; json: one JSON document on stdout.",
    )(func)
    return click.option(
        "--method",
        type=click.Choice(list(predictor.METHODS)),
        default="adept",
        show_default=True,
        help="adept: ADEPT's envelope and weighted search; lm: Levenberg-Marquardt baseline.",
    )(func)


# --- the group ----------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--debug", is_flag=True, help="Log debug events, and tracebacks of internal errors.")
@click.option("--quiet", "-q", is_flag=True, help="Log warnings and errors only.")
@click.version_option(package_name="adaptalloc", prog_name=PROG)
@click.pass_context
def cli(ctx: click.Context, debug: bool, quiet: bool) -> None:
    """Adaptive allocation for Slurm: learn speedup curves, size moldable jobs.

    OBS.csv is an observation file: header n,runtime (runtime in seconds), one row per
    run, repeated n allowed, n = 1 optional, other columns ignored. Use - for stdin.
    """
    ctx.ensure_object(RunState).debug = debug
    configure_logging(level_for(debug, quiet))


# --- shared steps ---------------------------------------------------------------------------


def _read(obs_csv: str, max_rows: int) -> predictor.Observations:
    """Read and prepare observations from a path, or stdin for ``-``."""
    try:
        if obs_csv == "-":
            raw = read_observations_stream(sys.stdin.buffer, _source_name(obs_csv), max_rows)
        else:
            raw = read_observations(obs_csv, max_rows)
    except TooManyRowsError as exc:
        raise InputError(f"{exc}; pass --max-rows to raise the limit") from exc
    return load_observations(raw)


def _source_name(obs_csv: str) -> str:
    """How the observations' origin is named in text output."""
    return "standard input" if obs_csv == "-" else obs_csv


def _predictor_call(compute: Callable[[], T]) -> T:
    """Run a predictor call; its ValueError (refused input) becomes an InputError."""
    try:
        return compute()
    except ValueError as exc:
        raise InputError(printable(str(exc))) from exc


def _predict(
    obs: predictor.Observations, targets: Sequence[int], method: str
) -> predictor.Predictions:
    """Predictions at `targets` in the order given (the predictor batches and dedupes)."""
    at = np.asarray(targets, dtype=np.int64)
    return _predictor_call(lambda: predictor.predict_observations(obs, at, method))


def _stdout_console() -> Console:
    """Rich console on stdout; plain text (no colour codes) when stdout is not a terminal."""
    return Console(file=sys.stdout, highlight=False)


def _emit_json(doc: dict[str, Any]) -> None:
    """Write one JSON document and flush, so a closed pipe is noticed while click can handle it."""
    click.echo(to_json(doc))
    sys.stdout.flush()


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)


# --- commands -------------------------------------------------------------------------------


@cli.command()
@_observations_argument
@_common_options
def fit(obs_csv: str, method: str, output_format: str, max_rows: int) -> None:
    """Fit the Downey speedup model to the runs in OBS.csv.

    Prints the average parallelism A, the variance σ, the largest useful size, the
    processor working set and how well the curve matches the observations.
    """
    started = time.perf_counter()
    obs = _read(obs_csv, max_rows)
    result = _predictor_call(lambda: predictor.fit_observations(obs, method=method))
    if output_format == "json":
        _emit_json(fit_document(result))
    else:
        render_fit(result, _stdout_console(), _source_name(obs_csv))
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
        elapsed_ms=_elapsed_ms(started),
    )


@cli.command()
@_observations_argument
@click.option(
    "--at",
    "targets",
    required=True,
    type=str,
    callback=_sizes_callback,
    metavar="N[,N...]",
    help=f"Sizes to predict, comma-separated whole numbers ≥ 1 (at most {MAX_TARGETS:,}).",
)
@_common_options
def predict(
    obs_csv: str, targets: tuple[int, ...], method: str, output_format: str, max_rows: int
) -> None:
    """Predict runtime, speedup and efficiency at the sizes given by --at.

    Sizes are reported in the order given, repeats included. With ADEPT each size gets
    its own model instance, weighted towards the observations nearest to it.
    """
    started = time.perf_counter()
    obs = _read(obs_csv, max_rows)
    preds = _predict(obs, targets, method)
    if output_format == "json":
        _emit_json(predictions_document(preds))
    else:
        render_predictions(preds, _stdout_console(), method, int(obs.n[-1]))
        sys.stdout.flush()
    log.info(
        "predict",
        path=printable(obs_csv),
        method=method,
        sizes=len(obs),
        runs=int(obs.runs.sum()),
        targets=len(targets),
        elapsed_ms=_elapsed_ms(started),
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


def _load_local_env() -> None:
    """Apply the testbed's .local/env if there is one; a broken file is a warning, not a crash."""
    try:
        applied = local_env.load_local_env()
    except (OSError, ValueError) as exc:
        log.warning("local_env_ignored", error=printable(str(exc)))
        return
    if applied:
        log.debug("local_env_applied", variables=sorted(applied))


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line (arguments from sys.argv when `argv` is None); return the exit code."""
    configure_logging(logging.INFO)
    _load_local_env()
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
