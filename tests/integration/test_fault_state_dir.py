"""Fault matrix, the state directory: read-only, and on a full disk.

The testbed's real state directory (the one job_submit.lua reads) is made read-only with a
read-only bind mount over itself, or replaced for the test by a small tmpfs that the test
fills up; the mounts are undone at teardown. Slurm and Redis are the testbed's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .daemon_harness import (
    DaemonProcess,
    held,
    job_fields,
)
from .fault_harness import (
    assert_within_range,
    decisions_of,
    log_offset,
    releases_logged,
    state_dir_of,
    wait_released,
)
from .testbed import LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
#: How soon the heartbeat must be gone once it cannot be written: a beat or two.
HEARTBEAT_GONE_S = 10.0


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)  # noqa: S603,S607


def umount(path: Path) -> None:
    """Unmount `path`; lazily (at once for new lookups) when a process still has a file open
    there: a failed test's daemon is stopped only after this fixture's teardown."""
    for _ in range(10):
        if subprocess.run(["umount", str(path)], capture_output=True, check=False).returncode == 0:  # noqa: S603,S607
            return
        time.sleep(0.2)
    subprocess.run(["umount", "--lazy", str(path)], check=True, capture_output=True)  # noqa: S603,S607


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """`path` read-only (a read-only bind mount over itself) until the block ends."""
    mount("--bind", str(path), str(path))
    try:
        mount("-o", "remount,ro,bind", str(path))
        yield
    finally:
        umount(path)


@pytest.fixture
def small_state_dir(local_cluster: LocalCluster) -> Iterator[Path]:
    """The state directory on a 1 MiB tmpfs of its own for the test (the real one after)."""
    path = state_dir_of(local_cluster)
    path.mkdir(exist_ok=True)
    mount("-t", "tmpfs", "-o", "size=1m,mode=755", "adaptalloc-test", str(path))
    try:
        yield path
    finally:
        umount(path)


def fill(path: Path) -> Path:
    """Fill the file system of `path` up (a file named filler); the filler's path."""
    filler = path / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    written = -1
    try:
        while written != 0:
            try:
                written = os.write(fd, b"\0" * 4096)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                written = 0
    finally:
        os.close(fd)
    return filler


def test_a_read_only_state_dir_strands_nothing_and_the_daemon_stops_cleanly(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    """Before the fix the daemon died on its way out (unlinking the heartbeat raised EROFS,
    which only FileNotFoundError was guarded against), leaving the jobs held meanwhile held
    for ever; now it releases them and exits 0."""
    state = state_dir_of(local_cluster)
    since = log_offset(local_cluster)
    daemon = daemon_factory().start()
    daemon.signal(signal.SIGSTOP)
    try:
        first = [
            submit_job("--nodes=1-3", "--time=10", "--comment=adaptalloc:v1 app=it-ro", wrap="true")
            for _ in range(2)
        ]
        assert all(held(job_fields(slurm, j)) for j in first)
    finally:
        daemon.signal(signal.SIGCONT)
    with read_only(state):
        began = time.monotonic()
        wait_released(slurm, first, began, "state dir read-only, daemon running")
        # The heartbeat can be neither renewed nor removed: the daemon says so, and the hook
        # stops holding once it is stale (new jobs are not held anyway: no spool line).
        daemon.wait_for("heartbeat_stuck", lambda: bool(daemon.events("heartbeat_stuck")), 30.0)
        assert daemon.events("heartbeat_failed")
        unheld = submit_job("--nodes=1-3", "--comment=adaptalloc:v1 app=it-ro", wrap="true")
        assert not held(job_fields(slurm, unheld))
    # Writable again: the daemon beats again. Jobs held just before it goes read-only, then
    # a stop.
    daemon.wait_for("the heartbeat again", daemon.fresh_heartbeat, 30.0)
    daemon.signal(signal.SIGSTOP)
    try:
        last = [
            submit_job("--nodes=1-3", "--time=10", "--comment=adaptalloc:v1 app=it-ro", wrap="true")
            for _ in range(2)
        ]
        assert all(held(job_fields(slurm, j)) for j in last)
        with read_only(state):
            stopped = time.monotonic()
            daemon.signal(signal.SIGTERM)
            daemon.signal(signal.SIGCONT)
            assert daemon.wait_exit() == 0, daemon.log_text()[-2000:]
            wait_released(slurm, last, stopped, "state dir read-only, daemon stopped (SIGTERM)")
    finally:
        daemon.signal(signal.SIGCONT)
    assert "Traceback" not in daemon.log_text()
    released = releases_logged(local_cluster, since)
    for job in [*first, *last]:
        assert_within_range(slurm, job, 1, 3, 10)
        assert released[job] == 1
        assert len(decisions_of(daemon, job)) == 1
    assert released[unheld] == 0


def test_a_full_disk_stops_the_heartbeat_at_once_and_strands_nothing(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    small_state_dir: Path,
) -> None:
    """Before the fix a heartbeat that could not be written stayed behind, fresh for the hook
    for up to heartbeat_max_age (15 s) while the daemon could no longer renew it, and left a
    half-written temporary file; now it goes at the first failed beat."""
    since = log_offset(local_cluster)
    daemon = daemon_factory().start()
    daemon.signal(signal.SIGSTOP)
    try:
        jobs = [
            submit_job(
                "--nodes=2-4", "--time=10", "--comment=adaptalloc:v1 app=it-full", wrap="true"
            )
            for _ in range(3)
        ]
        assert all(held(job_fields(slurm, j)) for j in jobs)
        filler = fill(small_state_dir)
    finally:
        daemon.signal(signal.SIGCONT)
    full_at = time.monotonic()
    wait_released(slurm, jobs, full_at, "state dir on a full disk")
    daemon.wait_for("the heartbeat to go", lambda: not daemon.heartbeat.exists(), HEARTBEAT_GONE_S)
    print(f"heartbeat removed {time.monotonic() - full_at:.1f} s after the disk filled up")
    assert daemon.events("heartbeat_failed")
    assert not list(small_state_dir.glob(".heartbeat.*"))
    unheld = submit_job("--nodes=2-4", "--comment=adaptalloc:v1 app=it-full", wrap="true")
    assert not held(job_fields(slurm, unheld))
    # Space again: the heartbeat comes back and jobs are held and decided again.
    filler.unlink()
    daemon.wait_for("the heartbeat again", daemon.fresh_heartbeat, 30.0)
    after = submit_job("--nodes=2-4", "--comment=adaptalloc:v1 app=it-full", wrap="true")
    assert daemon.wait_decision(after)["status"] == "released"
    assert daemon.stop() == 0
    released = releases_logged(local_cluster, since)
    for job in [*jobs, after]:
        assert_within_range(slurm, job, 2, 4, 10 if job != after else None)
        assert released[job] == 1
        assert len(decisions_of(daemon, job)) == 1
    assert released[unheld] == 0
