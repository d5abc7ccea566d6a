"""Live accuracy's store against the real redis-server (scratch db 15, flushed around each
test): the daemon's decision record is found through its once-guard, a finished job is scored
once however often the learner reads it, and the scores read back newest first, by app and
by end time. Decision records are written exactly as the daemon writes them
(plugin/daemon/record.py's DecisionRecorder); the advise-mode ones carry ``"mode": "advise"``
as advise mode writes them.

test_store_cluster.py runs these tests again on a Redis Cluster (the decision and score keys
all sit in the global slot), which is why they reach the scratch database through
``testbed.scratch_url`` at call time."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import predictor
from plugin.daemon.record import DecisionRecorder
from plugin.learning.scoring import Scorer
from plugin.slurm import JobRecord
from plugin.store import keys
from plugin.store.connection import connect
from plugin.store.decisions import DecisionRecord
from plugin.store.score_stream import ScoreStore
from plugin.store.scores import Score

from . import testbed

pytestmark = pytest.mark.integration

SUBMIT = 1_700_000_000
CENSORED = ("TIMEOUT", "PREEMPTED")


def curve() -> predictor.Curve:
    n = [1, 2, 4, 8, 16, 32]
    t = [100.0 / s for s in (1.0, 1.97, 3.83, 7.24, 13.07, 20.77)]
    return predictor.Curve.from_fit(predictor.fit(n, t))


def record(job_id: int, **fields: Any) -> DecisionRecord:
    base = DecisionRecord(
        job_id=job_id,
        app="lu",
        partition="batch",
        min_nodes=2,
        max_nodes=16,
        action="resize",
        nodes=4,
        nodes_upto=4,
        rule="efficiency",
        curve_version=2,
        submit_time=SUBMIT + job_id,
        curve_doc=curve().to_dict(),
    )
    return replace(base, **fields)


def finished(job_id: int, **fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "job_id": job_id,
        "name": "lu",
        "user": "ann",
        "account": "phys",
        "partition": "batch",
        "state": "COMPLETED",
        "source": "sacct",
        "exit_code": 0,
        "nodes_alloc": 4,
        "submit_time": SUBMIT + job_id,
        "end_time": SUBMIT + job_id + 600,
        "elapsed_s": 30,
    }
    base.update(fields)
    return JobRecord(**base)


def write(records: list[DecisionRecord], modes: dict[int, str] | None = None) -> None:
    """Record decisions through the daemon's own recorder (the once-guard and the stream)."""
    recorder = DecisionRecorder(lambda: connect(testbed.scratch_url()))
    docs = [{**r.to_dict(), **({"mode": modes[r.job_id]} if modes and r.job_id in modes else {})}
            for r in records]  # fmt: skip
    assert recorder.record(records, docs) == len(records)


def test_a_finished_job_is_scored_once_against_its_decision(redis_client: Any) -> None:
    write([record(1), record(2, curve_app="lu", app="ann/lu"), record(3)], modes={3: "advise"})
    guard = redis_client.get(keys.decided(1, SUBMIT + 1))
    assert "-" in guard  # the guard holds the record's entry id
    assert redis_client.xrange(keys.DECISIONS, min=guard, max=guard)[0][1]["job_id"] == "1"

    scores = ScoreStore(connect(testbed.scratch_url()))
    scorer = Scorer(scores, CENSORED)
    jobs = [
        finished(1),
        finished(2, nodes_alloc=8, elapsed_s=20),
        finished(3, nodes_alloc=16),
        finished(4),  # never decided by the daemon
        finished(5, state="FAILED", exit_code=1),  # not a finished run: not even looked up
    ]
    first = scorer.score(jobs)
    assert sorted(s.job_id for s in first.scores) == [1, 2, 3]
    assert first.skipped == {"no_decision": 1}
    by_job = {s.job_id: s for s in first.scores}
    lu = curve()
    assert by_job[1].predicted_s == pytest.approx(float(lu.runtime(4.0)))
    assert by_job[2].predicted_s == pytest.approx(float(lu.runtime(8.0)))
    assert (by_job[2].app, by_job[2].job_app) == ("lu", "ann/lu")  # filed under the deciding key
    assert by_job[3].mode == "advise"
    assert by_job[1].mode == "enforce"

    # The learner re-reads the same window: nothing is scored twice.
    again = scorer.score(jobs)
    assert again.scores == ()
    assert again.skipped == {"scored_before": 3, "no_decision": 1}
    stored = scores.read()
    assert sorted(s.job_id for s in stored) == [1, 2, 3]
    assert [s.job_id for s in stored] == [3, 2, 1]  # newest scored first
    assert {s.job_id: s for s in stored} == by_job  # what was stored reads back as it was


def test_scores_read_by_app_and_by_end_time(redis_client: Any) -> None:
    store = ScoreStore(connect(testbed.scratch_url()))
    made = [
        Score("lu", k, SUBMIT, SUBMIT + 100.0 * k, 4, 10.0, 10.0, 8.0, 12.0) for k in range(1, 2500)
    ] + [Score("cg", 9999, SUBMIT, SUBMIT + 50.0, 2, 5.0, 5.0, 4.0, 6.0)]
    assert all(store.add(made))
    assert not any(store.add(made[:10]))  # each job once
    assert len(store.read()) == 2500  # read across pages of the stream
    assert [s.job_id for s in store.read(app="cg")] == [9999]
    recent = store.read(since=SUBMIT + 100.0 * 2000)
    assert sorted(s.job_id for s in recent) == list(range(2000, 2500))
    assert len(store.read(count=7)) == 7
    redis_client.xadd(keys.SCORES, {"app": "lu", "job_id": "1", "doc": "{not json"})
    assert len(store.read(app="lu")) == 2499
    assert store.skipped == 1


def test_a_decision_before_guards_held_entry_ids_is_not_scored(redis_client: Any) -> None:
    """An upgrade: guards written by an older daemon hold "1"; their jobs are not scored
    (nothing to join on), nothing fails."""
    redis_client.set(keys.decided(7, SUBMIT + 7), "1", ex=3600)
    result = Scorer(ScoreStore(connect(testbed.scratch_url())), CENSORED).score([finished(7)])
    assert result.scores == ()
    assert result.skipped == {"no_decision": 1}


def test_a_timed_out_run_is_scored_as_a_lower_bound(redis_client: Any) -> None:
    write([record(11), record(12)])
    lu = curve()
    _, upper = lu.runtime_interval(4.0)
    beyond = int(float(upper[0])) + 5
    result = Scorer(ScoreStore(connect(testbed.scratch_url())), CENSORED).score(
        [
            finished(11, state="TIMEOUT", elapsed_s=beyond),
            finished(12, state="TIMEOUT", elapsed_s=5),
        ]
    )
    by_job = {s.job_id: s for s in result.scores}
    assert by_job[11].censored
    assert by_job[11].where == "above"
    assert by_job[12].censored
    assert by_job[12].where == "unknown"
    assert by_job[11].error is None
