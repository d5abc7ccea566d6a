"""Fault matrix: a daemon that hangs without dying (SIGSTOP here).

It keeps the state directory's lock, so the orphan release leaves its jobs alone; what
frees them is systemd's watchdog (deploy/systemd/adaptalloc.service, WatchdogSec): the
daemon pings ``WATCHDOG=1`` to ``$NOTIFY_SOCKET`` from its loop, and a hung one stops. The
test plays systemd's side with a real datagram socket: the pings come while the daemon
works, stop while it hangs, and then (as systemd would) the daemon is killed and
``--release-held`` (the unit's ExecStopPost) releases its jobs.
"""

from __future__ import annotations

import re
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .daemon_harness import (
    DaemonProcess,
    held,
    job_fields,
)
from .fault_harness import RELEASE_BOUND_S, as_env_daemon, assert_within_range, wait_released
from .testbed import PROJECT_ROOT, SlurmCLI, SubmitJob, adaptalloc

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
WATCHDOG_USEC = 2_000_000  # a 2 s period: pings every 1 s
UNIT = PROJECT_ROOT / "deploy" / "systemd" / "adaptalloc.service"


def unit_watchdog_s() -> float:
    """The unit's WatchdogSec: how long systemd waits for a ping before it kills."""
    found = re.search(r"^WatchdogSec=(\d+)$", UNIT.read_text(), re.MULTILINE)
    assert found is not None
    return float(found.group(1))


@pytest.fixture
def notify_socket() -> Iterator[socket.socket]:
    """A datagram socket in the abstract namespace, as systemd's notify socket."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(f"\0adaptalloc-test-notify-{time.monotonic_ns()}")
    sock.settimeout(0.2)
    try:
        yield sock
    finally:
        sock.close()


def pings(sock: socket.socket, seconds: float) -> list[bytes]:
    got = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            got.append(sock.recv(256))
        except TimeoutError:
            continue
    return got


def test_a_hung_daemon_stops_pinging_the_watchdog_and_its_jobs_are_released(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    notify_socket: socket.socket,
    tmp_path: Path,
) -> None:
    name = notify_socket.getsockname()
    address = "@" + (name.decode() if isinstance(name, bytes) else name).lstrip("\0")
    daemon = as_env_daemon(
        daemon_factory(),
        env={"NOTIFY_SOCKET": address, "WATCHDOG_USEC": str(WATCHDOG_USEC)},
    ).start()
    working = pings(notify_socket, 4.0)
    assert working.count(b"WATCHDOG=1") >= 2, working
    daemon.signal(signal.SIGSTOP)  # hung: alive, lock held, heartbeat going stale
    hung_at = time.monotonic()
    jobs = [
        submit_job("--nodes=1-3", "--time=10", "--comment=adaptalloc:v1 app=it-hung", wrap="true")
        for _ in range(2)
    ]
    assert all(held(job_fields(slurm, j)) for j in jobs)
    pings(notify_socket, 0.5)  # drop what was sent before the stop
    assert pings(notify_socket, 3.0) == []  # > one period without a ping: systemd acts
    orphaned = adaptalloc(
        "daemon",
        "--release-held",
        "--if-orphaned",
        "--state-dir",
        str(daemon.state_dir),
        cwd=tmp_path,
    )
    assert "nothing released" in orphaned.stdout  # the hung daemon still holds the lock
    assert all(held(job_fields(slurm, j)) for j in jobs)
    # systemd: watchdog timeout -> kill (SIGABRT; SIGKILL here) -> ExecStopPost.
    daemon.kill()
    done = adaptalloc(
        "daemon", "--release-held", "--state-dir", str(daemon.state_dir), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    took = wait_released(slurm, jobs, hung_at, "daemon hung (SIGSTOP), watchdog kill, ExecStopPost")
    period = unit_watchdog_s()
    print(f"with WatchdogSec={period:g} in the unit: about {period + took:.0f} s after the hang")
    assert period + took < RELEASE_BOUND_S
    for job in jobs:
        assert_within_range(slurm, job, 1, 3, 10)
