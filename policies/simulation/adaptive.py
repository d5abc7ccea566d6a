"""The adaptive policy in the simulator: the policies package's own `decide`, at submit.

A thin adapter, so that the simulator tries exactly the code the daemon runs. For each job, when
it is submitted: the request is its moldable range with its user's limit in whole minutes
(sizing.MoldableRequests), the curve is what the daemon would have (`learner`: the curve
learning.CurveLearner fitted from the application's earlier completed runs, None before it
has one; without a learner, the oracle: the job's true curve, workload.JobCurves.policy_curve,
an upper bound no site has), the cluster
state is what the daemon would see (idle nodes, the nodes the waiting jobs want, the partition's
size), and the exploration budget counts this run's decisions as the daemon counts its own.

The decision becomes the job's allocation: its size and time limit (minutes → seconds; the
user's limit when the decision leaves it alone). A decision that leaves the job as submitted
hands Slurm the range, which sizes it at start like `greedy` does.

Variants that separate the effect of sizing from the effect of limits: `pinned` (rigid_limits:
the request is the trace's own size [r, r] with its limit, so only the limit can change) and
`fixed_limits` (adaptive_fixed_limits: the size is decided, the user's limit is kept).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from policies.config import PolicySettings
from policies.decide import decide
from policies.inputs import ClusterState, ExplorationBudget, Request
from policies.simulation.learning import CurveLearner
from policies.simulation.sizing import Allocation, ClusterView, MoldableRequests, minutes
from policies.simulation.workload import JobCurves, TraceJob
from predictor import Curve
from predictor.downey import IntArray

EXPLORATION = "exploration"


class AdaptiveSizer:
    """`policies.decide` for every job at its submit time (module doc)."""

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        requests: MoldableRequests,
        curves: JobCurves,
        settings: PolicySettings,
        learner: tuple[CurveLearner, IntArray] | None = None,
        pinned: bool = False,
        fixed_limits: bool = False,
        name: str = "adaptive",
    ) -> None:
        self.name = name
        self.jobs = jobs
        self.requests = requests
        self.curves = curves
        self.settings = settings
        self.learner = learner
        self.pinned, self.fixed_limits = pinned, fixed_limits
        self.budget = ExplorationBudget()
        #: How many jobs each rule decided.
        self.rules: Counter[str] = Counter()
        # Workload-model curves are exact, hence reliable: nothing to explore, so the
        # budget's node-hours (one more curve evaluation per job) are only kept for the others.
        self._track_node_hours = learner is not None or any(c is not None for c in curves.stored)

    def _curve(self, job: int, lo: int, hi: int, now: float) -> Curve | None:
        if self.learner is None:
            return self.curves.policy_curve(job, (lo, self.jobs[job].nodes, hi))
        learner, apps = self.learner
        return learner.curve(int(apps[job]), now)

    def allocate(self, job: int, view: ClusterView) -> Allocation:
        if self.pinned:
            j = self.jobs[job]
            lo, hi, user_limit = j.nodes, j.nodes, j.limit
        else:
            r = self.requests
            lo, hi, user_limit = r.lo[job], r.hi[job], r.limit[job]
        curve = self._curve(job, lo, hi, view.now)
        decision = decide(
            Request(lo, hi, time_limit_min=minutes(user_limit)),
            curve,
            ClusterState(
                idle_nodes=view.idle_nodes,
                pending_demand_nodes=view.pending_demand_nodes,
                total_nodes=view.total_nodes,
            ),
            self.settings,
            self.budget,
        )
        self.rules[decision.rule] += 1
        if decision.nodes is None:
            return Allocation(lo, hi, user_limit, decision.rule)
        self._count(decision.nodes, decision.rule == EXPLORATION, curve)
        limit = user_limit
        if not self.fixed_limits and decision.time_limit_min is not None:
            limit = 60.0 * decision.time_limit_min
        return Allocation(decision.nodes, decision.nodes, limit, decision.rule)

    def finished(self, job: int, nodes: int, runtime: float, killed: bool, now: float) -> None:
        """A run ended: a completed one is an observation; a killed one is not (learning.py)."""
        if self.learner is not None and not killed:
            learner, apps = self.learner
            learner.observe(int(apps[job]), nodes, runtime, now)

    def _count(self, n: int, explored: bool, curve: Curve | None) -> None:
        """Add one decision with a curve to the exploration budget (predicted node-hours)."""
        b = self.budget
        hours = 0.0
        if self._track_node_hours and curve is not None:
            hours = n * float(curve.runtime(np.array([float(n)]))[0]) / 3600.0
        self.budget = ExplorationBudget(
            jobs_decided=b.jobs_decided + 1,
            jobs_explored=b.jobs_explored + explored,
            node_hours_decided=b.node_hours_decided + hours,
            node_hours_explored=b.node_hours_explored + (hours if explored else 0.0),
        )
