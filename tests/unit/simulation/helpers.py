"""Small traces and schedule checks shared by the simulator's tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from policies.simulation import Schedule, TraceJob, simulate
from policies.simulation.metrics import busy_nodes
from policies.simulation.sizing import RigidSizer

SWF_DIR = Path(__file__).resolve().parents[2] / "data" / "swf"
NASA = SWF_DIR / "NASA-iPSC-1993-3.1-cln.swf"
LUBLIN = SWF_DIR / "lublin_256.swf"


def trace(*rows: tuple[float, int, float] | tuple[float, int, float, float]) -> list[TraceJob]:
    """Jobs from (submit, nodes, runtime[, limit]) rows; the limit defaults to the runtime."""
    out = []
    for k, row in enumerate(rows):
        submit, nodes, runtime = row[0], row[1], row[2]
        limit = row[3] if len(row) == 4 else runtime
        out.append(TraceJob(k, float(submit), float(runtime), nodes, float(limit)))
    return out


def run_rigid(
    jobs: Sequence[TraceJob], machine: int, backfill: bool, record: bool = False
) -> Schedule:
    """The trace as submitted: each job on its size, for its trace runtime."""
    return simulate(
        jobs,
        machine,
        RigidSizer(jobs, machine),
        lambda j, n: jobs[j].runtime,
        backfill=backfill,
        record_reservations=record,
    )


def assert_never_oversubscribed(schedule: Schedule) -> None:
    """Every job ran, on 1..machine nodes, and the busy count never exceeds the machine."""
    assert np.all(np.isfinite(schedule.start)), "some job never started"
    assert np.all(schedule.start >= schedule.submit)
    assert np.all(schedule.end > schedule.start)
    assert np.all((schedule.nodes >= 1) & (schedule.nodes <= schedule.machine))
    _, busy = busy_nodes(schedule)
    assert busy.max() <= schedule.machine, f"{busy.max()} nodes busy on {schedule.machine}"
    assert busy.min() >= 0
    assert busy[-1] == 0


def assert_reservations_kept(schedule: Schedule) -> None:
    """EASY: the head job starts no later than any reservation it was given (its run that
    started after the reservation: a killed job submitted again waits anew)."""
    runs = schedule.all_runs()
    for r in schedule.reservations:
        assert r.start >= r.at
        assert r.extra >= 0
        mine = runs.start[(runs.job == r.job) & (runs.start >= r.at)]
        assert mine.size, r
        assert mine.min() <= r.start, r
