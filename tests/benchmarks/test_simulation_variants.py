"""Pinned against range release, kill guard off against on: the adaptive policy's variants
side by side on the dev traces (in the simulator with learned curves).

Data: the first JOBS usable jobs of NASA iPSC/860 (128 nodes) and Lublin's model (256 nodes)
from tests/data/swf and, when it is on this machine, the CEA-Curie sample (5,544 nodes), at
offered loads 0.7 and 1.0, seed 1, the simulate command's defaults (moldable 0.5-2, EASY, 5%
run noise, A = median request × U[1, 4]: a synthetic assumption). Policy settings are the
built-in defaults; nothing here is tuned, so no constant was chosen on these traces.

Three blocks:

* learned: the policies see only the curves fitted from earlier completed runs;
* oracle*: the same variants handed the true curves (an upper bound no site has, labelled);
* tight*: oracle curves, every user's limit replaced by 1.1 × the job's run time at its
  requested size and 20% run noise (synthetic assumptions: with the traces' own generous
  limits and 5% noise no limit adaptalloc shortens is ever outrun, so the guard has nothing
  to do; this block is where it has work).

Printed per (trace, load, block, policy): mean response (h), node-hours, kills, killed
node-hours, limits raised by the guard. The guard's saving is kills(adaptive) −
kills(adaptive_guard), the range's effect adaptive_range against adaptive. Nothing is
asserted about the figures (a measurement); asserted: every job ran under every policy, and
with the guard no job was killed at a limit adaptalloc shortened.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from plugin.formats.swf import read_swf
from policies.simulation import Experiment, Setup, TraceJob, at_load

SWF = Path(__file__).resolve().parents[1] / "data" / "swf"
CURIE = Path("/work/shared/data/swf/CEA-Curie-2011-sample.swf")
LOADS = (0.7, 1.0)
JOBS = int(os.environ.get("ADAPTALLOC_SIM_VARIANT_JOBS", "1000"))
BASELINES = ("rigid", "greedy")
ADAPTIVE = ("adaptive", "adaptive_range", "adaptive_guard", "adaptive_range_guard")
TIGHT = 1.1
TIGHT_NOISE = 0.2


def _traces() -> list[tuple[str, tuple[TraceJob, ...], int]]:
    paths = [SWF / "NASA-iPSC-1993-3.1-cln.swf", SWF / "lublin_256.swf"]
    if CURIE.exists():
        paths.append(CURIE)
    out = []
    for path in paths:
        trace = read_swf(path).head(JOBS)
        out.append((path.name.split("-")[0].split("_")[0], trace.jobs, trace.machine))
    return out


def _tight(jobs: tuple[TraceJob, ...]) -> tuple[TraceJob, ...]:
    return tuple(dataclasses.replace(j, limit=TIGHT * j.runtime, limit_given=True) for j in jobs)


@pytest.mark.benchmark
def test_release_and_guard_variants(capsys: pytest.CaptureFixture[str]) -> None:
    table = Table(title=f"adaptive's variants, first {JOBS:,} jobs per trace, seed 1")
    for column in ("trace", "load", "curves", "policy", "resp h", "node-h", "kills", "kill nh"):
        table.add_column(column, justify="left" if column in ("trace", "policy") else "right")
    table.add_column("raised", justify="right")
    saved: list[tuple[str, float, str, int, int]] = []
    started = time.perf_counter()
    for name, jobs, machine in _traces():
        for load in LOADS:
            blocks = [
                ("learned", at_load(jobs, machine, load), "learned", 0.05),
                ("oracle*", at_load(jobs, machine, load), "oracle", 0.05),
                ("tight*", at_load(_tight(jobs), machine, load), "oracle", TIGHT_NOISE),
            ]
            for label, loaded, curves, noise in blocks:
                ex = Experiment(loaded, Setup(machine=machine, curves=curves, noise=noise))
                kills: dict[str, int] = {}
                for policy in (*BASELINES, *ADAPTIVE):
                    result = ex.run(policy)
                    m, s = result.metrics, result.schedule
                    assert len(s) == len(loaded)
                    if policy in ("adaptive_guard", "adaptive_range_guard"):
                        # no run killed at a limit shorter than its submission's user limit
                        runs = s.all_runs()
                        assert runs.limit is not None
                        assert runs.user_limit is not None
                        short = runs.limit < runs.user_limit - 1e-6
                        assert not (runs.killed & short).any()
                    kills[policy] = m.killed
                    table.add_row(
                        name,
                        f"{load:g}",
                        label,
                        policy,
                        f"{m.mean_response_s / 3600:.2f}",
                        f"{m.node_hours:,.0f}",
                        str(m.killed),
                        f"{m.killed_node_hours:,.0f}",
                        str(m.raised),
                    )
                saved.append(
                    (
                        name,
                        load,
                        label,
                        kills["adaptive"] - kills["adaptive_guard"],
                        kills["adaptive_range"] - kills["adaptive_range_guard"],
                    )
                )
            table.add_section()
    seconds = time.perf_counter() - started
    with capsys.disabled():
        console = Console(width=150)
        console.print()
        console.print(table)
        console.print(
            "kills without the guard minus kills with it (pinned / range; after a raise the "
            "schedules part, so this is not only the raised jobs):"
        )
        for name, load, label, pinned, ranged in saved:
            console.print(f"  {name:8s} load {load:g} {label:8s} {pinned:4d} / {ranged:4d}")
        console.print(
            "*oracle: the true curves, an upper bound no site has. *tight: oracle curves and "
            f"user limits replaced by {TIGHT}× the run time, {TIGHT_NOISE:.0%} run noise "
            "(synthetic). True curves are "
            "synthetic (A = median request × U[1, 4], σ ~ U[0, 2]); no setting was tuned on "
            f"these traces. {seconds:.0f} s."
        )
