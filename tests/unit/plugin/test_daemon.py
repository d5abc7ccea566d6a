"""The daemon's pieces without Slurm or Redis: admin_comment records, sorting the queue, the
decision of one job with every fail-open path, the grouped apply and its recovery, the
journal, the state directory."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import policies
import predictor
from plugin.appkey import AppKey, AppKeyRule
from plugin.daemon import marks, reasons
from plugin.daemon.apply import GONE, RELEASED, Applier, journal_entry, outcome_from_journal
from plugin.daemon.decider import DIAGNOSTICS, Budget, CurveSource, Decider
from plugin.daemon.journal import Journal
from plugin.daemon.state import DaemonLockedError, SpoolWatcher, StateDir
from plugin.daemon.sweep import classify
from plugin.slurm import JobRecord, Resize, SlurmCommandError
from plugin.store import keys
from plugin.store.connection import StoreUnavailable
from plugin.store.curves import CurveRecord

NOW = 1_800_000_000


def job(job_id: int = 7, **fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "job_id": job_id,
        "name": "lulesh",
        "user": "ann",
        "account": "phys",
        "partition": "debug",
        "state": "PENDING",
        "source": "squeue",
        "comment": "",
        "admin_comment": marks.HELD,
        "nodes_min": 2,
        "nodes_max": 8,
        "time_limit_min": 60,
        "submit_time": NOW - 5,
        "priority": 0,
        "state_reason": "JobHeldUser",
    }
    base.update(fields)
    return JobRecord(**base)


# --- admin_comment ----------------------------------------------------------------------------


def test_the_record_replaces_the_marker_and_keeps_earlier_text() -> None:
    app = AppKey("lu", "w")
    record = marks.sized_record(16, 4, 64, "load_adaptive")
    assert marks.admin_comment(record, "", app) == (
        "adaptalloc:v1 app=lu size=w; adaptalloc:v1:sized n=16 range=4-64 rule=load_adaptive"
    )
    prior = marks.prior_text(f"{marks.HELD} helpdesk 42")
    assert prior == "helpdesk 42"
    text = marks.admin_comment(marks.released_record("watchdog", 4, 64), prior, None)
    assert text == "adaptalloc:v1:released reason=watchdog range=4-64; helpdesk 42"
    assert marks.parse_record(text) == {"record": "released", "reason": "watchdog", "range": "4-64"}


def test_the_learner_reads_the_app_from_the_daemons_record() -> None:
    text = marks.admin_comment(marks.sized_record(8, 1, 8, "cap"), "", AppKey("lu"))
    finished = job(admin_comment=text, name="wrap", state="COMPLETED")
    assert AppKeyRule().key_for(finished) == AppKey("lu", owner="ann")
    assert marks.record_word(text) == marks.SIZED
    assert not marks.is_held(text)


def test_no_second_tag_when_an_admin_already_tagged_the_job() -> None:
    prior = "adaptalloc:v1 app=admin-set;"
    text = marks.admin_comment(marks.kept_record(1, 4, "fallback"), prior, AppKey("other"))
    assert text.count("adaptalloc:v1 ") == 1
    assert AppKeyRule().key_for(job(admin_comment=text)) == AppKey("admin-set", owner="ann")


def test_records_refuse_anything_but_plain_tokens() -> None:
    with pytest.raises(ValueError, match="cannot go into"):
        marks.released_record("x; rm -rf", 1, 2)


# --- the queue ------------------------------------------------------------------------------


def test_classify_sorts_held_stale_journaled_and_foreign_jobs() -> None:
    jobs = [
        job(1),
        job(2, submit_time=NOW - 500),  # held too long: the watchdog
        job(3, admin_comment="adaptalloc:v1:sized n=2 range=2-8 rule=cap"),  # journaled
        job(4, admin_comment="adaptalloc:v1:sized n=2 range=2-8 rule=cap"),  # user hold
        job(5, admin_comment=""),  # held by its user, never ours
        job(6, priority=1000),  # released by hand
        job(7, state="RUNNING"),
        job(8, submit_time=NOW - 3),
    ]
    sweep = classify(jobs, NOW, 120.0, {3}, max_batch=1)
    assert [j.job_id for j in sweep.to_decide] == [1]
    assert sweep.deferred == 1
    assert [j.job_id for j in sweep.stale] == [2]
    assert [j.job_id for j in sweep.to_finish] == [3]
    assert sweep.held == 3
    assert sweep.demand == Counter({"debug": 2 * 7})


# --- one decision ---------------------------------------------------------------------------


class FakeStore:
    def __init__(self, records: dict[str, CurveRecord | None] | None = None) -> None:
        self.records = records or {}
        self.calls = 0
        self.down = False
        self.safety: dict[str, float] = {}

    def curve_record(self, app: AppKey, node_type: str | None = None) -> CurveRecord | None:
        """The app's curve; none per node type (the apps here ran on one)."""
        self.calls += 1
        if self.down:
            raise StoreUnavailable("Redis at redis://x: connection refused")
        return self.records.get(str(app)) if node_type is None else None

    def limit_safety(self, app: AppKey) -> float:
        return self.safety.get(str(app), 1.0)


