"""How each policy sizes a job: the allocation it asks the scheduler for.

A sizing policy sees each job once, when it is submitted, together with the cluster as it is
then (`ClusterView`), and returns an `Allocation`: a node range and a time limit. A fixed size
is the range [n, n]. A range is sized by the scheduler when the job starts: it gets as many
nodes as it may take without delaying anyone the scheduler protects (engine.py), which is what
Slurm does with ``--nodes=MIN-MAX``.

rigid
    The trace's job as it was: the requested size and the trace's time limit.
greedy
    The moldable range (moldable.py) left to the scheduler: at start the job takes
    min(hi, nodes it may take) ≥ lo. Slurm does not rescale time limits, so the job keeps its
    user's limit, written for the range's minimum; on more nodes it finishes early.
adaptive
    adaptive.py: the policies package's `decide`, at submit, like the daemon.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from policies.simulation.moldable import MoldableRule
from policies.simulation.workload import JobCurves, TraceJob


@dataclass(frozen=True)
class Allocation:
    """What a job asks the scheduler for: min_nodes..max_nodes, for at most limit seconds.

    rule: for reports, why (the adaptive policy's winning rule; "" for the baselines).
    guard_limit: the kill guard's (plugin/daemon/guard.py): when the job is still running at
    `limit`, its limit is raised to guard_limit (the user's own) instead of killing it; None
    when nobody watches the job (the baselines, a limit that was not shortened, guard off).
    """

    min_nodes: int
    max_nodes: int
    limit: float
    rule: str = ""
    guard_limit: float | None = None


@dataclass(frozen=True)
class ClusterView:
    """The partition when a job is submitted: the time, idle nodes, the nodes wanted by the
    jobs already waiting (each counted at its minimum), and the partition's size."""

    now: float
    idle_nodes: int
    pending_demand_nodes: int
    total_nodes: int


class Sizer(Protocol):
    """A sizing policy: one allocation per job, at its submit time."""

    name: str

    def allocate(self, job: int, view: ClusterView) -> Allocation: ...


@dataclass(frozen=True)
class MoldableRequests:
    """Every job's moldable request: range [lo_i, hi_i] and the user's limit for lo_i (s)."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]
    limit: tuple[float, ...]

    @classmethod
    def build(
        cls, jobs: Sequence[TraceJob], curves: JobCurves, rule: MoldableRule, machine: int
    ) -> MoldableRequests:
        """Ranges by `rule`; limits L·τ(lo)/τ(r), the trace's limit moved to the minimum."""
        ranges = [rule.range(j.nodes, machine) for j in jobs]
        lo = tuple(r[0] for r in ranges)
        factors = curves.scales([j.nodes for j in jobs], lo)
        limits = tuple(j.limit * float(f) for j, f in zip(jobs, factors, strict=True))
        return cls(lo, tuple(r[1] for r in ranges), limits)

    def __len__(self) -> int:
        return len(self.lo)


class RigidSizer:
    """The trace's own request: its size and its time limit."""

    name = "rigid"

    def __init__(self, jobs: Sequence[TraceJob], machine: int) -> None:
        too_large = [j.job_id for j in jobs if j.nodes > machine]
        if too_large:
            raise ValueError(f"job {too_large[0]} asks for more than the machine's {machine} nodes")
        self.jobs = jobs

    def allocate(self, job: int, view: ClusterView) -> Allocation:
        j = self.jobs[job]
        return Allocation(j.nodes, j.nodes, j.limit)


class GreedySizer:
    """The moldable range as submitted; the scheduler sizes it at start (module doc)."""

    name = "greedy"

    def __init__(self, requests: MoldableRequests) -> None:
        self.requests = requests

    def allocate(self, job: int, view: ClusterView) -> Allocation:
        r = self.requests
        return Allocation(r.lo[job], r.hi[job], r.limit[job])


def minutes(seconds: float) -> int:
    """A limit in whole minutes, as Slurm keeps it: ⌈seconds/60⌉ ≥ 1 (float noise forgiven)."""
    return max(1, math.ceil(seconds / 60.0 - 1e-9))
