"""A spool wake-up is followed by one more sweep soon after (plugin/daemon/loop.py,
FOLLOW_UP_S): job_submit.lua appends to the spool before slurmctld has created the job, so
the sweep the wake-up started can miss it; without the follow-up it waited for the periodic
sweep."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from plugin.daemon.loop import FOLLOW_UP_S

from ..test_daemon import FakeSlurm
from ..test_daemon_health import daemon


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


def test_a_woken_sweep_is_followed_by_one_more_soon_not_a_chain(tmp_path: Path) -> None:
    slurm = EmptyQueue()
    d = daemon(tmp_path, slurm)
    interval = d.config.daemon.sweep_interval_s
    assert interval > 10 * FOLLOW_UP_S
    d.wake_at = time.time()
    before = time.monotonic()
    d.cycle()
    assert slurm.sweeps == 1
    assert before < d.next_sweep <= time.monotonic() + FOLLOW_UP_S
    d.cycle()  # the follow-up (not woken): the next one is the periodic sweep
    assert d.next_sweep >= time.monotonic() + interval - 1.0


def test_a_periodic_sweep_has_no_follow_up(tmp_path: Path) -> None:
    d = daemon(tmp_path, EmptyQueue())
    d.cycle()
    assert d.next_sweep >= time.monotonic() + d.config.daemon.sweep_interval_s - 1.0
