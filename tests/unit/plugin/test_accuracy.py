"""Live accuracy without Redis: a score's stored form, scoring a finished job against the
curve document in its decision record, and the figures over scores (coverage, error, bias,
windows, drift, what sizing would have bought)."""

from __future__ import annotations

import json
import math
from dataclasses import fields as dataclass_fields
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import predictor
from plugin.learning import accuracy
from plugin.learning.scoring import decided_partition, run_of, score_job
from plugin.slurm import JobRecord
from plugin.store.decisions import DecisionRecord
from plugin.store.scores import Score

NOW = 1_800_000_000.0
CENSORED = frozenset({"TIMEOUT", "PREEMPTED"})


def lu_curve() -> predictor.Curve:
    n = [1, 2, 4, 8, 16, 32]
    t = [100.0 / s for s in (1.0, 1.97, 3.83, 7.24, 13.07, 20.77)]
    return predictor.Curve.from_fit(predictor.fit(n, t))


def finished(**fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "job_id": 4711,
        "name": "lu",
        "user": "ann",
        "account": "phys",
        "partition": "batch",
        "state": "COMPLETED",
        "source": "sacct",
        "exit_code": 0,
        "nodes_alloc": 8,
        "submit_time": 1_700_000_000,
        "end_time": 1_700_000_600,
        "elapsed_s": 14,
    }
    base.update(fields)
    return JobRecord(**base)


def decision(curve: predictor.Curve | None = None, **fields: Any) -> dict[str, Any]:
    record = DecisionRecord(
        job_id=4711,
        app="ann/lu",
        partition="batch",
        min_nodes=2,
        max_nodes=16,
        action="resize",
        nodes=4,
        nodes_upto=4,
        rule="efficiency",
        curve_version=3,
        curve_app="lu",
        submit_time=1_700_000_000,
        curve_doc=(curve or lu_curve()).to_dict(),
    )
    # As the stream holds it: the JSON text the daemon wrote, read back. A field the record
    # does not have yet (mode, written by advise mode) goes into the document as it is.
    known = {f.name for f in dataclass_fields(DecisionRecord)}
    ours = {k: v for k, v in fields.items() if k in known}
    doc = json.loads(json.dumps(replace(record, **ours).to_dict()))
    return {**doc, **fields}


# --- scoring one job --------------------------------------------------------------------


def test_a_job_is_scored_against_the_snapshot_at_the_size_it_ran_on() -> None:
    curve = lu_curve()
    score = score_job(finished(), decision(curve), censored=False)
    assert isinstance(score, Score)
    at = np.array([8.0, 4.0])
    lower, upper = curve.runtime_interval(at)
    assert score.predicted_s == pytest.approx(float(curve.runtime(8.0)))
    assert (score.lower_s, score.upper_s) == pytest.approx((lower[0], upper[0]))
    # The decided size (Slurm ran it on 8 instead, as in advise mode) with its prediction.
    advised = score.advised()
    assert advised is not None
    assert advised[0] == 4
    assert advised[1:] == pytest.approx((float(curve.runtime(4.0)), lower[1], upper[1]))
    assert (score.app, score.job_app, score.mode, score.rule) == (
        "lu",
        "ann/lu",
        "enforce",
        "efficiency",
    )
    assert (score.runtime_s, score.nodes, score.curve_version) == (14.0, 8, 3)
    assert score.error == pytest.approx(abs(score.predicted_s - 14.0) / 14.0)


def test_the_snapshot_decides_not_a_later_curve() -> None:
    """A curve refitted after the decision changes nothing: the record's document scores."""
    old = lu_curve()
    doc = decision(old)
    slower = replace(old, t1=old.t1 * 3.0)
    assert score_job(finished(), doc, False) == score_job(finished(), doc, False)
    score = score_job(finished(), doc, False)
    assert isinstance(score, Score)
    assert score.predicted_s == pytest.approx(float(old.runtime(8.0)))
    assert score.predicted_s != pytest.approx(float(slower.runtime(8.0)))


