"""The daemon's state directory and Slurm environment under faults; the whole
faults, on the real testbed, are in tests/integration/test_fault_*.py."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from plugin.daemon.state import DaemonLockedError, StateDir, atomic_write
from plugin.daemon.watchdog import Watchdog, sd_notify
from plugin.slurm.cli_backend import slurm_environ


def test_slurm_commands_always_print_standard_times() -> None:
    env = slurm_environ({"SLURM_TIME_FORMAT": "relative", "SLURM_CONF": "/etc/slurm.conf"})
    assert env == {"SLURM_TIME_FORMAT": "standard", "SLURM_CONF": "/etc/slurm.conf"}
    assert slurm_environ({})["SLURM_TIME_FORMAT"] == "standard"


def test_stop_beating_never_raises_and_says_why_the_heartbeat_stays(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    assert state.stop_beating() is None  # no heartbeat: nothing to do
    state.heartbeat.mkdir()  # unlink() fails on it, as on a read-only directory
    (state.heartbeat / "x").write_text("")
    error = state.stop_beating()
    assert isinstance(error, OSError)
    assert state.heartbeat.is_dir()


def test_atomic_write_leaves_no_temporary_file_when_it_fails(tmp_path: Path) -> None:
    target = tmp_path / "heartbeat"
    target.mkdir()
    (target / "x").write_text("")  # os.replace onto a non-empty directory fails
    with pytest.raises(IsADirectoryError):
        atomic_write(target, "1\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heartbeat"]


def test_the_lock_waits_for_a_short_holder_and_refuses_a_lasting_one(tmp_path: Path) -> None:
    holder = StateDir(tmp_path)
    holder.lock()
    with pytest.raises(DaemonLockedError, match="another adaptalloc daemon"):
        StateDir(tmp_path).lock(wait_s=0.3)
    timer = threading.Timer(0.3, holder.unlock)
    timer.start()
    try:
        waiting = StateDir(tmp_path)
        waiting.lock(wait_s=30.0)  # the holder lets go meanwhile
        waiting.unlock()
    finally:
        timer.cancel()


def test_the_watchdog_pings_only_when_systemd_asks_for_it(tmp_path: Path) -> None:
    assert Watchdog({}).every_s is None
    assert Watchdog({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}).every_s is None  # not us
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(1.0)
        dog = Watchdog({"WATCHDOG_USEC": "2000000", "NOTIFY_SOCKET": str(path)})
        assert dog.every_s == 1.0
        dog.ping()
        dog.ping()  # within half a period: not sent again
        assert sock.recv(64) == b"WATCHDOG=1"
        sock.settimeout(0.05)
        with pytest.raises(TimeoutError):
            sock.recv(64)
    assert not sd_notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "gone")})
