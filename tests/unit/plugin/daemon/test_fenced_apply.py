"""The applier's fence (HA, plugin/daemon/apply.py): checked before every write, and a lost
lease stops the batch before the next Slurm command, with the journal left for the new
holder."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugin.daemon.apply import Applier
from plugin.daemon.journal import Journal
from plugin.daemon.lease import LeaseLost

from ..test_daemon import FakeSlurm, nothing, outcomes


class Fence:
    """Allows `allowed` writes, then raises LeaseLost (the lease was taken over)."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.checks = 0

    def __call__(self) -> None:
        self.checks += 1
        if self.checks > self.allowed:
            raise LeaseLost("token 1 refused: the lease is now 2 other:1")


def test_every_write_is_checked_first(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    fence = Fence(allowed=100)
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing, fence=fence)  # type: ignore[arg-type]
    applier.apply(outcomes(3))
    writes = len(slurm.calls)
    assert writes >= 2  # comment and release at least
    assert fence.checks == writes + 1  # and the journal, before anything


@pytest.mark.parametrize("allowed", [0, 1, 2])
def test_a_lost_lease_stops_the_batch_before_the_next_write(tmp_path: Path, allowed: int) -> None:
    slurm = FakeSlurm()
    journal = tmp_path / "inflight.json"
    applier = Applier(slurm, Journal(journal), nothing, fence=Fence(allowed))  # type: ignore[arg-type]
    batch = outcomes(3)
    with pytest.raises(LeaseLost):
        applier.apply(batch)
    assert len(slurm.calls) == max(allowed - 1, 0)  # the journal took the first check
    assert ("release", tuple(o.job_id for o in batch)) not in slurm.calls
    if allowed:  # the journal was written: the new holder finishes the batch from it
        assert set(Journal(journal).load()) == {1, 2, 3}
    else:
        assert not journal.exists()
