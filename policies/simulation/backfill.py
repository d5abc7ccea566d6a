"""EASY backfilling: the head job's reservation, and what a later job may take now.

EASY (the Extensible Argonne Scheduling sYstem; Lifka 1995, analysed by Mu'alem and Feitelson,
IEEE TPDS 2001) keeps FCFS order for the first waiting job only. When the head job does not
fit, it gets a *reservation*: the earliest time at which enough nodes will be free, assuming
every running job runs to its time limit (the scheduler knows limits, not runtimes):

    shadow = the first end time e_k, in order of expected end start_i + limit_i, at which
             free + Σ_{i ≤ k} nodes_i ≥ need
    extra  = free + Σ_{i: e_i ≤ shadow} nodes_i − need      (nodes the head leaves over then)

A later job may start now on nodes free now if it cannot delay the reservation: either it
ends (by its own limit) no later than the shadow time, or it uses only extra nodes (and then
takes them from the extra). Slurm's backfill scheduler does this in essence, with reservations
for more than one job; EASY is the one-reservation case.

Jobs end at their limit at the latest (the engine kills them there), so the plan behind a
reservation is never late: a recomputed reservation is never later than the previous one and
the head job starts no later than every reservation it was given (the tests check this).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Reservation:
    """The head job's reservation as computed at time `at`: start at `start`, `extra` spare."""

    at: float
    job: int
    start: float
    extra: int


def shadow(
    now: float, free: int, need: int, running: Iterable[tuple[float, int]]
) -> tuple[float, int]:
    """(shadow time, extra nodes) for a job of `need` nodes (module doc).

    `running` holds (expected end, nodes) of the running jobs. A job that fits now gets
    (now, free - need).
    """
    if need <= free:
        return now, free - need
    ends = sorted(running)
    available, k = free, 0
    while k < len(ends):
        t = ends[k][0]
        while k < len(ends) and ends[k][0] == t:
            available += ends[k][1]
            k += 1
        if available >= need:
            return t, available - need
    raise ValueError(f"a job of {need} nodes can never start: only {available} exist")


def backfill_cap(now: float, limit: float, free: int, reservation: tuple[float, int]) -> int:
    """The most nodes a job with time limit `limit` may take now without delaying the head:
    all free nodes if it ends by the shadow time, else the extra ones (module doc)."""
    start, extra = reservation
    return free if now + limit <= start else min(free, extra)
