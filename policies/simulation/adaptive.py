"""The adaptive policy in the simulator: the policies package's own `decide`, at submit.

A thin adapter, so that the simulator tries exactly the code the daemon runs. For each job, when
it is submitted: the request is its moldable range with its user's limit in whole minutes
(sizing.MoldableRequests: the trace's requested time as written; a job submitted again after
a kill, its new limit), the curve is what the daemon would have (`learner`: the curve
learning.CurveLearner fitted from the application's earlier completed runs, None before it
has one; without a learner, an oracle: the job's true curve with its own run time,
workload.JobCurves.policy_curve, an upper bound no site has, or with `shape_only` the true
curve's shape at its hidden application's typical scale, JobCurves.shape_curve, the ceiling a
learner can reach), the cluster
state is what the daemon would see (idle nodes, the nodes the waiting jobs want, the partition's
size), and the exploration budget counts this run's decisions as the daemon counts its own.

The decision becomes the job's allocation: its size and time limit (minutes → seconds; the
user's limit when the decision leaves it alone). A decision that leaves the job as submitted
hands Slurm the range, which sizes it at start like `greedy` does.

Variants that separate the effect of sizing from the effect of limits: `pinned` (rigid_limits:
the job keeps its requested size r, and gets the limit adaptalloc's rule would set had it
chosen r in the moldable range, time_limit.py on [lo, hi] with n = r: L·T⁺(r)/T⁻(lo)·safety
when the curve may shorten a limit, the user's L otherwise; deciding on [r, r] instead could
never shorten a limit, since T⁺(r)/T⁻(r) ≥ 1) and `fixed_limits` (adaptive_fixed_limits: the
size is decided, the user's limit is kept).

A learned policy whose application has no curve because all its runs ran at one size explores
a second size as the daemon does (policies/second_size.py: pinned, the user's limit kept,
counted in the exploration budget).

A decision released with a range (release = "range": `Decision.max_nodes`) hands the scheduler
that narrowed range, and its limit (written for the range's smallest size); Slurm sizes it at
start within the range, like `greedy` does with the user's.

`guard`: the daemon's kill guard (plugin/daemon/guard.py). A job whose limit the decision
shortened is watched: if it is still running at that limit, the limit is raised to the
user's own (the allocation's `guard_limit`, engine.py), and its application's safety grows,
safety ← min(MAX_SAFETY, safety · SAFETY_GROWTH); the limits later shortened for that
application are multiplied by it, never above the user's: min(L, ⌈L'·safety⌉) minutes
(plugin/daemon/decider.py, `with_safety`). The constants are the daemon's (an assumption
there too, not fitted; the unit tests check that they agree).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from policies.config import PolicySettings
from policies.decide import decide, decide_with_runtime, unusable_because
from policies.decision import FALLBACK, Decision
from policies.inputs import ClusterState, ExplorationBudget, Request
from policies.profile import RuntimeProfile
from policies.second_size import Run, SecondSize, second_size
from policies.simulation.sizing import Allocation, ClusterView, MoldableRequests, minutes
from policies.simulation.workload import JobCurves, TraceJob
from policies.time_limit import time_limit
from predictor import Curve
from predictor.downey import IntArray
from predictor.roofline import is_prior

FALLBACK_NO_CURVE = "no curve"
FALLBACK_UNUSABLE = "curve unusable"
#: rigid_limits' rule for a job whose limit its curve set (its size stays the request).
LIMIT_ONLY = "limit_only"
#: Why `identified_only` leaves a job as submitted.
UNIDENTIFIED = (
    "the learned curve is not identified (its runs do not pin A and σ), and this policy sizes "
    "only with identified curves"
)
#: The kill guard's growth of an application's limit safety per raise, and its ceiling (the
#: daemon's SAFETY_GROWTH and MAX_SAFETY, plugin/daemon/guard.py).
SAFETY_GROWTH = 1.25
MAX_SAFETY = 4.0


class Learner(Protocol):
    """What the adaptive policy asks of a learner (learning.CurveLearner; typed.TypedLearner
    for node types): completed and killed runs in, the curve a decision sees out, refits
    counted."""

    @property
    def refits(self) -> int: ...

    def observe(
        self,
        app: int,
        nodes: int,
        runtime: float,
        now: float,
        limit: float | None = None,
        written_for: int | None = None,
    ) -> None: ...

    def observe_killed(
        self, app: int, nodes: int, ran: float, now: float, limit: float, written_for: int
    ) -> None: ...

    def curve(self, app: int, now: float) -> Curve | None: ...

    def runs(self, app: int, now: float) -> list[Run]:
        """The application's completed runs in the store at `now` (policies/second_size.py)."""
        ...


