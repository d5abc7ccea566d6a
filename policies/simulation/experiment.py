"""One what-if experiment: a trace, a machine, the moldable rule, and the policies compared.

    setup = Setup(machine=128, moldable=MoldableRule(0.5, 2.0), seed=1)
    experiment = Experiment(jobs, setup)               # curves drawn, ranges and limits fixed
    results = {name: experiment.run(name) for name in POLICIES}
    results["adaptive"].metrics.mean_response_s

Every policy runs on the same jobs with the same limits, hidden applications, true curves
and run noise (estimates.py, world.py), so the figures differ only by how the jobs were sized
and limited:

rigid                  the trace as submitted: its size, its user's limit
rigid_limits           its size, the limit adaptalloc's rule sets for that size in the
                       moldable range (adaptive.py)
greedy                 the moldable range left to Slurm: as many free nodes as allowed
adaptive_fixed_limits  adaptalloc's size, the user's limit untouched
adaptive               adaptalloc's size and limit
oracle                 adaptive handed each job's true curve scaled by its own run time
                       ("oracle (true curve + own run time)"): an upper bound no site has
oracle_curve           adaptive handed the true curve's shape at its hidden application's
                       typical scale ("oracle (curve shape only)"): the ceiling a learner
                       that identified each hidden application exactly could reach

A failed or cancelled trace job runs as recorded under every policy, and a job killed at its
limit is submitted again by its user until it completes (engine.py).

and, on request (VARIANTS, not among the default POLICIES), adaptive with the release and the
kill guard the daemon offers:

adaptive_range         released with the narrowed range [efficient, larger useful]
                       (release = "range"), so the scheduler picks the size at start
adaptive_guard         adaptive with the daemon's kill guard (adaptive.py): a job still running
                       at a limit adaptalloc shortened gets the user's limit back
adaptive_range_guard   both
adaptive_identified    adaptive that sizes only with identified curves (ADEPT pinned A and σ);
                       a job whose curve is not identified runs as submitted. Most curves the
                       learner fits from two sizes are not identified, and adaptive sizes with
                       them (the time limit already refuses them)
adaptive_timeclass     adaptive whose learner keys curves by (application, requested-time
                       class 2^k minutes), a proxy of the problem size the daemon has at
                       submit time: one key's runs are more alike than one application's
adaptive_scaled        adaptive fitting one curve shape per application to runs normalised
                       by their user's limit, scaled per job by its own limit (scaled.py)
adaptive_scaled_checked  adaptive_scaled that also sizes with a shape whose out-of-sample
                       error on its application's own runs is small (never shortening a
                       limit with it; scaled.py)
adaptive_scaled_explore  adaptive_scaled_checked that pins one job of an application whose
                       runs are all on one size at another size of its range (scaled.py)
adaptive_checked       the control: adaptive_scaled_checked without the per-run scale
adaptive_scaled_checked_range  adaptive_scaled_checked released with the narrowed range
                       (release = "range"), so the scheduler picks the size at start
oracle_range           the oracle released with the narrowed range (true curves: an upper
                       bound no site has)
oracle_curve_range     the curve-only oracle released with the narrowed range

With curves = "learned" (the default) the adaptalloc policies other than the oracles see only
curves learned from their own completed runs in this simulation (learning.py), filed under the
learner's keys (applications.py), which are not the hidden applications; with "oracle" they
all see the true curves with each job's own run time (an upper bound).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType

import numpy as np

from policies.config import DEFAULTS, PolicySettings
from policies.refit_cadence import REFIT_GROWTH
from policies.simulation.adaptive import AdaptiveSizer
from policies.simulation.applications import Applications, by_time_class, group
from policies.simulation.engine import Progress, Schedule, simulate
from policies.simulation.estimates import ModelledLimits, model_limits
from policies.simulation.learning import GROWTH, CurveLearner, Fits
from policies.simulation.metrics import Metrics, summarize
from policies.simulation.moldable import MoldableRule
from policies.simulation.scaled import CHECKED, CHECKED_RANGE, EXPLORE, GATE_ONLY, SCALED, SIZERS
from policies.simulation.sizing import GreedySizer, MoldableRequests, RigidSizer, Sizer
from policies.simulation.workload import JobCurves, TraceJob
from policies.simulation.world import (
    CODES_PER_KEY,
    RUN_NOISE,
    SHARED,
    WORLDS,
    Truth,
    check,
    draw_truth,
)
from predictor import Curve

#: The curve-only oracle: the true curve's shape, no run time of the job's own.
ORACLE_CURVE = "oracle_curve"
#: The policies compared, in the order they are reported.
POLICIES = (
    "rigid",
    "rigid_limits",
    "greedy",
    "adaptive_fixed_limits",
    "adaptive",
    "oracle",
    ORACLE_CURVE,
)
#: The oracle released with the narrowed range (release = "range"): true curves too.
ORACLE_RANGE = "oracle_range"
#: The curve-only oracle released with the narrowed range.
ORACLE_CURVE_RANGE = "oracle_curve_range"
#: The policies handed the true curves whatever Setup.curves says.
ORACLES = frozenset({"oracle", ORACLE_CURVE, ORACLE_RANGE, ORACLE_CURVE_RANGE})
#: What each oracle knows, as printed beside its name.
ORACLE_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "oracle": "oracle (true curve + own run time)",
        ORACLE_CURVE: "oracle (curve shape only)",
        ORACLE_RANGE: "oracle_range (true curve + own run time)",
        ORACLE_CURVE_RANGE: "oracle_curve_range (curve shape only)",
    }
)
#: The limits model's random stream, apart from the truth's (world.py uses the seed itself).
LIMIT_STREAM = 1
#: adaptive's variants: (release, kill guard on); release None keeps the settings' own.
VARIANTS: Mapping[str, tuple[str | None, bool]] = MappingProxyType(
    {
        "adaptive_range": ("range", False),
        "adaptive_guard": (None, True),
        "adaptive_range_guard": ("range", True),
        "adaptive_identified": (None, False),
        "adaptive_timeclass": (None, False),
        SCALED: (None, False),
        CHECKED: (None, False),
        EXPLORE: (None, False),
        GATE_ONLY: (None, False),
        CHECKED_RANGE: ("range", False),
        ORACLE_RANGE: ("range", False),
        ORACLE_CURVE_RANGE: ("range", False),
    }
)
#: Variants whose learner keys by (application, requested-time class) (applications.py).
KEYED_BY_TIME = frozenset({"adaptive_timeclass"})
#: Variants that size only with identified curves (an unidentified one: as submitted).
IDENTIFIED_ONLY = frozenset({"adaptive_identified"})
#: Every policy `Experiment.run` knows.
ALL_POLICIES = (*POLICIES, *VARIANTS)
#: Where the adaptalloc policies' curves come from.
CURVES = ("learned", "oracle")
#: When the learned curves are refitted: "daemon" (the learner's rounds, after the debounce
#: when the refit is due by policies/refit_cadence.py with g = Setup.refit_growth, on up to
#: 500 runs) or "sparse" (only when the runs grew by half, on the
#: latest 64: fewer fits, staler curves); learning.py.
REFITS = ("daemon", "sparse")
#: The policies that run adaptalloc's decide (the oracles too, on the true curves).
ADAPTALLOC = (
    "rigid_limits",
    "adaptive_fixed_limits",
    "adaptive",
    "oracle",
    ORACLE_CURVE,
    *VARIANTS,
)


@dataclass(frozen=True)
class Setup:
    """How the trace is replayed.

    machine: the partition's size in nodes. moldable: the range rule. backfill: EASY on or off
    (FCFS alone). seed: every draw (limits the trace lacks, hidden applications, curves,
    noise). max_parallelism: the largest average parallelism A (None: the machine's size).
    settings: the adaptive policy's settings. curves: "learned" or "oracle" (module doc).
    world: the world model, one of world.WORLDS; parallelism_factor: F's range in A =
    r_h·F (None: the world's); codes_per_key, shared_codes: the hidden applications behind
    a learner key (world.py); noise: σ of the run noise. refits: the learned curves' refit
    cadence, one of REFITS; refit_growth: the daemon cadence's g ([learner] refit_growth;
    0: refit on every change). max_time_s: the partition's longest limit, up to which a
    killed job's user doubles its limit (None: the longest limit of the jobs).
    max_job_nodes: the partition's MaxNodes, the most nodes one job may take: every range and
    every rigid request above it is cut to it, for every policy alike (None: the machine).
    """

    machine: int
    moldable: MoldableRule = field(default_factory=MoldableRule)
    backfill: bool = True
    seed: int = 1
    max_parallelism: float | None = None
    settings: PolicySettings = DEFAULTS
    curves: str = "learned"
    parallelism_factor: tuple[float, float] | None = None
    noise: float = RUN_NOISE
    refits: str = "daemon"
    refit_growth: float = REFIT_GROWTH
    world: str = "cirne"
    codes_per_key: int = CODES_PER_KEY
    shared_codes: float = SHARED
    max_time_s: float | None = None
    max_job_nodes: int | None = None

    def __post_init__(self) -> None:
        check(self.world, self.codes_per_key, self.shared_codes, self.noise)
        if self.parallelism_factor is not None and WORLDS[self.world].factor is None:
            raise ValueError(
                f"the {self.world} world draws A without the request: it takes no "
                "parallelism factor"
            )
        if self.max_time_s is not None and not (
            math.isfinite(self.max_time_s) and self.max_time_s > 0.0
        ):
            raise ValueError(f"max_time_s must be finite and > 0, got {self.max_time_s!r}")
        if not self.refit_growth >= 0.0:
            raise ValueError(f"refit_growth must be ≥ 0, got {self.refit_growth!r}")
        if self.curves not in CURVES:
            raise ValueError(f"curves must be one of {', '.join(CURVES)}, got {self.curves!r}")
        if self.refits not in REFITS:
            raise ValueError(f"refits must be one of {', '.join(REFITS)}, got {self.refits!r}")
        if isinstance(self.machine, bool) or not isinstance(self.machine, int) or self.machine < 1:
            raise ValueError(f"machine must be a whole number ≥ 1, got {self.machine!r}")
        cap = self.max_job_nodes
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(f"max_job_nodes must be a whole number ≥ 1, got {cap!r}")

    @property
    def job_nodes(self) -> int:
        """The most nodes one job may take: the machine, or its MaxNodes when smaller."""
        return self.machine if self.max_job_nodes is None else min(self.machine, self.max_job_nodes)

    @property
    def parallelism(self) -> float:
        return float(self.machine if self.max_parallelism is None else self.max_parallelism)

    @property
    def factor(self) -> tuple[float, float] | None:
        """F's range in A = r_h·F: the given one, else the world's (None: downey)."""
        if self.parallelism_factor is not None:
            return self.parallelism_factor
        return WORLDS[self.world].factor


@dataclass(frozen=True)
class PolicyResult:
    """One policy's schedule, its figures, (adaptalloc policies) how many jobs each rule
    decided and (learned curves) how many refits ran."""

    policy: str
    schedule: Schedule
    metrics: Metrics
    rules: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    refits: int = 0
    #: Of the jobs the fallback rule left as submitted: why (adaptive.FALLBACK_NO_CURVE,
    #: adaptive.FALLBACK_UNUSABLE) -> how many.
    fallbacks: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: With node pools (typed.py): pool name -> {"jobs", "node_hours"}; empty without.
    pools: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: MappingProxyType({}))
    #: With node pools and roofline priors (typed.PoolPlan.roofline): the jobs sized on a
    #: prior, sorted, each once (a job resubmitted after a kill is one job); empty otherwise.
    priors: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", MappingProxyType(dict(self.rules)))
        object.__setattr__(self, "fallbacks", MappingProxyType(dict(self.fallbacks)))
        object.__setattr__(self, "pools", MappingProxyType(dict(self.pools)))

    def __reduce__(self) -> tuple[object, ...]:
        """Picklable (a sweep's cells may run in other processes): mappings as dicts."""
        args = (
            self.policy,
            self.schedule,
            self.metrics,
            dict(self.rules),
            self.refits,
            dict(self.fallbacks),
            {k: dict(v) for k, v in self.pools.items()},
            self.priors,
        )
        return (PolicyResult, args)


class Experiment:
    """The jobs with their curves and moldable requests, ready to run under any policy."""

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        setup: Setup,
        stored: Mapping[int, Curve] | None = None,
    ) -> None:
        if not jobs:
            raise ValueError("an experiment needs at least one job")
        self.setup = setup
        #: The limits the trace lacks, drawn from the model of user estimates.
        self.limits: ModelledLimits = model_limits(
            jobs, np.random.default_rng((setup.seed, LIMIT_STREAM))
        )
        self.jobs = self.limits.jobs
        #: The learner's keys (not the hidden applications).
        self.apps: Applications = group(self.jobs)
        self.truth: Truth = draw_truth(
            self.jobs,
            self.apps,
            setup.seed,
            setup.parallelism,
            setup.world,
            setup.parallelism_factor,
            setup.noise,
            setup.codes_per_key,
            setup.shared_codes,
        )
        self.curves = JobCurves(
            self.jobs, self.truth.per_job(), stored, self.truth.noise, self.truth.hidden
        )
        #: The partition's longest limit (a killed job's user doubles its limit up to it).
        self.max_time = (
            setup.max_time_s if setup.max_time_s is not None else max(j.limit for j in self.jobs)
        )
        #: The learners' fits, shared by this experiment's policies (learning.py).
        self.fits: Fits = {}

    @cached_property
    def time_apps(self) -> Applications:
        """The learner's keys of KEYED_BY_TIME: (application, requested-time class)."""
        return by_time_class(self.jobs, self.apps)

    @cached_property
    def requests(self) -> MoldableRequests:
        s = self.setup
        return MoldableRequests.build(self.jobs, s.moldable, s.job_nodes)

    @property
    def jobs_with_stored_curves(self) -> int:
        return sum(c is not None for c in self.curves.stored)

    def sizer(self, policy: str) -> Sizer:
        if policy == "rigid":
            return RigidSizer(self.jobs, self.setup.machine, self.setup.job_nodes)
        if policy == "greedy":
            return GreedySizer(self.requests)
        if policy in ADAPTALLOC:
            learner = None
            if policy not in ORACLES and self.setup.curves == "learned":
                growth = None if self.setup.refits == "daemon" else GROWTH
                keys = self.time_apps if policy in KEYED_BY_TIME else self.apps
                curve_learner = CurveLearner(
                    len(keys), growth=growth, fits=self.fits, refit_growth=self.setup.refit_growth
                )
                learner = (curve_learner, keys.index)
            release, guard = VARIANTS.get(policy, (None, False))
            settings = self.setup.settings
            if release is not None:
                settings = replace(settings, release=release)
            if policy in SIZERS and learner is not None:
                return SIZERS[policy](self.jobs, self.requests, self.curves, settings, learner)
            return AdaptiveSizer(
                self.jobs,
                self.requests,
                self.curves,
                settings,
                learner,
                pinned=policy == "rigid_limits",
                fixed_limits=policy == "adaptive_fixed_limits",
                name=policy,
                guard=self.apps.index if guard else None,
                identified_only=policy in IDENTIFIED_ONLY,
                shape_only=policy in (ORACLE_CURVE, ORACLE_CURVE_RANGE),
            )
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(ALL_POLICIES)}")

    def run(
        self, policy: str, progress: Progress | None = None, record_reservations: bool = False
    ) -> PolicyResult:
        """Simulate the trace under `policy` (one of ALL_POLICIES)."""
        sizer = self.sizer(policy)
        schedule = simulate(
            self.jobs,
            self.setup.machine,
            sizer,
            self.curves.runtime,
            backfill=self.setup.backfill,
            record_reservations=record_reservations,
            progress=progress,
            max_time=self.max_time,
        )
        rules = sizer.rules if isinstance(sizer, AdaptiveSizer) else {}
        fallbacks = sizer.fallbacks if isinstance(sizer, AdaptiveSizer) else {}
        refits = 0
        if isinstance(sizer, AdaptiveSizer) and sizer.learner is not None:
            refits = sizer.learner[0].refits
        return PolicyResult(
            policy,
            schedule,
            summarize(schedule, reference=self.curves.at_request(), keys=self.apps.index),
            MappingProxyType(dict(sorted(rules.items()))),
            refits,
            MappingProxyType(dict(sorted(fallbacks.items()))),
        )


def compare(
    jobs: Sequence[TraceJob],
    setup: Setup,
    stored: Mapping[int, Curve] | None = None,
    policies: Sequence[str] = POLICIES,
) -> dict[str, PolicyResult]:
    """Every policy on the same jobs and curves."""
    experiment = Experiment(jobs, setup, stored)
    return {name: experiment.run(name) for name in policies}
