"""The simulation's figures in words: durations, the comparison rows and the set-up sentences,
shared by ``adaptalloc simulate``'s text output and its HTML report (simulation.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from plugin.formats.swf import SwfTrace, skipped_summary
from plugin.report.numbers import format_number, format_percent
from policies.simulation import Experiment, Metrics, PolicyResult
from policies.simulation.typed import PooledExperiment
from policies.simulation.world import describe

__all__ = ["FIGURES", "Figure", "duration", "setup_sentences", "table_rows"]

#: Relative changes against rigid smaller than this are shown as ±0%.
_SAME = 0.0005


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
    Figure("killed node-hours", lambda m: m.killed_node_hours, lambda x: f"{x:,.0f}", False),
    Figure(
        "submitted again after a kill", lambda m: float(m.resubmitted), lambda x: f"{x:,.0f}", False
    ),
    Figure("jobs sized with a curve", lambda m: float(m.sized), lambda x: f"{x:,.0f}", False),
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


def setup_sentences(
    trace: SwfTrace, experiment: Experiment | PooledExperiment, config: str
) -> list[str]:
    """What was simulated, in sentences (the text output's and the HTML report's head)."""
    setup = experiment.setup
    jobs = len(experiment.jobs)
    head = (
        f"Trace {trace.source}: {jobs:,} jobs on {trace.machine:,} nodes ({trace.machine_from}; "
        f"{format_number(trace.procs_per_node, 4)} processors per node from "
        f"{trace.procs_per_node_from})"
    )
    if jobs < trace.usable:
        head += f", the first {jobs:,} of {trace.usable:,} usable jobs"
    cap = setup.parallelism
    if isinstance(experiment, PooledExperiment):
        pools = ", ".join(str(p) for p in experiment.plan.pools)
        head = (
            f"Trace {trace.source}: {jobs:,} jobs on node pools {pools} (each job's processors "
            f"over its pool's cores per node), of {len(trace.jobs):,} read"
        )
        cap = experiment.parallelism
    out = [head + "."]
    if trace.skipped:
        out.append(f"Dropped {trace.skipped_total:,} lines: {skipped_summary(trace.skipped)}.")
    limits = experiment.limits
    if limits.modelled:
        out.append(
            f"{limits.modelled:,} jobs have no requested time: their limits are drawn from "
            "Tsafrir, Etsion and Feitelson's model of user estimates (JSSPP 2005: round "
            f"values up to {duration(limits.max_estimate)}, each ≥ the job's run time; an "
            "assumption, not data); the others keep their users' limits as written."
        )
    else:
        out.append("Time limits: the users' requested times as written (one for the whole range).")
    recorded = sum(not j.completed for j in experiment.jobs)
    if recorded:
        out.append(
            f"{recorded:,} jobs failed or were cancelled in the trace: they run as recorded "
            "(their size, their run time) under every policy."
        )
    apps = experiment.apps
    grouping = ", ".join(f"{n:,} jobs by {how}" for how, n in apps.grouping.items() if n)
    truth = experiment.truth
    curves = (
        f"world {setup.world}: {describe(setup.world, setup.factor, cap)}, σ ~ U[0, 2]; "
        f"{len(truth):,} hidden applications behind the learner's {len(apps):,} keys "
        f"({grouping}; {truth.applications_per_key(apps):.2f} per key, up to "
        f"{setup.codes_per_key}, shared with probability {setup.shared_codes:g}); run noise "
        f"{format_percent(setup.noise, 2)}, seed {setup.seed}"
    )
    stored = experiment.jobs_with_stored_curves
    if stored:
        curves = f"stored curves for {stored:,} jobs, {curves} for the rest"
    out.append(
        f"Moldable range {setup.moldable.low:g}-{setup.moldable.high:g} × the requested size; "
        f"{'EASY backfilling' if setup.backfill else 'FCFS without backfilling'}; a killed job "
        "is submitted again with twice its user's limit, up to the longest limit "
        f"({duration(experiment.max_time)}); true curves: {curves}; policy settings: {config}."
    )
    if setup.curves == "oracle":
        out.append(
            "--curves oracle: every adaptalloc policy was handed the true curves with each "
            "job's own run time. These figures are an upper bound no site reaches."
        )
    else:
        out.append(
            "Curves learned: the adaptalloc policies saw only curves fitted from their keys' "
            "earlier completed runs in this simulation. The oracles say what they know: "
            "oracle (true curve + own run time), an upper bound; oracle (curve shape only), "
            "the ceiling of a learner that identified every hidden application."
        )
    return out