def lu_record() -> CurveRecord:
    n = [1, 2, 4, 8, 16, 32]
    t = [100.0 / s for s in (1.0, 1.97, 3.83, 7.24, 13.07, 20.77)]
    fit = predictor.fit(n, t)
    return CurveRecord(predictor.Curve.from_fit(fit), 3, 3, None, 6, "adept", True)


def decider(store: FakeStore, clock: list[float] | None = None) -> Decider:
    ticks = clock if clock is not None else [0.0]
    curves = CurveSource(lambda: store, retry_s=5.0, clock=lambda: ticks[0])  # type: ignore[arg-type, return-value]
    made = Decider(AppKeyRule(), policies.default_config(), curves, Budget())
    made.limits_enforced = False  # as the daemon finds the testbed: no AccountingStorageEnforce
    return made


def idle(_: JobRecord) -> policies.ClusterState:
    return policies.ClusterState(idle_nodes=8, pending_demand_nodes=0, total_nodes=8)


def test_a_known_app_is_resized_inside_its_range_with_a_new_limit() -> None:
    d = decider(FakeStore({"lulesh": lu_record()}))
    outcome = d.decide(job(), idle)
    assert outcome.action == "resize"
    assert outcome.resize is not None
    assert 2 <= outcome.resize.min_nodes == outcome.resize.max_nodes <= 8
    assert outcome.resize.time_limit_min is not None
    assert outcome.resize.time_limit_min < 60
    assert outcome.admin_comment.startswith("adaptalloc:v1 app=lulesh; adaptalloc:v1:sized n=")
    assert outcome.curve_version == 3
    assert d.budget.value().jobs_decided == 1


def snapshot(curve: predictor.Curve) -> dict[str, Any]:
    return {k: v for k, v in curve.to_dict().items() if k not in DIAGNOSTICS}


def test_the_record_carries_the_deciding_curve_made_once_per_batch() -> None:
    """Live accuracy: the curve that sized the job goes into its record, as a document made
    once per curve per batch (a burst's jobs share it); a new batch makes it afresh."""
    record = lu_record()
    assert record.curve is not None
    d = decider(FakeStore({"lulesh": record}))
    first, second = d.decide(job(1), idle), d.decide(job(2), idle)
    assert first.curve_doc is not None
    assert second.curve_doc is first.curve_doc
    # The document without the diagnostics, which nothing of the prediction reads: read back,
    # the same runtime and 90% interval at every size, to the bit.
    assert first.curve_doc == snapshot(record.curve)
    assert not DIAGNOSTICS & set(first.curve_doc)
    back = predictor.Curve.from_dict(json.loads(json.dumps(first.curve_doc)))
    n = np.arange(1.0, 513.0)
    assert np.array_equal(back.runtime(n), record.curve.runtime(n))
    for a, b in zip(back.runtime_interval(n), record.curve.runtime_interval(n), strict=True):
        assert np.array_equal(a, b)
    d.curves.begin_batch()
    third = d.decide(job(3), idle)
    assert third.curve_doc == first.curve_doc
    assert third.curve_doc is not first.curve_doc
    kept = decider(FakeStore()).decide(job(), idle)
    assert kept.curve_doc is None


