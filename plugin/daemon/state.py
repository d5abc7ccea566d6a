"""The daemon's state directory: what job_submit.lua reads and writes there, and what the
daemon keeps for itself.

* ``heartbeat``: Unix seconds, written every ``heartbeat_interval_s`` while the daemon is
  healthy; job_submit.lua holds jobs only while it is fresh.
* ``spool``: one ``held <epoch> <uid>`` line per held job, appended by job_submit.lua; the
  daemon watches its size. A wake-up call only: 22.05's job_submit runs before the job id
  is assigned, so the daemon finds the jobs by their marker. A job in advise mode gets an
  ``advise <epoch> <uid> <min> <max>`` line instead (plugin/daemon/advise.py).
* ``modes``: which jobs the hook may hold (plugin/daemon/modes.py).
* ``inflight.json``: the decisions being applied, written before any job is changed, so a
  crash mid-apply is finished at the next start, not redone.
* ``daemon.lock``: flock'd by the running daemon (one per state directory), with its pid.
  With HA (``[daemon] ha = true``) the daemons share the directory and the Redis lease says
  who decides; the lock only matters while Redis is unreachable (plugin/daemon/loop.py).

The directory must be writable by the daemon and the spool by SlurmUser (slurmctld runs the
hook); the heartbeat is made world-readable. Writes are atomic (temporary file, rename), so
the hook never reads half a timestamp.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path
from typing import TextIO

from plugin.daemon.advise import AdviseLine, parse_line
from plugin.errors import AdaptallocError, printable

__all__ = [
    "DaemonLockedError",
    "SpoolWatcher",
    "StateDir",
    "atomic_write",
    "default_state_dir",
]

#: The spool is truncated once it grows past this many bytes (its lines are only nudges).
SPOOL_TRUNCATE_BYTES = 1 << 20
SYSTEM_STATE_DIR = "/var/lib/adaptalloc"
#: How often a daemon waiting for the state directory's lock tries again.
LOCK_POLL_S = 0.2
#: How long a starting daemon waits for the lock (the orphan release holds it seconds).
STARTUP_LOCK_WAIT_S = 30.0


class DaemonLockedError(AdaptallocError):
    """Another daemon holds this state directory."""


def default_state_dir(configured: str) -> Path:
    """``[daemon] state_dir``, else the product's /var/lib/adaptalloc (never a testbed
    variable: the testbed passes ``--state-dir``)."""
    return Path(configured) if configured else Path(SYSTEM_STATE_DIR)


def atomic_write(path: Path, text: str, mode: int = 0o644, sync: bool = False) -> None:
    """Write `text` to `path` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # a full disk must not keep the half-written file
            tmp.unlink()
        raise


