"""plugin/daemon/explain_files.py and `adaptalloc explain`'s reading: the layout and its
permissions (the ACL the kernel reads back), what a document holds, pruning, and a
directory replaced by a link is never written through."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from plugin.cli.explain import find, lines
from plugin.daemon.explain_files import FIELDS, Explanations, acl_read_only_for
from plugin.store.decisions import DecisionRecord

UID = 4242


def _record(job_id: int = 7, **kw: object) -> DecisionRecord:
    values: dict[str, object] = {
        "user": "alice", "app": "alice/lu", "min_nodes": 1, "max_nodes": 8,
        "time_limit_min": 30, "action": "resize", "nodes": 4, "nodes_upto": 4,
        "new_time_limit_min": 12, "rule": "load_adaptive", "reason": "because",
        "status": "advised", "mode": "advise", "curve_version": 3, "budget": {"x": 1},
    }  # fmt: skip
    values.update(kw)
    return DecisionRecord(job_id, **values)  # type: ignore[arg-type]


def _explanations(tmp_path: Path) -> Explanations:
    return Explanations(tmp_path, {"alice": UID}.get)


def test_acl_blob_is_the_kernels_layout() -> None:
    blob = acl_read_only_for(UID)
    assert struct.unpack("<I", blob[:4]) == (2,)
    entries = [struct.unpack("<HHI", blob[i : i + 8]) for i in range(4, len(blob), 8)]
    assert entries == [
        (0x01, 7, 0xFFFFFFFF), (0x02, 5, UID), (0x04, 0, 0xFFFFFFFF),
        (0x10, 5, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF),
    ]  # fmt: skip


def test_a_record_becomes_a_file_only_its_user_and_the_daemon_reach(tmp_path: Path) -> None:
    assert _explanations(tmp_path).write([_record(), _record(8, user="nobody-here")]) == 1
    folder = tmp_path / "explain" / str(UID)
    assert (tmp_path / "explain").stat().st_mode & 0o777 == 0o711
    # With an ACL the group bits show the mask (r-x); the owning group itself gets ---.
    assert folder.stat().st_mode & 0o777 == 0o750
    assert os.getxattr(folder, "system.posix_acl_access") == acl_read_only_for(UID)
    doc = json.loads((folder / "7.json").read_text())
    assert tuple(doc) == FIELDS  # nothing else: no curve, budget or cluster figures
    assert doc["mode"] == "advise"
    found = find(tmp_path, 7, UID)
    assert found is not None
    assert (found.nodes, found.mode) == (4, "advise")
    assert find(tmp_path, 7, UID + 1) is None  # another uid looks in its own folder only


def test_a_link_in_place_of_the_users_folder_is_not_written_through(tmp_path: Path) -> None:
    (tmp_path / "explain").mkdir(mode=0o711)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "explain" / str(UID)).symlink_to(target)
    assert _explanations(tmp_path).write([_record()]) == 0
    assert list(target.iterdir()) == []


def test_prune_removes_only_old_files(tmp_path: Path) -> None:
    explanations = _explanations(tmp_path)
    explanations.write([_record(1), _record(2)])
    old = tmp_path / "explain" / str(UID) / "1.json"
    os.utime(old, (1_000_000, 1_000_000))
    assert explanations.prune(3600.0) == 1
    assert not old.exists()
    assert (old.parent / "2.json").exists()


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (_record(), "would have given it 4 nodes, time limit 12 min (rule load_adaptive)."),
        (_record(mode="enforce", status="released"), "adaptalloc gave it 4 nodes, time limit 12"),
        (_record(action="release", nodes=None, fail_open="opted_out", rule=None),
         "left it as submitted (reason code opted_out)."),
    ],
)  # fmt: skip
def test_the_text_says_what_was_or_would_have_been_done(
    record: DecisionRecord, expected: str
) -> None:
    text = "\n".join(lines(record))
    assert expected in text
    assert ("advise mode" in text) == (record.mode == "advise")


def test_hostile_text_is_escaped() -> None:
    text = "\n".join(lines(_record(reason="x\x1b[2Jy\nz", app="a\rb")))
    assert "\x1b" not in text
    assert "\r" not in text
    assert text.count("\n") == len(lines(_record())) - 1
