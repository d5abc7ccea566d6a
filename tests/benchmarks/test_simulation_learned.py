"""The learned simulation's speed: a tiled trace, every policy, both refit cadences.

(The comparison of learned adaptive with the baselines and the oracle that lived here, one
seed and a met / not-met verdict per cell, moved to test_simulation_fair.py: paired ratios
with 95% intervals over seeds, in every world model.)

Speed: a tiled trace (the NASA log repeated in time: a synthetic assumption that its
applications repeat; no real trace of 30,000 jobs is on this machine, and the Lublin model's
output here has 10,000) × every policy × one load × one seed; it prints each policy's
seconds, refits and fits run (the learner's fits are the cost to watch; the policies of one
experiment share their fits, so a learned policy run after another costs less: the order is
POLICIES'), and then the same cell in two processes, one per fit family (sweep.fit_families;
the schedules are asserted equal). Both refit cadences: the daemon's (the default) and the
sparse approximation; ADAPTALLOC_SIM_BENCH_REFITS=every,daemon puts the learner's rule before
the refit cadence (g = 0) beside it. The suite runs 3,000 jobs to stay within CI's time;
ADAPTALLOC_SIM_BENCH_JOBS=30000 ADAPTALLOC_SIM_BENCH_REFITS=daemon prints the target size.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

from plugin.formats.swf import read_swf
from policies.refit_cadence import REFIT_GROWTH
from policies.simulation import POLICIES, Experiment, Setup, at_load, sweep

from .tiling import tile

SWF = Path(__file__).resolve().parents[1] / "data" / "swf"
#: Trace sizes of the speed table, side by side (ADAPTALLOC_SIM_BENCH_JOBS=30000 gives the
#: issue's size).
SPEED_JOBS = tuple(int(n) for n in os.environ.get("ADAPTALLOC_SIM_BENCH_JOBS", "3000").split(","))
#: Refit cadences of the speed table (ADAPTALLOC_SIM_BENCH_REFITS=sparse for one): daemon (the
#: learner's refit cadence, g = REFIT_GROWTH), every (the same at g = 0: every change, the
#: daemon's rule before this cadence), sparse.
SPEED_REFITS = tuple(os.environ.get("ADAPTALLOC_SIM_BENCH_REFITS", "daemon,sparse").split(","))


@pytest.mark.benchmark
def test_speed_of_a_tiled_trace(capsys: pytest.CaptureFixture[str]) -> None:
    trace = read_swf(SWF / "NASA-iPSC-1993-3.1-cln.swf")
    table = Table(
        title="Seconds per policy, NASA tiled in time (a synthetic assumption: its "
        "applications repeat), load 0.7, seed 1"
    )
    table.add_column("policy")
    runs = [(count, cadence) for count in SPEED_JOBS for cadence in SPEED_REFITS]
    for count, cadence in runs:
        for column in (f"{count:,} jobs, {cadence}: s", "refits", "fits run"):
            table.add_column(column, justify="right")
    columns: dict[str, list[str]] = {p: [] for p in POLICIES}
    totals = []
    for count, cadence in runs:
        tiled = tile(trace.jobs, count)
        if cadence == "every":
            setup = Setup(machine=trace.machine, refits="daemon", refit_growth=0.0)
        else:
            setup = Setup(machine=trace.machine, refits=cadence)
        experiment = Experiment(at_load(tiled, trace.machine, 0.7), setup)
        total = 0.0
        serial = {}
        for policy in POLICIES:
            fits_before = len(experiment.fits)
            started = time.perf_counter()
            result = serial[policy] = experiment.run(policy)
            seconds = time.perf_counter() - started
            total += seconds
            assert len(result.schedule) == count
            fitted = len(experiment.fits) - fits_before
            columns[policy] += [f"{seconds:.1f}", str(result.refits), str(fitted)]
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=2) as pool:
            split = sweep(tiled, setup, [0.7], 1, POLICIES, mapper=pool.map, split=True)
        parallel = time.perf_counter() - started
        for policy in POLICIES:  # the same schedules in two processes
            assert np.array_equal(split[0].first[policy].schedule.end, serial[policy].schedule.end)
        totals.append(
            f"{count:,} jobs, {cadence} refits: {total:.1f} s in one process, {parallel:.1f} s "
            "in two (the fit families, sweep.fit_families)"
        )
    for policy, cells in columns.items():
        table.add_row(policy, *cells)
    with capsys.disabled():
        console = Console(width=150)
        console.print()
        console.print(table)
        console.print(
            "every policy: "
            + "; ".join(totals)
            + f". This machine has {os.cpu_count()} cores, shared with other sessions, whose "
            "figures vary up to 2x with their load (compare within one run). Refits: daemon = "
            "the learner's cadence (the default: refit once the runs grew by "
            f"g = {REFIT_GROWTH:g}, a new size, no curve, or a curve a day old; "
            "policies/refit_cadence.py), every = "
            "the learner's rule before it (g = 0, every change), sparse = only once an "
            "application's runs grew by half, on the latest 64 (an approximation). Before the "
            "daemon's cadence (sparse, serial), paired: 30,000 jobs 198 s before the learned "
            "curves' memo, 140 s after."
        )
