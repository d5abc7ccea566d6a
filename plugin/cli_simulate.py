"""``adaptalloc simulate``: what a policy would have done with a real workload trace.

    adaptalloc simulate TRACE.swf [--config policy.toml] [--seed N] [--backfill easy|none]
        [--moldable LOW,HIGH] [--max-parallelism A] [--jobs N] [--store [--redis-url URL]]
        [--html DIR] [--format text|json] [--quiet]

The pipeline: read the trace (swf.py) -> replay it under every policy (policies.simulation)
-> render (here: a table, or the JSON document of DESIGN.md; sim_report.py for --html).

Lines of the trace that cannot be used are skipped and counted; the count by reason goes to
standard error (one ``swf_lines_skipped`` event) and into the JSON (``"skipped"``). A trace
that cannot be read or holds no usable job, and a policy file the policies refuse, are one
``adaptalloc: error: ...`` line and exit code 1. The progress bar is drawn on standard error,
only on a terminal and not with ``--quiet``.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
import structlog
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import policies
import predictor
from plugin.cli_common import elapsed_ms, emit_json, format_option, stdout_console
from plugin.cli_policy import load_policy_config
from plugin.errors import InputError, printable
from plugin.output import format_number, format_percent
from plugin.swf import SwfTrace, read_swf, skipped_summary
from policies.simulation import POLICIES, Experiment, Metrics, MoldableRule, PolicyResult, Setup

__all__ = [
    "STORE_APP_PREFIX",
    "comparison_table",
    "duration",
    "parse_moldable",
    "setup_sentences",
    "simulate",
    "simulation_document",
    "table_rows",
]

log = structlog.get_logger("adaptalloc")
T = TypeVar("T")
#: A trace job's app key in the store: this prefix and its SWF executable number.
STORE_APP_PREFIX = "exe-"
_NUMBER = r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*"
_MOLDABLE = re.compile(f"{_NUMBER},{_NUMBER}")
#: Relative changes against rigid smaller than this are shown as ±0%.
_SAME = 0.0005


# --- options ----------------------------------------------------------------------------------


def parse_moldable(text: str) -> MoldableRule:
    """``--moldable LOW,HIGH``: ValueError naming what is wrong."""
    match = _MOLDABLE.fullmatch(text)
    if not match:
        raise ValueError(f"{printable(text)!r} is not LOW,HIGH like 0.5,2")
    return MoldableRule(float(match.group(1)), float(match.group(2)))


def _moldable_callback(ctx: click.Context, param: click.Parameter, value: str) -> MoldableRule:
    try:
        return parse_moldable(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


# --- the store ------------------------------------------------------------------------------


def stored_curves(trace: SwfTrace, redis_url: str | None) -> dict[int, predictor.Curve]:
    """The store's curve for each executable of the trace that has one (app ``exe-<n>``)."""
    # Imported here: only --store needs Redis and the store's configuration.
    from plugin.appkey import AppKey  # noqa: PLC0415
    from plugin.cli_store import open_store  # noqa: PLC0415

    store = open_store(None, redis_url).store
    found: dict[int, predictor.Curve] = {}
    for exe in sorted({j.executable for j in trace.jobs if j.executable is not None}):
        curve = store.curve(AppKey.parse(f"{STORE_APP_PREFIX}{exe}"))
        if curve is not None:
            found[exe] = curve
    return found


# --- running ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One policy's result and how long the simulation took."""

    result: PolicyResult
    seconds: float

    @property
    def jobs_per_s(self) -> float:
        return len(self.result.schedule) / self.seconds if self.seconds > 0 else math.inf


