"""Release with a range: a decision with max_nodes pins NumNodes=n-max_nodes, and
the out_of_range check covers both ends of it."""

from __future__ import annotations

import pytest

import policies
from plugin.daemon import reasons
from plugin.daemon.decider import Outcome
from plugin.daemon.record import decision_record

from .test_daemon import FakeStore, decider, idle, job, lu_record


def decide_with(monkeypatch: pytest.MonkeyPatch, nodes: int, max_nodes: int | None) -> Outcome:
    made = policies.Decision(nodes, 20, "range", "a narrowed range", max_nodes=max_nodes)
    monkeypatch.setattr(policies, "decide", lambda *a, **k: made)
    return decider(FakeStore({"lulesh": lu_record()})).decide(job(nodes_min=2, nodes_max=8), idle)


def test_a_range_decision_is_released_with_that_range(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = decide_with(monkeypatch, 3, 6)
    assert outcome.action == "resize"
    assert outcome.resize is not None
    assert outcome.resize.line() == "update JobId=7 NumNodes=3-6 TimeLimit=20"
    record = decision_record(outcome, "released", 0.1)
    assert (record.nodes, record.nodes_upto) == (3, 6)


def test_without_max_nodes_the_size_is_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = decide_with(monkeypatch, 3, None)
    assert outcome.resize is not None
    assert outcome.resize.line() == "update JobId=7 NumNodes=3-3 TimeLimit=20"


@pytest.mark.parametrize(("nodes", "max_nodes"), [(3, 9), (1, 4), (5, 4)])
def test_either_end_outside_the_users_range_fails_open(
    monkeypatch: pytest.MonkeyPatch, nodes: int, max_nodes: int
) -> None:
    outcome = decide_with(monkeypatch, nodes, max_nodes)
    assert outcome.fail_open == reasons.OUT_OF_RANGE
    assert outcome.resize is None
