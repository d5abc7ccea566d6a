"""The curve store against the real redis-server (scratch db 15, flushed around each test).

Exact key names, dedup by job id, retention, the compare-and-set of curves, two writers at
once, crashes between and inside writes, forget, decisions, and Redis going away.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis

import predictor
from plugin.appkey import AppKey, AppKeyError
from plugin.config import RedisConfig
from plugin.learning.learner import refit_app
from plugin.store import keys
from plugin.store.connection import StoreError, StoreUnavailable, connect
from plugin.store.curves import CLAIM_KEYS, CurveStore, Observation, Retention
from plugin.store.decisions import DecisionRecord

from .testbed import PROJECT_ROOT, PrivateRedis, adaptalloc, scratch_url

pytestmark = pytest.mark.integration

LULESH = AppKey("lulesh", "large")
NOW = 1_800_000_000.0
#: A Downey-like strong-scaling curve: runtimes at 1..32 nodes.
SIZES = (1, 2, 4, 8, 16, 32)


def runtime(n: int) -> float:
    return 1000.0 * (0.05 + 0.95 / n) if n <= 16 else 1000.0 * (0.05 + 0.95 / 16)


def runs(
    app: AppKey, first_id: int, sizes: tuple[int, ...] = SIZES, end: float = NOW
) -> list[Observation]:
    return [
        Observation(str(first_id + i), app, n, runtime(n), end - len(sizes) + i)
        for i, n in enumerate(sizes)
    ]


class Clock:
    """A settable clock for the store and the learner."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(redis_client: Any, clock: Clock) -> CurveStore:
    return CurveStore(redis_client, Retention(max_observations=50, max_age_s=None), clock=clock)


# --- schema -----------------------------------------------------------------------------------


def test_exact_keys_after_a_full_cycle(store: CurveStore, redis_client: Any) -> None:
    assert store.add_observations(LULESH, runs(LULESH, 100)) == len(SIZES)
    assert refit_app(store, LULESH).status == "written"
    store.record_decision(DecisionRecord(job_id=7, app="lulesh@large", nodes=8))
    store.advance_watermark("sacct", NOW)
    store.save_checkpoint("sacct-1-2", 2.0, {"added": 1})
    assert set(redis_client.keys("*")) == {
        "adaptalloc:v2:{global}:apps",
        "adaptalloc:v2:{global}:dirty",
        "adaptalloc:v2:{global}:jobs",
        "adaptalloc:v2:{global}:decisions",
        "adaptalloc:v2:app:{lulesh@large}:obs",
        "adaptalloc:v2:app:{lulesh@large}:runs",
        "adaptalloc:v2:app:{lulesh@large}:state",
        "adaptalloc:v2:app:{lulesh@large}:curve",
        "adaptalloc:v2:{global}:learner:sacct",
        "adaptalloc:v2:{global}:import:sacct-1-2",
    } - {"adaptalloc:v2:{global}:dirty"}  # refitted: the dirty set is empty, so Redis dropped it
    assert redis_client.type("adaptalloc:v2:app:{lulesh@large}:obs") == "hash"
    assert redis_client.type("adaptalloc:v2:{global}:decisions") == "stream"
    assert redis_client.hget("adaptalloc:v2:{global}:jobs", "100") == "lulesh@large"


def test_the_curve_reads_back_as_a_predictor_curve(store: CurveStore) -> None:
    store.add_observations(LULESH, runs(LULESH, 100))
    assert store.curve(LULESH) is None
    outcome = refit_app(store, LULESH)
    assert (outcome.status, outcome.version, outcome.n_observations) == ("written", 1, 6)
    curve = store.curve("lulesh@large")
    assert isinstance(curve, predictor.Curve)
    assert curve.observed_n == SIZES
    record = store.curve_record(LULESH)
    assert record is not None
    assert (record.version, record.obs_version, record.n_observations) == (1, 1, 6)
    assert (record.method, record.fitted_at) == ("adept", NOW)
    assert record.reliable == curve.reliable
    assert store.check(LULESH) == []