def test_the_mode_is_read_from_the_record_and_missing_means_enforce() -> None:
    advise = score_job(finished(), decision(mode="advise"), False)
    assert isinstance(advise, Score)
    assert advise.mode == "advise"
    assert score_job(finished(), decision(mode="sometimes"), False) == "unreadable_record"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"curve_doc": None}, "not_sized_by_a_curve"),
        ({"nodes": None}, "not_sized_by_a_curve"),
        ({"new_partition": "gpu"}, "ran_elsewhere"),
        ({"curve_doc": {"format": 99}}, "unreadable_curve"),
        ({"job_id": "x"}, "unreadable_record"),
    ],
)
def test_a_record_that_cannot_score_says_why(fields: dict[str, Any], reason: str) -> None:
    assert score_job(finished(), decision(**fields), False) == reason


def test_the_partition_the_curve_was_decided_for() -> None:
    record = DecisionRecord(job_id=1, partition="a,b", new_partition="b")
    assert decided_partition(record) == "b"
    assert decided_partition(replace(record, new_partition=None)) is None
    assert decided_partition(replace(record, partition="a", new_partition=None)) == "a"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, False),
        ({"state": "TIMEOUT", "exit_code": 0}, True),
        ({"state": "PREEMPTED"}, True),
        ({"state": "FAILED", "exit_code": 1}, None),
        ({"exit_code": 3}, None),
        ({"exit_signal": 9}, None),
        ({"state": "CANCELLED"}, None),
        ({"elapsed_s": 0}, None),
        ({"nodes_alloc": 0}, None),
        ({"submit_time": None}, None),
        ({"end_time": None}, None),
    ],
)
def test_which_finished_jobs_can_be_scored(fields: dict[str, Any], expected: bool | None) -> None:
    assert run_of(finished(**fields), CENSORED) is expected


# --- the stored form ----------------------------------------------------------------------


def score(**fields: Any) -> Score:
    base: dict[str, Any] = {
        "app": "lu",
        "job_id": 1,
        "submit_time": 10,
        "end_time": NOW - 60,
        "nodes": 8,
        "runtime_s": 100.0,
        "predicted_s": 100.0,
        "lower_s": 80.0,
        "upper_s": 125.0,
    }
    base.update(fields)
    return Score(**base)


