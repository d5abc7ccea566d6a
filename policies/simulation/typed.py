"""A what-if experiment over node types: pools (pools.py), true curves per type, learned per
(application, pool), and optionally the multi-partition what-if.

True curves. An application has one Downey curve in *processors*: parallelism A (drawn as
applications.py does, with r_app the median request in processors, r·c) and variance σ. On a
pool q of c_q cores per node and speed s_q, n nodes hold n·c_q processors; the curve in the
pool's own nodes is Downey's with A_q = max(1, A/c_q) and the same σ, and one node's time is
the processor curve's at c_q processors:

    T_q(n) = T1 · τ(c_q; A, σ) · τ(n; A_q, σ) / s_q · ε_i      (τ = T(n)/T(1), Downey 1997)

T1 (one processor's time) is fixed by the trace: T_own(r) = T_r, the job's run time on its own
pool at its own request. With one pool of one core and speed 1 this is applications.py's
model exactly. The node form A/c is a modelling choice (Downey's formulas are not exactly
invariant under n → c·n); it makes the oracle's curve per pool exact.

Learned curves are keyed by (application, pool) as the daemon keys them by (application, node
type), with its fallback to the curve of all the application's runs while a pool has none,
refused when those runs include any on another core count (`TypedLearner`,
policies/fallback.py; learning.py unchanged). With `PoolPlan.roofline`, a pool where the
application has no curve of its own gets the roofline prior from its curve on another pool
first, as the daemon on a described node type (priors.py), until its runs there give it one.

The multi-partition what-if: every job of a pool listed in `multi` is taken to be submitted
with ``-p`` those pools (in that order). Its request is processors: on pool q it asks for
⌈r·c/c_q⌉ nodes (not eligible for q when larger than q), with the same time limit (one
``--time`` for all partitions, Slurm's). rigid, rigid_limits and greedy are routed by Slurm's
rule, the other policies by predicted completion (pooled.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from policies.fallback import fallback_refusal
from policies.refit_cadence import REFIT_GROWTH
from policies.second_size import Run
from policies.simulation.adaptive import AdaptiveSizer, Learner
from policies.simulation.applications import group
from policies.simulation.engine import PartitionScheduler
from policies.simulation.estimates import model_limits
from policies.simulation.experiment import (
    ADAPTALLOC,
    LIMIT_STREAM,
    ORACLE_CURVE,
    ORACLES,
    POLICIES,
    PolicyResult,
    Setup,
)
from policies.simulation.learning import GROWTH, CurveLearner, Fits
from policies.simulation.metrics import summarize
from policies.simulation.pooled import choice_route, simulate_pools, slurm_route
from policies.simulation.pools import Placed, Pool, place
from policies.simulation.priors import PriorLearner
from policies.simulation.sizing import GreedySizer, MoldableRequests, RigidSizer, Sizer
from policies.simulation.workload import DowneyDraws, JobCurves, TraceJob
from policies.simulation.world import draw_truth
from predictor import Curve
from predictor.downey import FloatArray, IntArray, relative_runtime

#: Policies routed by Slurm's rule in the multi-partition what-if (the rest: by completion).
SLURM_RULE = frozenset({"rigid", "rigid_limits", "greedy"})


@dataclass(frozen=True)
class PoolPlan:
    """The pools and the multi-partition what-if (indices of pools, in the listed order;
    () for none)."""

    pools: tuple[Pool, ...]
    multi: tuple[int, ...] = ()
    #: The daemon's fallback to the curve of all the application's runs on a pool without
    #: its own (TypedLearner); False: a pool's curve comes from its own runs only.
    fallback: bool = True
    #: The daemon's roofline prior on a pool without the application's own curve, from its
    #: curve on another pool and the pools' speeds and cores (priors.py); False: none, as
    #: the daemon where no ``[node_types.NAME]`` is described.
    roofline: bool = False


def pooled_load(
    jobs: Sequence[TraceJob], processors: Sequence[int] | IntArray, plan: PoolPlan, load: float
) -> tuple[TraceJob, ...]:
    """The placed jobs with inter-arrivals scaled to offer `load` of all pools' processors:
    ρ = Σ P_i T_i / (Σ_q N_q c_q · span), s'_i = s_0 + (s_i − s_0)·ρ/load (sweep.at_load's
    rule, in processors)."""
    if not (math.isfinite(load) and load > 0.0):
        raise ValueError(f"a load must be a positive number, got {load!r}")
    total = sum(p.nodes * p.cores for p in plan.pools)
    submits = np.array([j.submit for j in jobs])
    span = float(submits.max() - submits.min())
    if span <= 0.0:
        raise ValueError("all jobs are submitted at once: the load cannot be scaled")
    work = float(np.sum(np.asarray(processors, dtype=float) * [j.runtime for j in jobs]))
    factor = work / (total * span) / load
    s0 = float(submits.min())
    return tuple(replace(j, submit=s0 + (j.submit - s0) * factor) for j in jobs)


def pooled_offered_load(jobs: Sequence[TraceJob], plan: PoolPlan) -> float:
    """ρ of `pooled_load` for the jobs placed on the plan's pools (inf: all at once)."""
    placed = place(jobs, plan.pools)
    total = sum(p.nodes * p.cores for p in plan.pools)
    if not placed.jobs:
        return math.inf
    submits = np.array([j.submit for j in placed.jobs])
    span = float(submits.max() - submits.min())
    work = float(np.sum(placed.processors * np.array([j.runtime for j in placed.jobs])))
    return work / (total * span) if span > 0 else math.inf


