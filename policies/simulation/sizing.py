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
    user's limit; on more nodes it finishes early, on fewer it may be killed.
adaptive
    adaptive.py: the policies package's `decide`, at submit, like the daemon.

The user's limit is the trace's requested time as written: one ``--time`` for the whole
range, written by a user who does not know the curve (for the requested size r, the only
size the trace's user asked for). Nothing here moves it along the true curve.

A job killed at its limit is submitted again by its user (engine.py): the same range, the
user's limit doubled up to the partition's maximum. `allocate` is then called again with
that limit as `user_limit`; None is the job's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from policies.simulation.moldable import MoldableRule
from policies.simulation.workload import TraceJob


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
    """A sizing policy: one allocation per submission, at its submit time (a job killed and
    submitted again by its user is allocated again, with its new `user_limit`)."""

    name: str

    def allocate(
        self, job: int, view: ClusterView, user_limit: float | None = None
    ) -> Allocation: ...


@dataclass(frozen=True)
class MoldableRequests:
    """Every job's moldable request: range [lo_i, hi_i] and the user's limit (s), as the
    trace's user wrote it."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]
    limit: tuple[float, ...]

    @classmethod
    def build(cls, jobs: Sequence[TraceJob], rule: MoldableRule, machine: int) -> MoldableRequests:
        """Ranges by `rule`; each job's limit as the trace gives it (module doc)."""
        ranges = [rule.range(j.nodes, machine) for j in jobs]
        lo = tuple(r[0] for r in ranges)
        limits = tuple(j.limit for j in jobs)
        return cls(lo, tuple(r[1] for r in ranges), limits)

    def __len__(self) -> int:
        return len(self.lo)


class RigidSizer:
    """The trace's own request: its size and its time limit; a size above the partition's
    MaxNodes (`job_nodes`) is cut to it, as every policy's range is."""

    name = "rigid"

    def __init__(
        self, jobs: Sequence[TraceJob], machine: int, job_nodes: int | None = None
    ) -> None:
        too_large = [j.job_id for j in jobs if j.nodes > machine]
        if too_large:
            raise ValueError(f"job {too_large[0]} asks for more than the machine's {machine} nodes")
        self.jobs = jobs
        self.job_nodes = machine if job_nodes is None else job_nodes

    def allocate(self, job: int, view: ClusterView, user_limit: float | None = None) -> Allocation:
        j = self.jobs[job]
        n = min(j.nodes, self.job_nodes)
        return Allocation(n, n, j.limit if user_limit is None else user_limit)


class GreedySizer:
    """The moldable range as submitted; the scheduler sizes it at start (module doc)."""

    name = "greedy"

    def __init__(self, requests: MoldableRequests) -> None:
        self.requests = requests

    def allocate(self, job: int, view: ClusterView, user_limit: float | None = None) -> Allocation:
        r = self.requests
        return Allocation(r.lo[job], r.hi[job], r.limit[job] if user_limit is None else user_limit)


def minutes(seconds: float) -> int:
    """A limit in whole minutes, as Slurm keeps it: ⌈seconds/60⌉ ≥ 1 (float noise forgiven)."""
    return max(1, math.ceil(seconds / 60.0 - 1e-9))
