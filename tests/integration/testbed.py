"""What the integration tests know about the local testbed, for fixtures and tests.

``LocalCluster`` describes the running testbed; ``SlurmCLI`` runs Slurm's commands
against it (argument lists, never a shell) and waits for Slurm's asynchronous state
changes with bounded polls that fail with a pointer to the logs.
"""

from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey

PROJECT_ROOT = Path(__file__).resolve().parents[2]
UP_SH = PROJECT_ROOT / "deploy" / "local" / "up.sh"
STATUS_SH = PROJECT_ROOT / "deploy" / "local" / "status.sh"
DOWN_SH = PROJECT_ROOT / "deploy" / "local" / "down.sh"

#: Redis database the tests use; FLUSHDB'd before and after each test.
REDIS_SCRATCH_DB = 15
#: Upper bound for up.sh, which may have to install Debian packages first.
UP_SH_TIMEOUT_S = 1800
#: Upper bound for one Slurm command.
SLURM_CMD_TIMEOUT_S = 60
#: Upper bound for waiting on Slurm state changes (a job finishing, sacct catching up).
#: A readiness bound that turns a hang into a clear failure, not a speed check.
WAIT_TIMEOUT_S = 120.0


def own(name: str, size: str | None = None, user: str | None = None) -> AppKey:
    """The app key a job of `user` (default: the user the tests run as, who submits every job
    not submitted ``as_user``) gets under the default ``[appkey] scope = "user"``."""
    return AppKey(name, size, user if user is not None else getpass.getuser())


def scratch_url(db: int = REDIS_SCRATCH_DB) -> str:
    """The testbed's Redis (``$REDIS_URL``, set by the local_cluster fixture) on database `db`."""
    return os.environ["REDIS_URL"].rsplit("/", 1)[0] + f"/{db}"


def adaptalloc(
    *args: str | Path, cwd: Path, timeout: float = 300.0, redis_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``adaptalloc -q ARGS --redis-url URL`` run by this interpreter (an argument list, never a
    shell) on the scratch database unless `redis_url` is given; stderr holds JSON log lines."""
    return subprocess.run(  # noqa: S603 - our interpreter and module
        [
            sys.executable,
            "-m",
            "plugin",
            "-q",
            *map(str, args),
            "--redis-url",
            redis_url or scratch_url(),
        ],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), PYTHONIOENCODING="utf-8"),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_testbed(env: Mapping[str, str] | None = None) -> None:
    """up.sh starts what is missing (a stopped slurmctld, say) and waits until it answers;
    `env` adds to the environment (ADAPTALLOC_ACCOUNTING_ENFORCE, ...)."""
    proc = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(UP_SH)],
        cwd=PROJECT_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=dict(os.environ, **(env or {})),
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def free_port() -> int:
    """A loopback TCP port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateRedis:
    """A redis-server of one test's own on a free loopback port, without persistence: stopped
    and started again (empty) without touching the testbed's."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, timeout: float = 30.0) -> None:
        """Start it and wait until it answers PING."""
        import redis  # noqa: PLC0415 - only the tests that stop Redis need a client here

        self.procs.append(
            subprocess.Popen(  # noqa: S603 - fixed argument list
                [  # noqa: S607 - the testbed's redis-server, found on PATH as up.sh finds it
                    "redis-server",
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.workdir),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    pytest.fail(f"redis-server on port {self.port} did not start", pytrace=False)
                time.sleep(0.05)

    def signal(self, sig: int) -> None:
        """Send `sig` to the running server (SIGSTOP: it hangs, its connections stay open)."""
        self.procs[-1].send_signal(sig)

    def stop(self) -> None:
        """Stop every server this object started (SIGTERM, then wait)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)  # a frozen server cannot act on SIGTERM
                proc.terminate()
                proc.wait(timeout=30)


@dataclass(frozen=True)
class LocalCluster:
    """The running testbed as ``deploy/local/up.sh`` left it."""

    state_dir: Path
    env: Mapping[str, str]
    up_output: str

    def slurmctld_pid(self) -> int:
        return int((self.state_dir / "run" / "slurmctld.pid").read_text().strip())

    @property
    def slurm_conf(self) -> Path:
        """The generated slurm.conf."""
        return Path(self.env["SLURM_CONF"])

    @property
    def redis_url(self) -> str:
        """``redis://:PASSWORD@127.0.0.1:PORT/0``."""
        return self.env["REDIS_URL"]

    @property
    def node_count(self) -> int:
        """Number of virtual nodes (ADAPTALLOC_NODES when up.sh ran)."""
        return int(self.env["ADAPTALLOC_NODES"])

    @property
    def log_dir(self) -> Path:
        """Where every daemon of the testbed logs."""
        return Path(self.env["ADAPTALLOC_LOG_DIR"])


