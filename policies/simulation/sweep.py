"""A sweep: the trace at several offered loads, each with several seeds, every policy.

Offered load of jobs on a machine of M nodes (sizes n_i, run times T_i at the requested size,
submits s_i):

    ρ = Σ n_i T_i / (M · (max s − min s))

`at_load` scales the inter-arrival times by ρ/ρ*, so that the trace offers ρ*: s'_i = s_0 +
(s_i − s_0)·ρ/ρ*. Each seed draws new limits where the trace has none, hidden applications,
true curves and run noise (estimates.py, world.py); a figure is the mean over seeds with its
95% interval, mean ± t_{0.975, k−1} · sd/√k over k seeds (none with one seed).

Policies are compared paired: every policy of a seed meets the same draws, so the ratio of
a figure, policy / BASELINE (greedy) in the same seed, removes the seeds' common variation.
Each policy's ratio is the mean over seeds of those per-seed ratios with the same Student-t
interval (`Ratio`; RATIO_FIGURES).

A sweep is a list of cells, one per (load, seed), each running every policy on one
experiment (so its policies share their fits, learning.py). `run_cell` is a plain function
of a picklable `Cell`, so a caller may run the cells in parallel processes: `sweep(...,
mapper=executor.map)` (the CLI does, plugin/cli/simulate.py); this module starts none.
With `split=True` a cell is further split into its policies' fit families (`fit_families`):
the policies that share fits stay together, so that a sweep of one load and one seed still
has work for several processes; the results are the same (a fit depends only on its runs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from policies.simulation.experiment import (
    ADAPTALLOC,
    ORACLES,
    POLICIES,
    Experiment,
    PolicyResult,
    Setup,
)
from policies.simulation.typed import PooledExperiment, PoolPlan, pooled_experiment
from policies.simulation.workload import TraceJob
from predictor import Curve

#: The figures averaged over seeds, with an interval each.
FIGURES = (
    "jobs",
    "mean_response_s",
    "mean_wait_s",
    "mean_bsld",
    "mean_bounded_slowdown",
    "node_hours",
    "killed",
    "killed_node_hours",
    "wasted_node_hours",
    "resubmitted",
    "abandoned",
    "raised",
    "sized",
    "recorded",
    "mature",
    "mature_sized",
    "unseen_response_s",
    "mature_response_s",
    "recorded_response_s",
    "utilization",
    "makespan_s",
)
#: The figures compared as paired ratios against BASELINE.
RATIO_FIGURES = ("mean_response_s", "mean_bsld", "node_hours")
#: The policy every other is compared with, seed by seed.
BASELINE = "greedy"
#: Told (load index, seed index, policy) before each cell; must not raise.
CellProgress = Callable[[int, int, str], None]


def offered_load(jobs: Sequence[TraceJob], machine: int) -> float:
    """ρ of the module doc (inf when all jobs are submitted at once)."""
    submits = np.array([j.submit for j in jobs])
    span = float(submits.max() - submits.min()) if len(submits) else 0.0
    work = float(sum(j.nodes * j.runtime for j in jobs))
    return work / (machine * span) if span > 0 else math.inf


def at_load(jobs: Sequence[TraceJob], machine: int, load: float) -> tuple[TraceJob, ...]:
    """The jobs with inter-arrival times scaled to offer `load` (module doc)."""
    if not (math.isfinite(load) and load > 0.0):
        raise ValueError(f"a load must be a positive number, got {load!r}")
    rho = offered_load(jobs, machine)
    if not math.isfinite(rho):
        raise ValueError("all jobs are submitted at once: the load cannot be scaled")
    factor = rho / load
    s0 = min(j.submit for j in jobs)
    return tuple(dataclasses.replace(j, submit=s0 + (j.submit - s0) * factor) for j in jobs)


@dataclass(frozen=True)
class Ratio:
    """A paired ratio over seeds: the mean of the per-seed ratios, its 95% interval (None
    with one seed) and the seeds."""

    mean: float
    ci95: tuple[float, float] | None
    seeds: int

    def to_dict(self) -> dict[str, object]:
        return {"ratio": self.mean, "ci95": None if self.ci95 is None else list(self.ci95)}


def student(values: Sequence[float]) -> tuple[float, tuple[float, float] | None]:
    """(mean, 95% interval mean ± t_{0.975, k−1}·sd/√k; None for one value)."""
    from scipy import stats  # noqa: PLC0415 - 0.6 s to import; only a summary needs it

    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, None
    half = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return m, (m - half, m + half)


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> Ratio:
    """The mean of a_s / b_s over seeds s, with its interval (module doc)."""
    if len(a) != len(b) or not a:
        raise ValueError("a paired ratio needs the same seeds on both sides")
    ratios = np.asarray(a, dtype=float) / np.asarray(b, dtype=float)
    mean, ci = student(ratios.tolist())
    return Ratio(mean, ci, len(ratios))


@dataclass(frozen=True)
class Summary:
    """One policy at one load: the mean of each figure over seeds, its 95% interval, and
    (when the baseline ran) its paired ratios to the baseline's, per RATIO_FIGURES."""

    mean: Mapping[str, float]
    ci95: Mapping[str, tuple[float, float] | None]
    seeds: int
    #: With node pools: pool -> {"jobs", "node_hours"}, means over seeds; empty without.
    pools: Mapping[str, Mapping[str, float]] = dataclasses.field(default_factory=dict)
    #: figure -> this policy / BASELINE, paired by seed; empty when the baseline did not run.
    vs: Mapping[str, Ratio] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {k: self.mean[k] for k in FIGURES if k in self.mean}
        out["jobs"] = round(self.mean["jobs"])  # the same in every seed
        out["ci95"] = {k: None if v is None else list(v) for k, v in self.ci95.items()}
        if self.pools:
            out["pools"] = {name: dict(v) for name, v in self.pools.items()}
        if self.vs:
            out[f"vs_{BASELINE}"] = {k: r.to_dict() for k, r in self.vs.items()}
        return out


