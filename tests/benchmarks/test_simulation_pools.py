"""Node types in the simulator: CEA Curie's two pools, with and without the multi-partition
what-if.

Data: the team's CEA-Curie sample (skipped when it is not on this machine), its first JOBS
usable jobs (jobs of partitions without a pool dropped, counted), pools from its header
(large = 360 fat nodes × 32 cores, partition 4; standard = 5,040 thin nodes × 16 cores,
partition 10; speed 1 on both: the trace gives no per-type speed), seeds 1-3, offered loads
0.7 and 1.0 of all pools' processors. Policies: rigid, greedy, adaptive (learned: curves
fitted per (application, pool) from the simulation's own earlier runs) and oracle (adaptive
handed the true curves: an upper bound no site has). True curves are synthetic (A = median
request in processors × U[1, 4], σ ~ U[0, 2], for hidden applications drawn apart from the
learner's keys; typed.py, world.py), labelled so where printed.
Multi-partition: every job of large or standard submitted with -p large,standard (rigid and
greedy: Slurm's first that can start it; adaptive and oracle: earliest predicted completion);
and adaptive again without the daemon's fallback to the curve of all an application's runs
on a pool where it has none (PoolPlan.fallback). That fallback is refused across cores per
node (policies/fallback.py), and Curie's two pools differ (32 and 16), so the two adaptive
rows must agree: a check that the simulator's fallback is the daemon's.

No constant here was chosen on any data: the moldable range, noise and policy settings are
the command's defaults. Nothing about which policy wins is asserted (a measurement);
asserted: every placed job ran once, on one pool, and the per-pool counts add up.
ADAPTALLOC_SIM_POOLS_JOBS changes JOBS (1,500 keeps the run near 80 s here).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from plugin.formats.swf import read_swf
from policies.simulation import Setup, Summary, sweep
from policies.simulation.experiment import ORACLE_LABELS
from policies.simulation.pools import from_header
from policies.simulation.typed import PoolPlan

CURIE = Path("/work/shared/data/swf/CEA-Curie-2011-sample.swf")
JOBS = int(os.environ.get("ADAPTALLOC_SIM_POOLS_JOBS", "1500"))
LOADS = (0.7, 1.0)
SEEDS = 3
POLICIES = ("rigid", "greedy", "adaptive", "oracle")
LABELS = {
    "rigid": "rigid",
    "greedy": "greedy",
    "adaptive": "adaptive (learned)",
    "oracle": ORACLE_LABELS["oracle"],
}


def _pm(summary: Summary, key: str, scale: float = 1.0, digits: int = 2) -> str:
    """The mean over seeds ± half its 95% interval, divided by `scale`."""
    text = f"{summary.mean[key] / scale:.{digits}f}"
    half = summary.ci95[key]
    if half is not None:
        text += f" ± {(half[1] - half[0]) / 2 / scale:.{digits}f}"
    return text


@pytest.mark.benchmark
@pytest.mark.skipif(not CURIE.exists(), reason="the CEA-Curie sample is not on this machine")
def test_curie_pools_with_and_without_the_multi_partition_what_if(
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = read_swf(CURIE).head(JOBS)
    pools = from_header(trace.comments)
    assert pools is not None
    assert [p.name for p in pools] == ["large", "standard"]
    setup = Setup(machine=trace.machine, seed=1)
    table = Table(
        title=f"CEA-Curie, first {JOBS:,} jobs, seeds 1-{SEEDS}: mean over seeds ± 95% half-width"
    )
    for column in ("what-if", "load", "policy", "mean response h", "mean wait h", "killed"):
        table.add_column(column, justify="left" if column in ("what-if", "policy") else "right")
    for column in ("node-h large", "jobs large", "node-h standard", "jobs standard"):
        table.add_column(column, justify="right")
    dropped = None
    cases = (
        ("own partition", (), True, POLICIES),
        ("-p large,standard", (0, 1), True, POLICIES),
        ("-p large,standard, no fallback", (0, 1), False, ("adaptive",)),
    )
    for what, multi, fallback, names in cases:
        plan = PoolPlan(pools, multi, fallback)
        for result in sweep(trace.jobs, setup, LOADS, SEEDS, names, pools=plan):
            dropped = getattr(result.experiment, "dropped", None)
            for name in names:
                summary = result.policies[name]
                run = result.first[name]
                assert sum(v["jobs"] for v in run.pools.values()) == len(run.schedule)
                table.add_row(
                    what,
                    f"{result.load:g}",
                    LABELS[name],
                    _pm(summary, "mean_response_s", 3600.0),
                    _pm(summary, "mean_wait_s", 3600.0),
                    _pm(summary, "killed", digits=1),
                    f"{summary.pools['large']['node_hours']:,.0f}",
                    f"{summary.pools['large']['jobs']:,.0f}",
                    f"{summary.pools['standard']['node_hours']:,.0f}",
                    f"{summary.pools['standard']['jobs']:,.0f}",
                )
    with capsys.disabled():
        console = Console(width=200)
        console.print()
        console.print(table)
        console.print(
            f"Pools from the trace header: {', '.join(map(str, pools))}; dropped: {dropped}. "
            "oracle = adaptive handed the true curve and each job's own run time (an upper "
            "bound); the true curves are "
            "synthetic (A = median request in processors × U[1, 4], σ ~ U[0, 2]; per-type "
            "speed 1, an assumption); no constant was chosen on this data. Node-hours add "
            "fat (32-core) and thin (16-core) nodes only per pool, never across. 'no "
            "fallback': the learned curve of a pool comes from its own runs only, instead of "
            "the daemon's fallback to the curve of all the application's runs, which it "
            "refuses when they ran on nodes of other cores (so here the rows agree)."
        )
