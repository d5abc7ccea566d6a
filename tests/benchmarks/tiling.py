"""A trace tiled in time: the benchmarks' way to reach the target 30,000 jobs from a real log.

Tiling assumes the log's applications repeat (a synthetic assumption, said where its figures
are printed): no real trace of that size is on this machine.
"""

from __future__ import annotations

import dataclasses

from policies.simulation import TraceJob


def tile(jobs: tuple[TraceJob, ...], count: int) -> list[TraceJob]:
    """The trace repeated in time (job ids renumbered) until it has `count` jobs."""
    span = max(j.submit for j in jobs) - min(j.submit for j in jobs) + 1.0
    out: list[TraceJob] = []
    copy = 0
    while len(out) < count:
        for j in jobs:
            if len(out) == count:
                break
            out.append(dataclasses.replace(j, job_id=len(out) + 1, submit=j.submit + copy * span))
        copy += 1
    return out
