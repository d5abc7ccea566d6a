"""Signals sent to a real ``adaptalloc daemon`` process, with Slurm's commands replaced by
scripts on PATH (no cluster needed): SIGHUP reloads, SIGTERM stops cleanly and removes the
heartbeat, a second SIGTERM stops at once, and a daemon that cannot sweep stops beating.

Real processes and signals, so it lives with the integration tests (it needs no testbed).
Every step waits for what the daemon does (a log event, a file) with a generous timeout;
nothing sleeps and then asserts on what time has passed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from .testbed import PROJECT_ROOT

pytestmark = pytest.mark.slow


def write_exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


class Daemon:
    def __init__(self, tmp: Path, squeue: str) -> None:
        self.bin = tmp / "bin"
        self.bin.mkdir()
        write_exe(self.bin / "squeue", f"#!/bin/sh\n{squeue}\n")
        for name in ("sinfo", "scontrol", "sacct"):
            write_exe(self.bin / name, "#!/bin/sh\nexit 1\n")
        self.state = tmp / "state"
        self.log = tmp / "daemon.log"
        self.config = tmp / "adaptalloc.toml"
        self.config.write_text(
            "[daemon]\nmetrics_port = 0\nlearn = false\nsweep_interval_s = 0.2\n"
            "slurm_timeout_s = 60.0\nheartbeat_interval_s = 0.5\nunhealthy_after_s = 2.0\n"
        )
        env = dict(
            os.environ,
            PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            PYTHONPATH=str(PROJECT_ROOT),
            ADAPTALLOC_STATE_DIR=str(tmp / "no-testbed"),
        )
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(  # noqa: S603 - our interpreter and module
                [
                    sys.executable,
                    "-m",
                    "plugin",
                    "daemon",
                    "--config",
                    str(self.config),
                    "--state-dir",
                    str(self.state),
                    "--redis-url",
                    "redis://127.0.0.1:1/0",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=tmp,
            )

    def events(self, name: str) -> list[dict[str, Any]]:
        out = []
        for line in self.log.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == name:
                out.append(event)
        return out

    def wait(self, what: str, predicate: Callable[[], bool], timeout: float = 60.0) -> None:
        """Poll `predicate` until true; fail naming `what`, with the log's tail, after `timeout`."""
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"{what}; log:\n{self.log.read_text()[-2000:]}"
            time.sleep(0.05)


def failing_for(daemon: Daemon) -> float:
    """Seconds between the first and the last ``sweep_failed`` event, by their timestamps."""
    stamps = [datetime.fromisoformat(e["timestamp"]) for e in daemon.events("sweep_failed")]
    return (max(stamps) - min(stamps)).total_seconds() if stamps else 0.0


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Callable[[str], Daemon]]:
    made: list[Daemon] = []

    def make(squeue: str) -> Daemon:
        made.append(Daemon(tmp_path, squeue))
        return made[-1]

    yield make
    for daemon in made:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait(10)


def test_sighup_reloads_and_sigterm_stops_cleanly(daemons: Callable[[str], Daemon]) -> None:
    daemon = daemons("exit 0")  # an empty queue, quickly
    heartbeat = daemon.state / "heartbeat"
    daemon.wait("the heartbeat", heartbeat.exists)
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait("the reload", lambda: bool(daemon.events("config_reloaded")))
    assert daemon.proc.poll() is None
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(30) == 0
    assert not heartbeat.exists()
    assert daemon.events("daemon_stopped")[-1]["forced"] is False


def test_a_second_sigterm_stops_at_once(daemons: Callable[[str], Daemon]) -> None:
    daemon = daemons("exit 0")
    daemon.wait("the heartbeat", (daemon.state / "heartbeat").exists)
    inside = daemon.bin.parent / "inside-squeue"
    # Slurm hangs now, for longer than every timeout below (slurm_timeout_s is 60).
    (daemon.bin / "squeue").write_text(f"#!/bin/sh\ntouch '{inside}'\nexec sleep 600\n")
    daemon.wait("the loop inside squeue", inside.exists)
    daemon.proc.send_signal(signal.SIGTERM)
    daemon.wait("the first SIGTERM", lambda: bool(daemon.events("stop_requested")))
    assert daemon.proc.poll() is None  # the first one waits for the jobs in hand
    daemon.proc.send_signal(signal.SIGTERM)
    # Within 30 s, while squeue still hangs (60 s timeout, 600 s sleep): only a forced stop
    # can end it this soon, and the daemon says so.
    assert daemon.proc.wait(30) == 0
    assert daemon.events("daemon_stopped")[-1]["forced"] is True
    assert not (daemon.state / "heartbeat").exists()


def test_no_heartbeat_while_the_queue_cannot_be_read(daemons: Callable[[str], Daemon]) -> None:
    daemon = daemons("echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1")
    # Failed sweeps spanning four heartbeat intervals (0.5 s), by the daemon's own clock:
    # each was a chance to beat, and none did.
    daemon.wait("failed sweeps over 2 s", lambda: failing_for(daemon) >= 2.0)
    assert not (daemon.state / "heartbeat").exists()
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(30) == 0