def relative_on_pool(
    n: FloatArray,
    A: FloatArray,
    sigma: FloatArray,
    cores: float | FloatArray,
    speed: float | FloatArray,
) -> FloatArray:
    """T_q(n)/T1 on a pool of `cores` cores per node at `speed` (module doc):
    τ(c; A, σ)·τ(n; max(1, A/c), σ)/s, A in processors; arguments broadcast."""
    c = np.asarray(cores, dtype=float)
    out: FloatArray = (
        relative_runtime(c, A, sigma)
        * relative_runtime(n, np.maximum(1.0, A / c), sigma)
        / np.asarray(speed, dtype=float)
    )
    return out


class TypedLearner:
    """The daemon's curves with node types (plugin/daemon/decider.py, `_curve_on`; the
    learner's `refit_app` fits one curve per node type beside the one over all runs): slot
    k = application·pools + pool. A decision on pool q sees the curve of the application's
    runs on q when the learner has one, else the curve of all its runs on every pool (sizes
    in each run's own pool's nodes, as the daemon's observations are) unless a run in the
    store by then (CurveLearner.seen_at) ran on a pool of other cores per node than q's
    (policies/fallback.py; the daemon reads the stored runs' node types as they are, this
    counts every run seen, the learner's age and count windows aside). Both are
    CurveLearners at the same cadence, sharing `fits`; `refits` counts the (application,
    pool) curves' refit rounds (with one pool: the application's, as without pools).

    cores: each pool's cores per node (None: all alike, the fallback is never refused)."""

    def __init__(
        self,
        apps: int,
        pools: int,
        growth: float | None,
        fits: Fits,
        fallback: bool = True,
        refit_growth: float = REFIT_GROWTH,
        cores: Sequence[int] | None = None,
    ) -> None:
        self.pools, self.fallback = pools, fallback
        self.cores = tuple(cores) if cores is not None else (1,) * pools
        if len(self.cores) != pools:
            raise ValueError(f"cores: one count per pool ({pools}), got {len(self.cores)}")
        self.typed = CurveLearner(apps * pools, growth=growth, fits=fits, refit_growth=refit_growth)
        self.generic = CurveLearner(apps, growth=growth, fits=fits, refit_growth=refit_growth)
        #: Per application, each core count's first run's time in the store.
        self._first_seen: list[dict[int, float]] = [{} for _ in range(apps)]

    @property
    def refits(self) -> int:
        return self.typed.refits

    def observe(
        self,
        app: int,
        nodes: int,
        runtime: float,
        now: float,
        limit: float | None = None,
        written_for: int | None = None,
    ) -> None:
        self.typed.observe(app, nodes, runtime, now, limit, written_for)
        self.generic.observe(app // self.pools, nodes, runtime, now, limit, written_for)
        first = self._first_seen[app // self.pools]
        first.setdefault(self.cores[app % self.pools], self.generic.seen_at(now))

    def observe_killed(
        self, app: int, nodes: int, ran: float, now: float, limit: float, written_for: int
    ) -> None:
        self.typed.observe_killed(app, nodes, ran, now, limit, written_for)
        self.generic.observe_killed(app // self.pools, nodes, ran, now, limit, written_for)

    def runs(self, app: int, now: float) -> list[Run]:
        """The (application, pool) slot's own runs at `now` (CurveLearner.runs)."""
        return self.typed.runs(app, now)

    def curve(self, app: int, now: float) -> Curve | None:
        typed = self.typed.curve(app, now)
        if typed is not None or not self.fallback:
            return typed
        generic = self.generic.curve(app // self.pools, now)
        stored = [c for c, t in self._first_seen[app // self.pools].items() if t <= now]
        return None if fallback_refusal(stored, self.cores[app % self.pools]) else generic


class PooledExperiment:
    """The placed jobs with their true curves per pool, ready to run under any of POLICIES."""

    def __init__(self, placed: Placed, plan: PoolPlan, setup: Setup) -> None:
        if not placed.jobs:
            raise ValueError("an experiment needs at least one job")
        if setup.max_job_nodes is not None:
            raise ValueError("a MaxNodes per job is modelled for one partition, not node pools")
        self.limits = model_limits(placed.jobs, np.random.default_rng((setup.seed, LIMIT_STREAM)))
        self.jobs, self.pool, self.plan, self.setup = self.limits.jobs, placed.pool, plan, setup
        self.dropped = dict(placed.dropped)
        self.apps = group(self.jobs)
        pools = plan.pools
        biggest = max(p.nodes * p.cores for p in pools)
        cap = float(biggest if setup.max_parallelism is None else setup.max_parallelism)
        #: The largest A, in processors (setup.max_parallelism, else the largest pool's).
        self.parallelism = cap
        in_procs = [
            replace(j, nodes=int(p)) for j, p in zip(self.jobs, placed.processors, strict=True)
        ]
        true = self.truth = draw_truth(
            in_procs,
            self.apps,
            setup.seed,
            cap,
            setup.world,
            setup.parallelism_factor,
            setup.noise,
            setup.codes_per_key,
            setup.shared_codes,
        )
        A, sigma = true.A[true.hidden], true.sigma[true.hidden]
        self.noise = true.noise
        cores = np.array([p.cores for p in pools], dtype=float)
        speed = np.array([p.speed for p in pools], dtype=float)
        own = np.array([j.nodes for j in self.jobs], dtype=float)
        runtime = np.array([j.runtime for j in self.jobs])

        t1 = runtime / relative_on_pool(own, A, sigma, cores[self.pool], speed[self.pool])
        self.eligible = np.zeros((len(pools), len(self.jobs)), dtype=bool)
        self.pool_jobs: list[tuple[TraceJob, ...]] = []
        self.pool_curves: list[JobCurves] = []
        procs = placed.processors.astype(float)
        listed = np.isin(self.pool, plan.multi) if plan.multi else np.zeros(len(self.jobs), bool)
        for q, p in enumerate(pools):
            mine = self.pool == q
            want = np.ceil(procs / p.cores - 1e-9)
            self.eligible[q] = mine | (listed & (q in plan.multi) & (want <= p.nodes))
            nodes = np.where(mine, own, np.minimum(want, p.nodes))
            times = np.where(
                mine, runtime, t1 * relative_on_pool(nodes, A, sigma, p.cores, p.speed)
            )
            jobs_q = tuple(
                j if m else replace(j, nodes=int(n), runtime=float(t))
                for j, m, n, t in zip(self.jobs, mine, nodes, times, strict=True)
            )
            self.pool_jobs.append(jobs_q)
            draws = DowneyDraws(A=np.maximum(1.0, A / p.cores), sigma=sigma)
            self.pool_curves.append(JobCurves(jobs_q, draws, None, true.noise, true.hidden))
        #: Each job's pools in the order it lists them.
        order = list(plan.multi) + [q for q in range(len(pools)) if q not in plan.multi]
        self.choices = [
            tuple(q for q in order if self.eligible[q, i]) for i in range(len(self.jobs))
        ]
        self.fits: Fits = {}
        #: The pools' longest limit (a killed job's user doubles its limit up to it).
        self.max_time = (
            setup.max_time_s if setup.max_time_s is not None else max(j.limit for j in self.jobs)
        )

    @property
    def jobs_with_stored_curves(self) -> int:
        """Stored curves are not used with pools (a stored curve has no node type)."""
        return 0

    def requests(self, q: int) -> MoldableRequests:
        return MoldableRequests.build(
            self.pool_jobs[q], self.setup.moldable, self.plan.pools[q].nodes
        )

    def _sizers(self, policy: str, requests: list[MoldableRequests]) -> list[Sizer]:
        pools = self.plan.pools
        if policy == "rigid":
            return [RigidSizer(self.pool_jobs[q], p.nodes) for q, p in enumerate(pools)]
        if policy == "greedy":
            return [GreedySizer(r) for r in requests]
        learner: Learner | None = None
        if policy not in ORACLES and self.setup.curves == "learned":
            growth = None if self.setup.refits == "daemon" else GROWTH
            fallback = self.plan.fallback
            typed = TypedLearner(
                len(self.apps),
                len(pools),
                growth,
                self.fits,
                fallback,
                self.setup.refit_growth,
                [p.cores for p in pools],
            )
            learner = typed
            if self.plan.roofline:
                learner = PriorLearner(typed, pools, self.setup.settings)
        return [
            AdaptiveSizer(
                self.pool_jobs[q],
                requests[q],
                self.pool_curves[q],
                self.setup.settings,
                None if learner is None else (learner, self.apps.index * len(pools) + q),
                pinned=policy == "rigid_limits",
                fixed_limits=policy == "adaptive_fixed_limits",
                name=policy,
                shape_only=policy == ORACLE_CURVE,
            )
            for q in range(len(pools))
        ]

    def run(self, policy: str) -> PolicyResult:
        """Simulate the placed jobs under `policy` (one of POLICIES) on the pools."""
        if policy not in POLICIES:
            raise ValueError(f"with pools the policies are {', '.join(POLICIES)}, got {policy!r}")
        pools = self.plan.pools
        requests = [self.requests(q) for q in range(len(pools))]
        sizers = self._sizers(policy, requests)
        schedulers = [
            PartitionScheduler(
                self.pool_jobs[q],
                p.nodes,
                sizers[q],
                self.pool_curves[q].runtime,
                self.setup.backfill,
                False,
                self.max_time,
            )
            for q, p in enumerate(pools)
        ]
        names = [p.name for p in pools]
        pinned = policy in ("rigid", "rigid_limits")

        def minimum(job: int, choices: Sequence[int]) -> list[int]:
            if pinned:
                return [self.pool_jobs[q][job].nodes for q in choices]
            return [requests[q].lo[job] for q in choices]

        def route(job: int, now: float, state: Sequence[PartitionScheduler]) -> int:
            choices = self.choices[job]
            if len(choices) == 1:
                return choices[0]
            if policy not in SLURM_RULE:
                adaptive = [s for s in sizers if isinstance(s, AdaptiveSizer)]
                chosen = choice_route(job, choices, names, adaptive, state, now)
                if chosen is not None:
                    return chosen
            return slurm_route(choices, minimum(job, choices), state, now)

        pooled = simulate_pools([j.submit for j in self.jobs], schedulers, route)
        schedule = pooled.schedule
        reference = np.array([j.runtime for j in self.jobs]) * self.noise
        rules: dict[str, int] = {}
        refits = 0
        priors: list[int] = []
        for s in sizers:
            if isinstance(s, AdaptiveSizer):
                for rule, count in s.rules.items():
                    rules[rule] = rules.get(rule, 0) + count
                priors.extend(s.priors)
        if (
            policy in ADAPTALLOC
            and isinstance(sizers[0], AdaptiveSizer)
            and sizers[0].learner is not None
        ):
            refits = sizers[0].learner[0].refits
        hours = schedule.work / 3600.0
        per_pool = {
            p.name: {
                "jobs": int(np.sum(pooled.pool == q)),
                "node_hours": float(np.sum(hours[pooled.pool == q])),
            }
            for q, p in enumerate(pools)
        }
        return PolicyResult(
            policy,
            schedule,
            summarize(schedule, reference=reference, keys=self.apps.index),
            MappingProxyType(dict(sorted(rules.items()))),
            refits,
            pools=per_pool,
            priors=tuple(sorted(set(priors))),
        )


def pooled_experiment(
    jobs: Sequence[TraceJob], plan: PoolPlan, setup: Setup, load: float | None = None
) -> PooledExperiment:
    """Place `jobs` on the plan's pools, at offered `load` (None: as they are), seeded by
    setup.seed."""
    placed = place(jobs, plan.pools)
    if load is not None and placed.jobs:
        placed = dataclasses.replace(
            placed, jobs=pooled_load(placed.jobs, placed.processors, plan, load)
        )
    return PooledExperiment(placed, plan, setup)
