"""``adaptalloc report``: per-application efficiency reports (plugin/report/).

    adaptalloc report APP [--format text|json|csv] [--per-job] [--decisions N]
    adaptalloc report --all [--format text|json|csv] [--per-job]
    adaptalloc report (APP | --all) --html DIR [--format text|json] [--no-band]

Each takes ``--config FILE`` and ``--redis-url URL`` like the other store commands. The
pipeline is plugin.report's: query (the store) → assemble → render (terminal, JSON/CSV,
HTML). With ``--all`` a progress bar goes to standard error when it is a terminal.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import structlog
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from plugin.appkey import AppKey
from plugin.cli.common import elapsed_ms, emit_json, open_store, stdout_console, store_options
from plugin.errors import InputError
from plugin.policy_file import load_policy_config
from plugin.report import (
    FLEET_COLUMNS,
    INDEX,
    JOB_COLUMNS,
    SiteWriter,
    accuracy_section,
    app_document,
    app_inputs,
    assemble,
    fleet_document,
    fleet_inputs,
    fleet_row,
    fleet_scores,
    job_rows,
    jobs_document,
    render_app,
    render_fleet,
    render_fleet_accuracy,
    write_csv,
)
from plugin.report.model import AccuracySection, AppReport, FleetRow
from plugin.report.placement import query_placement, render_placement
from plugin.store.curves import CurveStore
from policies.config import DEFAULTS, PolicySettings

__all__ = ["report"]

log = structlog.get_logger("adaptalloc")


@contextmanager
def _progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr, advanced by the yielded function; silent when stderr is not a
    terminal (logs, pipes, tests)."""
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not console.is_terminal,
    )
    with bar:
        task = bar.add_task(what, total=total)
        yield lambda: bar.advance(task)


def _check_options(
    key: str | None, all_apps: bool, html_dir: Path | None, output_format: str, per_job: bool
) -> AppKey | None:
    if (key is None) == (not all_apps):
        raise click.UsageError("name one APP or give --all")
    if per_job and output_format == "text":
        raise click.UsageError("--per-job needs --format json or csv")
    if html_dir is not None and (output_format == "csv" or per_job):
        raise click.UsageError("--html writes pages; combine it with --format text or json only")
    if key is None:
        return None
    try:
        return AppKey.parse(key)
    except InputError as exc:
        raise click.BadParameter(str(exc), param_hint="APP") from None


def _emit_rows(
    output_format: str,
    apps: list[FleetRow] | None,
    jobs: list[dict[str, Any]] | None,
    accuracy: AccuracySection | None = None,
) -> None:
    """JSON or CSV of app rows, or of job rows (--per-job); text: the fleet table. The
    fleet's live accuracy (`accuracy`) follows in text and JSON (CSV has it per app)."""
    if jobs is not None:
        if output_format == "json":
            emit_json(jobs_document(jobs))
        else:
            write_csv(sys.stdout, JOB_COLUMNS, jobs)
        return
    rows = apps or []
    if output_format == "json":
        emit_json(fleet_document(rows, accuracy))
    elif output_format == "csv":
        write_csv(sys.stdout, FLEET_COLUMNS, fleet_document(rows)["apps"])
    else:
        render_fleet(rows, stdout_console())
        render_fleet_accuracy(accuracy, stdout_console())


def _fleet(
    store: CurveStore,
    html_dir: Path | None,
    output_format: str,
    per_job: bool,
    no_band: bool,
    generated: str,
    settings: PolicySettings = DEFAULTS,
) -> int:
    """Every app: a site, or rows; one app's report in memory at a time. Returns the count."""
    scores = fleet_scores(store)
    total, stream = fleet_inputs(store, scores=scores)
    accuracy = accuracy_section(scores, time.time(), fleet=True)
    band = html_dir is not None and not no_band
    reports = (assemble(inputs, band=band, settings=settings) for inputs in stream)
    if html_dir is None:
        rows: list[FleetRow] = []
        jobs: list[dict[str, Any]] = []
        with _progress(total, "report") as advance:
            for one in _counted(reports, advance):
                if per_job:
                    jobs += job_rows(one)
                else:
                    rows.append(fleet_row(one))
        # After the bar is gone, so that stdout holds only the output.
        _emit_rows(output_format, None if per_job else rows, jobs if per_job else None, accuracy)
        return total
    site = SiteWriter(html_dir, generated, accuracy=accuracy)
    with _progress(total, "report") as advance:
        for one in _counted(reports, advance):
            site.add(one)
        index = site.finish()
    _site_summary(output_format, html_dir, index, len(site.rows))
    return len(site.rows)