def test_a_curve_with_a_speaker_and_one_stored_before_speakers_both_read_back(
    store: CurveStore, redis_client: Any
) -> None:
    """Curve format 2 carries the model that speaks where the runs accelerate (two processes
    slower than one, then linear); a format-1 document, written before it, still reads (as a
    curve without one) through the real store."""
    app = AppKey("dambreak", "large")
    dam = [(1, 180.844), (2, 214.189), (4, 107.536)]
    store.add_observations(
        app, [Observation(str(500 + i), app, n, t, NOW - 3 + i) for i, (n, t) in enumerate(dam)]
    )
    assert refit_app(store, app).status == "written"
    curve = store.curve(app)
    assert curve is not None
    assert curve.speaker is not None
    assert curve.speaker.reason == "accelerating"
    assert curve.runtime([8])[0] == pytest.approx(0.883 + 426.6 / 8, rel=1e-3)
    name = keys.app_curve(app)
    old = json.loads(redis_client.hget(name, "curve"))
    old["format"] = 1
    del old["speaker"]
    redis_client.hset(name, "curve", json.dumps(old))
    before = store.curve(app)
    assert before is not None
    assert before.speaker is None
    lower, upper = before.runtime_interval([8.0])
    assert lower[0] < before.runtime([8.0])[0] < upper[0]


# --- observations -----------------------------------------------------------------------------


def test_a_job_counts_once_across_calls_and_apps(store: CurveStore) -> None:
    first = runs(LULESH, 100)
    assert store.add_observations(LULESH, first) == 6
    assert store.add_observations(LULESH, first) == 0
    other = AppKey("hpl")
    same_jobs = [Observation(o.job_id, other, o.nodes, o.runtime_s, o.end_time) for o in first]
    result = store.add_batch({other: same_jobs, LULESH: runs(LULESH, 200)})
    assert (result.added, result.duplicates) == (6, 6)
    assert len(store.observations(LULESH)) == 12
    assert store.summary(other) is None  # nothing was added: no app appeared
    assert store.check(LULESH) == []


def test_retention_keeps_the_newest_and_forgets_the_old(redis_client: Any, clock: Clock) -> None:
    store = CurveStore(redis_client, Retention(max_observations=4, max_age_s=1000.0), clock=clock)
    assert store.add_observations(LULESH, runs(LULESH, 100)) == 4  # 6 offered, 4 newest kept
    kept = [o.job_id for o in store.observations(LULESH)]
    assert kept == ["102", "103", "104", "105"]
    assert store.add_observations(LULESH, runs(LULESH, 100)[:2]) == 0  # trimmed ones stay out
    old = runs(LULESH, 300, end=NOW - 5000)
    assert store.add_observations(LULESH, old) == 0  # older than max_age
    clock.now = NOW + 2000
    assert store.age_out([LULESH]) == 4
    assert store.observations(LULESH) == []
    assert store.check(LULESH) == []
    assert redis_client.hlen("adaptalloc:v2:{global}:jobs") == 0


def test_a_rebuilt_application_is_relearned(redis_client: Any, clock: Clock) -> None:
    store = CurveStore(redis_client, Retention(max_observations=6, max_age_s=None), clock=clock)
    store.add_observations(LULESH, runs(LULESH, 100))
    refit_app(store, LULESH)
    old_t1 = store.curve(LULESH).t1  # type: ignore[union-attr]
    rebuilt = [
        Observation(str(500 + i), LULESH, n, runtime(n) / 2, NOW + 10 + i)
        for i, n in enumerate(SIZES)
    ]
    store.add_observations(LULESH, rebuilt)
    assert {o.job_id for o in store.observations(LULESH)} == {str(500 + i) for i in range(6)}
    assert store.dirty_apps() == [LULESH]
    refit_app(store, LULESH)
    assert store.curve(LULESH).t1 == pytest.approx(old_t1 / 2, rel=0.05)  # type: ignore[union-attr]


