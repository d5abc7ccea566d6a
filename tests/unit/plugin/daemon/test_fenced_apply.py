"""The applier's fence (HA, plugin/daemon/apply.py): checked once before each group of
writes (journal; resize and comments; release; each fallback), never once per job, and a
lost lease stops the batch before the next group, with the journal left for the new
holder."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugin.daemon.apply import Applier
from plugin.daemon.journal import Journal
from plugin.daemon.lease import LeaseLost

from ..test_daemon import FakeSlurm, job, nothing, outcomes


class Fence:
    """Allows `allowed` writes, then raises LeaseLost (the lease was taken over)."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.checks = 0

    def __call__(self) -> None:
        self.checks += 1
        if self.checks > self.allowed:
            raise LeaseLost("token 1 refused: the lease is now 2 other:1")


def test_each_group_of_writes_is_checked_first(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    fence = Fence(allowed=100)
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing, fence=fence)  # type: ignore[arg-type]
    applier.apply(outcomes(3))
    assert sorted(name for name, _ in slurm.calls) == ["comment", "release", "resize"]
    assert fence.checks == 3  # the journal, the resize with the comments, the release


def test_the_one_by_one_fallback_is_checked_once_not_per_job(tmp_path: Path) -> None:
    batch = outcomes(4)
    queue = [job(j, admin_comment=o.admin_comment) for j, o in enumerate(batch, start=1)]
    slurm = FakeSlurm(queue, fail=["release"])
    fence = Fence(allowed=100)
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing, fence=fence)  # type: ignore[arg-type]
    applied = applier.apply(batch)
    assert [call for call in slurm.calls if call[0] == "release"][1:] == [
        ("release", (j,)) for j in (1, 2, 3, 4)
    ]
    assert {a.status for a in applied} == {"released"}
    assert fence.checks == 4  # journal, resize with comments, release, the fallback once


@pytest.mark.parametrize("allowed", [0, 1, 2])
def test_a_lost_lease_stops_the_batch_before_the_next_write(tmp_path: Path, allowed: int) -> None:
    slurm = FakeSlurm()
    journal = tmp_path / "inflight.json"
    applier = Applier(slurm, Journal(journal), nothing, fence=Fence(allowed))  # type: ignore[arg-type]
    batch = outcomes(3)
    with pytest.raises(LeaseLost):
        applier.apply(batch)
    # The journal takes the first check, the resize with the comments the second.
    assert sorted(name for name, _ in slurm.calls) == (
        ["comment", "resize"] if allowed == 2 else []
    )
    assert ("release", tuple(o.job_id for o in batch)) not in slurm.calls
    if allowed:  # the journal was written: the new holder finishes the batch from it
        assert set(Journal(journal).load()) == {1, 2, 3}
    else:
        assert not journal.exists()
