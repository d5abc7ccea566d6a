"""Which holds are the daemon's: only job_submit.lua's kind of hold
(Reason=JobHeldUser) with the held marker; an admin's hold never, marker or not."""

from __future__ import annotations

from typing import Any

import pytest

from plugin.daemon import marks
from plugin.daemon.sweep import classify, held_by_us, on_hold
from plugin.slurm import JobRecord

NOW = 1_800_000_000


def job(job_id: int, **fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "job_id": job_id,
        "name": "lulesh",
        "user": "ann",
        "account": "phys",
        "partition": "debug",
        "state": "PENDING",
        "source": "squeue",
        "admin_comment": marks.HELD,
        "nodes_min": 2,
        "nodes_max": 8,
        "submit_time": NOW - 5,
        "priority": 0,
        "state_reason": "JobHeldUser",
    }
    base.update(fields)
    return JobRecord(**base)


@pytest.mark.parametrize("reason", ["JobHeldAdmin", "", "BeginTime", "Priority"])
def test_a_marked_job_under_another_kind_of_hold_is_not_ours(reason: str) -> None:
    other = job(1, state_reason=reason)
    assert not on_hold(other)
    assert not held_by_us(other)


def test_admin_held_jobs_are_never_decided_finished_or_released_by_the_watchdog() -> None:
    jobs = [
        job(1),
        job(2, state_reason="JobHeldAdmin"),  # the marker, but an admin's hold
        job(3, state_reason="JobHeldAdmin", submit_time=NOW - 10_000),  # would be stale
        job(4, state_reason="JobHeldAdmin", admin_comment=marks.sized_record(2, 2, 8, "cap")),
    ]
    sweep = classify(jobs, NOW, 120.0, journaled={4}, max_batch=10)
    assert [j.job_id for j in sweep.to_decide] == [1]
    assert sweep.stale == []
    assert sweep.to_finish == []
    assert sweep.held == 1
    assert held_by_us(jobs[0])
