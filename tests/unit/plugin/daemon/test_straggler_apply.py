"""A batch stops waiting for the updates slurmctld holds back (plugin/daemon/apply.py,
stragglers): once the others returned and none came back for STRAGGLER_S, the rest stay
journaled and in flight, no sweep decides or finishes them, and each is sorted out and
recorded when its update returns."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from plugin.daemon.apply import GONE, RELEASED, STRAGGLER_S, Applier
from plugin.daemon.journal import Journal
from plugin.daemon.sweep import classify
from plugin.slurm.writer import JobUpdate

from ..test_daemon import FakeSlurm, job, nothing, outcomes
from ..test_daemon_health import daemon
from .test_decision_timeline import HeldQueue, decisions


class SlowSlurm(FakeSlurm):
    """Combined updates whose futures for the jobs in `held_back` stay out until `answer`."""

    combined_updates = True

    def __init__(self, held_back: Sequence[int] = (), queue: Sequence[Any] = ()) -> None:
        super().__init__(queue)
        self.held_back = set(held_back)
        self.out: dict[int, Future[str | None]] = {}
        self.sent: list[int] = []

    def send_updates(self, updates: Sequence[JobUpdate]) -> list[Future[str | None]]:
        futures = []
        for update in updates:
            self.sent.append(update.job_id)
            future: Future[str | None] = Future()
            if update.job_id in self.held_back:
                self.out[update.job_id] = future
            else:
                future.set_result(None)
            futures.append(future)
        return futures

    def answer(self, job_id: int, refusal: str | None = None) -> None:
        self.held_back.discard(job_id)
        self.out.pop(job_id).set_result(refusal)


def test_the_batch_leaves_a_held_back_update_in_flight(tmp_path: Path) -> None:
    slurm = SlowSlurm(held_back=[2])
    journal = Journal(tmp_path / "j")
    applier = Applier(slurm, journal, nothing)  # type: ignore[arg-type]
    started = time.monotonic()
    applied = applier.apply(outcomes(3), leave_stragglers=True)
    assert time.monotonic() - started >= STRAGGLER_S
    assert {a.outcome.job_id: a.status for a in applied} == {1: RELEASED, 3: RELEASED}
    assert set(applier.inflight) == {2}
    applier.commit()
    assert set(journal.load()) == {2}  # journaled until its update returns
    assert applier.harvest() == ([], {})
    slurm.answer(2)
    back, times = applier.harvest()
    assert [(a.outcome.job_id, a.status) for a in back] == [(2, RELEASED)]
    sent, returned = times[2]
    assert sent <= returned
    assert not applier.inflight
    assert not applier.unreleased
    applier.commit()
    assert not journal.load()


def test_a_straggler_refused_on_return_goes_step_by_step(tmp_path: Path) -> None:
    slurm = SlowSlurm(held_back=[1], queue=[])  # read back: the job is gone
    slurm.fail = ["resize"]
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing)  # type: ignore[arg-type]
    assert applier.apply(outcomes(1), leave_stragglers=True) == []
    slurm.answer(1, "Invalid job id specified")
    back, _ = applier.harvest()
    assert [(a.outcome.job_id, a.status) for a in back] == [(1, GONE)]
    assert "release" not in [name for name, _ in slurm.calls]


def test_without_leave_stragglers_the_batch_waits_for_every_update(tmp_path: Path) -> None:
    slurm = SlowSlurm(held_back=[2])
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing)  # type: ignore[arg-type]
    answer = threading.Timer(3 * STRAGGLER_S, slurm.answer, args=(2,))
    answer.start()
    applied = applier.apply(outcomes(3))
    answer.join()
    assert [a.status for a in applied] == [RELEASED] * 3
    assert not applier.inflight


def test_a_job_in_flight_is_neither_decided_nor_finished() -> None:
    jobs = [job(1), job(2)]
    sweep = classify(jobs, time.time(), 600.0, journaled={1, 2}, max_batch=10, in_flight={2})
    assert [j.job_id for j in sweep.to_finish] == [1]
    assert not sweep.to_decide
    sweep = classify(jobs, time.time(), 600.0, journaled=(), max_batch=10, in_flight={2})
    assert [j.job_id for j in sweep.to_decide] == [1]


class SlowQueue(HeldQueue, SlowSlurm):
    """The held queue of test_decision_timeline with SlowSlurm's updates: a job stays held
    until its update returned."""

    def __init__(self, held: list[Any], held_back: Sequence[int]) -> None:
        HeldQueue.__init__(self, held)
        self.held_back = set(held_back)
        self.out = {}
        self.sent = []

    def pending_jobs(self) -> list[Any]:
        done = {j for j in self.sent if j not in self.held_back}
        return [j for j in self.held if j.job_id not in done]


def test_the_daemon_sends_a_straggler_once_and_records_it_when_it_returns(
    tmp_path: Path,
) -> None:
    slurm = SlowQueue([job(7), job(8)], held_back=[8])
    d = daemon(tmp_path, slurm)
    with capture_logs() as logs:
        d.cycle()
        assert set(decisions(logs)) == {7}
        slurm.held.append(job(9))
        d.cycle()  # job 8 still held in Slurm's queue: not decided again
        assert slurm.sent == [7, 8, 9]
        slurm.answer(8)
        d.cycle()
    found = decisions(logs)
    assert set(found) == {7, 8, 9}
    line = found[8]["timeline"]
    assert line["read"] <= line["decided"] <= line["applied"]
    assert found[8]["status"] == "released"
    assert not d.applier.inflight


def test_straggler_s_zero_waits_for_every_update_of_the_daemons_batch(tmp_path: Path) -> None:
    slurm = SlowSlurm(held_back=[2])
    applier = Applier(slurm, Journal(tmp_path / "j"), nothing, straggler_s=0)  # type: ignore[arg-type]
    answer = threading.Timer(3 * STRAGGLER_S, slurm.answer, args=(2,))
    answer.start()
    applied = applier.apply(outcomes(3), leave_stragglers=True)
    answer.join()
    assert [a.status for a in applied] == [RELEASED] * 3
    assert not applier.inflight