def pool_means(results: Sequence[PolicyResult]) -> dict[str, dict[str, float]]:
    """Per pool, the mean over seeds of its jobs and node-hours ({} without pools)."""
    first = results[0].pools
    return {
        name: {
            key: float(np.mean([r.pools[name][key] for r in results]))
            for key in ("jobs", "node_hours")
        }
        for name in first
    }


def summarize_seeds(results: Sequence[Mapping[str, float | int]]) -> Summary:
    """Mean and 95% interval (Student's t) of every figure over the seeds' results; a figure
    some result lacks (one written before the figure existed) is left out."""
    mean: dict[str, float] = {}
    ci: dict[str, tuple[float, float] | None] = {}
    for name in FIGURES:
        if all(name in r for r in results):
            mean[name], ci[name] = student([float(r[name]) for r in results])
    return Summary(mean, ci, len(results))


def summarize_load(
    per_seed: Sequence[Mapping[str, Mapping[str, float | int]]], policies: Sequence[str]
) -> dict[str, Summary]:
    """Every policy's Summary over the seeds (`per_seed[s][policy]`: its figures in seed s),
    with its paired ratios to BASELINE when the baseline ran."""
    out = {p: summarize_seeds([seed[p] for seed in per_seed]) for p in policies}
    if BASELINE not in policies:
        return out
    for p in policies:
        vs = {
            figure: paired_ratio(
                [float(seed[p][figure]) for seed in per_seed],
                [float(seed[BASELINE][figure]) for seed in per_seed],
            )
            for figure in RATIO_FIGURES
        }
        out[p] = dataclasses.replace(out[p], vs=vs)
    return out


@dataclass(frozen=True)
class LoadResult:
    """Every policy at one offered load (None: the trace's own arrivals)."""

    load: float | None
    policies: Mapping[str, Summary]
    #: The first seed's result of every policy (schedules for reports and charts).
    first: Mapping[str, PolicyResult]
    #: The first seed's experiment (its jobs at this load, applications, curves).
    experiment: Experiment | PooledExperiment


@dataclass(frozen=True)
class Cell:
    """One (load, seed) of a sweep: `jobs` at offered `load` (None: as they are), seed
    setup.seed + seed_index, every one of `policies`."""

    jobs: tuple[TraceJob, ...]
    setup: Setup
    load: float | None
    load_index: int
    seed_index: int
    policies: tuple[str, ...]
    stored: Mapping[int, Curve] | None = None
    #: Node pools (typed.py); None: one partition of setup.machine nodes.
    pools: PoolPlan | None = None

    def experiment(self) -> Experiment | PooledExperiment:
        if self.pools is not None:
            seeded = dataclasses.replace(self.setup, seed=self.setup.seed + self.seed_index)
            return pooled_experiment(self.jobs, self.pools, seeded, self.load)
        loaded = (
            self.jobs if self.load is None else at_load(self.jobs, self.setup.machine, self.load)
        )
        seeded = dataclasses.replace(self.setup, seed=self.setup.seed + self.seed_index)
        return Experiment(loaded, seeded, self.stored)


