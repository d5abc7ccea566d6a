"""systemd's watchdog: a daemon busy in one slow Slurm command keeps pinging, so
the unit's WatchdogSec can be short enough for a hung daemon's jobs to be released within
the fault matrix's bound, and long enough never to kill a working one."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugin.config import DaemonConfig
from plugin.daemon.watchdog import Watchdog

from ..test_daemon import FakeSlurm
from ..test_daemon_health import daemon as offline_daemon

UNIT = Path(__file__).resolve().parents[4] / "deploy" / "systemd" / "adaptalloc.service"
#: The fault matrix's bound (tests/integration/fault_harness.py RELEASE_BOUND_S) and what
#: ExecStopPost's release took after a hang on the testbed (13 s, the fault table of
#: docs/admin/ha.md).
RELEASE_BOUND_S = 60.0
RELEASE_AFTER_KILL_S = 13.0


def unit_watchdog_s() -> float:
    found = re.search(r"^WatchdogSec=(\d+)$", UNIT.read_text(), re.MULTILINE)
    assert found is not None
    return float(found.group(1))


def test_the_units_period_outlasts_a_hung_slurm_command_and_fits_the_bound() -> None:
    period = unit_watchdog_s()
    assert period > DaemonConfig().slurm_timeout_s  # a ping on either side of the command
    assert period + RELEASE_AFTER_KILL_S < RELEASE_BOUND_S


@pytest.fixture
def notify() -> Iterator[tuple[socket.socket, str]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"adaptalloc-unit-notify-{time.monotonic_ns()}"
    sock.bind("\0" + name)
    sock.setblocking(False)
    try:
        yield sock, "@" + name
    finally:
        sock.close()


def drain(sock: socket.socket) -> list[bytes]:
    got = []
    while True:
        try:
            got.append(sock.recv(64))
        except BlockingIOError:
            return got


def test_a_slow_slurm_command_is_bracketed_by_pings(
    tmp_path: Path, notify: tuple[socket.socket, str]
) -> None:
    sock, address = notify
    daemon = offline_daemon(tmp_path, FakeSlurm(), settings="")
    daemon.watchdog = Watchdog({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "200000"})
    daemon.watchdog.ping()
    assert drain(sock) == [b"WATCHDOG=1"]
    with daemon.timed("squeue"):
        time.sleep(0.25)  # longer than the half period: the ping after it is due
    assert drain(sock) == [b"WATCHDOG=1"]
    time.sleep(0.15)
    with daemon.timed("squeue"):
        assert drain(sock) == [b"WATCHDOG=1"]  # due before the command: sent before it