def test_a_bad_argument_to_the_script_writes_nothing(store: CurveStore, redis_client: Any) -> None:
    """Redis does not roll back a failing script: the script checks every argument first."""
    script = redis_client.register_script(
        (PROJECT_ROOT / "plugin" / "store" / "lua" / "add_observations.lua").read_text(
            encoding="utf-8"
        )
    )
    argv = [NOW, 50, "-inf", "1", NOW, '{"n":1}', "2", "not-a-time", '{"n":2}']
    with pytest.raises(redis.ResponseError, match="bad observation"):
        script(
            keys=[
                keys.app_observations(LULESH),
                keys.app_runs(LULESH),
                keys.app_state(LULESH),
                keys.app_forgotten(LULESH),
                keys.app_curve(LULESH),
            ],
            args=argv,
        )
    assert redis_client.keys("*") == []


# --- refits: compare-and-set ------------------------------------------------------------------


def test_a_fit_from_older_observations_never_replaces_a_newer_one(store: CurveStore) -> None:
    store.add_observations(LULESH, runs(LULESH, 100, sizes=(1, 2, 4)))
    stale = store.refit_input(LULESH)
    assert stale is not None
    store.add_observations(LULESH, runs(LULESH, 200, sizes=(8, 16, 32)))
    assert refit_app(store, LULESH).status == "written"
    newer = store.curve_record(LULESH)
    curve = predictor.Curve.from_fit(
        predictor.fit(
            [o.nodes for o in stale.observations], [o.runtime_s for o in stale.observations]
        )
    )
    late = store.save_curve(LULESH, curve, stale.obs_version, n_observations=3, method="adept")
    assert (late.status, late.version) == ("stale", 1)
    assert store.curve_record(LULESH) == newer
    assert store.dirty_apps() == []


def test_new_runs_during_a_fit_keep_the_app_dirty(store: CurveStore) -> None:
    store.add_observations(LULESH, runs(LULESH, 100, sizes=(1, 2, 4)))

    def fit_while_runs_arrive(obs: predictor.Observations, method: str) -> predictor.Fit:
        store.add_observations(LULESH, runs(LULESH, 200, sizes=(8, 16)))
        return predictor.fit_observations(obs, method=method)

    first = refit_app(store, LULESH, fit=fit_while_runs_arrive)
    assert (first.status, first.n_observations) == ("written", 3)
    assert store.dirty_apps() == [LULESH]  # the curve is already behind
    second = refit_app(store, LULESH)
    assert (second.status, second.version, second.n_observations) == ("written", 2, 5)
    assert store.dirty_apps() == []


def test_runs_at_one_size_store_no_curve_with_the_reason(store: CurveStore) -> None:
    store.add_observations(LULESH, runs(LULESH, 100, sizes=(4, 4, 4)))
    outcome = refit_app(store, LULESH)
    assert outcome.status == "no_curve"
    assert "two or more distinct sizes" in outcome.note
    record = store.curve_record(LULESH)
    assert record is not None
    assert record.curve is None
    assert store.curve(LULESH) is None
    assert store.dirty_apps() == []


def test_two_writers_at_once_stay_consistent(redis_client: Any) -> None:
    """Two learners add runs and refit the same apps concurrently, each on its own client."""
    apps = [AppKey(f"app{k}") for k in range(4)]
    url = scratch_url()
    errors: list[BaseException] = []

    def learner(offset: int) -> None:
        try:
            own = CurveStore(connect(url), Retention(max_observations=1000, max_age_s=None))
            for round_ in range(6):
                for app in apps:
                    batch = runs(app, 10_000 * round_ + 100 * apps.index(app), end=NOW + round_)
                    own.add_observations(app, batch)
                    refit_app(own, app)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=learner, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == []
    store = CurveStore(redis_client)
    for app in apps:
        assert len(store.observations(app)) == 6 * len(SIZES)  # each job once, by either
        assert store.check(app) == []
        refit_app(store, app)
        record = store.curve_record(app)
        assert record is not None
        assert record.obs_version == int(redis_client.hget(keys.app_state(app), "obs_version"))
        assert store.dirty_apps() == []


# --- crashes ----------------------------------------------------------------------------------


