"""The daemon's health counts Slurm's writes: refused releases stop the heartbeat
until a release goes through; a journaled decision held past max_hold_s is released as
submitted with its range and limit put back."""

from __future__ import annotations

import time
from pathlib import Path

from plugin.config import load_config
from plugin.daemon import reasons
from plugin.daemon.apply import PENDING_RELEASE, RELEASED, Applier, journal_entry
from plugin.daemon.journal import Journal
from plugin.daemon.loop import Daemon, watchdog_outcome

from .test_daemon import FakeSlurm, job, nothing, outcomes


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_refused_releases_mark_writes_failing_until_one_goes_through(tmp_path: Path) -> None:
    batch = outcomes(1)
    still_held = job(1, admin_comment=batch[0].admin_comment)
    # Both the batch release and the per-job retry are refused.
    slurm = FakeSlurm([still_held], fail=["release", "release"])
    clock = Clock()
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing, clock)  # type: ignore[arg-type]
    assert applier.writes_failed_at is None
    [first] = applier.apply(batch)
    assert first.status == PENDING_RELEASE
    assert applier.writes_failed_at == 100.0
    clock.now = 130.0
    slurm.fail = ["release", "release"]
    [still] = applier.apply([applier.unreleased[1]])  # refused again: the first time stays
    assert still.status == PENDING_RELEASE
    assert applier.writes_failed_at == 100.0
    slurm.fail = []
    [done] = applier.apply([applier.unreleased[1]])
    assert done.status == RELEASED
    assert applier.writes_failed_at is None


def daemon(tmp_path: Path, slurm: FakeSlurm, settings: str = "unhealthy_after_s = 30\n") -> Daemon:
    """A daemon on `slurm` without Redis, metrics or learner; `settings`: more [daemon] lines."""
    config = tmp_path / "adaptalloc.toml"
    config.write_text("[daemon]\nmetrics_port = 0\nlearn = false\n" + settings)
    return Daemon(
        load_config(str(config)),
        tmp_path / "state",
        redis_url="redis://127.0.0.1:1/0",  # no Redis: records and watches fail, logged
        metrics_port=0,
        learn=False,
        slurm=slurm,  # type: ignore[arg-type]
    )


def test_health_counts_writes_and_retries_before_beating_again(tmp_path: Path) -> None:
    d = daemon(tmp_path, FakeSlurm())
    d.last_sweep_ok = 1000.0
    assert d.health_problem(1001.0) is None
    d.applier.writes_failed_at = 1000.5
    d.applier.unreleased[1] = outcomes(1)[0]
    # While a refused release waits, the daemon stays unhealthy however long it takes.
    d.last_sweep_ok = 5000.0
    assert d.health_problem(5001.0) == "Slurm refuses the daemon's releases"
    # Nothing left to retry: unhealthy for unhealthy_after_s more, then it tries again.
    d.applier.unreleased.clear()
    assert d.health_problem(5001.0) is None
    d.applier.writes_failed_at = 4990.0
    assert d.health_problem(5001.0) == "Slurm refuses the daemon's releases"
    d.last_sweep_ok = 4000.0
    assert d.health_problem(5001.0) == "no successful sweep lately"


def test_the_beat_stops_when_writes_fail_and_comes_back_when_they_work(tmp_path: Path) -> None:
    d = daemon(tmp_path, FakeSlurm())
    d.state.prepare()
    d.last_sweep_ok = time.monotonic()
    d.maintenance()
    assert d.state.heartbeat.exists()
    d.applier.writes_failed_at = time.monotonic()
    d.applier.unreleased[1] = outcomes(1)[0]
    d.maintenance()
    assert not d.state.heartbeat.exists()
    d.applier.writes_failed_at = None
    d.next_beat = 0.0
    d.maintenance()
    assert d.state.heartbeat.exists()


def test_a_journaled_decision_past_max_hold_is_released_as_submitted() -> None:
    [decided] = outcomes(1)
    assert decided.resize is not None
    assert decided.resize.time_limit_min is not None
    assert decided.resize.time_limit_min < 60
    released = watchdog_outcome(decided, 300.0)
    assert released.fail_open == reasons.WATCHDOG
    assert released.resize is not None
    assert released.resize.line() == "update JobId=1 NumNodes=2-8 TimeLimit=60"
    assert "adaptalloc:v1:released reason=watchdog range=2-8" in released.admin_comment


def test_the_journal_keeps_the_submitted_limit() -> None:
    [decided] = outcomes(1)
    assert journal_entry(decided).limit == 60


def test_the_loop_releases_an_overdue_journaled_job_as_submitted(tmp_path: Path) -> None:
    from plugin.daemon.record import decision_record  # noqa: PLC0415
    from plugin.daemon.sweep import classify  # noqa: PLC0415

    [decided] = outcomes(1)
    assert decided.resize is not None
    pinned = job(
        1,
        nodes_min=decided.resize.min_nodes,
        nodes_max=decided.resize.max_nodes,
        time_limit_min=decided.resize.time_limit_min,
        admin_comment=decided.admin_comment,
        submit_time=int(time.time()) - 1000,  # held far longer than max_hold_s
    )
    slurm = FakeSlurm([pinned])
    d = daemon(tmp_path, slurm)
    d.applier.unreleased[1] = decided
    sweep = classify([pinned], time.time(), d.config.daemon.max_hold_s, {1}, 10)
    assert [j.job_id for j in sweep.to_finish] == [1]
    d.handle(sweep)
    assert ("resize", ["update JobId=1 NumNodes=2-8 TimeLimit=60"]) in slurm.calls
    assert slurm.calls[-1] == ("release", (1,))
    [(_, (_, text))] = [c for c in slurm.calls if c[0] == "comment"]
    assert "adaptalloc:v1:released reason=watchdog range=2-8" in text
    assert not d.applier.unreleased
    released = watchdog_outcome(decided, 120.0)
    record = decision_record(released, "released", None)
    assert (record.action, record.nodes, record.new_time_limit_min) == ("release", None, None)
