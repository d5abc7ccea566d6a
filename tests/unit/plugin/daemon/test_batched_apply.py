"""How the applier groups a batch's writes (plugin/daemon/apply.py): one comment call per
distinct text with every job of that text, one release for the batch, and per-job outcomes
when Slurm refuses part of it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from plugin.daemon.apply import GONE, RELEASED, Applier
from plugin.daemon.journal import Journal

from ..test_daemon import FakeSlurm, job, nothing, outcomes


def test_one_comment_call_per_distinct_text_with_all_its_jobs(tmp_path: Path) -> None:
    batch = [
        dataclasses.replace(o, admin_comment=f"adaptalloc:v1:sized n={1 + k % 3}")
        for k, o in enumerate(outcomes(7))
    ]
    slurm = FakeSlurm()
    applied = Applier(slurm, Journal(tmp_path / "j"), nothing).apply(batch)  # type: ignore[arg-type]
    assert [a.status for a in applied] == [RELEASED] * 7
    comments = sorted(arg for name, arg in slurm.calls if name == "comment")
    assert comments == [
        ((1, 4, 7), "adaptalloc:v1:sized n=1"),
        ((2, 5), "adaptalloc:v1:sized n=2"),
        ((3, 6), "adaptalloc:v1:sized n=3"),
    ]
    assert [arg for name, arg in slurm.calls if name == "release"] == [(1, 2, 3, 4, 5, 6, 7)]
    assert len([name for name, _ in slurm.calls if name == "resize"]) == 1


def test_a_job_cancelled_under_the_batch_is_gone_not_released(tmp_path: Path) -> None:
    batch = outcomes(3)
    # squeue --json still lists a cancelled job; the others were released (running now).
    queue = [
        job(1, state="RUNNING", priority=100),
        job(2, state="CANCELLED", priority=0),
        job(3, state="RUNNING", priority=100),
    ]
    slurm = FakeSlurm(queue, fail=["release"])
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing)  # type: ignore[arg-type]
    statuses = {a.outcome.job_id: a.status for a in applier.apply(batch)}
    assert statuses == {1: RELEASED, 2: GONE, 3: RELEASED}
    assert [arg for name, arg in slurm.calls if name == "release"] == [(1, 2, 3)]
    assert applier.writes_failed_at is None