def test_a_failure_between_read_and_write_leaves_the_store_as_it_was(
    store: CurveStore, redis_client: Any
) -> None:
    store.add_observations(LULESH, runs(LULESH, 100))
    refit_app(store, LULESH)
    before = redis_client.hgetall(keys.app_curve(LULESH))
    store.add_observations(LULESH, runs(LULESH, 200))

    def crash(obs: predictor.Observations, method: str) -> predictor.Fit:
        raise RuntimeError("the learner died here")

    with pytest.raises(RuntimeError):
        refit_app(store, LULESH, fit=crash)
    assert redis_client.hgetall(keys.app_curve(LULESH)) == before
    assert store.dirty_apps() == [LULESH]
    assert store.check(LULESH) == []
    assert refit_app(store, LULESH).status == "written"


KILLED_REFIT = """
import sys, time
import predictor
from plugin.appkey import AppKey
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

def slow_fit(obs, method):
    print("fitting", flush=True)
    time.sleep(120)
    return predictor.fit_observations(obs, method=method)

store = CurveStore(connect(sys.argv[1]))
refit_app(store, AppKey("lulesh", "large"), fit=slow_fit)
"""


def test_killing_a_learner_mid_refit_leaves_a_consistent_store(
    store: CurveStore, redis_client: Any
) -> None:
    store.add_observations(LULESH, runs(LULESH, 100))
    refit_app(store, LULESH)
    before = redis_client.hgetall(keys.app_curve(LULESH))
    store.add_observations(LULESH, runs(LULESH, 200))
    proc = subprocess.Popen(  # noqa: S603 - our interpreter and our code
        [sys.executable, "-c", KILLED_REFIT, scratch_url()],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "fitting"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert redis_client.hgetall(keys.app_curve(LULESH)) == before
    assert store.check(LULESH) == []
    assert store.dirty_apps() == [LULESH]
    assert refit_app(store, LULESH).status == "written"
    assert store.check(LULESH) == []


# --- forget -----------------------------------------------------------------------------------


def test_forget_removes_everything_of_the_app(store: CurveStore, redis_client: Any) -> None:
    other = AppKey("hpl")
    store.add_observations(LULESH, runs(LULESH, 100))
    store.add_observations(other, runs(other, 200))
    refit_app(store, LULESH)
    snapshot = store.refit_input(LULESH)
    store.record_decision(DecisionRecord(job_id=8, app=str(LULESH), nodes=4))
    store.record_limit_raise(LULESH, {"job_id": 9}, growth=1.25, cap=4.0)
    store.add_censored({LULESH: runs(LULESH, 300)[:1]})
    assert store.limit_safety(LULESH) == 1.25
    assert store.forget("lulesh@large") is True
    # Only the tombstone is left, and it expires.
    assert [k for k in redis_client.keys("*") if "lulesh" in k] == [keys.app_forgotten(LULESH)]
    assert 0 < redis_client.ttl(keys.app_forgotten(LULESH)) <= 24 * 3600
    assert redis_client.hkeys(keys.JOBS) == [str(200 + i) for i in range(6)]
    assert [s.app for s in store.apps()] == [other]
    assert store.forget(LULESH) is False
    # a refit that was in flight when the app was forgotten does not bring it back
    assert snapshot is not None
    late = store.save_curve(LULESH, None, snapshot.obs_version, n_observations=0, method="adept")
    assert late.status == "forgotten"
    assert redis_client.exists(keys.app_curve(LULESH)) == 0
    assert len(store.decisions(LULESH)) == 1  # the decision log is kept
    assert store.limit_safety(LULESH) == 1.0  # a rebuilt app starts with no guard history
    assert store.censored_runs(LULESH) == []


def test_a_forgotten_app_learns_new_runs_but_not_its_old_ones_again(
    store: CurveStore, clock: Clock
) -> None:
    """The learner re-reads a window of finished jobs: the runs from before `forget` must not
    bring the app back, the runs of the rebuilt application must count."""
    store.add_observations(LULESH, runs(LULESH, 100))
    assert store.forget(LULESH) is True
    assert store.add_observations(LULESH, runs(LULESH, 100)) == 0
    assert store.apps() == []
    clock.now = NOW + 3600
    assert store.add_observations(LULESH, runs(LULESH, 300, end=NOW + 3600)) == len(SIZES)
    assert [s.app for s in store.apps()] == [LULESH]


# --- decisions --------------------------------------------------------------------------------


def test_decisions_are_capped_and_filtered_by_app(redis_client: Any) -> None:
    store = CurveStore(redis_client, decisions_maxlen=100)
    for k in range(1000):
        store.record_decision(DecisionRecord(job_id=k, app="lulesh@large" if k % 2 else "hpl"))
    length = redis_client.xlen(keys.DECISIONS)
    assert 100 <= length < 1000  # MAXLEN ~ trims whole stream nodes
    newest = store.decisions(LULESH, 3)
    assert [d.record.job_id for d in newest] == [999, 997, 995]
    assert [d.record.job_id for d in store.decisions(None, 2)] == [999, 998]
    with pytest.raises(AppKeyError):
        store.record_decision(DecisionRecord(job_id=1, app="evil:*"))
    with pytest.raises(StoreError, match="larger than"):
        store.record_decision(DecisionRecord(job_id=1, app="hpl", reason="x" * 70_000))


def test_decisions_stored_before_records_had_a_version_are_read(
    store: CurveStore, redis_client: Any
) -> None:
    """An upgrade loses nothing: an entry exactly as the unversioned daemon wrote it (stream
    fields app, job_id, doc; the doc's keys those of its decision_doc) reads back whole,
    while an entry of an unknown version is skipped and counted."""
    old = {
        "job_id": 4711, "app": "lulesh@large", "user": "alice", "account": "physics",
        "partition": "batch", "min_nodes": 2, "max_nodes": 8, "time_limit_min": 60,
        "action": "resize", "nodes": 4, "nodes_upto": 4, "new_time_limit_min": 25,
        "rule": "efficiency", "reason": "up to 4 nodes", "time_limit_reason": "",
        "fail_open": None, "status": "released", "curve_version": 3, "curve_model": "downey",
        "idle_nodes": 8, "pending_nodes": 0, "total_nodes": 8, "policy": "",
        "budget": {}, "submit_time": 1700000000, "decided_at": 1700000123.456,
        "latency_s": 0.04, "recovered": False, "released_at": 1700000123.5,
    }  # fmt: skip
    fields = {"app": "lulesh@large", "job_id": "4711", "doc": json.dumps(old)}
    redis_client.xadd(keys.DECISIONS, fields)
    future = {**old, "job_id": 4712, "version": 2}
    redis_client.xadd(keys.DECISIONS, {**fields, "doc": json.dumps(future)})
    found = store.decisions(LULESH)
    assert [d.record.job_id for d in found] == [4711]
    back = found[0].record.to_dict()
    assert {k: back[k] for k in old} == old
    # Fields added since (placement) read back as absent, nothing else is new; an old
    # record is one the daemon enforced (advise mode came later).
    added = set(back) - set(old) - {"version"}
    assert added == {
        "tasks", "tasks_per_node", "scaling", "new_partition", "placement", "curve_app",
        "curve_doc", "mode",
    }  # fmt: skip
    assert back["mode"] == "enforce"
    assert all(back[k] is None for k in added - {"mode"})
    assert store.skipped["decision"] == 1


# --- hostile keys -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hostile", ["adaptalloc:v2:../..", "*", "a\nb", "x" * 10_000, "\x1b[31m", "lul\u0435sh"]
)
def test_hostile_app_keys_never_reach_redis(
    store: CurveStore, redis_client: Any, hostile: str
) -> None:
    for call in (store.curve, store.curve_record, store.forget, store.summary):
        with pytest.raises(AppKeyError):
            call(hostile)
    with pytest.raises(AppKeyError):
        store.decisions(hostile)
    assert redis_client.keys("*") == []


