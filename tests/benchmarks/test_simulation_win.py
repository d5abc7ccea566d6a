"""Does a learned adaptive policy win honestly? adaptive_scaled_checked and
adaptive_scaled_checked_range (policies/simulation/scaled.py) against rigid, greedy, adaptive,
the oracle and the oracle released as a range (oracle_range) (the learned-simulation aim). The other
scaled variants (adaptive_scaled, _explore, adaptive_checked) are in ADAPTALLOC_SIM_WIN_MORE=1.

Why the range variants: on CEA-Curie even the pinned oracle loses to greedy, because its size
is fixed at submit, often while the machine is momentarily full, and the load rule then gives
the user's minimum (tests/benchmarks/test_simulation_win_curie.py prints the evidence).
release = "range" has no constant of its own; choosing it over "pinned" was done on CEA-Curie
seed 1, loads 0.5-1.0, oracle curves (see that benchmark), and is scored here on every trace,
load and seed.

Data: the first JOBS usable jobs of NASA iPSC/860 (128 nodes) and Lublin's model (256 nodes)
from tests/data/swf and, when it is on this machine, the CEA-Curie sample (5,544 nodes): the
only one with its users' real requested times. NASA and Lublin have none, so their limits are
modelled from the run times (workload.user_estimate): there a limit-derived scale is close to
an oracle of the run's problem size, and only CEA-Curie tests the scaled variants honestly.
The command's defaults otherwise (moldable 0.5-2, EASY, 5% run noise, A = median request ×
U[1, 4]: a synthetic assumption, labelled in the output). Loads and seeds: LOADS and SEEDS
(env ADAPTALLOC_SIM_WIN_LOADS, ADAPTALLOC_SIM_WIN_SEEDS, ADAPTALLOC_SIM_WIN_TRACES); the
default is the two loads and the one seed that keep this to a few minutes here; the report's
table is ADAPTALLOC_SIM_WIN_LOADS=0.5,0.7,0.9,1.0, then SEEDS=1,2,3 for the deciding cells.

Constants: scaled.REFERENCE_S changes nothing but rounding. scaled.CHECK_GATE was chosen on
CEA-Curie, seed 1, loads 0.9 and 1.0, among 0.25, 0.5 and 1.0 (mean response 1.04/1.03 h,
1.04/1.03 h, 1.08/1.01 h: 0.25 and 0.5 tie, 0.5 admits more curves); MIN_CHECKS (3) and
CHECK_WINDOW (20) were set before any run, not tuned. All are scored here on every trace,
load and seed (the printout names where the gate was chosen).

The aim, per cell (figures averaged over the seeds): mean response ≤ 0.9 × rigid's and
≤ greedy's, kills ≤ rigid's, node-hours ≤ greedy's; printed met / not met with the failing
parts, and the distance to the oracle (true curves: an upper bound no site has) as
response / oracle's. Nothing about the aim is asserted (a measurement). Asserted: every job
ran under every policy, and a job the checked variant sized with a curve only its
out-of-sample gate admitted kept its user's limit.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table
from scipy import stats

from plugin.formats.swf import read_swf
from policies.simulation import Experiment, Setup, at_load
from policies.simulation.engine import simulate
from policies.simulation.metrics import summarize
from policies.simulation.scaled import (
    CHECK_GATE,
    CHECKED,
    CHECKED_RANGE,
    EXPLORE,
    GATE_ONLY,
    SCALED,
    CheckedScaledSizer,
)

SWF = Path(__file__).resolve().parents[1] / "data" / "swf"
CURIE = Path("/work/shared/data/swf/CEA-Curie-2011-sample.swf")
TRACES = {
    "NASA": SWF / "NASA-iPSC-1993-3.1-cln.swf",
    "Lublin": SWF / "lublin_256.swf",
    "CEA": CURIE,
}
JOBS = int(os.environ.get("ADAPTALLOC_SIM_WIN_JOBS", "1500"))
LOADS = tuple(float(x) for x in os.environ.get("ADAPTALLOC_SIM_WIN_LOADS", "0.7,1.0").split(","))
SEEDS = tuple(int(x) for x in os.environ.get("ADAPTALLOC_SIM_WIN_SEEDS", "1").split(","))
CHOSEN = tuple(os.environ.get("ADAPTALLOC_SIM_WIN_TRACES", "NASA,Lublin,CEA").split(","))
BASELINES = ("rigid", "greedy")
MORE = os.environ.get("ADAPTALLOC_SIM_WIN_MORE", "") == "1"
LEARNED = ("adaptive", CHECKED, CHECKED_RANGE, *((SCALED, EXPLORE, GATE_ONLY) if MORE else ()))
ORACLES = ("oracle", "oracle_range")
POLICIES = (*BASELINES, *LEARNED, *ORACLES)
#: Where the checked variant's constants were chosen (module doc).
CHOSEN_ON = "CEA-Curie, seed 1, loads 0.9 and 1.0"
#: Where the range variants' release was preferred (test_simulation_win_curie.py).
RANGE_CHOSEN_ON = "CEA-Curie, seed 1, loads 0.5-1.0, true curves"

Figures = dict[str, tuple[float, int, float, int]]


def _cell(name: str, load: float, seed: int) -> Figures:
    """Per policy: (mean response h, kills, node-hours, jobs decided with a curve)."""
    trace = read_swf(TRACES[name]).head(JOBS)
    jobs = at_load(trace.jobs, trace.machine, load)
    ex = Experiment(jobs, Setup(machine=trace.machine, seed=seed))
    out: Figures = {}
    user = np.array(ex.requests.limit)
    for policy in POLICIES:
        # Experiment.run's steps, keeping the sizer to inspect what its gate admitted
        sizer = ex.sizer(policy)
        schedule = simulate(jobs, ex.setup.machine, sizer, ex.curves.runtime)
        assert len(schedule) == len(jobs)
        if isinstance(sizer, CheckedScaledSizer) and sizer.admitted:
            admitted = np.array(sorted(sizer.admitted), dtype=np.int64)
            assert np.all(schedule.limit[admitted] == user[admitted])
        m = summarize(schedule, reference=ex.curves.at_request())
        rules = getattr(sizer, "rules", {})
        decided = sum(v for k, v in rules.items() if k != "fallback")
        out[policy] = (m.mean_response_s / 3600.0, m.killed, m.node_hours, decided)
    return out


def _half(values: list[float]) -> float:
    """Half the 95% interval (Student's t) of the mean over the seeds; nan for one seed."""
    k = len(values)
    if k < 2:
        return math.nan
    return float(stats.t.ppf(0.975, k - 1) * np.std(values, ddof=1) / math.sqrt(k))


def _verdict(p: tuple[float, ...], rigid: tuple[float, ...], greedy: tuple[float, ...]) -> str:
    misses = []
    if p[0] > 0.9 * rigid[0]:
        misses.append("resp>0.9·rigid")
    if p[0] > greedy[0]:
        misses.append("resp>greedy")
    if p[1] > rigid[1]:
        misses.append("kills>rigid")
    if p[2] > greedy[2]:
        misses.append("nh>greedy")
    return "met" if not misses else "not: " + ", ".join(misses)


@pytest.mark.benchmark
def test_learned_variants_against_the_aim(capsys: pytest.CaptureFixture[str]) -> None:
    names = [n for n in CHOSEN if n != "CEA" or CURIE.exists()]
    cells = [(n, load, seed) for n in names for load in LOADS for seed in SEEDS]
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_cell, *zip(*cells, strict=True)))
    seconds = time.perf_counter() - started
    by_cell: dict[tuple[str, float], list[Figures]] = {}
    for (name, load, _), figures in zip(cells, results, strict=True):
        by_cell.setdefault((name, load), []).append(figures)
    seeds = ",".join(map(str, SEEDS))
    table = Table(title=f"first {JOBS:,} jobs per trace, seeds {seeds} (means over seeds)")
    columns = ("trace", "load", "policy", "resp h", "±95%", "kills", "node-h", "±95%", "sized")
    for column in (*columns, "×oracle"):
        table.add_column(column, justify="left" if column in ("trace", "policy") else "right")
    table.add_column("aim")
    judged = (*LEARNED, *ORACLES)
    met = dict.fromkeys(judged, 0)
    for (name, load), runs in by_cell.items():
        mean = {p: tuple(np.mean([r[p] for r in runs], axis=0).tolist()) for p in POLICIES}
        oracle = mean["oracle"][0]
        for policy in POLICIES:
            resp, kills, nh, sized = mean[policy]
            verdict = ""
            if policy in judged:
                verdict = _verdict(mean[policy], mean["rigid"], mean["greedy"])
                met[policy] += verdict == "met"
            table.add_row(
                name,
                f"{load:g}",
                policy + ("*" if policy in ORACLES else ""),
                f"{resp:.2f}",
                f"{_half([r[policy][0] for r in runs]):.2f}",
                f"{kills:.1f}",
                f"{nh:,.0f}",
                f"{_half([r[policy][2] for r in runs]):,.0f}",
                f"{sized:.0f}",
                f"{resp / oracle:.2f}",
                verdict,
            )
        table.add_section()
    with capsys.disabled():
        console = Console(width=160)
        console.print()
        console.print(table)
        cells_n = len(by_cell)
        console.print(
            "cells meeting the whole aim (on the means over seeds): "
            + ", ".join(f"{p} {met[p]}/{cells_n}" for p in judged)
        )
        console.print(
            "*oracle, oracle_range: the true curves, an upper bound no site has. ±95%: half the "
            "Student-t interval of the mean over the seeds (nan for one seed). sized: jobs "
            "decided with a curve (not left as submitted). True curves are synthetic (A = "
            "median request × U[1, 4], σ ~ U[0, 2]). NASA and Lublin limits are modelled "
            "from run times, so the "
            f"scaled variants' scale is near an oracle there; CEA's are users' own. "
            f"CHECK_GATE {CHECK_GATE} chosen on {CHOSEN_ON}; release = range preferred to "
            f"pinned on {RANGE_CHOSEN_ON}. {seconds:.0f} s."
        )