def _flock(handle: TextIO, wait_s: float) -> OSError | None:
    """Lock `handle` exclusively, trying every `LOCK_POLL_S` for up to `wait_s` seconds;
    None once locked, else the last error (EAGAIN/EACCES: another process holds it)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                return exc
        time.sleep(LOCK_POLL_S)


class StateDir:
    """Paths and small operations on the state directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.heartbeat = path / "heartbeat"
        self.spool = path / "spool"
        self.journal = path / "inflight.json"
        self.lock_path = path / "daemon.lock"
        self._lock: TextIO | None = None

    def prepare(self) -> None:
        """Create the directory (mode 755: slurmctld must reach heartbeat and spool)."""
        self.path.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            self.path.chmod(0o755)

    def lock(self, wait_s: float = 0.0) -> None:
        """Take the directory's lock, trying for up to `wait_s` seconds; DaemonLockedError
        naming the holder if another has it then.

        A daemon starting waits a little: the orphan release (``--release-held
        --if-orphaned``, deploy/systemd/) holds the lock for the seconds it runs.

        On a read-only directory (or one the daemon may not write) an existing lock file is
        locked through a read-only handle: the lock still keeps two daemons apart, only the
        pid is not written.
        """
        try:
            handle = open(self.lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - until unlock
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.ENOSPC, errno.EDQUOT):
                raise
            handle = open(self.lock_path, encoding="utf-8")  # noqa: SIM115 - until unlock
        failed = _flock(handle, wait_s)
        if failed is not None:
            handle.seek(0)
            holder = handle.read().strip()[:20]
            handle.close()
            if failed.errno in (errno.EAGAIN, errno.EACCES):
                raise DaemonLockedError(
                    f"another adaptalloc daemon (pid {printable(holder) or 'unknown'}) uses "
                    f"{printable(str(self.path))}"
                ) from failed
            raise failed
        with contextlib.suppress(OSError):  # read-only, or a full disk: locked all the same
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
        self._lock = handle

    @property
    def locked(self) -> bool:
        """This process holds the directory's lock."""
        return self._lock is not None

    def try_lock(self) -> bool:
        """Take the lock if it is free (HA daemons, plugin/daemon/loop.py); never raises."""
        if self._lock is not None:
            return True
        try:
            self.lock(0.0)
        except (DaemonLockedError, OSError):
            return False
        return True

    def heartbeat_id(self) -> tuple[int, int] | None:
        """(inode, mtime in ns) of the heartbeat file, None when there is none: tells the
        heartbeat this daemon wrote last from one another daemon wrote since."""
        try:
            found = self.heartbeat.stat()
        except OSError:
            return None
        return (found.st_ino, found.st_mtime_ns)

    def unlock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.truncate(0)
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def beat(self, now: float | None = None) -> float:
        """Write the heartbeat (whole Unix seconds, as the hook compares them)."""
        stamp = time.time() if now is None else now
        atomic_write(self.heartbeat, f"{int(stamp)}\n")
        return stamp

    def stop_beating(self) -> OSError | None:
        """Remove the heartbeat: from now on the hook holds nothing.

        Never raises (it runs on every way out, teardown included): the error when the file
        could not be removed (a read-only directory), else None. A heartbeat that cannot be
        removed cannot be renewed either, so the hook stops holding once it is
        ``heartbeat_max_age`` old.
        """
        try:
            self.heartbeat.unlink()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return exc
        return None


class SpoolWatcher:
    """Notices job_submit.lua's wake-up lines by the spool's size (one stat per poll), and
    counts them (one line per held job) for the loop's follow-up sweeps."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen = self._size()
        #: Whole ``held`` lines appended since the last `take_lines`.
        self._lines = 0
        #: ``advise`` lines appended since the last `take_advice` (plugin/daemon/advise.py).
        self._advice: list[AdviseLine] = []

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def woken(self) -> bool:
        """True when held lines were appended since the last call (truncating a large spool).

        Advise lines alone wake nobody: they are kept for the periodic sweep, so a burst of
        advise jobs costs slurmctld no queue reads beyond one per ``sweep_interval_s``
        (nobody waits on an advise record; plugin/daemon/advise.py)."""
        size = self._size()
        held = 0
        if size != self._seen:
            held = self._count_lines(self._seen if size > self._seen else 0, size)
            self._lines += held
        if size > SPOOL_TRUNCATE_BYTES:
            with contextlib.suppress(OSError):
                os.truncate(self.path, 0)
            size = 0
        self._seen = size
        return held > 0

    def _count_lines(self, start: int, end: int) -> int:
        """The held lines in the spool's bytes [start, end) (job_submit.lua writes each line
        whole): every line but an ``advise`` one, which is kept for `take_advice`. An
        unreadable spool counts as one line (it grew, so at least one job is coming)."""
        try:
            with self.path.open("rb") as spool:
                spool.seek(start)
                text = spool.read(end - start)
        except OSError:
            return 1
        if b"advise " not in text:
            return text.count(b"\n")
        held = 0
        for line in text.split(b"\n")[:-1]:
            advice = parse_line(line) if line.startswith(b"advise ") else None
            if advice is None:
                held += 1
            else:
                self._advice.append(advice)
        return held

    def take_advice(self) -> list[AdviseLine]:
        """The advise lines read by `woken` since the last call."""
        advice, self._advice = self._advice, []
        return advice

    def take_lines(self) -> int:
        """The lines counted by `woken` since the last call (then zero again)."""
        lines, self._lines = self._lines, 0
        return lines