def test_a_score_round_trips_compactly() -> None:
    full = score(censored=True, curve_version=4, job_app="ann/lu", partition="batch",
                 advised_nodes=4, advised_s=180.0, advised_lower_s=150.0,
                 advised_upper_s=220.0, mode="advise", rule="pws")  # fmt: skip
    assert Score.from_json("lu", full.to_json()) == full
    plain = score()
    assert Score.from_json("lu", plain.to_json()) == plain
    assert len(plain.to_json()) < 140
    assert set(json.loads(plain.to_json())) == {"j", "s", "e", "n", "t", "p", "l", "h", "m", "r"}


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        "{}",
        '{"j":1,"s":1,"e":1,"n":0,"t":1,"p":1,"l":1,"h":1}',
        '{"j":1,"s":1,"e":1,"n":1,"t":-1,"p":1,"l":1,"h":1}',
        '{"j":1,"s":1,"e":1,"n":1,"t":1,"p":2,"l":1,"h":1.5}',
        '{"j":1,"s":1,"e":1,"n":1,"t":1,"p":1,"l":1,"h":1,"m":"maybe"}',
        '{"j":true,"s":1,"e":1,"n":1,"t":1,"p":1,"l":1,"h":1}',
        "not json",
    ],
)
def test_a_corrupt_score_is_refused(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - every refusal is a ValueError
        Score.from_json("lu", text)


@pytest.mark.parametrize(
    ("fields", "where", "error"),
    [
        ({"runtime_s": 100.0}, "inside", 0.0),
        ({"runtime_s": 130.0}, "above", 30.0 / 130.0),
        ({"runtime_s": 50.0}, "below", 1.0),
        ({"runtime_s": 130.0, "censored": True}, "above", None),
        ({"runtime_s": 90.0, "censored": True}, "unknown", None),
        ({"runtime_s": 50.0, "censored": True}, "unknown", None),
    ],
)
def test_where_a_run_falls_and_its_error(
    fields: dict[str, Any], where: str, error: float | None
) -> None:
    s = score(**fields)
    assert s.where == where
    assert s.error == (None if error is None else pytest.approx(error))


# --- the figures ---------------------------------------------------------------------------


def test_coverage_error_and_bias_by_hand() -> None:
    scores = [
        score(job_id=1, runtime_s=100.0),  # inside, error 0
        score(job_id=2, runtime_s=110.0),  # inside, 10/110
        score(job_id=3, runtime_s=200.0),  # above, 100/200
        score(job_id=4, runtime_s=50.0),  # below, 50/50
        score(job_id=5, runtime_s=300.0, censored=True),  # above, no error
        score(job_id=6, runtime_s=90.0, censored=True),  # unknown
    ]
    s = accuracy.summarize(scores)
    assert (s.jobs, s.censored, s.inside, s.above, s.below, s.unknown) == (6, 2, 2, 2, 1, 1)
    assert s.judged == 5
    assert s.coverage == pytest.approx(2 / 5)
    errors = [0.0, 10 / 110, 0.5, 1.0]
    assert s.error_median == pytest.approx(float(np.median(errors)))
    assert s.error_mean == pytest.approx(float(np.mean(errors)))
    assert s.error_p90 == pytest.approx(float(np.quantile(errors, 0.9)))
    assert s.bias == pytest.approx(math.exp(np.mean(np.log([1.0, 1.1, 2.0, 0.5]))) - 1.0)
    assert accuracy.summarize([]) == accuracy.Summary()
    only_censored = accuracy.summarize([scores[4]])
    assert (only_censored.coverage, only_censored.error_median) == (0.0, None)


def test_the_window_is_the_newest_jobs_of_the_last_days() -> None:
    scores = [score(job_id=k, end_time=NOW - k * 600.0) for k in range(1, 400)]
    latest, rest = accuracy.window(reversed(scores), NOW)
    assert [s.job_id for s in latest] == list(range(1, 201))  # newest first, 200 of them
    assert rest[0].job_id == 201
    hourly = [score(job_id=k, end_time=NOW - k * 3600.0) for k in range(1, 400)]
    week, older = accuracy.window(hourly, NOW)
    assert len(week) == 7 * 24  # an hour apart from 1 h ago: 168 ended within 7 days
    assert older[0].end_time < NOW - 7 * 86400.0


def _errors(start: int, count: int, relative: float, rng: np.random.Generator) -> list[Score]:
    """`count` scores whose actual runtimes miss 100 s by about `relative`."""
    jitter = rng.uniform(0.5, 1.5, count) * relative
    return [
        score(job_id=start + k, end_time=NOW - (start + k) * 60.0, runtime_s=100.0 * (1 + e))
        for k, e in enumerate(jitter)
    ]


def test_drift_needs_a_real_growth_of_the_error() -> None:
    rng = np.random.default_rng(7)
    grown = _errors(0, 200, 0.30, rng) + _errors(200, 200, 0.05, rng)
    d = accuracy.drift(grown, NOW)
    assert d.grew
    assert d.p_value is not None
    assert d.p_value < 1e-6
    assert d.latest.error_median == pytest.approx(0.3 / 1.3, rel=0.1)  # |T̂ - T| / T
    steady = _errors(0, 200, 0.10, rng) + _errors(200, 200, 0.10, rng)
    assert not accuracy.drift(steady, NOW).grew
    # Half again as large but still tiny (2% to 3.5%): below GROWTH_POINTS, no alarm.
    small = _errors(0, 200, 0.035, rng) + _errors(200, 200, 0.02, rng)
    assert not accuracy.drift(small, NOW).grew
    few = _errors(0, 20, 0.5, rng) + _errors(20, 200, 0.05, rng)
    assert accuracy.drift(few, NOW).p_value is None  # fewer than MIN_JOBS: no verdict


def test_gauges_keep_the_top_apps_only() -> None:
    scores = [
        score(app=f"app{k:02d}", job_id=1000 * k + j, end_time=NOW - j)
        for k in range(25)
        for j in range(k + 1)
    ]
    g = accuracy.gauges(scores, NOW, top=3)
    assert list(g.apps) == ["app24", "app23", "app22"]
    assert g.apps["app24"].jobs == 25
    assert g.fleet.jobs == len(scores)


def test_what_sizing_would_have_bought_by_hand() -> None:
    scores = [
        # advise: Slurm ran 8 nodes for 100 s; the curve said 4 nodes would take 150 s.
        score(
            job_id=1,
            mode="advise",
            nodes=8,
            runtime_s=100.0,
            predicted_s=90.0,
            lower_s=80.0,
            upper_s=110.0,
            advised_nodes=4,
            advised_s=150.0,
            advised_lower_s=120.0,
            advised_upper_s=200.0,
        ),
        score(
            job_id=2,
            mode="advise",
            nodes=4,
            runtime_s=160.0,
            predicted_s=150.0,
            lower_s=120.0,
            upper_s=200.0,
            advised_nodes=4,
        ),
        score(job_id=3, mode="advise", nodes=4, runtime_s=500.0, censored=True, advised_nodes=4),
        score(
            job_id=4,
            nodes=4,
            runtime_s=140.0,
            predicted_s=150.0,
            lower_s=120.0,
            upper_s=200.0,
            advised_nodes=4,
        ),
    ]
    got = accuracy.bought(scores)
    assert list(got) == ["enforce", "advise"]
    advise = got["advise"]
    assert (advise.jobs, advise.censored, advise.moved) == (2, 1, 1)
    assert advise.realized_node_hours == pytest.approx((8 * 100 + 4 * 160) / 3600)
    assert advise.realized_runtime_s == pytest.approx(130.0)
    assert advise.predicted_node_hours.estimate == pytest.approx((8 * 90 + 4 * 150) / 3600)
    a = advise.advised_node_hours
    assert (a.estimate, a.low, a.high) == pytest.approx(
        ((4 * 150 + 4 * 150) / 3600, (4 * 120 + 4 * 120) / 3600, (4 * 200 + 4 * 200) / 3600)
    )
    assert advise.advised_runtime_s.estimate == pytest.approx(150.0)
    saved = advise.saved_node_hours
    assert saved.estimate == pytest.approx(advise.realized_node_hours - a.estimate)
    assert saved.low == pytest.approx(advise.realized_node_hours - a.high)
    enforce = got["enforce"]
    assert enforce.advised_node_hours.estimate == pytest.approx(4 * 150 / 3600)
    assert enforce.realized_node_hours == pytest.approx(4 * 140 / 3600)


def test_scoring_that_fails_never_stops_the_learner() -> None:
    """Redis refusing the scorer's reads: the poll's scoring is empty, nothing is raised (the
    observations were stored before, and the next poll's overlap re-reads the jobs)."""
    import socket  # noqa: PLC0415 - this test alone needs a closed port

    from plugin.config import Config  # noqa: PLC0415
    from plugin.learning.learner import Learner  # noqa: PLC0415
    from plugin.learning.scoring import ScoringResult  # noqa: PLC0415
    from plugin.store.connection import connect  # noqa: PLC0415
    from plugin.store.curves import CurveStore  # noqa: PLC0415

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = CurveStore(connect(f"redis://127.0.0.1:{port}/0", check=False))
    learner = Learner(store, reader=None, config=Config())  # type: ignore[arg-type]
    assert learner.score([finished()]) == ScoringResult()
