"""The applier with a backend that sends each job's changes as one update (libslurm,
plugin/daemon/apply.py): one update per job and one fence check for the batch; only the
jobs Slurm refused go through the step-by-step path, which sorts each out as before."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from plugin.daemon.apply import GONE, RELEASED, Applier
from plugin.daemon.journal import Journal
from plugin.slurm import SlurmCommandError
from plugin.slurm.writer import JobUpdate

from ..test_daemon import FakeSlurm, job, nothing, outcomes


class CombinedSlurm(FakeSlurm):
    """FakeSlurm that also takes combined updates; `refuse` maps job id -> Slurm's words,
    `broken` makes update_jobs itself raise (the binding failing as a whole)."""

    combined_updates = True

    def __init__(
        self,
        queue: Sequence[Any] = (),
        fail: Sequence[str] = (),
        refuse: dict[int, str] | None = None,
        broken: bool = False,
    ) -> None:
        super().__init__(queue, fail)
        self.refuse = refuse or {}
        self.broken = broken
        self.updates: list[JobUpdate] = []

    def update_jobs(self, updates: Sequence[JobUpdate]) -> dict[int, str]:
        self.calls.append(("update", tuple(u.job_id for u in updates)))
        if self.broken:
            raise SlurmCommandError("libslurm update failed")
        self.updates.extend(updates)
        return {u.job_id: self.refuse[u.job_id] for u in updates if u.job_id in self.refuse}


class Fence:
    def __init__(self) -> None:
        self.checks = 0

    def __call__(self) -> None:
        self.checks += 1


def test_a_batch_is_one_update_per_job_and_nothing_else(tmp_path: Path) -> None:
    slurm = CombinedSlurm()
    fence = Fence()
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing, fence=fence)  # type: ignore[arg-type]
    batch = outcomes(5)
    applied = applier.apply(batch)
    assert [a.status for a in applied] == [RELEASED] * 5
    assert slurm.calls == [("update", (1, 2, 3, 4, 5))]
    for update, outcome in zip(slurm.updates, batch, strict=True):
        assert update.resize == outcome.resize
        assert update.admin_comment == outcome.admin_comment
        assert update.release
    assert fence.checks == 2  # the journal, then the batch's updates
    assert applier.writes_failed_at is None


def test_a_refused_job_goes_step_by_step_and_blocks_none_of_the_others(tmp_path: Path) -> None:
    batch = outcomes(3)
    # Job 2 vanished under the batch: Slurm refuses its update, and its read-back is gone.
    queue = [job(1, priority=100), job(3, priority=100)]
    slurm = CombinedSlurm(queue, fail=["resize"], refuse={2: "Invalid job id specified"})
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing)  # type: ignore[arg-type]
    applied = {a.outcome.job_id: a.status for a in applier.apply(batch)}
    assert applied == {1: RELEASED, 2: GONE, 3: RELEASED}
    assert slurm.calls[0] == ("update", (1, 2, 3))
    later = [name for name, arg in slurm.calls[1:]]
    assert "release" not in later  # job 2 was gone: nothing left to release
    assert all(arg not in ((1,), (3,)) for _, arg in slurm.calls[1:])


def test_refused_writes_count_against_health_as_with_scontrol(tmp_path: Path) -> None:
    batch = outcomes(2)
    denied = {1: "Access/permission denied", 2: "Access/permission denied"}
    held = [job(1, admin_comment=batch[0].admin_comment), job(2)]
    slurm = CombinedSlurm(held, fail=["release", "release", "release"], refuse=denied)
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing)  # type: ignore[arg-type]
    applied = applier.apply(batch)
    assert {a.status for a in applied} == {"pending_release"}
    assert applier.writes_failed_at is not None
    assert set(applier.unreleased) == {1, 2}


def test_a_broken_binding_falls_back_to_the_steps_for_the_whole_batch(tmp_path: Path) -> None:
    slurm = CombinedSlurm(broken=True)
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing)  # type: ignore[arg-type]
    applied = applier.apply(outcomes(3))
    assert [a.status for a in applied] == [RELEASED] * 3
    assert sorted(name for name, _ in slurm.calls) == ["comment", "release", "resize", "update"]
    assert ("release", (1, 2, 3)) in slurm.calls