def with_safety(limit_min: int, user_limit_min: int, safety: float) -> int:
    """min(L, ⌈L'·safety⌉) for a limit L' shorter than the user's L; L' otherwise."""
    if limit_min >= user_limit_min or safety <= 1.0:
        return limit_min
    return min(user_limit_min, math.ceil(limit_min * safety - 1e-9))


class AdaptiveSizer:
    """`policies.decide` for every job at its submit time (module doc)."""

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        requests: MoldableRequests,
        curves: JobCurves,
        settings: PolicySettings,
        learner: tuple[Learner, IntArray] | None = None,
        pinned: bool = False,
        fixed_limits: bool = False,
        name: str = "adaptive",
        guard: IntArray | None = None,
        identified_only: bool = False,
        shape_only: bool = False,
    ) -> None:
        """`guard`: each job's application index, to run the kill guard with per-application
        safety (module doc); None: no guard. `shape_only`: without a learner, the curve-only
        oracle's curves (module doc)."""
        self.name = name
        self.jobs = jobs
        self.requests = requests
        self.curves = curves
        self.settings = settings
        self.learner = learner
        self.pinned, self.fixed_limits = pinned, fixed_limits
        self.guard = guard
        self.identified_only = identified_only
        self.shape_only = shape_only
        #: The kill guard's safety per application index (1 until a raise).
        self.safety: dict[int, float] = {}
        self.budget = ExplorationBudget()
        #: How many jobs each rule decided.
        self.rules: Counter[str] = Counter()
        #: Why the jobs left as submitted were: FALLBACK_NO_CURVE (none learned yet, or the
        #: predictor refused the runs) or FALLBACK_UNUSABLE (a curve decide would not use).
        self.fallbacks: Counter[str] = Counter()
        #: The jobs sized on a roofline prior (a learner's curve marked roofline_prior,
        #: priors.py), in the order they were decided (the daemon names the prior in their reason).
        self.priors: list[int] = []
        # Workload-model curves are exact, hence reliable: nothing to explore, so the
        # budget's node-hours (one more curve evaluation per job) are only kept for the others.
        self._track_node_hours = learner is not None or any(c is not None for c in curves.stored)

    def _curve(self, job: int, lo: int, hi: int, now: float) -> Curve | None:
        if self.learner is None:
            observed = (lo, self.jobs[job].nodes, hi)
            if self.shape_only:
                return self.curves.shape_curve(job, observed)
            return self.curves.policy_curve(job, observed)
        learner, apps = self.learner
        return learner.curve(int(apps[job]), now)

    def _decide(
        self, job: int, view: ClusterView, user_limit: float | None = None
    ) -> tuple[Decision, Curve | None, int, float, float | None]:
        """(decision, curve, requested minimum, user's limit in s, the curve's runtime at the
        decided size when decide evaluated it, a second size's runtime bound, else None) for
        `job` now, with `user_limit` (None: the request's); no state changes."""
        r = self.requests
        lo, hi = r.lo[job], r.hi[job]
        user = r.limit[job] if user_limit is None else user_limit
        curve = self._curve(job, lo, hi, view.now)
        request = Request(lo, hi, time_limit_min=minutes(user), job_id=str(job))
        cluster = ClusterState(
            idle_nodes=view.idle_nodes,
            pending_demand_nodes=view.pending_demand_nodes,
            total_nodes=view.total_nodes,
        )
        runtime = None
        second = self._second_size(job, request, curve, cluster, view.now)
        if second is not None:
            return second.decision, None, lo, user, second.runtime_s
        if self.pinned:
            decision = self._limit_at_request(job, request, curve, cluster)
        elif self.identified_only and curve is not None and not curve.identified:
            decision = decide(request, None, cluster, self.settings, self.budget, UNIDENTIFIED)
        else:
            decision, runtime = decide_with_runtime(
                request, curve, cluster, self.settings, self.budget
            )
        return decision, curve, lo, user, runtime

    def _second_size(
        self, job: int, request: Request, curve: Curve | None, cluster: ClusterState, now: float
    ) -> SecondSize | None:
        """A learned policy's run at a second size for an application whose runs all ran at
        one size (policies/second_size.py), as the daemon's decider proposes it."""
        if curve is not None or self.learner is None or self.pinned:
            return None
        learner, apps = self.learner
        runs = learner.runs(int(apps[job]), now)
        return second_size(request, runs, cluster, self.settings, self.budget)

    def _limit_at_request(
        self, job: int, request: Request, curve: Curve | None, cluster: ClusterState
    ) -> Decision:
        """rigid_limits: the requested size r with the limit adaptalloc's rule sets for r in
        the moldable range (module doc); the fallback when the curve may not be used."""
        size = self._requested(job)
        why = "no curve" if curve is None else unusable_because(curve, self.settings)
        if curve is None or why:
            return Decision(None, None, FALLBACK, f"{why}: the job keeps its size and limit")
        lo, hi = request.min_nodes, request.max_nodes
        profile = RuntimeProfile.of(curve, lo, hi, (lo, hi))
        limit = time_limit(request, profile, size, cluster, self.settings)
        return Decision(size, limit.minutes, LIMIT_ONLY, limit.reason)

    def _requested(self, job: int) -> int:
        """The trace's request r, cut to the partition's MaxNodes as the range's top is."""
        return min(self.jobs[job].nodes, self.requests.hi[job])

    def propose(self, job: int, view: ClusterView) -> tuple[int | None, float]:
        """What `allocate` would decide now, without counting it: (size, the curve's runtime
        there in s); (None, nan) when it would leave the job as submitted (pooled.py asks
        each listed partition before choosing one)."""
        decision, curve, _, _, runtime = self._decide(job, view)
        if decision.nodes is None or curve is None:
            return None, math.nan
        return decision.nodes, _runtime_at(curve, decision.nodes, runtime)

    def allocate(self, job: int, view: ClusterView, user_limit: float | None = None) -> Allocation:
        decision, curve, lo, user_limit, runtime = self._decide(job, view, user_limit)
        if self.pinned:
            lo = hi = self._requested(job)
        else:
            hi = self.requests.hi[job]
        self.rules[decision.rule] += 1
        if decision.rule == FALLBACK:
            self.fallbacks[FALLBACK_NO_CURVE if curve is None else FALLBACK_UNUSABLE] += 1
        if self.requests.lo[job] < self.requests.hi[job]:  # the hook holds moldable jobs only
            self._count(decision, curve, runtime)
        if decision.nodes is None:
            return Allocation(lo, hi, user_limit, decision.rule)
        if is_prior(curve):
            self.priors.append(job)
        high = decision.nodes if decision.max_nodes is None else decision.max_nodes
        if self.fixed_limits or decision.time_limit_min is None:
            return Allocation(decision.nodes, high, user_limit, decision.rule)
        if self.guard is None:
            return Allocation(decision.nodes, high, 60.0 * decision.time_limit_min, decision.rule)
        user_min = minutes(user_limit)
        safety = self.safety.get(int(self.guard[job]), 1.0)
        limit_min = with_safety(decision.time_limit_min, user_min, safety)
        watched = user_limit if limit_min < user_min else None
        return Allocation(decision.nodes, high, 60.0 * limit_min, decision.rule, watched)

    def raised(self, job: int, now: float) -> None:
        """The kill guard raised `job`'s limit: its application's safety grows (module doc)."""
        if self.guard is not None:
            app = int(self.guard[job])
            self.safety[app] = min(MAX_SAFETY, self.safety.get(app, 1.0) * SAFETY_GROWTH)

    def finished(self, job: int, nodes: int, runtime: float, killed: bool, now: float) -> None:
        """A run ended: a completed one is an observation; a killed one counts in the limit
        use only (learning.py)."""
        if self.learner is not None:
            learner, apps = self.learner
            # The user's limit as written, for the range's minimum (time_limit_reference
            # "min"): the covariate of heterogeneous runs (learning.py).
            r = self.requests
            observe = learner.observe_killed if killed else learner.observe
            observe(int(apps[job]), nodes, runtime, now, r.limit[job], r.lo[job])

    def _count(self, decision: Decision, curve: Curve | None, runtime: float | None) -> None:
        """Add one decided job to the exploration budget, as the daemon does
        (policies.ExplorationBudget): every decision counts as a job; a counted one
        (`Decision.counted`) adds its predicted node-hours n·T(n), T from the curve, or
        `runtime` when known (decide's, or without a curve a second size's bound,
        policies/second_size.py)."""
        n = decision.nodes
        t = None
        if self._track_node_hours and n is not None and decision.counted:
            t = runtime if curve is None else _runtime_at(curve, n, runtime)
        self.budget = self.budget.after(n, t, decision.explored)


def _runtime_at(curve: Curve, n: int, known: float | None) -> float:
    """T(n): `known` when decide evaluated it (decide_with_runtime), else from the curve."""
    if known is not None:
        return known
    return float(curve.runtime(np.array([float(n)]))[0])
