"""Simulator speed on the dev traces, and the policy comparison on both, in one run.

The first JOBS (3,000) jobs of both traces of tests/data/swf (NASA iPSC/860 on 128 nodes;
Lublin's model on 256; the learned policies refit curves, so whole traces take minutes: see
test_simulation_learned.py for the large run), every policy, the command's defaults (moldable
0.5-2, EASY, seed 1, the built-in policy settings). Speeds are wall-clock jobs per second on
this machine (shared, so nothing is asserted about them); the adaptive policy's speed is mostly
that of policies.decide, one call per job. Asserted: every job ran, and the machine was never
oversubscribed.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

from plugin.cli.simulate import comparison_table
from plugin.formats.swf import read_swf
from policies.simulation import POLICIES, Experiment, PolicyResult, Setup
from policies.simulation.metrics import busy_nodes

SWF = Path(__file__).resolve().parents[1] / "data" / "swf"
TRACES = ("NASA-iPSC-1993-3.1-cln.swf", "lublin_256.swf")
JOBS = 3000


@pytest.mark.benchmark
def test_simulator_speed_and_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    speed = Table(title="Simulation speed (jobs per second, this machine)")
    for column in ("trace", "jobs", "nodes", "read SWF", *POLICIES):
        speed.add_column(column, justify="left" if column == "trace" else "right")
    comparisons = []
    for name in TRACES:
        started = time.perf_counter()
        trace = read_swf(SWF / name).head(JOBS)
        read_s = time.perf_counter() - started
        experiment = Experiment(trace.jobs, Setup(machine=trace.machine))
        results: dict[str, PolicyResult] = {}
        rates = []
        for policy in POLICIES:
            started = time.perf_counter()
            results[policy] = experiment.run(policy)
            rates.append(len(trace.jobs) / (time.perf_counter() - started))

            schedule = results[policy].schedule
            assert len(schedule) == len(trace.jobs)
            assert np.all(np.isfinite(schedule.start))
            assert np.all(schedule.start >= schedule.submit)
            assert busy_nodes(schedule)[1].max() <= trace.machine
        speed.add_row(
            name,
            f"{len(trace.jobs):,}",
            str(trace.machine),
            f"{trace.lines / read_s:,.0f} lines/s",
            *(f"{r:,.0f}" for r in rates),
        )
        title = f"{name}: {len(trace.jobs):,} jobs on {trace.machine} nodes (change vs rigid)"
        comparisons.append(comparison_table(results, title=title))
    with capsys.disabled():
        console = Console(width=120)
        console.print()
        console.print(speed)
        for table in comparisons:
            console.print(table)