# --- Redis unreachable ------------------------------------------------------------------------


FAST_FAIL = RedisConfig(retries=1, backoff_base_s=0.01, backoff_cap_s=0.05, socket_timeout_s=1.0)


def test_unreachable_redis_raises_store_unavailable() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}.*unreachable"):
        connect(f"redis://127.0.0.1:{port}/0", FAST_FAIL)
    store = CurveStore(connect(f"redis://127.0.0.1:{port}/0", FAST_FAIL, check=False))
    with pytest.raises(StoreUnavailable, match="unreachable"):
        store.curve(LULESH)
    with pytest.raises(StoreUnavailable):
        store.add_observations(LULESH, runs(LULESH, 1))


def test_wrong_credentials_raise_store_unavailable(redis_client: Any) -> None:
    url = scratch_url()
    bad = url.replace("://:", "://:wrong", 1) if "://:" in url else url
    with pytest.raises(StoreUnavailable, match="refused our credentials") as info:
        connect(bad, FAST_FAIL)
    assert "wrong" not in str(info.value)  # the password is masked


def test_the_store_fails_clearly_while_redis_is_down_and_reconnects(
    private_redis: PrivateRedis,
) -> None:
    private_redis.start()
    store = CurveStore(connect(private_redis.url, FAST_FAIL))
    assert store.add_observations(LULESH, runs(LULESH, 100)) == 6
    private_redis.stop()
    # How long this takes is FAST_FAIL's timeouts' business; no wall-clock bound is asserted.
    with pytest.raises(StoreUnavailable, match="unreachable"):
        store.curve(LULESH)
    private_redis.start()  # empty again: no persistence
    assert store.curve(LULESH) is None  # the same client reconnected
    assert store.add_observations(LULESH, runs(LULESH, 100)) == 6


