"""What a decision is made from, besides the curve and the settings: the job, the cluster, the
exploration counters.

All three are plain frozen values the caller builds (the daemon from Slurm and its own
counters, the CLI from options). They check themselves on construction and raise ValueError
naming the field, so a decision is never made from a negative node count or an empty range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from policies.feasible import Feasible


def _whole(value: object, name: str, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")


@dataclass(frozen=True)
class Request:
    """A moldable job as submitted: ``sbatch --nodes=MIN-MAX --time=LIMIT``.

    time_limit_min: the user's time limit in minutes, None when the job gave none (the
    partition's default applies and adaptalloc leaves it alone). feasible: the sizes the user's
    tag allows (for example powers of two), None when the tag says nothing about sizes.
    partition, account and user pick the configuration that applies and appear in reasons.
    job_id: the job's id, the random source of exploration (rules.py: a hash, so the decision
    stays a pure function of its inputs); "" when unknown (then no size is drawn).
    """

    min_nodes: int
    max_nodes: int
    time_limit_min: int | None = None
    partition: str = ""
    account: str = ""
    user: str = ""
    feasible: Feasible | None = None
    job_id: str = ""

    def __post_init__(self) -> None:
        _whole(self.min_nodes, "min_nodes", 1)
        _whole(self.max_nodes, "max_nodes", 1)
        if self.max_nodes < self.min_nodes:
            raise ValueError(
                f"max_nodes must be at least min_nodes, got {self.min_nodes}-{self.max_nodes}"
            )
        if self.time_limit_min is not None:
            _whole(self.time_limit_min, "time_limit_min", 1)

    @property
    def time_limit_s(self) -> float | None:
        """The user's time limit in seconds (the covariate of a curve of heterogeneous runs,
        predictor/heterogeneous.py), None when the job gave none."""
        return None if self.time_limit_min is None else 60.0 * self.time_limit_min


@dataclass(frozen=True)
class ClusterState:
    """The partition the job would run in, as the caller sees it now.

    idle_nodes: nodes free now; None when unknown, and then the load-adaptive rule assumes a
    neutral load. pending_demand_nodes: nodes requested by the other jobs pending in the
    partition (not counting this one). total_nodes: the partition's size, if known; a job never
    gets more. max_nodes_per_job and max_time_min: the most nodes and minutes Slurm lets this
    job have (the partition's MaxNodes and MaxTime, tightened by the job's QOS and association
    limits where the caller knows them), None when unlimited. limits_enforced: Slurm enforces
    association and QOS limits (AccountingStorageEnforce=limits), so a limit adaptalloc
    shortened could only be raised back by lifting them (policies/time_limit.py).
    """

    idle_nodes: int | None = None
    pending_demand_nodes: int = 0
    total_nodes: int | None = None
    max_nodes_per_job: int | None = None
    max_time_min: int | None = None
    limits_enforced: bool = False

    def __post_init__(self) -> None:
        if self.idle_nodes is not None:
            _whole(self.idle_nodes, "idle_nodes", 0)
        _whole(self.pending_demand_nodes, "pending_demand_nodes", 0)
        if self.total_nodes is not None:
            _whole(self.total_nodes, "total_nodes", 1)
            if self.idle_nodes is not None and self.idle_nodes > self.total_nodes:
                raise ValueError(
                    f"idle_nodes ({self.idle_nodes}) cannot exceed total_nodes ({self.total_nodes})"
                )
        if self.max_nodes_per_job is not None:
            _whole(self.max_nodes_per_job, "max_nodes_per_job", 1)
        if self.max_time_min is not None:
            _whole(self.max_time_min, "max_time_min", 1)

    @property
    def node_limit(self) -> int | None:
        """The most nodes one job may get here: MaxNodes and the partition size, if known."""
        limits = [x for x in (self.max_nodes_per_job, self.total_nodes) if x is not None]
        return min(limits) if limits else None

    @property
    def load_known(self) -> bool:
        return self.idle_nodes is not None


@dataclass(frozen=True)
class ExplorationBudget:
    """Counters the caller keeps over a window of its choosing (the daemon: since it started).

    jobs_decided counts every moldable job decided, explored ones and those left as submitted
    included: exploration's job share is a share of the jobs the policy sees, so that a
    cluster whose applications have no curve yet, where a second size is what would give
    them one (second_size.py), can explore at all. node_hours_decided counts the predicted
    node-hours (nodes x predicted runtime at decision time) of the decisions that set a
    size with a predicted runtime (`Decision.counted`: not a fallback that keeps the job's
    range). jobs_explored and node_hours_explored count the explored ones. Pure code only
    reads them.
    """

    jobs_decided: int = 0
    jobs_explored: int = 0
    node_hours_decided: float = 0.0
    node_hours_explored: float = 0.0

    def __post_init__(self) -> None:
        _whole(self.jobs_decided, "jobs_decided", 0)
        _whole(self.jobs_explored, "jobs_explored", 0)
        for name in ("node_hours_decided", "node_hours_explored"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not value >= 0.0 or value == float("inf"):
                raise ValueError(f"{name} must be finite and at least 0, got {value!r}")
        if self.jobs_explored > self.jobs_decided:
            raise ValueError("jobs_explored cannot exceed jobs_decided")
        if self.node_hours_explored > self.node_hours_decided:
            raise ValueError("node_hours_explored cannot exceed node_hours_decided")

    def after(
        self, nodes: int | None, runtime_s: float | None, explored: bool
    ) -> ExplorationBudget:
        """The counters with one more decided job: its predicted node-hours
        nodes x runtime_s / 3600 when both are known and the runtime finite (none otherwise),
        counted as explored too when `explored`."""
        hours = 0.0
        if nodes is not None and runtime_s is not None and math.isfinite(runtime_s):
            hours = nodes * max(runtime_s, 0.0) / 3600.0
        return ExplorationBudget(
            self.jobs_decided + 1,
            self.jobs_explored + int(explored),
            self.node_hours_decided + hours,
            self.node_hours_explored + (hours if explored else 0.0),
        )
