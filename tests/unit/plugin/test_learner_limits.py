"""The user's own limit, from the daemon's record to the learner's observation: the record's
``limit=``/``for=`` words (plugin/daemon/marks.py, plugin/formats/daemon_record.py), the
learner's reading of a finished job (plugin/learning/learner.py `asked_limit`) and the stored
observation (plugin/store/curves.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import predictor
from plugin.appkey import AppKey
from plugin.daemon import marks
from plugin.formats.daemon_record import parse_record, users_limit
from plugin.learning import sharing
from plugin.learning.learner import _fit_runs, asked_limit
from plugin.slurm import JobRecord
from plugin.store.curves import Observation

from .runs_with_limits import RUNS, runs_with_limits

MIXED = AppKey("mixed")


def job(**fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "job_id": 4711,
        "name": "lu",
        "user": "ann",
        "account": "",
        "partition": "batch",
        "state": "COMPLETED",
        "source": "sacct",
        "exit_code": 0,
        "nodes_alloc": 8,
        "end_time": 1_700_000_600,
        "elapsed_s": 300,
        "time_limit_min": 20,
    }
    base.update(fields)
    return JobRecord(**base)


def test_the_records_carry_the_users_limit_and_read_back() -> None:
    sized = marks.sized_record(16, 4, 64, "load_adaptive", (120, 4))
    assert sized == "adaptalloc:v1:sized n=16 range=4-64 rule=load_adaptive limit=120 for=4"
    kept = marks.kept_record(4, 64, "fallback", (120, 64))
    comment = marks.admin_comment(kept, "site note", AppKey("lu"))
    assert users_limit(comment) == (120, 64)
    assert parse_record(comment)["range"] == "4-64"
    # Without a limit nothing is added, and nothing is read.
    assert marks.sized_record(16, 4, 64, "pws") == "adaptalloc:v1:sized n=16 range=4-64 rule=pws"
    assert users_limit(marks.sized_record(16, 4, 64, "pws")) is None


@pytest.mark.parametrize(
    "comment",
    [
        None,
        "",
        "adaptalloc:v1:released reason=store_unavailable range=4-64 limit=120 for=4",
        "adaptalloc:v1:sized n=16 range=4-64 rule=pws limit=-5 for=4",
        "adaptalloc:v1:sized n=16 range=4-64 rule=pws limit=1e9 for=4",
        "adaptalloc:v1:sized n=16 range=4-64 rule=pws limit=120 for=0",
        "adaptalloc:v1:sized n=16 range=4-64 rule=pws limit=99999999999999 for=4",
        "adaptalloc:v1:sized n=16 range=4-64 rule=pws limit=120",
        "limit=120 for=4",
    ],
)
def test_only_a_sized_or_kept_record_with_plain_numbers_gives_a_limit(comment: str | None) -> None:
    assert users_limit(comment) is None


def test_a_decided_job_is_observed_with_its_users_limit_not_slurms() -> None:
    sized = marks.admin_comment(marks.sized_record(8, 4, 16, "pws", (120, 4)), "", AppKey("lu"))
    # Slurm's accounting holds the 20 min the daemon set; the user asked 120 for 4 nodes.
    assert asked_limit(job(admin_comment=sized)) == (7200.0, 4)


def test_a_job_without_a_record_ran_on_its_users_limit_for_the_size_it_got() -> None:
    assert asked_limit(job(admin_comment=None)) == (1200.0, 8)
    assert asked_limit(job(admin_comment="a site's note")) == (1200.0, 8)
    assert asked_limit(job(admin_comment=None, time_limit_min=None)) == (None, None)
    # A range Slurm sized without adaptalloc: the limit is read as written for its minimum.
    assert asked_limit(job(admin_comment=None, nodes_min=2)) == (1200.0, 2)
    # A requested count above what it got is no reading of this run: the size it got.
    assert asked_limit(job(admin_comment=None, nodes_min=16)) == (1200.0, 8)


def test_a_record_without_the_limit_gives_none() -> None:
    older = marks.admin_comment(marks.sized_record(8, 4, 16, "pws"), "", AppKey("lu"))
    released = marks.released_record("store_unavailable", 4, 16)
    assert asked_limit(job(admin_comment=older)) == (None, None)
    assert asked_limit(job(admin_comment=released)) == (None, None)


def test_an_observation_keeps_its_limit_and_an_older_document_reads_without() -> None:
    app = AppKey("lu")
    run = Observation("7", app, 8, 300.0, 1_700_000_600.0, limit_s=7200.0, written_for=4)
    text = run.to_json()
    assert json.loads(text)["l"] == 7200.0
    assert Observation.from_json(app, "7", text) == run
    older = json.dumps({"n": 8, "t": 300.0, "e": 1_700_000_600.0, "s": "sacct"})
    back = Observation.from_json(app, "7", older)
    assert (back.limit_s, back.written_for) == (None, None)
    with pytest.raises(ValueError, match="limit_s"):
        Observation("7", app, 8, 300.0, 1_700_000_600.0, limit_s=float("nan"))
    with pytest.raises(ValueError, match="written_for"):
        Observation("7", app, 8, 300.0, 1_700_000_600.0, written_for=0)
    with pytest.raises(ValueError, match="not a number"):
        Observation.from_json(app, "7", json.dumps({**json.loads(text), "l": "x"}))


def test_a_users_vote_carries_the_limit_of_their_middle_run() -> None:
    app = AppKey("lu")

    def run(i: int, limit: float | None) -> Observation:
        return Observation(f"{i}", app, 8, 100.0 * i, 1.7e9 + i, user="ann", limit_s=limit)

    (vote,) = sharing.votes([run(1, 600.0), run(2, 1800.0), run(3, 1200.0)])
    # The middle run by runtime, with its own limit (not the median of the limits, 1200 s).
    assert (vote.runtime_s, vote.limit_s) == (200.0, 1800.0)
    # One run without its limit: the vote has none (a median of some would be no one's).
    (partial,) = sharing.votes([run(1, 600.0), run(2, None)])
    assert partial.limit_s is None


def test_runs_all_with_limits_fit_the_covariate_curve_and_a_mixed_set_the_plain_one() -> None:
    every, _ = _fit_runs(runs_with_limits(MIXED), "adept", predictor.fit_observations)
    mixed, _ = _fit_runs(runs_with_limits(MIXED, RUNS - 1), "adept", predictor.fit_observations)
    assert every is not None
    assert every.covariate is not None
    assert mixed is not None
    assert mixed.covariate is None
