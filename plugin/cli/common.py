"""Pieces the ``adaptalloc`` subcommands share: options, reading observations, opening the
store, output.

The command modules of plugin/cli/ build on these (and never on each other) so every
subcommand reads observation files, opens the store, reports refused input and prints JSON
the same way.
"""

from __future__ import annotations

import inspect
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click
import numpy as np
import structlog
from rich.console import Console

import predictor
from plugin.cli.render import to_json
from plugin.config import Config, load_config
from plugin.errors import InputError, TooManyRowsError, printable, quote_value
from plugin.formats.observations_csv import (
    DEFAULT_MAX_ROWS,
    MAX_SIZE,
    load_observations,
    read_observations,
    read_observations_stream,
)

if TYPE_CHECKING:  # the store (redis-py) is imported by the commands that open it
    from plugin.store.curves import CurveStore

#: Most target sizes `predict --at` accepts.
MAX_TARGETS = 10_000

_SIZE = re.compile(r"[0-9]+")
T = TypeVar("T")
log = structlog.get_logger("adaptalloc")


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


def sizes_callback(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    """click callback for ``--at 16,32,64``: parse with `parse_sizes`."""
    try:
        return parse_sizes(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def observations_argument(func: Callable[..., T]) -> Callable[..., T]:
    return click.argument(
        "obs_csv", metavar="OBS.csv", type=click.Path(allow_dash=True, path_type=str)
    )(func)


def format_option(func: Callable[..., T]) -> Callable[..., T]:
    """--format text|json, for every command that produces data."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="text: tables and sentences; json: one JSON document on stdout.",
    )(func)


def observation_options(func: Callable[..., T]) -> Callable[..., T]:
    """--method, --format and --max-rows, shared by the commands that read observations."""
    func = click.option(
        "--max-rows",
        type=click.IntRange(min=1),
        metavar="ROWS",
        default=DEFAULT_MAX_ROWS,
        show_default=True,
        help="Refuse observation files with more data rows than this.",
    )(func)
    func = format_option(func)
    return click.option(
        "--method",
        type=click.Choice(list(predictor.METHODS)),
        default="adept",
        show_default=True,
        help="adept: ADEPT's envelope and weighted search; lm: Levenberg-Marquardt baseline.",
    )(func)


class SectionedCommand(click.Command):
    """A click command whose ``--help`` is short: the first `paragraphs` paragraphs of its
    help and then `more` (where the rest is told), and its options under named `sections`
    ((title, (parameter name, ...)), ...; options in none go under "Other options")."""

    def __init__(
        self,
        *args: Any,
        sections: Sequence[tuple[str, Sequence[str]]] = (),
        paragraphs: int | None = None,
        more: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.sections = tuple((title, tuple(names)) for title, names in sections)
        self.paragraphs = paragraphs
        self.more = more

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        text = inspect.cleandoc(self.help or "")
        parts = text.split("\n\n")
        if self.paragraphs is not None and len(parts) > self.paragraphs:
            text = "\n\n".join([*parts[: self.paragraphs], self.more])
        if text:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(text)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        options = [p for p in self.get_params(ctx) if isinstance(p, click.Option)]
        records = {p.name: p.get_help_record(ctx) for p in options}
        help_option = self.get_help_option(ctx)
        if help_option is not None:  # listed as "help" in `sections`, whatever click calls it
            records["help"] = records.pop(help_option.name, None)
        placed: set[str | None] = set()
        for title, names in self.sections:
            rows = [row for name in names if (row := records.get(name)) is not None]
            placed.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [row for name, row in records.items() if name not in placed and row is not None]
        if rest:
            with formatter.section("Other options"):
                formatter.write_dl(rest)


# --- shared steps ---------------------------------------------------------------------------


def read(obs_csv: str, max_rows: int) -> predictor.Observations:
    """Read and prepare observations from a path, or stdin for ``-``."""
    try:
        if obs_csv == "-":
            raw = read_observations_stream(sys.stdin.buffer, source_name(obs_csv), max_rows)
        else:
            raw = read_observations(obs_csv, max_rows)
    except TooManyRowsError as exc:
        raise InputError(f"{exc}; pass --max-rows to raise the limit") from exc
    return load_observations(raw)


def source_name(obs_csv: str) -> str:
    """How the observations' origin is named in text output."""
    return "standard input" if obs_csv == "-" else obs_csv


def predictor_call(compute: Callable[[], T]) -> T:
    """Run a predictor call; its ValueError (refused input) becomes an InputError."""
    try:
        return compute()
    except ValueError as exc:
        raise InputError(printable(str(exc))) from exc


def predict_at(
    obs: predictor.Observations, targets: Sequence[int], method: str
) -> predictor.Predictions:
    """Predictions at `targets` in the order given (the predictor batches and dedupes)."""
    at = np.asarray(targets, dtype=np.int64)
    return predictor_call(lambda: predictor.predict_observations(obs, at, method))


def stdout_console() -> Console:
    """Rich console on stdout; plain text (no colour codes) when stdout is not a terminal."""
    return Console(file=sys.stdout, highlight=False)


def emit_json(doc: dict[str, Any]) -> None:
    """Write one JSON document and flush, so a closed pipe is noticed while click can handle it."""
    click.echo(to_json(doc))
    sys.stdout.flush()


def elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)


# --- the store: options and opening it ---------------------------------------------------


def store_options(func: Callable[..., T]) -> Callable[..., T]:
    """--config and --redis-url, for every command that talks to the store."""
    func = click.option(
        "--redis-url",
        metavar="URL",
        default=None,
        help="Redis to use (redis://, rediss://, unix://); default: [redis] url, $REDIS_URL.",
    )(func)
    return click.option(
        "--config",
        "config_path",
        metavar="FILE",
        default=None,
        help="adaptalloc TOML ([redis], [appkey], [learner], [slurm]); "
        "default: $ADAPTALLOC_CONFIG, /etc/adaptalloc/adaptalloc.toml.",
    )(func)


@dataclass(frozen=True)
class StoreContext:
    """What a store command works with: the configuration and the opened store."""

    config: Config
    store: CurveStore


def open_store(config_path: str | None, redis_url: str | None) -> StoreContext:
    """Load the configuration and connect to the store (StoreUnavailable when unreachable)."""
    from plugin.store.connection import connect  # noqa: PLC0415 - see TYPE_CHECKING above
    from plugin.store.curves import CurveStore, Retention  # noqa: PLC0415

    config = load_config(config_path)
    client = connect(redis_url, config.redis)
    learner = config.learner
    store = CurveStore(
        client,
        Retention(learner.max_observations, learner.max_age_s),
        decisions_maxlen=learner.decisions_maxlen,
    )
    command = click.get_current_context(silent=True)
    if command is not None:
        command.call_on_close(lambda: warn_skipped(store))
    return StoreContext(config, store)


def warn_skipped(store: CurveStore) -> None:
    """Say on stderr how many corrupt store documents this command skipped, if any."""
    if store.skipped:
        log.warning(
            "store_records_skipped",
            total=sum(store.skipped.values()),
            **{f"{kind}s": count for kind, count in sorted(store.skipped.items())},
        )
