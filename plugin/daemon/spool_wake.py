"""Wake the daemon the moment job_submit.lua appends to the spool (Linux inotify).

The loop polls the spool's size every ``spool_poll_s`` (plugin/daemon/state.py); a job held
just after a poll waited for the next one. `SpoolWake` watches the state directory with
inotify (through libc, no extra package) in a small thread and sets the loop's wake event
when the spool is written, created or replaced, so the loop looks at once.

The poll stays as the safety net: inotify sees only writes made on this host, so on shared
storage (HA daemons on several hosts, slurmctld elsewhere) and where inotify is missing
(another OS, ``fs.inotify.max_user_watches`` exhausted) the poll still finds the spool grown.
Starting never fails: without inotify `SpoolWake.start` logs why and returns False.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import threading
from pathlib import Path

import structlog

from plugin.errors import printable

__all__ = ["SpoolWake", "spool_events"]

log = structlog.get_logger("adaptalloc.daemon")

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
WATCHED = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
#: struct inotify_event: int wd; uint32_t mask, cookie, len; char name[len].
EVENT = struct.Struct("iIII")
#: How long the thread blocks in select before it looks whether it should stop.
STOP_POLL_S = 0.5


def spool_events(buffer: bytes, name: str) -> int:
    """How many of the inotify events packed in `buffer` are about the file `name`."""
    wanted = os.fsencode(name)
    count = 0
    offset = 0
    while offset + EVENT.size <= len(buffer):
        _, _, _, length = EVENT.unpack_from(buffer, offset)
        start = offset + EVENT.size
        if buffer[start : start + length].rstrip(b"\0") == wanted:
            count += 1
        offset = start + length
    return count


class SpoolWake:
    """A thread that sets `wake` whenever the file `spool` is written (module docstring)."""

    def __init__(self, spool: Path, wake: threading.Event) -> None:
        self.spool = spool
        self.wake = wake
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Wake-ups delivered (for tests and the log).
        self.wakes = 0

    def start(self) -> bool:
        """Watch the spool's directory; False (logged) when inotify is not available."""
        if self._thread is not None:
            return True
        try:
            fd = _inotify_fd(self.spool.parent)
        except OSError as exc:
            log.warning(
                "spool_wake_unavailable",
                error=printable(str(exc))[:200],
                note="the spool is polled every spool_poll_s",
            )
            return False
        self._fd = fd
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="spool-wake", daemon=True)
        self._thread.start()
        return True

    def close(self) -> None:
        """Stop the thread and close the inotify descriptor."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_POLL_S * 4)
            self._thread = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _run(self) -> None:
        fd = self._fd
        if fd is None:
            return
        name = self.spool.name
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], STOP_POLL_S)
                if not ready:
                    continue
                data = os.read(fd, 64 * 1024)
            except BlockingIOError:
                continue
            except OSError as exc:  # the descriptor is gone: the poll carries on alone
                log.warning("spool_wake_stopped", error=printable(str(exc))[:200])
                return
            if spool_events(data, name):
                self.wakes += 1
                self.wake.set()


def _inotify_fd(directory: Path) -> int:
    """An inotify descriptor watching `directory` for writes (OSError when it cannot)."""
    found = ctypes.util.find_library("c")
    if found is None:
        raise OSError("no C library to call inotify through")
    libc = ctypes.CDLL(found, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise OSError("this C library has no inotify")
    fd = int(libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    if libc.inotify_add_watch(fd, os.fsencode(directory), WATCHED) < 0:
        err = ctypes.get_errno()
        os.close(fd)
        raise OSError(err, f"{os.strerror(err)}: {directory}")
    return fd