def test_an_app_without_a_curve_gets_the_fallback() -> None:
    d = decider(FakeStore())
    outcome = d.decide(job(), idle)
    assert outcome.action == "keep"
    assert outcome.rule == "fallback"
    assert "no curve is stored for app ann/lulesh nor for the site's lulesh" in outcome.reason
    assert "adaptalloc:v1:kept range=2-8 rule=fallback" in outcome.admin_comment
    # A decided job in the exploration budget's share, without predicted node-hours.
    assert d.budget.value() == policies.ExplorationBudget(jobs_decided=1)


def test_a_job_without_an_app_key_gets_the_fallback_too() -> None:
    outcome = decider(FakeStore()).decide(job(name="wrap"), idle)
    assert (outcome.action, outcome.app) == ("keep", None)
    assert "has no app key" in outcome.reason


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"nodes_min": 4, "nodes_max": 4}, reasons.NOT_MOLDABLE),
        ({"nodes_max": None}, reasons.NOT_MOLDABLE),
        ({"comment": "adaptalloc:v1 app=lu colour=red"}, reasons.BAD_TAG),
        ({"comment": "adaptalloc:v2 app=lu"}, reasons.BAD_TAG),
        ({"comment": "adaptalloc:v1 resize=no"}, reasons.OPTED_OUT),
    ],
)
def test_fail_open_before_the_store_is_asked(fields: dict[str, Any], reason: str) -> None:
    store = FakeStore()
    d = decider(store)
    outcome = d.decide(job(**fields), idle)
    assert outcome.action == "release"
    assert outcome.fail_open == reason
    assert d.budget.value() == policies.ExplorationBudget()  # released, not decided
    assert outcome.resize is None
    assert f"adaptalloc:v1:released reason={reason}" in outcome.admin_comment
    assert store.calls == 0


def test_where_slurm_enforces_limits_a_known_app_is_released_as_submitted() -> None:
    d = decider(FakeStore({"lulesh": lu_record()}))
    d.resize_refused = True
    outcome = d.decide(job(), idle)
    assert (outcome.action, outcome.fail_open, outcome.resize) == (
        "release",
        reasons.LIMITS_ENFORCED,
        None,
    )
    assert "adaptalloc:v1:released reason=limits_enforced" in outcome.admin_comment
    d.resize_refused = False  # the control: the same job and curve are resized
    assert d.decide(job(), idle).action == "resize"


def test_redis_down_fails_open_and_is_not_asked_again_for_a_while() -> None:
    store = FakeStore()
    store.down = True
    clock = [0.0]
    d = decider(store, clock)
    for k in range(3):
        outcome = d.decide(job(k + 1), idle)
        assert outcome.fail_open == reasons.STORE_UNAVAILABLE
    assert store.calls == 1
    clock[0] = 6.0
    store.down = False
    assert d.decide(job(9), idle).action == "keep"


def test_a_size_outside_the_range_is_never_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        policies, "decide", lambda *a, **k: policies.Decision(1, None, "cap", "below the range")
    )
    outcome = decider(FakeStore({"lulesh": lu_record()})).decide(job(), idle)
    assert outcome.fail_open == reasons.OUT_OF_RANGE