def test_the_guard_counts_safety_and_watches(store: CurveStore, redis_client: Any) -> None:
    assert store.guard_counts(LULESH) == {
        "limits_raised": 0,
        "killed_at_our_limit": 0,
        "censored_runs": 0,
        "limit_safety": 1.0,
    }
    assert store.limit_safety(LULESH) == 1.0
    doc = {"job_id": 12, "from_min": 3, "to_min": 10}
    assert store.record_limit_raise(LULESH, doc, 1.25, 1.5) == 1.25
    assert store.record_limit_raise(LULESH, doc, 1.25, 1.5) == 1.5  # capped
    assert store.record_limit_raise(None, doc, 1.25, 1.5) is None  # no app: only the stream
    store.count_for_guard(LULESH, "killed")
    store.count_for_guard(LULESH, "censored", 3)
    with pytest.raises(ValueError, match="guard count"):
        store.count_for_guard(LULESH, "raised")
    assert store.guard_counts(LULESH) == {
        "limits_raised": 2,
        "killed_at_our_limit": 1,
        "censored_runs": 3,
        "limit_safety": 1.5,
    }
    assert redis_client.xlen(keys.GUARD_RAISES) == 3
    assert redis_client.hget(keys.app_guard(LULESH), "safety") == "1.5"
    store.save_guard_watch(12, {"job_id": 12})
    assert store.guard_watches() == {"12": '{"job_id":12}'}
    store.drop_guard_watch(12)
    assert store.guard_watches() == {}
    redis_client.hset(keys.app_guard(LULESH), "safety", "nan")
    assert store.limit_safety(LULESH) == 1.0  # unreadable: no extra safety, never less


def test_censored_runs_are_kept_apart_and_never_fitted(store: CurveStore, clock: Clock) -> None:
    from plugin.appkey import AppKeyRule  # noqa: PLC0415
    from plugin.learning.learner import Ingestor  # noqa: PLC0415
    from plugin.slurm import JobRecord  # noqa: PLC0415

    def finished(job_id: int, state: str, nodes: int, elapsed: int) -> JobRecord:
        return JobRecord(
            job_id=job_id,
            name="lulesh",
            user="ann",
            account="phys",
            partition="batch",
            state=state,
            source="sacct",
            comment="adaptalloc:v1 size=large",
            nodes_alloc=nodes,
            elapsed_s=elapsed,
            end_time=int(clock()) - 60,
        )

    jobs = [
        finished(1, "COMPLETED", 4, 300),
        finished(2, "COMPLETED", 8, 160),
        finished(3, "TIMEOUT", 16, 600),
        finished(4, "PREEMPTED", 16, 50),
        finished(3, "TIMEOUT", 16, 600),  # read twice
    ]
    ingest = Ingestor(store, AppKeyRule(), 64, None, clock)
    stats = ingest.ingest(jobs)
    assert (stats.added, stats.censored) == (2, 2)
    assert ingest.ingest(jobs[2:4]).censored == 0  # a job counts once
    anns = LULESH.owned_by("ann")  # her runs, under her own key
    fitted = store.refit_input(anns)
    assert fitted is not None
    assert sorted(o.job_id for o in fitted.observations) == ["1", "2"]
    assert [(r.job_id, r.nodes, r.runtime_s, r.preempted) for r in store.censored_runs(anns)] == [
        ("3", 16, 600.0, False),
        ("4", 16, 50.0, True),
    ]
    assert store.guard_counts(anns)["censored_runs"] == 2