def _counted(reports: Iterable[AppReport], advance: Callable[[], None]) -> Iterator[AppReport]:
    for one in reports:
        yield one
        advance()


def _site_summary(output_format: str, directory: Path, index: Path, pages: int) -> None:
    if output_format == "json":
        emit_json({"html": {"directory": str(directory), "index": str(index), "pages": pages}})
    else:
        click.echo(f"wrote {pages:,} app pages and {index}")


def _single(
    store: CurveStore,
    app: AppKey,
    html_dir: Path | None,
    output_format: str,
    per_job: bool,
    shown: int,
    no_band: bool,
    generated: str,
    settings: PolicySettings = DEFAULTS,
) -> dict[str, Any]:
    """One app: text, JSON, CSV, or its page (added to the site in DIR, if there is one)."""
    inputs = app_inputs(store, app)
    if inputs is None:
        raise InputError(f"the store knows no app {app} (see adaptalloc apps)")
    # The band feeds the plots and the JSON document only.
    want_band = not no_band and not per_job and (html_dir is not None or output_format == "json")
    one = assemble(inputs, band=want_band, settings=settings)
    if html_dir is not None:
        # The page links to the site's index when DIR holds one (from report --all).
        site = SiteWriter(html_dir, generated, link_index=(html_dir / INDEX).is_file())
        page = site.add(one)
        if output_format == "json":
            emit_json({"html": {"directory": str(html_dir), "pages": [str(page)]}})
        else:
            click.echo(f"wrote {page}")
    elif output_format == "text":
        render_app(one, stdout_console(), shown)
        render_placement(query_placement(store, app), stdout_console())
    elif output_format == "json" and not per_job:
        emit_json({**app_document(one, shown), "placement": query_placement(store, app).to_dict()})
    elif per_job:
        _emit_rows(output_format, None, job_rows(one))
    else:
        _emit_rows(output_format, [fleet_row(one)], None)
    return {"app": str(app), "runs": one.runs, "decisions": one.decision_summary.count}


@click.command()
@click.argument("key", required=False, metavar="[APP]")
@click.option("--all", "all_apps", is_flag=True, help="Report on every app the store knows.")
@click.option(
    "--html",
    "html_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Write a self-contained static site into DIR: index.html and a page per app.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "csv"]),
    default="text",
    show_default=True,
    help="text: tables; json: one JSON document; csv: a header and one row per app or job.",
)
@click.option(
    "--per-job",
    is_flag=True,
    help="json/csv: one row per job (arrays and groups summarised) instead of per app.",
)
@click.option(
    "--decisions",
    "shown",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Newest decisions listed (text and json of one app); the figures count all of them.",
)
@click.option(
    "--no-band",
    is_flag=True,
    help="Leave out the ADEPT envelope band (it costs a refit per app, about 30 ms).",
)
@store_options
def report(
    key: str | None,
    all_apps: bool,
    html_dir: Path | None,
    output_format: str,
    per_job: bool,
    shown: int,
    no_band: bool,
    config_path: str | None,
    redis_url: str | None,
) -> None:
    """How applications scale and what adaptalloc did with them.

    APP (e.g. lulesh@large): runs per size against the curve, speedup and efficiency, the
    processor working set and the maximum useful size, anomalies, reliability warnings with
    the suggested next run size, the recent decisions, and live accuracy: finished jobs
    against the prediction of the curve that decided them, and what sizing would have
    bought. --all: one row per app, then the fleet's live accuracy.
    Efficiency at the chosen sizes and node-hours saved are model estimates from the
    current curve; what sizing would have bought, from the curve that decided. CSV cells
    that start with = + - @ get a leading ' (no formulas).
    """
    started = time.perf_counter()
    app = _check_options(key, all_apps, html_dir, output_format, per_job)
    ctx = open_store(config_path, redis_url)
    # The site's policy defaults: the cold-start advice judges curves by its gate.
    settings = load_policy_config(ctx.config.daemon.policy_file or None).defaults
    generated = datetime.now().strftime("%Y-%m-%d %H:%M")
    if app is not None:
        fields = _single(
            ctx.store, app, html_dir, output_format, per_job, shown, no_band, generated, settings
        )
    else:
        fields = {
            "apps": _fleet(
                ctx.store, html_dir, output_format, per_job, no_band, generated, settings
            )
        }
    sys.stdout.flush()
    log.info(
        "report",
        html=None if html_dir is None else str(html_dir),
        format=output_format,
        per_job=per_job,
        elapsed_ms=elapsed_ms(started),
        **fields,
    )
