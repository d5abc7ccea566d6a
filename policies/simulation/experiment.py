"""One what-if experiment: a trace, a machine, the moldable rule, and the policies compared.

    setup = Setup(machine=128, moldable=MoldableRule(0.5, 2.0), seed=1)
    experiment = Experiment(jobs, setup)               # curves drawn, ranges and limits fixed
    results = {name: experiment.run(name) for name in POLICIES}
    results["adaptive"].metrics.mean_response_s

Every policy runs on the same jobs with the same curves, so the figures differ only by how the
jobs were sized.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from policies.config import DEFAULTS, PolicySettings
from policies.simulation.adaptive import AdaptiveSizer
from policies.simulation.engine import Progress, Schedule, simulate
from policies.simulation.metrics import Metrics, summarize
from policies.simulation.moldable import MoldableRule
from policies.simulation.sizing import GreedySizer, MoldableRequests, RigidSizer, Sizer
from policies.simulation.workload import JobCurves, TraceJob, draw_downey
from predictor import Curve

#: The policies compared, in the order they are reported.
POLICIES = ("adaptive", "rigid", "greedy")


@dataclass(frozen=True)
class Setup:
    """How the trace is replayed.

    machine: the partition's size in nodes. moldable: the range rule. backfill: EASY on or off
    (FCFS alone). seed: the workload model's draws. max_parallelism: the largest average
    parallelism A of the workload model (None: the machine's size). settings: the adaptive
    policy's settings.
    """

    machine: int
    moldable: MoldableRule = field(default_factory=MoldableRule)
    backfill: bool = True
    seed: int = 1
    max_parallelism: float | None = None
    settings: PolicySettings = DEFAULTS

    def __post_init__(self) -> None:
        if isinstance(self.machine, bool) or not isinstance(self.machine, int) or self.machine < 1:
            raise ValueError(f"machine must be a whole number ≥ 1, got {self.machine!r}")

    @property
    def parallelism(self) -> float:
        return float(self.machine if self.max_parallelism is None else self.max_parallelism)


@dataclass(frozen=True)
class PolicyResult:
    """One policy's schedule, its figures and (adaptive) how many jobs each rule decided."""

    policy: str
    schedule: Schedule
    metrics: Metrics
    rules: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


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
        self.jobs = tuple(jobs)
        self.setup = setup
        draws = draw_downey(len(self.jobs), setup.parallelism, setup.seed)
        self.curves = JobCurves(self.jobs, draws, stored)

    @cached_property
    def requests(self) -> MoldableRequests:
        s = self.setup
        return MoldableRequests.build(self.jobs, self.curves, s.moldable, s.machine)

    @property
    def jobs_with_stored_curves(self) -> int:
        return sum(c is not None for c in self.curves.stored)

    def sizer(self, policy: str) -> Sizer:
        if policy == "rigid":
            return RigidSizer(self.jobs, self.setup.machine)
        if policy == "greedy":
            return GreedySizer(self.requests)
        if policy == "adaptive":
            return AdaptiveSizer(self.jobs, self.requests, self.curves, self.setup.settings)
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")

    def run(
        self, policy: str, progress: Progress | None = None, record_reservations: bool = False
    ) -> PolicyResult:
        """Simulate the trace under `policy` (one of POLICIES)."""
        sizer = self.sizer(policy)
        schedule = simulate(
            self.jobs,
            self.setup.machine,
            sizer,
            self.curves.runtime,
            backfill=self.setup.backfill,
            record_reservations=record_reservations,
            progress=progress,
        )
        rules = sizer.rules if isinstance(sizer, AdaptiveSizer) else {}
        return PolicyResult(
            policy, schedule, summarize(schedule), MappingProxyType(dict(sorted(rules.items())))
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
