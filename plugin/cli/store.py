"""Subcommands for the curve store: apps, app, forget, import sacct|csv, learn, store migrate.

    adaptalloc apps [--format json]
    adaptalloc app KEY [--observations N] [--format json]
    adaptalloc forget KEY [--yes] [--format json]
    adaptalloc import sacct --since DATE [--until DATE] [--window HOURS] [--pause S] [--restart]
    adaptalloc import csv FILE --app KEY [--size CLASS]
    adaptalloc learn --once [--debounce S] [--no-refit]

Each takes ``--config FILE`` (the adaptalloc TOML, plugin/config.py) and ``--redis-url URL``.
Failures (Redis unreachable, Slurm errors, bad keys) are plugin.errors exceptions, which
plugin/cli/root.py turns into one ``adaptalloc: error: ...`` line and exit code 1.
"""

from __future__ import annotations

import math
import re
import sys
import time
from datetime import datetime
from typing import Any

import click
import structlog
from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from plugin.appkey import AppKey
from plugin.cli.common import (
    StoreContext,
    elapsed_ms,
    emit_json,
    format_option,
    open_store,
    stdout_console,
    store_options,
)
from plugin.errors import InputError, printable
from plugin.formats.observations_csv import DEFAULT_MAX_ROWS
from plugin.learning.borrow import borrowed_for
from plugin.learning.importers import import_csv, import_sacct
from plugin.learning.learner import IngestStats, Learner, RefitOutcome, refit_app
from plugin.report.numbers import format_number, format_runtime
from plugin.slurm import slurm_reader
from plugin.store import keys
from plugin.store.curves import AppSummary, CurveRecord
from plugin.store.migrate import migrate, migrate_if_needed

__all__ = ["app", "apps", "forget", "import_group", "learn", "parse_when", "store_group"]

log = structlog.get_logger("adaptalloc")
_RELATIVE = re.compile(r"now-([0-9]{1,9})(m|min|minutes|h|hours|d|days|w|weeks)")
_UNIT_S = {
    "m": 60,
    "min": 60,
    "minutes": 60,
    "h": 3600,
    "hours": 3600,
    "d": 86400,
    "days": 86400,
    "w": 604800,
    "weeks": 604800,
}


