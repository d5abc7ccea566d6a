"""The journal: the decisions being applied, by job id, in ``inflight.json``.

The applier writes the journal (fsync'd) before it changes any job and drops a job from it
once the job is released and recorded (plugin/daemon/apply.py). A crash anywhere in
between leaves the entry, and the next start, or ``daemon --release-held``, finishes that
decision instead of making a new one.

One entry is a frozen, versioned `JournalEntry`: what is needed to finish applying the
decision (the admin comment, the resize, the action) and to put the job back as its user
submitted it (the requested range and time limit). `to_dict` writes ``"version":
JOURNAL_VERSION``; `from_dict` refuses an unknown version or a field of the wrong type with
`JournalEntryError`. Entries written before the journal carried a version are read as
version 1; those written before it kept the submitted time limit have no ``limit`` and
are finished with the limit Slurm shows now (``limit_known`` False).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugin.daemon.state import atomic_write
from plugin.errors import AdaptallocError
from policies.toml_keys import is_whole

__all__ = ["JOURNAL_VERSION", "Journal", "JournalEntry", "JournalEntryError"]

#: The version `to_dict` writes and the only one `from_dict` reads (besides unversioned ones).
JOURNAL_VERSION = 1


class JournalEntryError(AdaptallocError, ValueError):
    """A journal entry this version of adaptalloc cannot read."""


_int = is_whole


def _optional_int(value: Any) -> bool:
    return value is None or _int(value)


def _optional_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


@dataclass(frozen=True)
class JournalEntry:
    """One decision in flight (module docstring).

    ``resize`` is (min nodes, max nodes, time limit in minutes or None) as it is applied;
    ``nodes_min``/``nodes_max``/``limit`` are the job as its user submitted it; ``submit`` is
    Slurm's submit time (0 when unknown), which tells a reused job id from this job;
    ``partition`` is the partition the resize moves the job to (None: it keeps its own; the
    key is left out then, so entries without it read as before).
    """

    submit: int
    action: str
    comment: str
    resize: tuple[int, int, int | None] | None
    rule: str | None
    fail_open: str | None
    app: str | None
    reason: str
    nodes_min: int | None
    nodes_max: int | None
    limit: int | None
    limit_known: bool = True
    partition: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stored document (``limit`` only when known)."""
        doc: dict[str, Any] = {
            "version": JOURNAL_VERSION,
            "submit": self.submit,
            "action": self.action,
            "comment": self.comment,
            "resize": None if self.resize is None else list(self.resize),
            "rule": self.rule,
            "fail_open": self.fail_open,
            "app": self.app,
            "reason": self.reason,
            "range": [self.nodes_min, self.nodes_max],
        }
        if self.limit_known:
            doc["limit"] = self.limit
        if self.partition is not None:
            doc["partition"] = self.partition
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> JournalEntry:
        """Read a stored document back; `JournalEntryError` when it cannot be."""
        version = doc.get("version", JOURNAL_VERSION)
        if version != JOURNAL_VERSION:
            raise JournalEntryError(f"journal entry version {version!r} is not {JOURNAL_VERSION}")
        submit = doc.get("submit") or 0
        resize = doc.get("resize")
        nodes = doc.get("range") or [None, None]
        checks = {
            "submit": _int(submit),
            "action": isinstance(doc.get("action"), str),
            "comment": isinstance(doc.get("comment"), str),
            "resize": resize is None
            or (
                isinstance(resize, list)
                and len(resize) == 3
                and _int(resize[0])
                and _int(resize[1])
                and _optional_int(resize[2])
            ),
            "rule": _optional_str(doc.get("rule")),
            "fail_open": _optional_str(doc.get("fail_open")),
            "app": _optional_str(doc.get("app")),
            "reason": _optional_str(doc.get("reason")),
            "range": isinstance(nodes, list)
            and len(nodes) == 2
            and all(_optional_int(n) for n in nodes),
            "limit": _optional_int(doc.get("limit")),
            "partition": _optional_str(doc.get("partition")),
        }
        wrong = sorted(name for name, ok in checks.items() if not ok)
        if wrong:
            raise JournalEntryError(f"journal entry has unreadable {', '.join(wrong)}")
        return cls(
            submit=submit,
            action=doc["action"],
            comment=doc["comment"],
            resize=None if resize is None else (resize[0], resize[1], resize[2]),
            rule=doc.get("rule"),
            fail_open=doc.get("fail_open"),
            app=doc.get("app"),
            reason=doc.get("reason") or "",
            nodes_min=nodes[0],
            nodes_max=nodes[1],
            limit=doc.get("limit"),
            limit_known="limit" in doc,
            partition=doc.get("partition"),
        )


class Journal:
    """``inflight.json``: the entries by job id, fsync'd on every write."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[int, JournalEntry | None]:
        """The journal's entries by job id, None for an entry that cannot be read (its job is
        still read the exact way, then decided anew); {} when there is no readable journal."""
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(doc, dict):
            return {}
        out: dict[int, JournalEntry | None] = {}
        for key, value in doc.items():
            if isinstance(key, str) and key.isdigit():
                try:
                    out[int(key)] = (
                        JournalEntry.from_dict(value) if isinstance(value, dict) else None
                    )
                except JournalEntryError:
                    out[int(key)] = None
        return out

    def write(self, entries: Mapping[int, JournalEntry]) -> None:
        if not entries:
            self.clear()
            return
        doc = {str(job_id): entry.to_dict() for job_id, entry in entries.items()}
        atomic_write(self.path, json.dumps(doc, separators=(",", ":")), mode=0o600, sync=True)

    def clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
