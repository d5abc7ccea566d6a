"""The journal's entries: one versioned record, read back whole, old files still finished."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plugin.daemon.journal import JOURNAL_VERSION, Journal, JournalEntry, JournalEntryError

ENTRY = JournalEntry(
    submit=1_800_000_000,
    action="resize",
    comment="adaptalloc:v1:decided nodes=4 rule=load_adaptive",
    resize=(4, 4, 35),
    rule="load_adaptive",
    fail_open=None,
    app="lu",
    reason="the efficient size",
    nodes_min=2,
    nodes_max=8,
    limit=60,
)

#: What a daemon wrote before the journal carried a version or the submitted limit.
LEGACY: dict[str, Any] = {
    "submit": 1_800_000_000,
    "action": "keep",
    "comment": "adaptalloc:v1:decided kept rule=fallback",
    "resize": None,
    "rule": "fallback",
    "fail_open": None,
    "app": "window",
    "reason": "journaled by an older daemon",
    "range": [1, 2],
}


def test_an_entry_survives_the_file_whole(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "inflight.json")
    journal.write({7: ENTRY})
    assert json.loads(journal.path.read_text())["7"]["version"] == JOURNAL_VERSION
    assert journal.load() == {7: ENTRY}
    journal.write({})
    assert not journal.path.exists()


def test_an_unversioned_entry_without_a_limit_is_read_as_version_one() -> None:
    entry = JournalEntry.from_dict(LEGACY)
    assert (entry.nodes_min, entry.nodes_max, entry.resize) == (1, 2, None)
    assert not entry.limit_known  # finished with the limit Slurm shows (apply.py)
    assert "limit" not in entry.to_dict()
    assert JournalEntry.from_dict({**LEGACY, "limit": None}).limit_known  # "no limit" is known


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"version": 2}, "version 2"),
        ({"resize": [4, "4", 35]}, "resize"),
        ({"resize": [4, 4]}, "resize"),
        ({"range": [1]}, "range"),
        ({"submit": "soon"}, "submit"),
        ({"action": None}, "action"),
        ({"limit": 1.5}, "limit"),
        ({"app": 3, "rule": []}, "app, rule"),
    ],
)
def test_an_entry_it_cannot_read_is_refused_by_name(change: dict[str, Any], named: str) -> None:
    with pytest.raises(JournalEntryError, match=named):
        JournalEntry.from_dict({**LEGACY, **change})


def test_an_unreadable_entry_keeps_its_job_id(tmp_path: Path) -> None:
    # The daemon still reads such a job the exact way (its marker may be gone), then decides
    # it anew: the id must not be dropped with the entry.
    path = tmp_path / "inflight.json"
    path.write_text(json.dumps({"5": {**LEGACY, "version": 9}, "6": "junk", "7": LEGACY, "x": {}}))
    loaded = Journal(path).load()
    assert loaded.keys() == {5, 6, 7}
    assert loaded[5] is None
    assert loaded[6] is None
    assert loaded[7] == JournalEntry.from_dict(LEGACY)
    path.write_text("{not json")
    assert Journal(path).load() == {}