def run_cell(cell: Cell, progress: CellProgress | None = None) -> dict[str, PolicyResult]:
    """Every policy of the cell on one experiment, in order."""
    experiment = cell.experiment()
    out = {}
    for policy in cell.policies:
        if progress is not None:
            progress(cell.load_index, cell.seed_index, policy)
        out[policy] = experiment.run(policy)
    return out


#: The adaptalloc policies outside the ranged fit family (fit_families).
PINNED_OR_ORACLE = frozenset({"rigid_limits"}) | ORACLES


def fit_families(policies: Sequence[str], setup: Setup) -> list[tuple[str, ...]]:
    """The policies in groups that share their learners' fits, the costliest first: the
    learned adaptalloc policies that decide on the moldable range (their fits are mostly
    the same runs'), rigid_limits (its runs stay at the requested sizes: its own fits), then
    every other policy alone (no fits). Within a group, the order of `policies`."""
    learned = setup.curves == "learned"
    ranged = tuple(p for p in policies if learned and p in ADAPTALLOC and p not in PINNED_OR_ORACLE)
    pinned = tuple(p for p in policies if learned and p == "rigid_limits")
    rest = [(p,) for p in policies if p not in ranged and p not in pinned]
    return [g for g in (ranged, pinned) if g] + rest


#: Runs `run_cell` over the cells and yields the results in the cells' order (the builtin
#: map, or concurrent.futures' Executor.map).
Mapper = Callable[
    [Callable[[Cell], dict[str, PolicyResult]], Iterable[Cell]], Iterator[dict[str, PolicyResult]]
]


def sweep(
    jobs: Sequence[TraceJob],
    setup: Setup,
    loads: Sequence[float | None],
    seeds: int,
    policies: Sequence[str] = POLICIES,
    stored: Mapping[int, Curve] | None = None,
    progress: CellProgress | None = None,
    mapper: Mapper | None = None,
    split: bool = False,
    pools: PoolPlan | None = None,
) -> list[LoadResult]:
    """Every policy at every load, seeds setup.seed .. setup.seed + seeds − 1.

    With `mapper` the cells are run through it (for example in parallel processes) and
    `progress` is told of each cell's policies when the cell is done; without, they run here
    one after the other and `progress` is told before each policy. `split`: one cell per fit
    family of each (load, seed) (module doc). `pools`: the jobs run on node pools
    (typed.py), each figure also per pool."""
    if seeds < 1:
        raise ValueError(f"seeds must be ≥ 1, got {seeds}")
    groups = fit_families(policies, setup) if split else [tuple(policies)]
    cells = [
        Cell(tuple(jobs), setup, load, li, si, group, stored, pools)
        for li, load in enumerate(loads)
        for si in range(seeds)
        for group in groups
    ]
    if mapper is None:
        results: Iterable[dict[str, PolicyResult]] = (run_cell(c, progress) for c in cells)
    else:
        results = mapper(run_cell, cells)
    merged: dict[tuple[int, int], dict[str, PolicyResult]] = {}
    for cell, result in zip(cells, results, strict=True):
        if mapper is not None and progress is not None:
            for policy in cell.policies:
                progress(cell.load_index, cell.seed_index, policy)
        merged.setdefault((cell.load_index, cell.seed_index), {}).update(result)
    out = []
    for li, load in enumerate(loads):
        per_seed = [{p: merged[li, si][p] for p in policies} for si in range(seeds)]
        figures = [{p: r[p].metrics.to_dict() for p in policies} for r in per_seed]
        summaries = {
            p: dataclasses.replace(summary, pools=pool_means([r[p] for r in per_seed]))
            for p, summary in summarize_load(figures, policies).items()
        }
        first = cells[li * seeds * len(groups)]
        out.append(LoadResult(load, summaries, per_seed[0], first.experiment()))
    return out
