"""The seed papers' models on the decision path: what they cost per job, and how well the
master-worker knee is learned from runs.

Cost. One `policies.decide` against the same decision under a master-worker cap that lets it
be (one decide) and one that binds (decided again within the cap: two); the roofline prior
built (one Downey fit of a few points) and taken from the cache (plugin/learning/priors.py);
and a burst of jobs through the daemon's Decider (an in-memory store, so the figure is the
decision's own, not Redis'), without any node type described, and with the prior on a type
the app never ran on. Times from time.perf_counter on a shared machine: printed, never
asserted.

Learned N_opt. Runs of a synthetic master-worker code (the Costa et al. model: a worker's
cycle is its own transfer c plus Tc, the master serves one transfer at a time, so the
throughput is min(N/(Tc + c), 1/c) and the speedup levels off at N = N_opt + 1, N_opt =
Tc/c, in nodes of one task), at powers of two up to 4·N_opt as a user exploring the sizes
would run, with seeded relative noise. The fitted curve's knee (policies.master_worker
.speedup_cap) is scored against N_opt + 1; beside it, the size the curve's own rules choose
without the cap over a 1-256 range, and the node-hours the cap saves at the true runtimes.
The data are the model's own: this measures how the knee is read from noisy runs, not
whether real codes follow the model.

The roofline prior in the simulator (`test_roofline_prior_in_the_simulator`). The team's
CEA-Curie sample (skipped when absent), its first JOBS jobs placed on the pools its header
gives (large: 360 nodes × 32 cores; standard: 5,040 × 16), offered load 0.9, every job of
either pool submitted with -p large,standard (so an application's jobs reach the pool it
never ran on) and, in the full run, each job on its own partition as the trace has it (an
application key whose jobs are in both partitions). The learned adaptive policy is run with
and without the prior
(PoolPlan.roofline), paired: same jobs, same seed. Printed: how many jobs the prior sized
(each once, a resubmission after a kill is the same job), those jobs' mean response and
kills in both runs, and every job's mean response. The pools' per-core speeds are synthetic
(the trace gives none): standard at 1 (the trace's silence read as equal) and at 1.5; the
simulator's true curves divide all of a run's time by that speed, which is the prior's own
assumption, so this shows what the prior changes when its model holds, not whether it holds
for real codes. No constant was chosen on this data. Quick: 3,000 jobs, seeds 1-2; full:
6,000 jobs, seeds 1-5, and the jobs on their own partition too.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

import policies
import predictor
from plugin.appkey import AppKey, AppKeyRule
from plugin.config import NodeTypeConfig
from plugin.daemon import marks
from plugin.daemon.decider import Budget, CurveSource, Decider
from plugin.formats.swf import read_swf
from plugin.learning import priors
from plugin.slurm import JobRecord
from plugin.store.curves import CurveRecord, Observation
from policies import DEFAULTS, ClusterState, Request, decide
from policies.master_worker import WorkerCap, capped, speedup_cap
from policies.roofline import Intensity, Known, NodeType
from policies.simulation import Setup
from policies.simulation.pools import from_header
from policies.simulation.typed import PoolPlan, pooled_experiment
from predictor.downey import FloatArray

from .results import full_run, mode_note, record

pytestmark = pytest.mark.benchmark

FULL = full_run()
CURIE = Path("/work/shared/data/swf/CEA-Curie-2011-sample.swf")
LU = {1: 1.0, 2: 1.97, 4: 3.83, 8: 7.24, 16: 13.07, 32: 20.77}  # the Downey thesis' Table 5.1


def lu_curve(t1: float) -> predictor.Curve:
    n = np.array(list(LU), dtype=float)
    return predictor.Curve.from_fit(predictor.fit(n, t1 / np.array(list(LU.values()))))


def median_us(timings: list[float]) -> float:
    return 1e6 * float(np.median(timings))


def timed(call: Any, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


class Store:
    """The store calls the Decider makes, from memory: one curve, runs on `std`."""

    def __init__(self, curve: predictor.Curve) -> None:
        self.record = CurveRecord(curve, 1, 1, None, 6, "adept", True)
        key = AppKey("bench", owner="ann")
        self.runs = [
            Observation(f"{i}", key, n, 100.0, 1.7e9 + i, node_type="std") for i, n in enumerate(LU)
        ]

    def curve_record(self, app: AppKey, node_type: str | None = None) -> CurveRecord | None:
        return self.record if node_type is None else None

    def node_types(self, app: AppKey) -> list[str]:
        return []

    def observations(self, app: AppKey) -> list[Observation]:
        return self.runs

    def sibling_sizes(self, app: AppKey) -> dict[AppKey, list[Observation]]:
        return {}

    def limit_safety(self, app: AppKey) -> float:
        return 1.0


def burst_us(store: Store, types: dict[str, NodeTypeConfig], comment: str, jobs: int) -> float:
    """Median µs of one Decider.decide over a burst of `jobs` jobs on partition big."""
    curves = CurveSource(lambda: store)  # type: ignore[arg-type, return-value]
    decider = Decider(AppKeyRule(), policies.default_config(), curves, Budget(), types)
    decider.limits_enforced = False
    curves.begin_batch()
    state = ClusterState(idle_nodes=64, total_nodes=64)
    timings = []
    for k in range(jobs):
        job = JobRecord(
            k + 1, "bench", "ann", "phys", "big", "PENDING", "squeue", comment=comment,
            admin_comment=marks.HELD, nodes_min=2, nodes_max=32, time_limit_min=600,
            submit_time=1, priority=0, num_tasks=2, ntasks_per_node=0,
        )  # fmt: skip
        start = time.perf_counter()
        decider.decide(job, lambda _: state, cpus=lambda _: 16)
        timings.append(time.perf_counter() - start)
    return median_us(timings)


def cost_table() -> Table:
    curve = lu_curve(36000.0)
    request = Request(4, 64, time_limit_min=600)
    state = ClusterState(idle_nodes=64, total_nodes=64)

    def plain(r: Request) -> policies.Decision:
        return decide(r, curve, state, DEFAULTS)

    repeat = 2000 if FULL else 300
    within = WorkerCap(64, 64.0, "figures", "a master keeps 64 workers busy")
    binding = WorkerCap(8, 8.0, "figures", "a master keeps 8 workers busy")
    assert capped(request, binding, plain).rule == "master_worker"
    plain_us = median_us(timed(lambda: plain(request), repeat))
    within_us = median_us(timed(lambda: capped(request, within, plain), repeat))
    binding_us = median_us(timed(lambda: capped(request, binding, plain), repeat))
    learned_us = median_us(timed(lambda: speedup_cap(curve, DEFAULTS), repeat))

    std, big = NodeType("std", 1000.0, 100.0, 16), NodeType("big", 4000.0, 200.0, 16)
    known = [Known(std, curve, 6)]
    builds = []
    for k in range(5 if FULL else 3):  # a new intensity each time: never from the cache
        start = time.perf_counter()
        assert not isinstance(priors.prior_on(big, known, Intensity(1.0 + k, "tag")), str)
        builds.append(time.perf_counter() - start)
    cached_us = median_us(timed(lambda: priors.prior_on(big, known, Intensity(1.0, "tag")), repeat))

    jobs = 1000 if FULL else 200
    store = Store(curve)
    types = {"std": NodeTypeConfig(1000.0, 100.0, 1.25), "big": NodeTypeConfig(4000.0, 200.0, 1.25)}
    tag = "adaptalloc:v1 app=bench"
    none_us = burst_us(store, {}, tag, jobs)
    prior_us = burst_us(store, types, tag + " intensity=1", jobs)
    mw_us = burst_us(store, types, tag + " intensity=1 pattern=master-worker", jobs)

    table = Table(title=f"What the seed models cost per decision ({mode_note(FULL)})")
    table.add_column("what")
    table.add_column("median", justify="right")
    table.add_row("decide(), a job asking 4-64 nodes (NPB LU's curve)", f"{plain_us:.0f} µs")
    table.add_row("  under a master-worker cap it stays within (one decide)", f"{within_us:.0f} µs")
    table.add_row("  under a cap that binds (decided again within it)", f"{binding_us:.0f} µs")
    table.add_row("the knee learned from the curve (speedup_cap)", f"{learned_us:.0f} µs")
    table.add_row(
        "roofline prior built (one Downey fit)", f"{1e3 * float(np.median(builds)):.1f} ms"
    )
    table.add_row("roofline prior from the cache", f"{cached_us:.1f} µs")
    table.add_row(
        f"Decider.decide, burst of {jobs} jobs, no node type described", f"{none_us:.0f} µs"
    )
    table.add_row(
        "  the same jobs on a type the app never ran on (prior, cached)", f"{prior_us:.0f} µs"
    )
    table.add_row("  and tagged master-worker (the knee learned per job)", f"{mw_us:.0f} µs")
    return table


def master_worker_runtimes(n: FloatArray, n_opt: float) -> FloatArray:
    """2000 tasks of the model, c = 1 s: the runtime on n nodes (module docstring)."""
    out: FloatArray = 2000.0 / np.minimum(n / (n_opt + 1.0), 1.0)
    return out


def knee_table() -> tuple[Table, float]:
    sizes = (4, 8, 16, 32, 64) if FULL else (4, 16, 48)
    noises = (0.02, 0.05, 0.10) if FULL else (0.02, 0.05)
    seeds = range(10) if FULL else range(3)
    table = Table(title=f"N_opt learned from synthetic master-worker runs ({mode_note(FULL)})")
    for heading in (
        "N_opt",
        "noise",
        "runs",
        "true knee (nodes)",
        "learned, mean",
        "mean |error|",
        "refused",
        "uncapped rules chose",
        "node-hours saved",
    ):
        table.add_column(heading, justify="right")
    errors = []
    for n_opt in sizes:
        n = np.array([s for s in (1, 2, 4, 8, 16, 32, 64, 128, 256) if s <= 4 * n_opt], float)
        truth = n_opt + 1
        for noise in noises:
            learned, chose, saved, refused = [], [], [], 0
            for seed in seeds:
                rng = np.random.default_rng(1000 * n_opt + seed)
                runtime = master_worker_runtimes(n, n_opt) * (
                    1 + noise * rng.standard_normal(n.size)
                )
                curve = predictor.Curve.from_fit(predictor.fit(n, runtime))
                cap = speedup_cap(curve, DEFAULTS)
                if isinstance(cap, str):
                    refused += 1
                    continue
                learned.append(cap.nodes)
                errors.append(abs(cap.nodes - truth))
                state = ClusterState(idle_nodes=256, total_nodes=256)
                request = Request(1, 256)
                free = decide(request, curve, state)
                kept = capped(request, cap, functools.partial(decide, curve=curve, cluster=state))
                if free.nodes is None or kept.nodes is None:
                    continue
                chose.append(free.nodes)
                hours = [
                    float(k * master_worker_runtimes(np.array([float(k)]), n_opt)[0]) / 3600.0
                    for k in (free.nodes, kept.nodes)
                ]
                saved.append(1.0 - hours[1] / hours[0])
            table.add_row(
                str(n_opt),
                f"{noise:.0%}",
                str(n.size),
                str(truth),
                f"{np.mean(learned):.1f}" if learned else "-",
                f"{np.mean([abs(x - truth) for x in learned]):.2f}" if learned else "-",
                str(refused),
                f"{np.mean(chose):.0f}" if chose else "-",
                f"{100 * np.mean(saved):.0f}%" if saved else "-",
            )
    return table, float(np.mean(errors)) if errors else float("nan")


@pytest.mark.benchmark
def test_seed_models(capsys: pytest.CaptureFixture[str]) -> None:
    cost = cost_table()
    knee, mean_error = knee_table()
    with capsys.disabled():
        console = Console(width=130)
        console.print(cost)
        console.print(knee)
    assert np.isfinite(mean_error)
    record(
        "seed-models",
        title="The seed papers' models on the decision path",
        source=__file__,
        full=FULL,
        tables=[cost, knee],
        notes=[
            "Cost: NPB LU class W's speedups (the Downey thesis' Table 5.1) as the curve; the "
            "Decider reads an in-memory store, so the burst figures leave Redis out. One core, "
            "the machine shared with other work.",
            "Learned N_opt: runs of the Costa et al. model itself (synthetic, seeded noise), "
            "at powers of two up to 4·N_opt; the true knee is N_opt + 1 nodes (N_opt workers "
            "busy and one being served, one task a node). 'uncapped rules chose' is the "
            "policy's size over 1-256 without the cap; 'node-hours saved' compares the two "
            "sizes at the model's true runtimes.",
        ],
    )


def prior_table() -> Table:
    """The roofline prior in a pooled simulation, with and without (module docstring)."""
    trace = read_swf(CURIE).head(6000 if FULL else 3000)
    pools = from_header(trace.comments)
    assert pools is not None
    assert [p.name for p in pools] == ["large", "standard"]
    seeds = range(1, 6) if FULL else range(1, 3)
    cases: list[tuple[str, tuple[int, ...]]] = [("-p large,standard", (0, 1))]
    if FULL:
        cases.append(("own partition", ()))
    table = Table(
        title=(
            f"Roofline prior in the simulator: CEA-Curie, first {len(trace.jobs):,} jobs, "
            f"load 0.9, seeds {seeds.start}-{seeds.stop - 1}, synthetic speeds "
            f"({mode_note(FULL)})"
        )
    )
    for heading in (
        "what-if",
        "standard speed",
        "jobs placed",
        "sized by the prior",
        "their response h, no prior",
        "with prior",
        "their kills, no prior",
        "with prior",
        "all jobs' response h, no prior",
        "with prior",
    ):
        table.add_column(heading, justify="left" if heading == "what-if" else "right")
    for what, multi in cases:
        for speed in (1.0, 1.5) if multi else (1.0,):  # own pool: its time is the trace's
            typed = (pools[0], dataclasses.replace(pools[1], speed=speed))
            sized, placed = 0, 0
            theirs: dict[bool, list[float]] = {False: [], True: []}
            kills = {False: 0, True: 0}
            every: dict[bool, list[float]] = {False: [], True: []}
            for seed in seeds:
                setup = Setup(machine=trace.machine, seed=seed)
                runs = {}
                for prior in (False, True):
                    plan = PoolPlan(typed, multi, roofline=prior)
                    experiment = pooled_experiment(trace.jobs, plan, setup, load=0.9)
                    runs[prior] = experiment.run("adaptive")
                jobs = np.array(runs[True].priors, dtype=np.int64)
                assert runs[False].priors == ()
                sized += jobs.size
                placed = len(runs[True].schedule)
                for prior, result in runs.items():
                    s = result.schedule
                    response = (s.end - s.submit) / 3600.0
                    theirs[prior].extend(response[jobs].tolist())
                    runs_of = s.all_runs()
                    kills[prior] += int(np.sum(runs_of.killed & np.isin(runs_of.job, jobs)))
                    every[prior].append(float(np.mean(response)))
            table.add_row(
                what,
                f"{speed:g}",
                f"{placed:,}",
                f"{sized} ({sized / len(seeds):.1f} a seed)",
                f"{np.mean(theirs[False]):.2f}" if sized else "-",
                f"{np.mean(theirs[True]):.2f}" if sized else "-",
                str(kills[False]),
                str(kills[True]),
                f"{np.mean(every[False]):.3f}",
                f"{np.mean(every[True]):.3f}",
            )
    return table


@pytest.mark.benchmark
@pytest.mark.skipif(not CURIE.exists(), reason="the CEA-Curie sample is not on this machine")
def test_roofline_prior_in_the_simulator(capsys: pytest.CaptureFixture[str]) -> None:
    table = prior_table()
    with capsys.disabled():
        console = Console(width=200)
        console.print(table)
        console.print(
            "Synthetic: the pools' per-core speeds (standard's 1 and 1.5 are assumptions, the "
            "trace gives none) and the true curves (A = median request in processors × "
            "U[1, 4], σ ~ U[0, 2], all run time divided by the speed: the prior's own "
            "assumption). Paired runs of the learned adaptive policy, same jobs and seed."
        )
    record(
        "seed-models",
        title="The seed papers' models on the decision path",
        source=__file__,
        full=FULL,
        tables=[table],
        section="The roofline prior in the simulator",
        notes=[
            "Data: the CEA-Curie sample's first jobs on the two pools its header gives; every "
            "job of either pool submitted with -p large,standard ('own partition': as the "
            "trace has them). Learned adaptive policy with and without the roofline prior "
            "(PoolPlan.roofline), paired on the same jobs and seeds.",
            "Synthetic, and the figures depend on it: the pools' per-core speeds (standard "
            "at 1, the trace's silence read as equal, and at 1.5) and the true curves, which "
            "divide all of a run's time by the speed, as the prior assumes; so this shows "
            "what the prior changes when its model holds. 'sized by the prior': distinct "
            "jobs whose decision used a prior curve; 'their kills': runs of those jobs "
            "killed at their limit. No constant was chosen on this data.",
            "On its own partition a job runs on its own pool, where its time is the trace's "
            "whatever the speed, so that what-if is run at one speed. The rows are means over "
            "the seeds, with no interval: at speed 1 the quick mode's two seeds and the full "
            "run's five do not agree on the sign of the change in all jobs' response.",
        ],
    )
