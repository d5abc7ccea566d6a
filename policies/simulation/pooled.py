"""Several partitions, one per node pool, in one event loop; a router sends each job to one.

Each pool is an engine.PartitionScheduler of its own (FCFS + EASY over its nodes, kills at
the limit, engine.py). At each event time, in engine.py's order: every pool's ends, then
every job submitted then is routed to one pool (seeing all pools as they are) and sized by
that pool's policy, then one scheduling pass per pool, in pool order. With one pool this is
engine.simulate's loop exactly (the tests check the schedules are equal).

Routing a job that lists several partitions (``sbatch -p a,b``), decided at submit:

slurm_route   Slurm's rule: the first listed partition that can start it now (its minimum
              fits in the idle nodes and nobody waits there); when none can, the one whose
              queue implies the earliest start (partition.wait_estimate of its minimum),
              ties to the first listed.
choice_route  adaptalloc's: every listed pool's adaptive decision (AdaptiveSizer.propose),
              then partition.choose_partition by predicted completion (the wait the pool's
              queue implies + the curve's runtime there); when no pool has a finite one
              (no curve anywhere yet), Slurm's rule with the job as submitted.

What it leaves out, knowingly: Slurm keeps a multi-partition job pending in every listed
partition and starts it in the first that can; here a job that cannot start at once is
committed at submit to the partition with the earliest estimated start. The estimate is the
same for every policy (running jobs end at their limits), so the baselines and adaptalloc
are routed on equal information.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.partition import Option, Queue, choose_partition, wait_estimate
from policies.simulation.adaptive import AdaptiveSizer
from policies.simulation.engine import PartitionScheduler, Runs, Schedule
from predictor.downey import FloatArray, IntArray

#: (job, now, the pools' schedulers) -> the index of the pool that gets the job.
Router = Callable[[int, float, Sequence[PartitionScheduler]], int]


def queue_of(pool: PartitionScheduler, now: float) -> Queue:
    """The pool's queue as partition.py reads it: idle nodes, the pending jobs' minimums,
    the running jobs' nodes and time left to their limits."""
    running = tuple((n, max(0.0, end - now)) for end, n in pool.running.values())
    return Queue(pool.free, pool.pending, running)


def slurm_route(
    choices: Sequence[int], minimum: Sequence[int], pools: Sequence[PartitionScheduler], now: float
) -> int:
    """Slurm's rule (module doc): `choices` the listed pools in order, `minimum[k]` the job's
    minimum on choices[k]."""
    for q, lo in zip(choices, minimum, strict=True):
        if not pools[q].queue and lo <= pools[q].free:
            return q
    waits = [
        wait_estimate(queue_of(pools[q], now), lo) for q, lo in zip(choices, minimum, strict=True)
    ]
    return choices[int(np.argmin(waits))]


def choice_route(
    job: int,
    choices: Sequence[int],
    names: Sequence[str],
    sizers: Sequence[AdaptiveSizer],
    pools: Sequence[PartitionScheduler],
    now: float,
) -> int | None:
    """adaptalloc's choice (module doc); None when no listed pool has a finite completion."""
    options = []
    for q in choices:
        nodes, runtime = sizers[q].propose(job, pools[q].view(now))
        wait = math.inf if nodes is None else wait_estimate(queue_of(pools[q], now), nodes)
        options.append(Option(names[q], nodes, runtime, wait))
    chosen = choose_partition(options).partition
    return None if chosen is None else list(names).index(chosen)


@dataclass(frozen=True, eq=False)
class PooledSchedule:
    """The merged schedule (machine: all pools' nodes) and each job's pool."""

    schedule: Schedule
    pool: IntArray


def simulate_pools(
    submits: Sequence[float], pools: Sequence[PartitionScheduler], route: Router
) -> PooledSchedule:
    """Run the jobs through the pools (module doc)."""
    count = len(submits)
    order = sorted(range(count), key=submits.__getitem__)
    where = np.zeros(count, dtype=np.int64)
    k = 0
    while k < count or any(p.finishes for p in pools):
        now = submits[order[k]] if k < count else math.inf
        for p in pools:
            if p.finishes and p.finishes[0][0] < now:
                now = p.finishes[0][0]
        for p in pools:
            p.ends(now)
        while k < count and submits[order[k]] <= now:
            job = order[k]
            k += 1
            q = route(job, now, pools)
            pools[q].enqueue(job, now)
            where[job] = q
        for p in pools:
            p.schedule_pass(now)
    if any(p.queue for p in pools):  # unreachable, as in engine.py
        raise RuntimeError("some jobs never started")
    return PooledSchedule(merge([p.schedule() for p in pools], where), where)


def _joined(parts: Sequence[FloatArray | None], order: IntArray) -> FloatArray | None:
    """The pools' per-run arrays in `order`; None when a pool has none."""
    if any(p is None for p in parts):
        return None
    out: FloatArray = np.concatenate([p for p in parts if p is not None])[order]
    return out


def merge(schedules: Sequence[Schedule], where: IntArray) -> Schedule:
    """One schedule of every job from the schedule of its pool `where[i]`."""
    cols = np.arange(len(where))

    def pick(name: str) -> np.ndarray[Any, np.dtype[Any]]:
        stacked = np.stack([getattr(s, name) for s in schedules])
        out: np.ndarray[Any, np.dtype[Any]] = stacked[where, cols]
        return out

    raised = [s.raised if s.raised is not None else np.zeros(len(where), bool) for s in schedules]
    every = [s.all_runs() for s in schedules]
    start = np.concatenate([r.start for r in every])
    order = np.argsort(start, kind="stable")
    runs = Runs(
        job=np.concatenate([r.job for r in every])[order],
        start=start[order],
        end=np.concatenate([r.end for r in every])[order],
        nodes=np.concatenate([r.nodes for r in every])[order],
        killed=np.concatenate([r.killed for r in every])[order],
        limit=_joined([r.limit for r in every], order),
        user_limit=_joined([r.user_limit for r in every], order),
    )
    abandoned = [
        s.abandoned if s.abandoned is not None else np.zeros(len(where), bool) for s in schedules
    ]
    return Schedule(
        machine=sum(s.machine for s in schedules),
        submit=schedules[0].submit,
        start=pick("start"),
        end=pick("end"),
        nodes=pick("nodes"),
        limit=pick("limit"),
        killed=pick("killed"),
        rule=tuple(schedules[q].rule[i] for i, q in enumerate(where)),
        raised=np.stack(raised)[where, cols],
        runs=runs,
        abandoned=np.stack(abandoned)[where, cols],
    )
