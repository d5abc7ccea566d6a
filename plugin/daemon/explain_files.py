"""Per-job explanations its user can read and nobody else can: ``adaptalloc explain JOBID``.

Users have no Redis password, and the admin comment where the daemon's record goes is shown
by Slurm 22.05 to every user (``scontrol show job`` of another user's job prints it, seen on
the testbed without PrivateData). So every decision recorded (enforce and advise) is also
written as a small JSON document to::

    <state_dir>/explain/                 mode 0711: reachable, not listable
    <state_dir>/explain/<uid>/           mode 0700 + a POSIX ACL entry user:<uid>:r-x
    <state_dir>/explain/<uid>/<job>.json mode 0644 (only the owner and <uid> reach it)

The directories belong to the daemon's own account, which sets the ACL on them without any
privilege (an owner may set its files' ACLs): the daemon need not run as root, and the user
gets read access only, so no user can plant a link or a file where the daemon writes. A
filesystem without POSIX ACLs (or a user Slurm names that this host does not know) gets no
explanation files; the daemon logs ``explain_unavailable`` once and decides as before.

A document holds that job's decision only (`FIELDS` of its DecisionRecord: its range,
the size, the limit, the rule and the reasons); files older than ``[daemon]
decided_ttl_days`` are removed (`prune`, at most `PRUNE_MAX` a pass).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import struct
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import structlog

from plugin.daemon.state import atomic_write
from plugin.errors import printable
from plugin.store.decisions import DecisionRecord

__all__ = ["EXPLAIN_DIR", "FIELDS", "Explanations", "acl_read_only_for", "explanation_path"]

log = structlog.get_logger("adaptalloc.daemon")
EXPLAIN_DIR = "explain"
#: The record's fields a user is shown of their own job.
FIELDS = (
    "job_id",
    "mode",
    "status",
    "app",
    "user",
    "account",
    "partition",
    "min_nodes",
    "max_nodes",
    "time_limit_min",
    "action",
    "nodes",
    "nodes_upto",
    "new_time_limit_min",
    "new_partition",
    "rule",
    "reason",
    "time_limit_reason",
    "fail_open",
    "submit_time",
    "decided_at",
)
#: Files removed at most per prune pass.
PRUNE_MAX = 10_000

# Linux's POSIX ACL xattr layout (include/uapi/linux/posix_acl_xattr.h): a version, then
# (tag, perm, id) entries in tag order.
_ACL_XATTR = "system.posix_acl_access"
_ACL_VERSION = 2
_USER_OBJ, _USER, _GROUP_OBJ, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
_UNDEFINED_ID = 0xFFFFFFFF
_RWX, _RX = 7, 5


def acl_read_only_for(uid: int) -> bytes:
    """The ACL ``user::rwx, user:<uid>:r-x, group::---, mask::r-x, other::---``."""
    entries = (
        (_USER_OBJ, _RWX, _UNDEFINED_ID),
        (_USER, _RX, uid),
        (_GROUP_OBJ, 0, _UNDEFINED_ID),
        (_MASK, _RX, _UNDEFINED_ID),
        (_OTHER, 0, _UNDEFINED_ID),
    )
    return struct.pack("<I", _ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)


def explanation_path(state_dir: Path, uid: int, job_id: int) -> Path:
    return state_dir / EXPLAIN_DIR / str(int(uid)) / f"{int(job_id)}.json"


class Explanations:
    """Writes the explanation files (module docstring); never raises."""

    def __init__(self, state_dir: Path, uid_of: Callable[[str], int | None]) -> None:
        self.root = state_dir / EXPLAIN_DIR
        self.uid_of = uid_of
        self.ready: set[int] = set()
        self.unavailable: str | None = None
        self._writer: ThreadPoolExecutor | None = None

    def write_later(self, records: Sequence[DecisionRecord]) -> None:
        """`write` in one background thread, in order: off the decision loop (about 0.1 ms a
        file here, 60 ms for a 500-job burst, which the next batch would otherwise wait)."""
        if not records or self.unavailable is not None:
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="explain")
        self._writer.submit(self.write, list(records))

    def close(self) -> None:
        """Finish the files queued (the daemon's teardown)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None

    def _user_dir(self, uid: int) -> Path:
        """explain/<uid>/, made and given its ACL once per daemon (OSError if it cannot)."""
        path = self.root / str(uid)
        if uid in self.ready:
            return path
        if not self.root.is_dir():
            self.root.mkdir(mode=0o711, exist_ok=True)
            self.root.chmod(0o711)
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
        if path.is_symlink() or not path.is_dir():
            raise OSError(errno.ENOTDIR, "not a directory", str(path))
        os.chmod(path, 0o700, follow_symlinks=False)
        os.setxattr(path, _ACL_XATTR, acl_read_only_for(uid), follow_symlinks=False)
        self.ready.add(uid)
        return path

    def write(self, records: Sequence[DecisionRecord]) -> int:
        """One file per record whose user this host knows; how many were written. Never
        raises (it runs in the writer thread too)."""
        try:
            return self._write(records)
        except Exception as exc:  # a bug must not end the thread or the daemon
            log.error("explain_failed", error=printable(str(exc))[:200])
            return 0

    def _write(self, records: Sequence[DecisionRecord]) -> int:
        if self.unavailable is not None:
            return 0
        written = 0
        for record in records:
            uid = self.uid_of(record.user)
            if uid is None:
                continue
            doc = record.to_dict()
            text = json.dumps({k: doc.get(k) for k in FIELDS}, separators=(",", ":"))
            try:
                folder = self._user_dir(uid)
                atomic_write(folder / f"{int(record.job_id)}.json", text, mode=0o644)
            except OSError as exc:
                if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
                    self.unavailable = printable(str(exc))[:200]
                    log.error(
                        "explain_unavailable",
                        error=self.unavailable,
                        note="no POSIX ACLs here: users get no explanation files "
                        "(docs/user/explain.md)",
                    )
                    return written
                log.warning("explain_not_written", job_id=record.job_id, error=str(exc)[:200])
                continue
            written += 1
        return written

    def prune(self, ttl_s: float, now: float | None = None) -> int:
        """Remove explanation files older than `ttl_s`; how many (at most PRUNE_MAX)."""
        cutoff = (time.time() if now is None else now) - ttl_s
        removed = 0
        try:
            folders = list(os.scandir(self.root))
        except OSError:
            return 0
        for folder in folders:
            if not folder.is_dir(follow_symlinks=False):
                continue
            try:
                entries = list(os.scandir(folder.path))
            except OSError:
                continue
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)
                        removed += 1
                if removed >= PRUNE_MAX:
                    return removed
        return removed