@contextmanager
def _progress(show: bool) -> Iterator[Progress | None]:
    """A progress bar on standard error when it is a terminal and `show`; else None."""
    console = Console(stderr=True)
    if not (show and console.is_terminal):
        yield None
        return
    bar = Progress(
        TextColumn("{task.description:<9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("jobs"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with bar:
        yield bar


def run_policies(experiment: Experiment, show_progress: bool) -> dict[str, Run]:
    """Every policy on the experiment, timed, with a progress bar per policy."""
    runs: dict[str, Run] = {}
    total = len(experiment.jobs)
    with _progress(show_progress) as bar:
        for name in POLICIES:
            update: Callable[[int], None] | None = None
            if bar is not None:
                task = bar.add_task(name, total=total)

                def update(done: int, task: Any = task, bar: Progress = bar) -> None:
                    bar.update(task, completed=done)

            started = time.perf_counter()
            result = experiment.run(name, progress=update)
            runs[name] = Run(result, time.perf_counter() - started)
    return runs


# --- output -----------------------------------------------------------------------------------


def simulation_document(
    trace: SwfTrace,
    experiment: Experiment,
    runs: Mapping[str, Run],
    config_source: str,
) -> dict[str, Any]:
    """The JSON document: DESIGN.md's {"policies": {...}} and what the run was made of."""
    setup = experiment.setup
    adaptive = runs.get("adaptive")
    return {
        "policies": {name: run.result.metrics.to_dict() for name, run in runs.items()},
        "trace": {
            "path": trace.source,
            "machine": trace.machine,
            "machine_from": trace.machine_from,
            "jobs": len(experiment.jobs),
            "usable_jobs": trace.usable,
            "lines": trace.lines,
            "limits_from_runtime": trace.limits_from_runtime,
        },
        "skipped": dict(trace.skipped),
        "settings": {
            "seed": setup.seed,
            "backfill": "easy" if setup.backfill else "none",
            "moldable": {"low": setup.moldable.low, "high": setup.moldable.high},
            "max_parallelism": setup.parallelism,
            "config": config_source,
            "stored_curves": experiment.jobs_with_stored_curves,
        },
        "adaptive_rules": dict(adaptive.result.rules) if adaptive else {},
    }


def duration(seconds: float) -> str:
    """A duration for people: 45 s, 12.5 min, 3.20 h, 91.9 d."""
    if not math.isfinite(seconds):
        return "n/a"
    if seconds < 120:
        return f"{format_number(seconds, 3)} s"
    if seconds < 7200:
        return f"{format_number(seconds / 60, 3)} min"
    if seconds < 172_800:
        return f"{format_number(seconds / 3600, 3)} h"
    return f"{format_number(seconds / 86400, 3)} d"


def _change(value: float, rigid: float) -> str:
    """The change against rigid, for the table: " (-8.1%)"; "" when it has no meaning."""
    if rigid == 0 or not math.isfinite(value / rigid):
        return ""
    relative = value / rigid - 1.0
    if abs(relative) < _SAME:
        return " (±0%)"
    return f" ({format_percent(relative, signed=True)})"


@dataclass(frozen=True)
class Figure:
    """One row of the comparison: its label, how to read and show it, whether to compare."""

    label: str
    value: Callable[[Metrics], float]
    show: Callable[[float], str]
    compare: bool = True


FIGURES = (
    Figure("mean response", lambda m: m.mean_response_s, duration),
    Figure("mean wait", lambda m: m.mean_wait_s, duration),
    Figure(
        "mean bounded slowdown", lambda m: m.mean_bounded_slowdown, lambda x: format_number(x, 3)
    ),
    Figure("utilization", lambda m: m.utilization, lambda x: format_percent(x, 3), False),
    Figure("makespan", lambda m: m.makespan_s, duration),
    Figure("node-hours", lambda m: m.node_hours, lambda x: f"{x:,.0f}"),
    Figure("killed at their limit", lambda m: float(m.killed), lambda x: f"{x:,.0f}", False),
    Figure("jobs", lambda m: float(m.jobs), lambda x: f"{x:,.0f}", False),
)


def table_rows(results: Mapping[str, PolicyResult]) -> list[list[str]]:
    """One row per figure, one cell per policy; the change against rigid in parentheses."""
    rigid = results["rigid"].metrics if "rigid" in results else None
    rows = []
    for figure in FIGURES:
        row = [figure.label]
        for name, result in results.items():
            value = figure.value(result.metrics)
            cell = figure.show(value)
            if figure.compare and rigid is not None and name != "rigid":
                cell += _change(value, figure.value(rigid))
            row.append(cell)
        rows.append(row)
    return rows


def comparison_table(results: Mapping[str, PolicyResult], title: str | None = None) -> Table:
    """The figures (rows) per policy (columns), with the changes against rigid."""
    table = Table(box=box.SIMPLE_HEAD, title=title, show_header=True)
    table.add_column("")
    for name in results:
        table.add_column(name, justify="right")
    for row in table_rows(results):
        table.add_row(*row)
    return table


def setup_sentences(trace: SwfTrace, experiment: Experiment, config: str) -> list[str]:
    """What was simulated, in sentences (the text output's and the HTML report's head)."""
    setup = experiment.setup
    jobs = len(experiment.jobs)
    head = f"Trace {trace.source}: {jobs:,} jobs on {trace.machine:,} nodes ({trace.machine_from})"
    if jobs < trace.usable:
        head += f", the first {jobs:,} of {trace.usable:,} usable jobs"
    out = [head + "."]
    if trace.skipped:
        out.append(f"Skipped {trace.skipped_total:,} lines: {skipped_summary(trace.skipped)}.")
    if trace.limits_from_runtime:
        out.append(
            f"{trace.limits_from_runtime:,} jobs have no requested time: their time limit is "
            "modelled (the smallest round value ≥ 2× the run time; an assumption, not data)."
        )
    stored = experiment.jobs_with_stored_curves
    curves = (
        f"Downey's workload model (A log-uniform on [1, {setup.parallelism:g}], "
        f"σ uniform on [0, 2], seed {setup.seed})"
    )
    if stored:
        curves = f"stored curves for {stored:,} jobs, {curves} for the rest"
    out.append(
        f"Moldable range {setup.moldable.low:g}-{setup.moldable.high:g} × the requested size; "
        f"{'EASY backfilling' if setup.backfill else 'FCFS without backfilling'}; "
        f"curves: {curves}; policy settings: {config}."
    )
    return out


def render_text(
    trace: SwfTrace, experiment: Experiment, runs: Mapping[str, Run], config: str, out: Console
) -> None:
    """The comparison for people: what was simulated, the table, the adaptive rules."""

    def say(text: str) -> None:
        out.print(text, markup=False, highlight=False, soft_wrap=True)

    for sentence in setup_sentences(trace, experiment, config):
        say(sentence)
    out.print(comparison_table({name: run.result for name, run in runs.items()}))
    adaptive = runs.get("adaptive")
    if adaptive is not None and adaptive.result.rules:
        rules = ", ".join(f"{rule} {count:,}" for rule, count in adaptive.result.rules.items())
        say(f"Adaptive decisions by rule: {rules}.")
    say("In parentheses: the change against rigid (the trace as submitted).")


# --- the command ------------------------------------------------------------------------------


@click.command()
@click.argument("trace_path", metavar="TRACE.swf", type=click.Path(path_type=str))
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    metavar="policy.toml",
    help="Policy file for the adaptive policy (its [defaults]); the built-in defaults without it.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Seed of the workload model's curves; the same seed gives the same results.",
)
@click.option(
    "--backfill",
    type=click.Choice(["easy", "none"]),
    default="easy",
    show_default=True,
    help="easy: FCFS with EASY backfilling; none: FCFS alone.",
)
@click.option(
    "--moldable",
    "moldable",
    default="0.5,2",
    show_default=True,
    callback=_moldable_callback,
    metavar="LOW,HIGH",
    help="Each job may run on ⌈LOW·r⌉ to ⌊HIGH·r⌋ nodes (r: its requested size), within the "
    "machine; LOW ≤ 1 ≤ HIGH, 1,1 keeps jobs rigid.",
)
@click.option(
    "--max-parallelism",
    type=click.FloatRange(min=1.0, max=1e9),
    default=None,
    metavar="A",
    help="Largest average parallelism of the workload model (default: the machine's size).",
)
@click.option(
    "--jobs",
    "max_jobs",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Simulate only the trace's first N usable jobs.",
)
@click.option(
    "--store",
    "use_store",
    is_flag=True,
    help=f"Use the store's curve of app {STORE_APP_PREFIX}<executable> for jobs that have one.",
)
@click.option(
    "--redis-url",
    metavar="URL",
    default=None,
    help="With --store: the Redis to read (default: the adaptalloc TOML's [redis] url, "
    "$REDIS_URL).",
)
@click.option(
    "--html",
    "html_dir",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    metavar="DIR",
    help="Also write DIR/index.html with response-time and utilization charts.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@format_option
@click.pass_context
def simulate(
    ctx: click.Context,
    trace_path: str,
    config_path: str | None,
    seed: int,
    backfill: str,
    moldable: MoldableRule,
    max_parallelism: float | None,
    max_jobs: int | None,
    use_store: bool,
    redis_url: str | None,
    html_dir: str | None,
    quiet: bool,
    output_format: str,
) -> None:
    """Replay a workload trace under the adaptive policy, rigid and greedy, and compare them.

    TRACE.swf is a Standard Workload Format log (Parallel Workloads Archive). One partition of
    the trace's size (its MaxNodes) runs the jobs FCFS with EASY backfilling; jobs are killed
    at their time limit. Each job becomes moldable (--moldable) and gets a speedup curve from
    Downey's workload model (--max-parallelism, --seed) or, with --store, from the store;
    its trace runtime at its requested size fixes its work.

    rigid runs the trace as submitted; greedy gives each job as many nodes of its range as
    are free when it starts (what Slurm does with --nodes=MIN-MAX); adaptive sizes each job
    at submit with the policies of --config, as the daemon does.
    """
    started = time.perf_counter()
    if redis_url is not None and not use_store:
        raise click.UsageError("--redis-url goes with --store")
    config = load_policy_config(config_path)
    trace = read_swf(trace_path)
    if trace.skipped:
        log.warning(
            "swf_lines_skipped",
            path=trace.source,
            skipped=trace.skipped_total,
            reasons=dict(trace.skipped),
        )
    if max_jobs is not None:
        trace = trace.head(max_jobs)
    stored = stored_curves(trace, redis_url) if use_store else None
    setup = Setup(
        machine=trace.machine,
        moldable=moldable,
        backfill=backfill == "easy",
        seed=seed,
        max_parallelism=max_parallelism,
        settings=policies.effective(config),
    )
    try:
        experiment = Experiment(trace.jobs, setup, stored)
    except ValueError as exc:
        raise InputError(printable(str(exc))) from exc
    root_quiet = bool(ctx.find_root().params.get("quiet"))
    runs = run_policies(experiment, show_progress=not (quiet or root_quiet))

    if output_format == "json":
        emit_json(simulation_document(trace, experiment, runs, config.source))
    else:
        render_text(trace, experiment, runs, config.source, stdout_console())
        sys.stdout.flush()
    html_path = None
    if html_dir is not None:
        from plugin.sim_report import write_report  # noqa: PLC0415 (only --html needs it)

        results = {name: run.result for name, run in runs.items()}
        html_path = write_report(Path(html_dir), trace, experiment, results, config.source)
    log.info(
        "simulate",
        path=trace.source,
        jobs=len(experiment.jobs),
        machine=trace.machine,
        seed=seed,
        backfill=backfill,
        moldable=str(moldable),
        config=config.source,
        stored_curves=experiment.jobs_with_stored_curves,
        jobs_per_s={name: round(run.jobs_per_s) for name, run in runs.items()},
        html=html_path and printable(str(html_path)),
        elapsed_ms=elapsed_ms(started),
    )
