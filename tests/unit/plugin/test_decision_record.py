"""plugin.store.decisions: the decision record round-trips, reads what the daemon stored
before records carried a version, and refuses what it cannot read with a clear error."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from plugin.store.decisions import (
    DECISION_VERSION,
    DecisionRecord,
    DecisionRecordError,
    StoredDecision,
)

#: A document exactly as the daemon wrote it before records were versioned (the keys of
#: plugin/daemon/record.py's decision_doc plus released_at, as stored in the stream).
UNVERSIONED = json.loads(
    '{"job_id":4711,"app":"lulesh@large","user":"alice","account":"physics",'
    '"partition":"batch","min_nodes":2,"max_nodes":8,"time_limit_min":60,"action":"resize",'
    '"nodes":4,"nodes_upto":4,"new_time_limit_min":25,"rule":"efficiency",'
    '"reason":"efficiency stays above 50% up to 4 nodes","time_limit_reason":"scaled",'
    '"fail_open":null,"status":"released","curve_version":3,"curve_model":"downey",'
    '"idle_nodes":8,"pending_nodes":0,"total_nodes":8,"policy":"default",'
    '"budget":{"explore":0},"submit_time":1700000000,"decided_at":1700000123.456,'
    '"latency_s":0.042,"recovered":false,"released_at":1700000123.5}'
)


def test_every_field_round_trips() -> None:
    record = DecisionRecord.from_dict(UNVERSIONED)
    assert record.to_dict()["version"] == DECISION_VERSION
    assert DecisionRecord.from_dict(record.to_dict()) == record
    assert DecisionRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


#: Fields added after UNVERSIONED was written (placement, scaling, partitions).
LATER = {
    "tasks",
    "tasks_per_node",
    "scaling",
    "new_partition",
    "placement",
    "curve_app",
    "curve_doc",
}


#: Later fields whose default is not None: a document without them reads as this.
LATER_DEFAULTS = {"mode": "enforce"}  # every decision was enforced before advise mode


def test_an_unversioned_document_loses_nothing() -> None:
    record = DecisionRecord.from_dict(UNVERSIONED)
    later = LATER | set(LATER_DEFAULTS)
    assert {f.name for f in fields(record)} - {"version"} == set(UNVERSIONED) | later
    doc = record.to_dict()
    assert {k: v for k, v in doc.items() if k != "version" and k not in later} == UNVERSIONED
    assert all(doc[k] is None for k in LATER)
    assert {k: doc[k] for k in LATER_DEFAULTS} == LATER_DEFAULTS


def test_an_advise_record_round_trips_and_a_bad_mode_type_is_refused() -> None:
    record = DecisionRecord.from_dict({**UNVERSIONED, "mode": "advise", "status": "advised"})
    assert record.mode == "advise"
    assert DecisionRecord.from_dict(record.to_dict()) == record
    with pytest.raises(DecisionRecordError, match="mode"):
        DecisionRecord.from_dict({**UNVERSIONED, "mode": 1})


def test_a_placement_record_round_trips() -> None:
    doc = {**UNVERSIONED, "tasks": 64, "tasks_per_node": 4, "scaling": None,
           "new_partition": "big", "placement": {"kind": "partition", "options": []}}  # fmt: skip
    record = DecisionRecord.from_dict(doc)
    assert (record.tasks, record.tasks_per_node, record.new_partition) == (64, 4, "big")
    assert DecisionRecord.from_dict(record.to_dict()) == record
    with pytest.raises(DecisionRecordError, match="tasks"):
        DecisionRecord.from_dict({**UNVERSIONED, "tasks": "64"})


def test_a_release_keeps_its_nones() -> None:
    doc = {**UNVERSIONED, "action": "release", "nodes": None, "nodes_upto": None,
           "new_time_limit_min": None, "rule": None, "fail_open": "store_unavailable",
           "app": None}  # fmt: skip
    record = DecisionRecord.from_dict(doc)
    assert (record.nodes, record.rule, record.app) == (None, None, None)
    assert record.fail_open == "store_unavailable"


@pytest.mark.parametrize(
    ("nodes", "upto", "text"),
    [(16, None, "16"), (16, 16, "16"), (4, 24, "4-24"), (16, 8, "16"), (None, None, None)],
)
def test_the_size_a_job_was_released_with(nodes: int | None, upto: int | None, text: str) -> None:
    """A range's top shows (a refused curve's cut, or release = range); a top not above the
    size, or none, is a pinned size; no size is a job left as submitted."""
    assert DecisionRecord(job_id=1, nodes=nodes, nodes_upto=upto).size_text == text


@pytest.mark.parametrize("version", [0, 2, 99, "1", True, None])
def test_an_unknown_version_is_refused_by_name(version: Any) -> None:
    with pytest.raises(DecisionRecordError, match=r"decision record version .* reads 1"):
        DecisionRecord.from_dict({**UNVERSIONED, "version": version})


@pytest.mark.parametrize(
    ("key", "value"),
    [("nodes", "4"), ("nodes", 4.0), ("job_id", True), ("reason", 7), ("budget", [1]),
     ("decided_at", float("nan")), ("recovered", 1),
     ("decided_at", 10**400)],  # raised OverflowError before the shared is_finite_number
)  # fmt: skip
def test_a_field_of_the_wrong_type_is_refused(key: str, value: Any) -> None:
    with pytest.raises(DecisionRecordError, match=key):
        DecisionRecord.from_dict({**UNVERSIONED, key: value})


def test_a_record_needs_its_job() -> None:
    with pytest.raises(DecisionRecordError, match="job_id"):
        DecisionRecord.from_dict({"nodes": 4})
    with pytest.raises(DecisionRecordError, match="job_id"):
        DecisionRecord.from_dict({"job_id": None})


def test_keys_it_does_not_know_are_ignored() -> None:
    assert DecisionRecord.from_dict({**UNVERSIONED, "later": 1}) == DecisionRecord.from_dict(
        UNVERSIONED
    )


def test_the_stored_form_puts_the_entry_id_first() -> None:
    stored = StoredDecision("1700000123456-0", DecisionRecord(job_id=9, nodes=2))
    doc = stored.to_dict()
    assert next(iter(doc)) == "id"
    assert (doc["id"], doc["job_id"], doc["nodes"], doc["version"]) == (
        "1700000123456-0",
        9,
        2,
        DECISION_VERSION,
    )