# --- placement: what observations carry, node types, sibling sizes -------------------------------


def test_optional_fields_are_stored_under_short_keys(store: CurveStore, redis_client: Any) -> None:
    app = AppKey("cg", "1000")
    run = Observation("41", app, 4, 12.0, NOW, size=1000.0, tasks=64, tasks_per_node=16)
    plain = Observation("42", app, 8, 7.0, NOW)
    store.add_observations(app, [run, plain])
    stored = redis_client.hgetall(keys.app_observations(app))
    assert json.loads(stored["41"]) == {
        "n": 4,
        "t": 12.0,
        "e": NOW,
        "s": "sacct",
        "z": 1000.0,
        "k": 64,
        "p": 16,
    }
    assert set(json.loads(stored["42"])) == {"n", "t", "e", "s"}
    assert store.observations(app) == [run, plain]


def test_an_app_on_two_node_types_gets_a_curve_per_type(
    store: CurveStore, redis_client: Any, tmp_path: Path
) -> None:
    app = AppKey("lulesh")
    fast = [replace(o, node_type="fast") for o in runs(app, 100)]
    slow = [
        replace(o, job_id=str(200 + i), node_type="slow", runtime_s=2.0 * o.runtime_s)
        for i, o in enumerate(runs(app, 100))
    ]
    store.add_observations(app, fast + slow)
    assert refit_app(store, app).status == "written"
    assert store.node_types(app) == ["fast", "slow"]
    on_fast, on_slow, overall = (store.curve(app, t) for t in ("fast", "slow", None))
    assert on_fast is not None
    assert on_slow is not None
    assert overall is not None
    assert on_slow.runtime(4)[()] == pytest.approx(2.0 * on_fast.runtime(4)[()], rel=0.05)
    assert on_fast.runtime(4)[()] < overall.runtime(4)[()] < on_slow.runtime(4)[()]
    assert store.load_curve(app, "fast") == on_fast  # the agreed name
    assert store.dirty_apps() == []  # the all-runs curve, saved last, clears the mark
    record = store.curve_record(app, "slow")
    assert record is not None
    assert record.n_observations == len(SIZES)
    assert redis_client.exists(keys.app_type_curve(app, "slow")) == 1
    shown = adaptalloc("app", "lulesh", "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    per_type = json.loads(shown.stdout)["node_type_curves"]
    assert sorted(per_type) == ["fast", "slow"]
    assert per_type["slow"]["n_observations"] == len(SIZES)
    # One node type only: no per-type curves.
    single = AppKey("hpl")
    store.add_observations(single, [replace(o, node_type="fast") for o in runs(single, 300)])
    refit_app(store, single)
    assert store.node_types(single) == []
    assert store.curve(single, "fast") is None
    assert store.curve(single) is not None
    # Once newer runs on one type have trimmed the others (50 kept), the per-type curves go.
    later = [
        replace(fast[i % len(fast)], job_id=str(1000 + i), end_time=NOW + 1 + i) for i in range(50)
    ]
    store.add_observations(app, later)
    refit_app(store, app)
    assert store.node_types(app) == []
    assert redis_client.exists(keys.app_type_curve(app, "slow")) == 0
    assert store.curve(app) is not None
    # forget takes the per-type curves with it
    assert store.forget(app) is True
    assert [k for k in redis_client.keys("*") if "{lulesh}" in k] == [keys.app_forgotten(app)]


def test_sibling_sizes_are_the_same_name_with_numeric_sizes(store: CurveStore) -> None:
    for key, first in ((AppKey("cg", "1000"), 100), (AppKey("cg", "4000"), 200)):
        store.add_observations(key, runs(key, first))
    store.add_observations(AppKey("cg", "large"), runs(AppKey("cg", "large"), 300))
    store.add_observations(AppKey("mg", "1000"), runs(AppKey("mg", "1000"), 400))
    store.add_observations(AppKey("cg"), runs(AppKey("cg"), 500))
    siblings = store.sibling_sizes(AppKey("cg", "2000"))
    assert sorted(str(k) for k in siblings) == ["cg@1000", "cg@4000"]
    assert all(len(v) == len(SIZES) for v in siblings.values())
    assert sorted(str(k) for k in store.sibling_sizes(AppKey("cg", "1000"))) == ["cg@4000"]


# --- the steps of an add (claim, write, index): a crash between them ------------------------


def test_a_crash_after_the_claim_loses_no_run(store: CurveStore) -> None:
    """Job ids claimed in the job index (step 1) but never written (a crash): the learner's
    next read of the same jobs writes them, as the app owns them already."""
    first = runs(LULESH, 100)
    store._claim(keys=CLAIM_KEYS, args=[str(LULESH), len(first), *(o.job_id for o in first)])
    assert store.observations(LULESH) == []
    assert store.add_observations(LULESH, first) == len(first)
    assert store.add_observations(AppKey("other"), runs(AppKey("other"), 100)) == 0  # once
    assert store.dirty_apps() == [LULESH]
    assert store.check(LULESH) == []


def test_a_crash_before_the_index_is_healed_by_the_next_read(
    store: CurveStore, clock: Clock
) -> None:
    """The app's keys written (step 2) but not the global indexes (a crash): the next add of
    the app, even of runs it has already, indexes it and marks it dirty."""
    first = runs(LULESH, 100)
    store._claim(keys=CLAIM_KEYS, args=[str(LULESH), len(first), *(o.job_id for o in first)])
    argv: list[Any] = [repr(NOW), 50, "-inf"]
    for o in first:
        argv.extend((o.job_id, repr(o.end_time), o.to_json()))
    app_keys = [
        keys.app_observations(LULESH), keys.app_runs(LULESH), keys.app_state(LULESH),
        keys.app_forgotten(LULESH), keys.app_curve(LULESH),
    ]  # fmt: skip
    assert store._add(keys=app_keys, args=argv)[0] == len(first)
    # Listed since the claim (claim_jobs.lua), so no key is outside the index meanwhile.
    assert [(s.app, s.last_run) for s in store.apps()] == [(LULESH, None)]
    assert store.check(LULESH) == []
    assert store.dirty_apps() == []
    assert store.add_observations(LULESH, first) == 0
    assert [s.app for s in store.apps()] == [LULESH]
    assert store.dirty_apps() == [LULESH]
    assert refit_app(store, LULESH).status == "written"
    assert store.dirty_apps() == []


def test_a_refit_cleared_after_newer_runs_were_indexed_keeps_them_dirty(
    store: CurveStore,
) -> None:
    """The interleaving the dirty mark's version exists for: a refit's save (save_curve.lua)
    finds its fit current, then new runs are written and indexed (steps 2 and 3: the mark is
    there already), then the save's clear_dirty.lua runs: it must leave the mark."""
    store.add_observations(LULESH, runs(LULESH, 100))
    snapshot = store.refit_input(LULESH)
    assert snapshot is not None
    status, _, fitted = store._save(
        keys=[keys.app_curve(LULESH), keys.app_state(LULESH), keys.app_node_types(LULESH)],
        args=[snapshot.obs_version, "", repr(NOW), 6, "adept", "0", "test", ""],
    )
    assert (status, fitted) == (1, snapshot.obs_version)
    assert store.add_observations(LULESH, runs(LULESH, 200, end=NOW + 60)) == len(SIZES)
    assert (
        store._clear_dirty(keys=[keys.DIRTY, keys.DIRTY_VERSION], args=[str(LULESH), fitted]) == 0
    )
    assert store.dirty_apps() == [LULESH]
    assert refit_app(store, LULESH).status == "written"
    assert store.dirty_apps() == []
