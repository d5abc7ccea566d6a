"""The kill guard without Slurm or Redis: when a shortened limit is due to be raised, that it
is raised to the user's limit and never above, counted, recorded and that the app's safety
lengthens its next limits; the exact keys it uses."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.daemon.decider import with_safety
from plugin.daemon.guard import RAISE_MARGIN_S, GuardThread, KillGuard, Watch, due
from plugin.metrics import Metrics
from plugin.slurm import JobRecord, SlurmCommandError
from plugin.store import keys
from plugin.store.connection import StoreUnavailable

from .test_daemon import NOW, FakeStore, decider, idle, job, lu_record, outcomes

START = NOW - 100


def running(job_id: int = 1, limit: int = 10, **fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "state": "RUNNING",
        "priority": 1,
        "start_time": START,
        "time_limit_min": limit,
        "nodes_alloc": 4,
    }
    return job(job_id, **{**base, **fields})


WATCH = Watch(1, NOW - 5, "lulesh", user_limit_min=60, set_limit_min=10)


def test_a_job_is_due_within_the_margin_of_its_shortened_limit() -> None:
    end = START + 10 * 60
    assert not due(WATCH, running(), end - RAISE_MARGIN_S - 1)
    assert due(WATCH, running(), end - RAISE_MARGIN_S)
    assert due(WATCH, running(), end + 5)
    assert not due(WATCH, job(1), end)  # still pending
    assert not due(WATCH, running(limit=60), end)  # an admin gave it the user's limit already


def test_the_safety_lengthens_shortened_limits_up_to_the_users() -> None:
    assert with_safety(10, 60, 1.25) == 13
    assert with_safety(50, 60, 1.5) == 60
    assert with_safety(60, 60, 2.0) == 60  # not shortened: left alone
    assert with_safety(10, None, 2.0) == 10
    assert with_safety(10, 60, 1.0) == 10


def test_the_decider_applies_the_apps_safety() -> None:
    plain = decider(FakeStore({"lulesh": lu_record()})).decide(job(), idle)
    store = FakeStore({"lulesh": lu_record()})
    store.safety["ann/lulesh"] = 1.5  # the user's own raises lengthen the user's limits
    safer = decider(store).decide(job(), idle)
    assert plain.time_limit_min is not None
    assert plain.time_limit_min < 60
    assert safer.time_limit_min == with_safety(plain.time_limit_min, 60, 1.5)
    assert safer.time_limit_min > plain.time_limit_min
    assert "kill guard" in safer.time_limit_reason


def test_only_a_shortened_limit_is_watched_and_the_watch_round_trips() -> None:
    [decided] = outcomes(1)
    watch = Watch.of(decided)
    assert watch is not None
    assert (watch.user_limit_min, watch.set_limit_min) == (60, decided.time_limit_min)
    assert Watch.from_dict(watch.to_dict()) == watch
    unshortened = dataclasses.replace(decided, job=job(1, time_limit_min=1))
    assert Watch.of(unshortened) is None
    bad_docs: tuple[dict[str, Any], ...] = (
        {},
        {**watch.to_dict(), "version": 3},
        {**watch.to_dict(), "set_limit_min": 60},
        {**watch.to_dict(), "max_limit_min": 0},
    )
    for bad in bad_docs:
        with pytest.raises(ValueError, match="watch"):
            Watch.from_dict(bad)
    # A watch stored before the job's maximum was kept reads back without one.
    old = {k: v for k, v in watch.to_dict().items() if k != "max_limit_min"} | {"version": 1}
    assert Watch.from_dict(old) == dataclasses.replace(watch, max_limit_min=None)


class GuardStore:
    """The store calls the guard makes, recorded; `down` makes them fail like Redis."""

    def __init__(self) -> None:
        self.watches: dict[str, Any] = {}
        self.raises: list[tuple[Any, dict[str, Any]]] = []
        self.counts: list[tuple[str, str]] = []
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("Redis at redis://x: connection refused")

    def guard_watches(self) -> dict[str, str]:
        self._check()
        return {k: json.dumps(v) for k, v in self.watches.items()}

    def save_guard_watch(self, job_id: int, doc: dict[str, Any]) -> None:
        self._check()
        self.watches[str(job_id)] = doc

    def drop_guard_watch(self, job_id: int) -> None:
        self._check()
        self.watches.pop(str(job_id), None)

    def record_limit_raise(
        self, app: AppKey | None, doc: dict[str, Any], growth: float, cap: float
    ) -> float:
        self._check()
        self.raises.append((app, doc))
        return growth

    def count_for_guard(self, app: AppKey, field: str) -> None:
        self._check()
        self.counts.append((str(app), field))


class QueueSlurm:
    backend = "fake"

    def __init__(self, queue: Sequence[JobRecord], refuse: bool = False) -> None:
        self.queue = list(queue)
        self.limits: list[tuple[int, int]] = []
        self.refuse = refuse

    def jobs(self) -> list[JobRecord]:
        return list(self.queue)

    def jobs_of(self, job_ids: Sequence[int]) -> list[JobRecord]:
        return [j for j in self.jobs() if j.job_id in set(job_ids)]

    def set_time_limit(self, job_id: int, minutes: int) -> None:
        if self.refuse:
            raise SlurmCommandError("scontrol update: Access/permission denied")
        self.limits.append((job_id, minutes))


def guard_for(queue: Sequence[JobRecord], now: float, **slurm: Any) -> tuple[KillGuard, Any, Any]:
    store = GuardStore()
    fake = QueueSlurm(queue, **slurm)
    guard = KillGuard(fake, lambda: store, Metrics(), clock=lambda: now)  # type: ignore[arg-type,return-value]
    guard.may_raise = True  # as the daemon sets it where Slurm enforces no accounting limits
    guard.watched[WATCH.job_id] = WATCH
    return guard, fake, store


def test_a_due_job_gets_the_users_limit_back_once() -> None:
    now = START + 10 * 60 - 10
    guard, slurm, store = guard_for([running()], now)
    assert guard.tick() == 1
    assert slurm.limits == [(1, 60)]
    [(app, doc)] = store.raises
    assert app == AppKey("lulesh")
    assert (doc["from_min"], doc["to_min"], doc["elapsed_s"]) == (10, 60, 590.0)
    assert guard.metrics.guard_raises._value.get() == 1
    assert not guard.watched
    assert guard.tick(force=True) == 0  # raised once, not again


def test_a_raise_never_passes_the_jobs_maximum() -> None:
    # The user asked 60 min where the job may have 30 at most (partition MaxTime, QOS or
    # association MaxWall) when it was decided: the guard gives back 30, not 60.
    now = START + 10 * 60 - 10
    guard, slurm, store = guard_for([running()], now)
    guard.watched[WATCH.job_id] = dataclasses.replace(WATCH, max_limit_min=30)
    assert guard.tick() == 1
    assert slurm.limits == [(1, 30)]
    [(_, doc)] = store.raises
    assert (doc["to_min"], doc["user_limit_min"]) == (30, 60)
    # A job whose limit already reaches the maximum is not due: nothing is raised.
    guard, slurm, _ = guard_for([running(limit=30)], START + 30 * 60)
    guard.watched[WATCH.job_id] = dataclasses.replace(WATCH, max_limit_min=30)
    assert guard.tick() == 0
    assert slurm.limits == []


def test_where_slurm_enforces_limits_nothing_is_raised() -> None:
    # Only an operator may raise a running job's limit, and its raise lifts the enforced
    # limits: the guard leaves the job to the limit Slurm started it with.
    guard, slurm, store = guard_for([running()], START + 10 * 60 - 10)
    guard.may_raise = False
    assert guard.tick() == 0
    assert slurm.limits == []
    assert store.raises == []
    assert not guard.watched  # not asked again every tick
    fresh = KillGuard(QueueSlurm([]), GuardStore, Metrics())  # type: ignore[arg-type]
    assert fresh.may_raise is False  # until the daemon has asked Slurm


def test_a_watch_keeps_the_maximum_the_decision_saw() -> None:
    [decided] = outcomes(1)
    capped = dataclasses.replace(decided, max_time_min=45)
    watch = Watch.of(capped)
    assert watch is not None
    assert watch.max_limit_min == 45
    assert watch.raise_to == min(60, 45)
    assert Watch.from_dict(watch.to_dict()) == watch


def test_a_job_not_yet_due_is_left_and_a_refused_raise_is_retried() -> None:
    early = START + 60
    guard, slurm, _ = guard_for([running()], early)
    assert guard.tick() == 0
    assert slurm.limits == []
    assert WATCH.job_id in guard.watched
    late = START + 10 * 60 - 10
    guard, slurm, store = guard_for([running()], late, refuse=True)
    assert guard.tick() == 0
    assert WATCH.job_id in guard.watched  # tried again at the next tick
    assert store.raises == []


def test_a_timeout_at_our_limit_is_counted_and_finished_jobs_leave_the_watch() -> None:
    killed = running(state="TIMEOUT")
    guard, _, store = guard_for([killed], NOW)
    guard.tick()
    assert store.counts == [("lulesh", "killed")]
    assert guard.metrics.guard_kills._value.get() == 1
    assert not guard.watched
    done = running(state="COMPLETED")
    guard, _, store = guard_for([done], NOW)
    guard.tick()
    assert store.counts == []
    assert not guard.watched
    guard, _, _ = guard_for([], NOW)  # gone from the queue
    guard.tick()
    assert not guard.watched
    reused = running(submit_time=NOW + 50)  # the same id, another job
    guard, slurm, _ = guard_for([reused], START + 10 * 60)
    guard.tick()
    assert slurm.limits == []
    assert not guard.watched


def test_redis_down_never_stops_a_raise() -> None:
    guard, slurm, store = guard_for([running()], START + 10 * 60)
    store.down = True
    assert guard.tick() == 1
    assert slurm.limits == [(1, 60)]
    assert guard.metrics.store_failures.labels("guard_raise")._value.get() == 1


def test_watches_survive_a_restart_through_the_store() -> None:
    [decided] = outcomes(1)
    guard, _, store = guard_for([], NOW)
    guard.watched.clear()
    guard.watch([decided])
    again = KillGuard(QueueSlurm([]), lambda: store, Metrics())  # type: ignore[arg-type]
    assert again.load() == 1
    assert again.watched == guard.watched


def test_the_guard_keys_are_exact() -> None:
    assert keys.GUARD_WATCH == "adaptalloc:v2:{global}:guard:watch"
    assert keys.GUARD_RAISES == "adaptalloc:v2:{global}:guard:raises"
    assert keys.app_guard(AppKey("lulesh", "large")) == "adaptalloc:v2:app:{lulesh@large}:guard"
    with pytest.raises(TypeError):
        keys.app_guard("lulesh")  # type: ignore[arg-type]


def wait(event: threading.Event) -> None:
    assert event.wait(10.0), "the guard thread did not get there"


def test_the_guard_thread_ticks_only_while_the_daemon_decides() -> None:
    guard, slurm, _ = guard_for([running()], START + 10 * 60 - 10)
    deciding = threading.Event()
    asked = threading.Event()

    def may_write() -> bool:
        asked.set()
        return deciding.is_set()

    thread = GuardThread(guard, may_write, poll_s=0.01).start()
    try:
        wait(asked)
        asked.clear()
        wait(asked)  # asked twice: at least one tick was due and skipped
        assert slurm.limits == []  # a standby (or a lost lease) raises nothing
        deciding.set()
        for _ in range(1000):
            if slurm.limits:
                break
            asked.clear()
            wait(asked)
        assert slurm.limits == [(1, 60)]
    finally:
        thread.stop()
    assert not thread.thread.is_alive()


class SlowSlurm(QueueSlurm):
    """squeue --json that blocks until the test lets it answer (or raises once)."""

    def __init__(self, queue: Sequence[JobRecord]) -> None:
        super().__init__(queue)
        self.reading = threading.Event()
        self.answer = threading.Event()
        self.failed = threading.Event()

    def jobs(self) -> list[JobRecord]:
        if not self.failed.is_set():
            self.failed.set()
            raise RuntimeError("a bug in a reader")
        self.reading.set()
        wait(self.answer)
        return super().jobs()


def test_a_slow_guard_read_never_holds_back_the_loops_watches() -> None:
    store = GuardStore()
    slurm = SlowSlurm([running()])
    now = START + 10 * 60 - 10
    guard = KillGuard(slurm, lambda: store, Metrics(), clock=lambda: now)  # type: ignore[arg-type,return-value]
    guard.may_raise = True
    guard.watched[WATCH.job_id] = WATCH
    thread = GuardThread(guard, lambda: True, poll_s=0.01).start()
    try:
        wait(slurm.failed)  # the first tick raised (a bug): the thread goes on
        guard.next_tick = 0.0  # due again at once (the clock stands still here)
        wait(slurm.reading)
        [decided] = outcomes(1)
        other = dataclasses.replace(decided, job=dataclasses.replace(decided.job, job_id=2))
        loop = threading.Thread(target=guard.watch, args=([other],))
        loop.start()
        loop.join(10.0)
        assert not loop.is_alive()  # the loop's watch went through while the read blocks
        assert not slurm.answer.is_set()
        assert 2 in guard.watched
        slurm.answer.set()
        for _ in range(1000):
            if slurm.limits:
                break
            threading.Event().wait(0.01)
        assert slurm.limits == [(1, 60)]
    finally:
        slurm.answer.set()
        thread.stop()