def test_a_policy_error_fails_open(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> policies.Decision:
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(policies, "decide", broken)
    outcome = decider(FakeStore({"lulesh": lu_record()})).decide(job(), idle)
    assert outcome.fail_open == reasons.POLICY_ERROR


def test_an_unexpected_error_fails_open() -> None:
    def no_cluster(_: JobRecord) -> policies.ClusterState:
        raise RuntimeError("sinfo exploded")

    outcome = decider(FakeStore()).decide(job(), no_cluster)
    assert outcome.fail_open == reasons.INTERNAL_ERROR


# --- applying a batch -------------------------------------------------------------------------


class FakeSlurm:
    """Records the writer calls; `fail` names the calls that raise; `queue` is read back."""

    backend = "fake"

    def __init__(self, queue: Sequence[JobRecord] = (), fail: Sequence[str] = ()) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.queue = list(queue)
        self.fail = list(fail)

    def _call(self, name: str, arg: Any) -> None:
        self.calls.append((name, arg))
        if name in self.fail:
            self.fail.remove(name)
            raise SlurmCommandError(f"scontrol {name} failed")

    def resize(self, changes: Sequence[Resize]) -> None:
        self._call("resize", [c.line() for c in changes])

    def restore(self, changes: Sequence[Resize]) -> None:
        self._call("restore", [c.line() for c in changes])

    def set_admin_comment(self, job_ids: Sequence[int], text: str) -> None:
        self._call("comment", (tuple(job_ids), text))

    def release(self, job_ids: Sequence[int]) -> None:
        self._call("release", tuple(job_ids))

    def jobs(self) -> list[JobRecord]:
        return list(self.queue)


def nothing(_: str) -> Any:
    import contextlib  # noqa: PLC0415

    return contextlib.nullcontext()


def outcomes(count: int) -> list[Any]:
    d = decider(FakeStore({"lulesh": lu_record()}))
    return [d.decide(job(j), idle) for j in range(1, count + 1)]


def test_a_batch_costs_three_commands(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    applier = Applier(slurm, Journal(tmp_path / "j.json"), nothing)  # type: ignore[arg-type]
    batch = outcomes(5)
    applied = applier.apply(batch)
    assert [a.status for a in applied] == [RELEASED] * 5
    calls = dict(slurm.calls)
    # The resize and the comment run side by side (either first), the release after both.
    assert sorted(name for name, _ in slurm.calls[:2]) == ["comment", "resize"]
    assert slurm.calls[2][0] == "release"
    assert len(calls["resize"]) == 5
    assert calls["release"] == (1, 2, 3, 4, 5)
    assert (tmp_path / "j.json").exists()  # until the batch is recorded
    applier.commit()
    assert not (tmp_path / "j.json").exists()


def test_a_refused_resize_is_undone_and_the_job_released_as_submitted(tmp_path: Path) -> None:
    batch = outcomes(2)
    taken = batch[0].resize
    assert taken is not None
    # Job 1 took its size; job 2 got its time limit but not its size; job 3 is not ours.
    queue = [
        job(
            1,
            nodes_min=taken.min_nodes,
            nodes_max=taken.max_nodes,
            time_limit_min=taken.time_limit_min,
        ),
        job(2, time_limit_min=7),
    ]
    slurm = FakeSlurm(queue, fail=["resize"])
    applied = Applier(slurm, Journal(tmp_path / "j"), nothing).apply(batch)  # type: ignore[arg-type]
    first, second = applied
    assert first.outcome.action == "resize"
    assert second.outcome.fail_open == reasons.SLURM_ERROR
    # Put back as the daemon's own account (`restore`): a sizing user may not raise the
    # time limit back (plugin/slurm/enforcement.py).
    assert [c for c in slurm.calls if c[0] in ("resize", "restore")][1:] == [
        ("restore", ["update JobId=2 NumNodes=2-8 TimeLimit=60"])
    ]
    # The comment written beside the failed resize is replaced by the release's own.
    assert ("comment", ((2,), second.outcome.admin_comment)) in slurm.calls
    assert slurm.calls[-1] == ("release", (1, 2))
    assert second.status == RELEASED


def test_jobs_cancelled_meanwhile_are_gone_and_a_failed_release_is_retried(tmp_path: Path) -> None:
    batch = outcomes(3)
    still_held = job(2, admin_comment=batch[1].admin_comment)
    slurm = FakeSlurm([still_held], fail=["release"])
    applied = Applier(slurm, Journal(tmp_path / "j"), nothing).apply(batch)  # type: ignore[arg-type]
    statuses = {a.outcome.job_id: a.status for a in applied}
    assert statuses == {1: GONE, 2: RELEASED, 3: GONE}
    assert slurm.calls[-1] == ("release", (2,))


def test_the_journal_gives_back_the_decision_to_finish(tmp_path: Path) -> None:
    outcome = outcomes(1)[0]
    journal = Journal(tmp_path / "inflight.json")
    journal.write({outcome.job_id: journal_entry(outcome)})
    entry = journal.load()[outcome.job_id]
    pinned = dataclasses.replace(outcome.job, nodes_min=4, nodes_max=4)  # resized, then crash
    again = outcome_from_journal(pinned, entry)
    assert again is not None
    assert again.recovered
    assert again.resize == outcome.resize
    assert again.admin_comment == outcome.admin_comment
    assert (again.job.nodes_min, again.job.nodes_max) == (2, 8)
    other = dataclasses.replace(pinned, submit_time=NOW + 999)  # a reused job id
    assert outcome_from_journal(other, entry) is None


def test_the_record_once_guard_key() -> None:
    assert keys.decided(123, 1700000000) == "adaptalloc:v2:{global}:decided:123-1700000000"
    with pytest.raises(ValueError, match="job_id"):
        keys.decided(-1, 0)


# --- the state directory ------------------------------------------------------------------------


def test_heartbeat_lock_and_spool(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    state.prepare()
    state.lock()
    try:
        with pytest.raises(DaemonLockedError, match="another adaptalloc daemon"):
            StateDir(tmp_path / "state").lock()
        state.beat(now=1234.9)
        assert state.heartbeat.read_text() == "1234\n"
        assert state.heartbeat.stat().st_mode & 0o777 == 0o644
        watcher = SpoolWatcher(state.spool)
        assert not watcher.woken()
        with open(state.spool, "a") as spool:
            spool.write("held 1 0\n")
        assert watcher.woken()
        assert not watcher.woken()
        state.stop_beating()
        assert not state.heartbeat.exists()
    finally:
        state.unlock()
    StateDir(tmp_path / "state").lock()  # free again


# --- whose runs size whose jobs (plugin/appkey.py) ---------------------------------------


def one_node_record() -> CurveRecord:
    """A curve one user could craft from runs of their own: barely faster on more nodes."""
    n = [1, 2, 4, 8]
    fit = predictor.fit(n, [100.0, 95.0, 93.0, 92.0])
    return CurveRecord(predictor.Curve.from_fit(fit), 1, 1, None, 4, "adept", True)


def test_one_users_runs_never_size_another_users_job() -> None:
    # mallory's own curve of "lulesh" says the range's least, 2 nodes; the site's (an admin's
    # import) says more.
    store = FakeStore({"mallory/lulesh": one_node_record(), "lulesh": lu_record()})
    d = decider(store)
    hers = d.decide(job(1, user="mallory"), idle)
    ann = d.decide(job(2, user="ann"), idle)
    assert hers.resize is not None
    assert ann.resize is not None
    assert hers.resize.min_nodes == 2  # her own runs decide her own jobs
    assert ann.resize.min_nodes > 2  # ...and nobody else's
    assert (ann.app, ann.curve_app) == (AppKey("lulesh", owner="ann"), AppKey("lulesh"))
    assert "the curve is the site's lulesh" in ann.reason
    assert hers.curve_app is None
    # A tag names the application, not whose runs: mallory's tag on ann's job changes nothing.
    tagged = d.decide(job(3, user="ann", comment="adaptalloc:v1 app=lulesh"), idle)
    assert tagged.resize is not None
    assert tagged.resize.min_nodes == ann.resize.min_nodes


def test_a_users_own_usable_curve_comes_before_the_sites_and_an_unusable_one_after() -> None:
    own = lu_record()
    assert own.curve is not None
    unusable = dataclasses.replace(own, curve=dataclasses.replace(own.curve, fit_error=0.5))
    d = decider(FakeStore({"ann/lulesh": own, "lulesh": one_node_record()}))
    first = d.decide(job(1), idle)
    assert first.curve_app is None
    assert first.resize is not None
    assert first.resize.min_nodes > 2
    d = decider(FakeStore({"ann/lulesh": unusable, "lulesh": lu_record()}))
    fallen = d.decide(job(2), idle)
    assert fallen.curve_app == AppKey("lulesh")
    assert fallen.rule != "fallback"
    d = decider(FakeStore({"ann/lulesh": unusable}))  # no site curve: her own says why not
    kept = d.decide(job(3), idle)
    assert kept.rule == "fallback"
    assert "fitting error" in kept.reason
