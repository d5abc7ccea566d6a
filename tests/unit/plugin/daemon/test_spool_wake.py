"""The spool wake (plugin/daemon/spool_wake.py): inotify on the state directory sets the
loop's wake event when job_submit.lua appends to the spool, and only then."""

from __future__ import annotations

import contextlib
import os
import struct
import threading
from pathlib import Path

from plugin.daemon.spool_wake import EVENT, SpoolWake, spool_events

#: Far above what an inotify wake-up takes; only a missing wake-up ever waits this long.
WAKE_TIMEOUT_S = 10.0


def packed(*names: str) -> bytes:
    """inotify_event records as the kernel packs them (names NUL-padded to 16 bytes)."""
    out = b""
    for name in names:
        raw = name.encode()
        padded = raw + b"\0" * (16 - len(raw) % 16)
        out += EVENT.pack(1, 2, 0, len(padded)) + padded
    return out


def test_only_events_about_the_spool_count() -> None:
    assert spool_events(packed("heartbeat", "spool", "inflight.json", "spool"), "spool") == 2
    assert spool_events(packed("spool.tmp", "heartbeat"), "spool") == 0
    assert spool_events(b"", "spool") == 0


def test_a_truncated_buffer_is_read_up_to_its_last_whole_event() -> None:
    data = packed("spool") + struct.pack("i", 1)
    assert spool_events(data, "spool") == 1


def test_an_append_to_the_spool_sets_the_wake_event(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    wake = threading.Event()
    watcher = SpoolWake(spool, wake)
    assert watcher.start()
    try:
        (tmp_path / "heartbeat").write_text("1\n")
        # The heartbeat is not the spool: no wake-up (the spool below then gives one).
        with open(spool, "a") as handle:  # as job_submit.lua does: append a line
            handle.write("held 1 1000\n")
        assert wake.wait(WAKE_TIMEOUT_S)
        assert watcher.wakes >= 1
    finally:
        watcher.close()
    assert watcher._thread is None


def test_without_a_directory_to_watch_it_says_so_and_the_poll_carries_on(tmp_path: Path) -> None:
    wake = threading.Event()
    watcher = SpoolWake(tmp_path / "missing" / "spool", wake)
    assert not watcher.start()
    watcher.close()  # harmless when it never started
    assert not wake.is_set()


def inotify_descriptors() -> int:
    """This process's open inotify instances (other descriptors come and go with other
    threads of a shared test worker, so a plain count of /proc/self/fd is not this test's)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed between the listing and the readlink
            count += os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify"
    return count


def test_close_stops_the_thread_and_frees_the_descriptor(tmp_path: Path) -> None:
    before = inotify_descriptors()
    watcher = SpoolWake(tmp_path / "spool", threading.Event())
    assert watcher.start()
    assert inotify_descriptors() == before + 1
    assert any(t.name == "spool-wake" for t in threading.enumerate())
    watcher.close()
    assert inotify_descriptors() == before
    assert not any(t.name == "spool-wake" for t in threading.enumerate())