def parse_when(text: str, now: float | None = None) -> float:
    """A date for --since/--until: ISO 8601 (local time unless it has an offset), ``now``,
    ``today``, or ``now-7days`` (m, h, d, w). Returns Unix seconds."""
    value = text.strip().lower()
    current = time.time() if now is None else now
    if value == "now":
        return current
    if value == "today":
        return (
            datetime.fromtimestamp(current)
            .replace(hour=0, minute=0, second=0, microsecond=0)
            .timestamp()
        )
    match = _RELATIVE.fullmatch(value)
    if match:
        return current - int(match.group(1)) * _UNIT_S[match.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(
            f"{printable(text)[:40]!r} is not a date: use 2026-01-31, 2026-01-31T12:00, "
            "now, today or now-7days"
        ) from None


def _when_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_when(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _app_callback(ctx: click.Context, param: click.Parameter, value: str) -> AppKey:
    try:
        return AppKey.parse(value)
    except InputError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _jsonable(value: Any) -> Any:
    """Non-finite floats become null (JSON has no NaN), recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _emit(doc: dict[str, Any]) -> None:
    emit_json(_jsonable(doc))


def _stamp(when: float | None, short: bool = False) -> str:
    if when is None or not math.isfinite(when) or when <= 0:
        return "—"
    return datetime.fromtimestamp(when).strftime("%m-%d %H:%M" if short else "%Y-%m-%d %H:%M")


def _status_cell(record: CurveRecord | None) -> str:
    """One short phrase: reliable, which reliability problems, or why there is no curve."""
    if record is None:
        return "not fitted yet"
    if record.error:
        return "unreadable"
    if record.curve is None:
        return "none: " + _short_note(record.note)
    return _reliable_cell(record)


def _short_note(note: str) -> str:
    if "two or more distinct sizes" in note:
        return "1 size only"
    return printable(note)[:40]


def _curve_cell(record: CurveRecord | None) -> str:
    if record is None:
        return "not fitted yet"
    if record.error:
        return "unreadable (refit replaces it)"
    if record.curve is None:
        return f"none: {printable(record.note)}"
    c = record.curve
    return f"A={format_number(c.A)} σ={format_number(c.sigma)}"


def _sizes_cell(record: CurveRecord | None) -> str:
    if record is None or record.curve is None:
        return "—"
    c = record.curve
    useful = "?" if c.max_useful_n is None else f"{c.max_useful_n:,}"
    return f"{useful} / {c.pws_n:,}"


def _reliable_cell(record: CurveRecord | None) -> str:
    if record is None or record.curve is None:
        return "—"
    if record.reliable:
        return "reliable"
    problems = [p.problem for p in record.curve.diagnostics.reliability]
    return "unreliable: " + ", ".join(problems) if problems else "unreliable"


# --- apps, app, forget -----------------------------------------------------------------------


@click.command()
@store_options
@format_option
def apps(config_path: str | None, redis_url: str | None, output_format: str) -> None:
    """List the apps the store knows: runs, curve, reliability, last run."""
    started = time.perf_counter()
    ctx = open_store(config_path, redis_url)
    found = ctx.store.apps()
    if output_format == "json":
        _emit({"apps": [s.to_dict() for s in found]})
    else:
        _render_apps(found, stdout_console())
    log.info("apps", count=len(found), elapsed_ms=elapsed_ms(started))


def _render_apps(found: list[AppSummary], console: Console) -> None:
    """One row per app; A, σ and versions are in ``adaptalloc app KEY`` and the JSON."""
    if not found:
        console.print("The store knows no apps yet (adaptalloc learn, adaptalloc import).")
        return
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("app", no_wrap=True, overflow="ellipsis", max_width=24)
    table.add_column("runs", justify="right", no_wrap=True)
    table.add_column("last run", no_wrap=True)
    table.add_column("useful/pws", justify="right", no_wrap=True)
    table.add_column("curve", min_width=20, overflow="fold")
    for s in found:
        table.add_row(
            str(s.app),
            f"{s.observations:,}",
            _stamp(s.last_run, short=True),
            _sizes_cell(s.curve),
            _status_cell(s.curve) + (", refit due" if s.dirty else ""),
        )
    console.print(table)
    sys.stdout.flush()


@click.command()
@click.argument("key", callback=_app_callback, metavar="KEY")
@click.option(
    "--observations",
    "show",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Newest observations to list (0: none).",
)
@click.option(
    "--decisions",
    "show_decisions",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Newest decisions about the app to list.",
)
@store_options
@format_option
def app(
    key: AppKey,
    show: int,
    show_decisions: int,
    config_path: str | None,
    redis_url: str | None,
    output_format: str,
) -> None:
    """Show one app (KEY as `adaptalloc apps` lists it, e.g. lulesh@large)."""
    ctx = open_store(config_path, redis_url)
    summary = ctx.store.summary(key)
    if summary is None:
        raise InputError(f"the store knows no app {key} (see adaptalloc apps)")
    observations = ctx.store.observations(key)
    newest = list(reversed(observations))[:show] if show else []
    decisions = ctx.store.decisions(key, show_decisions) if show_decisions else []
    guard = ctx.store.guard_counts(key)
    censored = list(reversed(ctx.store.censored_runs(key)))[:show] if show else []
    by_type = {t: ctx.store.curve_record(key, t) for t in ctx.store.node_types(key)}
    borrowed = None
    if summary.curve is None or summary.curve.curve is None:
        found = borrowed_for(ctx.store, key)
        borrowed = None if found is None else {**found.to_dict(), "note": found.note}
    if output_format == "json":
        _emit(
            {
                **summary.to_dict(),
                "recent_observations": [o.to_dict() for o in newest],
                "decisions": [d.to_dict() for d in decisions],
                "guard": guard,
                "recent_censored_runs": [o.to_dict() for o in censored],
                "node_type_curves": {
                    t: None if r is None else r.to_dict() for t, r in by_type.items()
                },
                "borrowed_curve": borrowed,
            }
        )
        return
    console = stdout_console()
    record = summary.curve
    console.print(
        f"[bold]{key}[/bold]: {summary.observations:,} runs, last "
        f"{_stamp(summary.last_run)}" + (", refit due" if summary.dirty else "")
    )
    console.print(f"curve: {_curve_cell(record)}", highlight=False)
    if record is not None and record.curve is not None:
        c = record.curve
        console.print(
            f"  version {record.version}, {record.method}, fitted {_stamp(record.fitted_at)} "
            f"from {record.n_observations:,} runs; T(1) {format_runtime(c.t1)}"
            f"{'' if c.t1_known else ' (extrapolated)'}, fit error {c.fit_error:.1%}; "
            f"max useful {_sizes_cell(record)} (pws); reliable: {_reliable_cell(record)}",
            highlight=False,
        )
        for problem in c.diagnostics.reliability:
            console.print(f"  - {printable(problem.action)}", highlight=False)
    for node_type, typed in by_type.items():
        console.print(f"curve on {node_type}: {_curve_cell(typed)}", highlight=False)
    if borrowed is not None:
        console.print(f"decisions use the {printable(str(borrowed['note']))}", highlight=False)
    if newest:
        table = Table(box=box.SIMPLE_HEAD, title="newest runs")
        for column in ("job", "nodes", "runtime", "ended", "source"):
            table.add_column(column, justify="right" if column in ("nodes", "runtime") else "left")
        for o in newest:
            table.add_row(
                o.job_id, f"{o.nodes:,}", format_runtime(o.runtime_s), _stamp(o.end_time), o.source
            )
        console.print(table)
    console.print(
        f"censored runs (stopped at a limit or preempted, not fitted): {guard['censored_runs']:,}"
        f"; limits raised by the kill guard: {guard['limits_raised']:,}"
        f"; killed at a limit adaptalloc set: {guard['killed_at_our_limit']:,}"
        f"; limit safety x{guard['limit_safety']:g}",
        highlight=False,
    )
    for o in censored:
        console.print(
            f"  censored {o.job_id}: at least {format_runtime(o.runtime_s)} on {o.nodes:,} "
            f"nodes, ended {_stamp(o.end_time)}{', preempted' if o.preempted else ''}",
            highlight=False,
        )
    for d in decisions:
        console.print(
            f"decision {d.entry_id}: {printable(str(d.to_dict()))[:200]}", highlight=False
        )
    sys.stdout.flush()


@click.command()
@click.argument("key", callback=_app_callback, metavar="KEY")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@store_options
@format_option
def forget(
    key: AppKey, yes: bool, config_path: str | None, redis_url: str | None, output_format: str
) -> None:
    """Remove everything the store keeps about one app: runs, curve (decisions stay logged).

    The next runs of the app start a new curve, e.g. after the application was rebuilt.
    """
    ctx = open_store(config_path, redis_url)
    summary = ctx.store.summary(key)
    if not yes:
        if not sys.stdin.isatty():
            raise InputError("forget needs --yes when it cannot ask (stdin is not a terminal)")
        runs = 0 if summary is None else summary.observations
        if not click.confirm(f"Forget {key} ({runs:,} runs and its curve)?", err=True):
            raise InputError(f"{key} not forgotten")
    existed = ctx.store.forget(key)
    log.info("forget", app=str(key), existed=existed)
    if output_format == "json":
        _emit({"app": str(key), "forgotten": existed})
    else:
        click.echo(f"forgot {key}" if existed else f"the store knew no app {key}")


# --- import, learn ---------------------------------------------------------------------------


def _refits(ctx: StoreContext, apps: list[AppKey] | None = None) -> list[RefitOutcome]:
    """Refit `apps` now (default: every dirty app), with the configured method."""
    targets = ctx.store.dirty_apps() if apps is None else apps
    return [refit_app(ctx.store, app, ctx.config.learner.method) for app in targets]


@click.group("import")
def import_group() -> None:
    """Backfill the curve store from accounting history or observation CSVs."""


def _progress_bar() -> Progress | None:
    console = Console(stderr=True)
    if not console.is_terminal:
        return None
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
        console=console,
    )


@import_group.command("sacct")
@click.option(
    "--since",
    required=True,
    callback=_when_callback,
    metavar="DATE",
    help="Start: 2026-01-31, 2026-01-31T12:00, today, now-30days.",
)
@click.option("--until", callback=_when_callback, metavar="DATE", help="End (default: now).")
@click.option(
    "--window",
    "window_h",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="HOURS",
    help="Hours of accounting per sacct query (default 24).",
)
@click.option(
    "--pause",
    "pause_s",
    type=click.FloatRange(min=0),
    default=None,
    metavar="S",
    help="Seconds to wait between queries, to spare slurmdbd (default 0).",
)
@click.option("--restart", is_flag=True, help="Ignore this range's checkpoint; start over.")
@click.option(
    "--refit/--no-refit", default=True, show_default=True, help="Refit the apps that got new runs."
)
@store_options
@format_option
def import_sacct_command(
    since: float,
    until: float | None,
    window_h: float | None,
    pause_s: float | None,
    restart: bool,
    refit: bool,
    config_path: str | None,
    redis_url: str | None,
    output_format: str,
) -> None:
    """Backfill observations from Slurm accounting, window by window, resumably.

    Run again with the same --since/--until to resume after an interruption.
    """
    ctx = open_store(config_path, redis_url)
    end = time.time() if until is None else until
    learner = Learner(
        ctx.store, slurm_reader(ctx.config.slurm.backend, ctx.config.slurm.timeout_s), ctx.config
    )
    window = (window_h or ctx.config.learner.import_window_h) * 3600.0
    pause = ctx.config.learner.import_pause_s if pause_s is None else pause_s
    bar = _progress_bar()

    def progress(done: float, total_end: float, stats: IngestStats) -> None:
        if bar is not None:
            bar.update(
                task,
                completed=done - since,
                description=f"{stats.added:,} new runs, {_stamp(done)}",
            )

    if bar is not None:
        bar.start()
        task = bar.add_task("reading accounting", total=max(end - since, 1.0))
    try:
        result = import_sacct(
            ctx.store,
            learner.reader,
            learner.ingestor,
            since,
            end,
            window,
            pause,
            restart,
            progress,
        )
    finally:
        if bar is not None:
            bar.stop()
    refits = _refits(ctx) if refit else []
    doc = {**result.to_dict(), "refits": [r.to_dict() for r in refits]}
    if output_format == "json":
        _emit(doc)
        return
    resumed = (
        "" if result.resumed_from is None else f" (resumed after {_stamp(result.resumed_from)})"
    )
    click.echo(
        f"read {result.stats.seen:,} completed jobs from {_stamp(since)} to {_stamp(end)} in "
        f"{result.windows} windows{resumed}: {result.stats.added:,} new runs, "
        f"{result.stats.duplicates:,} already known, {sum(result.stats.rejected.values()):,} "
        f"refused, {len(result.stats.apps):,} apps; {len(refits)} curves refitted"
    )


@import_group.command("csv")
@click.argument("file", type=click.Path(dir_okay=False, path_type=str), metavar="FILE")
@click.option(
    "--app",
    "key",
    required=True,
    callback=_app_callback,
    metavar="KEY",
    help="App key the runs belong to (name or name@size).",
)
@click.option("--size", default=None, metavar="CLASS", help="Problem-size class (or KEY@CLASS).")
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_ROWS,
    show_default=True,
    metavar="ROWS",
    help="Refuse files with more rows.",
)
@click.option(
    "--refit/--no-refit", default=True, show_default=True, help="Refit the app's curve now."
)
@store_options
@format_option
def import_csv_command(
    file: str,
    key: AppKey,
    size: str | None,
    max_rows: int,
    refit: bool,
    config_path: str | None,
    redis_url: str | None,
    output_format: str,
) -> None:
    """Add the runs of an observation CSV (header n,runtime) to an app; idempotent."""
    if size is not None:
        if key.size is not None:
            raise InputError(f"--app {key} already names a size class; leave out --size")
        key = AppKey.of(key.name, size).owned_by(key.owner)
    ctx = open_store(config_path, redis_url)
    result = import_csv(ctx.store, file, key, max_rows)
    # A study of several sizes went to one key per size (import_csv): refit each.
    targets = sorted(AppKey.parse(text) for text in result.stats.apps)
    refits = _refits(ctx, targets) if refit and result.stats.added else []
    doc = {**result.to_dict(), "refits": [r.to_dict() for r in refits]}
    if output_format == "json":
        _emit(doc)
        return
    click.echo(
        f"{key}: {result.stats.added:,} new runs, {result.stats.duplicates:,} already "
        f"imported" + (f"; curve version {refits[0].version}" if refits else "")
    )


@click.command()
@click.option("--once", is_flag=True, help="One poll (and refit), then exit.")
@click.option(
    "--refit/--no-refit", default=True, show_default=True, help="Refit dirty apps after the poll."
)
@click.option(
    "--debounce",
    "debounce_s",
    type=click.FloatRange(min=0),
    default=None,
    metavar="S",
    help="Refit only apps dirty for S seconds (default [learner]).",
)
@store_options
@format_option
def learn(
    once: bool,
    refit: bool,
    debounce_s: float | None,
    config_path: str | None,
    redis_url: str | None,
    output_format: str,
) -> None:
    """Read newly finished jobs from Slurm into the store, and refit what changed.

    The daemon runs this continuously; --once is for admins and tests.
    """
    if not once:
        raise click.UsageError("only --once is available; the daemon runs the learner continuously")
    ctx = open_store(config_path, redis_url)
    migrate_if_needed(ctx.store.client)
    learner = Learner(
        ctx.store, slurm_reader(ctx.config.slurm.backend, ctx.config.slurm.timeout_s), ctx.config
    )
    poll = learner.poll_once()
    aged = learner.age_out()
    refits = learner.refit_dirty(debounce_s=debounce_s) if refit else []
    if output_format == "json":
        _emit({"poll": poll.to_dict(), "aged_out": aged, "refits": [r.to_dict() for r in refits]})
        return
    s = poll.stats
    click.echo(
        f"{poll.source}: {s.seen:,} finished jobs from {_stamp(poll.since)} to "
        f"{_stamp(poll.until)}: {s.added:,} new runs, {s.duplicates:,} already known, "
        f"{s.unsettled:,} not settled yet, {sum(s.rejected.values()):,} refused; "
        f"{len(poll.scoring.scores):,} scored against the prediction that decided them; "
        f"{len(refits)} curves refitted"
    )


@click.group("store")
def store_group() -> None:
    """Maintain the curve store itself (its key schema)."""


@store_group.command("migrate")
@store_options
@format_option
def store_migrate(config_path: str | None, redis_url: str | None, output_format: str) -> None:
    """Copy the v1 key schema (adaptalloc:v1:) to v2 (adaptalloc:v2:), keeping v1.

    Idempotent and resumable: keys already in v2 are skipped, so run it again after an
    interruption. The learner runs it by itself at start when v2 is still empty. Stop v1
    daemons first: what they write after their key was copied stays in v1.
    """
    ctx = open_store(config_path, redis_url)
    bar = _progress_bar()
    if bar is None:
        result = migrate(ctx.store.client)
    else:
        with bar:
            task = bar.add_task("migrating v1 keys", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            result = migrate(ctx.store.client, progress)
    if output_format == "json":
        _emit(result.to_dict())
        return
    click.echo(
        f"{result.found:,} v1 keys: {result.copied:,} copied to {keys.PREFIX}, "
        f"{result.skipped:,} already there, {result.gone:,} expired meanwhile, "
        f"{result.unmapped:,} not adaptalloc's (left in v1); the v1 keys are kept"
    )
