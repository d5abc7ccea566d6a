"""Partition choice for a job that lists several (``sbatch -p a,b``): by predicted completion.

Slurm alone starts such a job in the first listed partition that can run it. Here each listed
partition p gets its own decision (policies.decide with p's curve, the app's curve for p's
node type, and p's cluster state), giving a size n_p and a predicted runtime T_p(n_p); the
partition with the smallest predicted completion

    C_p = W_p(n_p) + T_p(n_p)

wins, ties to the one listed first (the user's order). Partitions whose decision leaves the
job as submitted, or whose runtime is unknown, are not candidates; when none is, the job is
left as submitted, partitions and all.

The wait W_p(n) the current queue implies, defined simply (`wait_estimate`):

* the nodes the jobs already pending want (their minimums) are served first, FIFO, and this
  job gets n after them;
* nodes become free when the running jobs reach their time limits (ends at the limit, the
  latest they can end), and the idle nodes are free now;
* so W_p(n) is the earliest running job's remaining limit at which idle + freed ≥ pending + n:
  0 when the idle nodes already cover them, infinite when the whole partition cannot.

Partitions may overlap (the testbed's ``debug`` spans all nodes, ``big`` half of them), so
p's queue holds the jobs of every partition that shares nodes with it (`overlap_share`):

* a running job counts the nodes it holds that are p's, |H ∩ N_p|, whatever its partition
  (a job of another partition on p's nodes frees them at its limit too);
* a pending job of partition q wanting m nodes counts m·|N_q ∩ N_p|/|N_q|: its nodes are
  expected to land on p's in the share p holds of q (all of them when q ⊆ p, none when the
  two are disjoint). This share is an assumption, not what Slurm's node selection does
  (node weights and order decide that); it only makes a queue in an overlapping partition
  count against the shared nodes, in proportion.

What it leaves out, knowingly: jobs end before their limits (W is too long for that), and the
pending jobs ahead run for some time before they free their nodes (W is too short for that).
Both errors hit every partition alike; the estimate compares partitions, it is not a forecast
of a start time. Backfilling, priorities and reservations are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set
from dataclasses import dataclass

import numpy as np

from policies.rules import nodes, number

PARTITION_CHOICE = "partition_choice"


@dataclass(frozen=True)
class Queue:
    """One partition's queue now: idle nodes, nodes the pending jobs ahead want of it (a
    share of them for another partition's jobs: `overlap_share`), and the running jobs as
    (nodes of this partition they hold, seconds left of their time limit; inf when
    unlimited)."""

    idle_nodes: int
    pending_nodes: float = 0
    running: tuple[tuple[int, float], ...] = ()

    def __post_init__(self) -> None:
        if self.idle_nodes < 0 or self.pending_nodes < 0:
            raise ValueError("idle_nodes and pending_nodes must be ≥ 0")
        for n, left in self.running:
            if n < 0 or not left >= 0:
                raise ValueError(f"running jobs need nodes ≥ 0 and time left ≥ 0, got {n}, {left}")


def overlap_share(partition: Set[str], other: Set[str]) -> float:
    """|N_q ∩ N_p| / |N_q|: the share of a job's nodes in partition q (`other`'s nodes)
    expected on partition p's (`partition`'s) nodes (module docstring); 0 when q has none."""
    if not other:
        return 0.0
    return len(partition & other) / len(other)


def wait_estimate(queue: Queue, n: int) -> float:
    """W(n) in seconds (module docstring): the earliest remaining limit of the running jobs at
    which idle + freed ≥ pending + n; 0 when idle already covers it, inf when nothing does."""
    need = queue.pending_nodes + n
    if queue.idle_nodes >= need:
        return 0.0
    if not queue.running:
        return math.inf
    counts = np.array([r[0] for r in queue.running], dtype=float)
    left = np.array([r[1] for r in queue.running], dtype=float)
    order = np.argsort(left, kind="stable")
    freed = queue.idle_nodes + np.cumsum(counts[order])
    enough = np.flatnonzero(freed >= need)
    if enough.size == 0:
        return math.inf
    return float(left[order][enough[0]])


@dataclass(frozen=True)
class Option:
    """One listed partition's own decision: size (None: left as submitted), its predicted
    runtime in seconds (NaN: unknown) and the wait for that size."""

    partition: str
    nodes: int | None
    runtime_s: float
    wait_s: float

    @property
    def completion_s(self) -> float:
        if self.nodes is None or not math.isfinite(self.runtime_s):
            return math.inf
        return self.wait_s + self.runtime_s

    def to_dict(self) -> dict[str, object]:
        def finite(x: float) -> float | None:
            return round(x, 3) if math.isfinite(x) else None

        return {
            "partition": self.partition,
            "nodes": self.nodes,
            "runtime_s": finite(self.runtime_s),
            "wait_s": finite(self.wait_s),
            "completion_s": finite(self.completion_s),
        }


@dataclass(frozen=True)
class PartitionChoice:
    """partition None: no option has a finite completion; keep the job's partitions."""

    partition: str | None
    reason: str
    options: tuple[Option, ...]


def _secs(x: float) -> str:
    return "unbounded" if not math.isfinite(x) else f"{number(x)} s"


def choose_partition(options: Sequence[Option]) -> PartitionChoice:
    """The option with the smallest predicted completion, ties to the first listed."""
    if not options:
        raise ValueError("options: at least one partition is needed")
    completions = np.array([o.completion_s for o in options])
    if not np.any(np.isfinite(completions)):
        return PartitionChoice(
            None,
            "no listed partition has a predicted completion (no curve, no size or no way to "
            "start), so the job keeps its partition list",
            tuple(options),
        )
    best = int(np.argmin(completions))
    o = options[best]
    others = "; ".join(
        f"{x.partition}: {_secs(x.completion_s)}" for i, x in enumerate(options) if i != best
    )
    reason = (
        f"partition {o.partition} gives the earliest predicted completion: wait "
        f"{_secs(o.wait_s)} + runtime {_secs(o.runtime_s)} on {nodes(o.nodes or 0)} = "
        f"{_secs(o.completion_s)} (the wait from the queue: the pending jobs' nodes first, "
        f"running jobs ending at their limits)"
    )
    if others:
        reason += f"; against {others}"
    return PartitionChoice(o.partition, reason, tuple(options))
