"""Each released job's ``decision`` event carries its timeline (plugin/daemon/loop.py): the
wake-up, the first sweep that found it held (read began, returned), its batch decided, its
batch's writes returned, in that order; the latency benchmark splits a job's latency with it
(tests/benchmarks/test_release_floor.py)."""

from __future__ import annotations

import time
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from ..test_daemon import FakeSlurm, job
from ..test_daemon_health import daemon


class HeldQueue(FakeSlurm):
    """Pending jobs as a sweep reads them: `held` (priority 0) until released."""

    def __init__(self, held: list[Any], absent_first: int = 0) -> None:
        super().__init__()
        self.held = held
        #: Sweeps that see an empty queue first (the job not created yet).
        self.absent = absent_first

    def pending_jobs(self) -> list[Any]:
        if self.absent:
            self.absent -= 1
            return []
        released = {i for name, ids in self.calls if name == "release" for i in ids}
        return [j for j in self.held if j.job_id not in released]

    def held_admin_comments(self, job_ids: Any) -> dict[int, str | None]:
        return {j.job_id: j.admin_comment for j in self.held if j.job_id in job_ids}


def decisions(logs: Sequence[MutableMapping[str, Any]]) -> dict[int, MutableMapping[str, Any]]:
    return {e["job_id"]: e for e in logs if e.get("event") == "decision"}


def test_a_woken_sweep_gives_each_released_job_its_timeline_in_order(tmp_path: Path) -> None:
    slurm = HeldQueue([job(7), job(8)])
    d = daemon(tmp_path, slurm)
    woke = time.time()
    d.wake_at = woke
    with capture_logs() as logs:
        d.cycle()
    found = decisions(logs)
    assert set(found) == {7, 8}
    for event in found.values():
        assert event["status"] == "released"
        line = event["timeline"]
        points = [line[k] for k in ("woke", "read", "seen", "decided", "applied")]
        assert points == sorted(points)
        assert line["woke"] == round(woke, 3)
        assert event["released_at"] >= line["applied"]


def test_a_job_missed_by_its_wake_up_keeps_the_sweep_that_found_it(tmp_path: Path) -> None:
    """The woken sweep ran before slurmctld created the job; the follow-up found it: its
    timeline says so (the wake-up it followed; read after the first sweep's)."""
    slurm = HeldQueue([job(9)], absent_first=1)
    d = daemon(tmp_path, slurm)
    d.state.path.mkdir(parents=True)
    d.state.spool.write_text("held 1 1000\n")
    assert d.wait_for_work()
    woke = d.wake_at
    assert woke is not None
    with capture_logs() as logs:
        d.cycle()
        missed_read = d.sweep_times["read"]
        d.cycle()
    line = decisions(logs)[9]["timeline"]
    assert line["woke"] == round(woke, 3)
    assert line["read"] >= round(missed_read, 3)


def test_a_job_found_by_a_periodic_sweep_has_no_wake_up(tmp_path: Path) -> None:
    slurm = HeldQueue([job(9)])
    d = daemon(tmp_path, slurm)
    with capture_logs() as logs:
        d.cycle()
    assert "woke" not in decisions(logs)[9]["timeline"]