class SlurmCLI:
    """Runs Slurm's commands against the testbed: argument lists, never a shell.

    Every method fails the test with Slurm's own stderr when a command fails.
    """

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    @property
    def test_user(self) -> str:
        """The testbed's unprivileged Unix user (up.sh creates it)."""
        return self.cluster.env.get("ADAPTALLOC_TEST_USER", "aatest")

    @property
    def other_user(self) -> str:
        """A second unprivileged user, for what one user's jobs can do to another's."""
        return self.cluster.env.get("ADAPTALLOC_OTHER_USER", "aaother")

    def run(
        self, *args: str, check: bool = True, as_user: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one Slurm command, e.g. ``run("scontrol", "release", "12")``.

        ``as_user`` runs it as that Unix user (``runuser``, still no shell), with the
        testbed's SLURM_CONF: what an ordinary user of the cluster can do.
        """
        argv = list(args)
        if as_user is not None:
            argv = [
                "runuser",
                "-u",
                as_user,
                "--",
                "env",
                f"SLURM_CONF={os.environ['SLURM_CONF']}",
                *argv,
            ]
        proc = subprocess.run(  # noqa: S603 - fixed argument list, no shell
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SLURM_CMD_TIMEOUT_S,
            check=False,
        )
        if check and proc.returncode != 0:
            pytest.fail(
                f"{' '.join(args)} failed (exit {proc.returncode}): {proc.stderr.strip()}",
                pytrace=False,
            )
        return proc

    def json(self, *args: str) -> dict[str, Any]:
        """Run a command with ``--json`` and parse its output."""
        out = self.run(*args, "--json").stdout
        data: dict[str, Any] = json.loads(out)
        return data

    def show_job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o ID`` as a dict of its ``Key=Value`` fields.

        Values containing spaces (Command=, WorkDir= with spaces) are not split
        reliably by this simple parser; the fields tests use have none.
        """
        line = self.run("scontrol", "show", "job", "-o", str(job_id)).stdout.strip()
        fields: dict[str, str] = {}
        for word in line.split():
            key, sep, value = word.partition("=")
            if sep:
                fields[key] = value
        return fields

    def sacct_job(self, job_id: int) -> dict[str, Any] | None:
        """The job's record from ``sacct --json``, or None while sacct lacks it."""
        data = self.json("sacct", f"--jobs={job_id}")
        for job in data.get("jobs", []):
            if job.get("job_id") == job_id:
                record: dict[str, Any] = job
                return record
        return None

    def wait_for(
        self, what: str, predicate: Callable[[], bool], timeout: float = WAIT_TIMEOUT_S
    ) -> None:
        """Poll ``predicate`` until true; fail naming ``what`` and the logs if it never is."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail(
                    f"gave up after {timeout:.0f}s waiting for {what}; "
                    f"see the logs in {self.cluster.log_dir}",
                    pytrace=False,
                )
            time.sleep(0.5)

    def wait_job_state(self, job_id: int, states: set[str]) -> dict[str, str]:
        """Wait until ``scontrol show job`` reports one of ``states``; return its fields."""
        fields: dict[str, str] = {}

        def reached() -> bool:
            fields.update(self.show_job(job_id))
            return fields.get("JobState") in states

        self.wait_for(f"job {job_id} to reach {sorted(states)}", reached)
        return fields

    def wait_sacct_job(
        self,
        job_id: int,
        states: set[str],
        where: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """Wait until sacct has the job in one of ``states`` (and ``where`` holds).

        slurmdbd lags slurmctld a little, and right after a job ends its record can
        already say COMPLETED while ``allocation_nodes`` is still 0: pass e.g.
        ``where=lambda r: r["allocation_nodes"] > 0`` to wait for the full record.
        """
        found: dict[str, Any] = {}

        def recorded() -> bool:
            record = self.sacct_job(job_id)
            if record is None or record["state"]["current"] not in states:
                return False
            if where is not None and not where(record):
                return False
            found.update(record)
            return True

        self.wait_for(f"sacct to show job {job_id} in {sorted(states)}", recorded)
        return found

    def node_states(self) -> dict[str, str]:
        """Node name -> state (``idle``, ``allocated``, …) from ``sinfo --json``."""
        return {node["name"]: node["state"] for node in self.json("sinfo")["nodes"]}


SubmitJob = Callable[..., int]
