"""The adaptive policy in the simulator: the policies package's own `decide`, at submit.

A thin adapter, so that the simulator tries exactly the code the daemon runs. For each job, when
it is submitted: the request is its moldable range with its user's limit in whole minutes
(sizing.MoldableRequests), the curve is the job's (workload.JobCurves.policy_curve), the cluster
state is what the daemon would see (idle nodes, the nodes the waiting jobs want, the partition's
size), and the exploration budget counts this run's decisions as the daemon counts its own.

The decision becomes the job's allocation: its size and time limit (minutes → seconds; the
user's limit when the decision leaves it alone). A decision that leaves the job as submitted
hands Slurm the range, which sizes it at start like `greedy` does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from policies.config import PolicySettings
from policies.decide import decide
from policies.inputs import ClusterState, ExplorationBudget, Request
from policies.simulation.sizing import Allocation, ClusterView, MoldableRequests, minutes
from policies.simulation.workload import JobCurves, TraceJob
from predictor import Curve

EXPLORATION = "exploration"


class AdaptiveSizer:
    """`policies.decide` for every job at its submit time (module doc)."""

    name = "adaptive"

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        requests: MoldableRequests,
        curves: JobCurves,
        settings: PolicySettings,
    ) -> None:
        self.jobs = jobs
        self.requests = requests
        self.curves = curves
        self.settings = settings
        self.budget = ExplorationBudget()
        #: How many jobs each rule decided.
        self.rules: Counter[str] = Counter()
        # Workload-model curves are exact, hence reliable: nothing to explore, so the
        # budget's node-hours (one more curve evaluation per job) are only kept for stored ones.
        self._track_node_hours = any(c is not None for c in curves.stored)

    def allocate(self, job: int, view: ClusterView) -> Allocation:
        r = self.requests
        lo, hi, user_limit = r.lo[job], r.hi[job], r.limit[job]
        curve = self.curves.policy_curve(job, (lo, self.jobs[job].nodes, hi))
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
        limit = user_limit if decision.time_limit_min is None else 60.0 * decision.time_limit_min
        return Allocation(decision.nodes, decision.nodes, limit, decision.rule)

    def _count(self, n: int, explored: bool, curve: Curve) -> None:
        """Add one decision with a curve to the exploration budget (predicted node-hours)."""
        b = self.budget
        hours = 0.0
        if self._track_node_hours:
            hours = n * float(curve.runtime(np.array([float(n)]))[0]) / 3600.0
        self.budget = ExplorationBudget(
            jobs_decided=b.jobs_decided + 1,
            jobs_explored=b.jobs_explored + explored,
            node_hours_decided=b.node_hours_decided + hours,
            node_hours_explored=b.node_hours_explored + (hours if explored else 0.0),
        )
