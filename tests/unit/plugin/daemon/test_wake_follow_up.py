"""A spool wake-up is followed by more sweeps soon after while a spool line's job has not been
found held (plugin/daemon/follow_up.py): job_submit.lua appends to the spool before slurmctld
has created the job, so the sweep the wake-up started can miss it, and under load one
follow-up 0.1 s later can miss it too; without the chain such a job waited for a later job's
wake-up or the periodic sweep."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from plugin.daemon.follow_up import FOLLOW_UP_S
from plugin.daemon.loop import Daemon
from plugin.daemon.state import SpoolWatcher

from ..test_daemon import FakeSlurm, job
from ..test_daemon_health import daemon
from .test_decision_timeline import HeldQueue


class EmptyQueue(FakeSlurm):
    """No pending job: the job being submitted is not in slurmctld's queue yet."""

    def __init__(self) -> None:
        super().__init__()
        self.sweeps = 0

    def pending_jobs(self) -> list[Any]:
        self.sweeps += 1
        return []

    def held_admin_comments(self, job_ids: Any) -> dict[int, str | None]:
        return {}


def announce(d: Daemon, jobs: int) -> None:
    """job_submit.lua's spool lines for `jobs` held jobs, and the loop's look at the spool."""
    d.state.path.mkdir(parents=True, exist_ok=True)
    with d.state.spool.open("a") as spool:
        spool.writelines(f"held {int(time.time())} 1000\n" for _ in range(jobs))
    assert d.wait_for_work()


def periodic_next(d: Daemon) -> bool:
    """The next sweep is the periodic one (no follow-up planned)."""
    return d.next_sweep >= time.monotonic() + d.config.daemon.sweep_interval_s - 1.0


def follow_up_next(d: Daemon) -> bool:
    return d.next_sweep <= time.monotonic() + FOLLOW_UP_S


def released(slurm: FakeSlurm) -> set[int]:
    return {i for name, ids in slurm.calls if name == "release" for i in ids}


def test_the_follow_ups_go_on_until_the_announced_job_is_found(tmp_path: Path) -> None:
    slurm = HeldQueue([job(9)], absent_first=3)  # created after three sweeps
    d = daemon(tmp_path, slurm)
    assert d.config.daemon.sweep_interval_s > 10 * FOLLOW_UP_S
    announce(d, 1)
    for _ in range(3):
        d.cycle()
        assert not released(slurm)
        assert follow_up_next(d)
    d.cycle()
    assert released(slurm) == {9}
    assert periodic_next(d)


def test_a_woken_sweep_that_finds_every_announced_job_has_no_follow_up(tmp_path: Path) -> None:
    slurm = HeldQueue([job(7), job(8)])
    d = daemon(tmp_path, slurm)
    announce(d, 2)
    d.cycle()
    assert released(slurm) == {7, 8}
    assert periodic_next(d)


def test_one_job_of_two_missing_keeps_the_chain_going(tmp_path: Path) -> None:
    slurm = HeldQueue([job(7)])
    d = daemon(tmp_path, slurm)
    announce(d, 2)
    d.cycle()
    assert released(slurm) == {7}
    assert follow_up_next(d)
    slurm.held.append(job(8))
    d.cycle()
    assert released(slurm) == {7, 8}
    assert periodic_next(d)


def test_the_chain_ends_after_its_bound_when_the_job_never_comes(tmp_path: Path) -> None:
    slurm = EmptyQueue()
    d = daemon(tmp_path, slurm)
    d.follow_ups.limit = 2  # [daemon] follow_ups
    announce(d, 1)
    d.cycle()
    for _ in range(2):
        assert follow_up_next(d)
        d.cycle()
    assert slurm.sweeps == 3
    assert periodic_next(d)
    assert d.follow_ups.announced == 0


def test_a_line_written_before_the_read_is_counted_with_it(tmp_path: Path) -> None:
    """A job announced after the wake-up and created before the sweep's read is found by
    that read: its line counts then, so no follow-up is spent looking for it."""
    slurm = HeldQueue([job(7), job(8)])
    d = daemon(tmp_path, slurm)
    announce(d, 1)
    with d.state.spool.open("a") as spool:
        spool.write("held 1 1000\n")
    d.cycle()
    assert released(slurm) == {7, 8}
    assert periodic_next(d)
    d.cycle()  # the second line's wake-up comes to nothing: it was counted already
    assert d.follow_ups.announced == 0


def test_a_periodic_sweep_has_no_follow_up(tmp_path: Path) -> None:
    d = daemon(tmp_path, EmptyQueue())
    d.cycle()
    assert periodic_next(d)


def test_the_spool_watcher_counts_whole_lines(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    watcher = SpoolWatcher(spool)
    assert not watcher.woken()
    assert watcher.take_lines() == 0
    with spool.open("a") as out:
        out.write("held 1 0\nheld 1 0\nheld")
    assert watcher.woken()
    assert watcher.take_lines() == 2
    assert watcher.take_lines() == 0
    with spool.open("a") as out:
        out.write(" 1 0\n")
    assert watcher.woken()
    assert watcher.take_lines() == 1
    spool.write_text("held 2 0\n")  # replaced by a shorter file: counted from its start
    assert watcher.woken()
    assert watcher.take_lines() == 1
