"""Running ``adaptalloc daemon`` against the testbed, for the daemon's tests and benchmarks.

The daemon runs as a real subprocess (``python -m plugin daemon``) on the testbed's state
directory (the one job_submit.lua reads), with the scratch Redis database the
``redis_client`` fixture flushes, and logs JSON lines to a file the tests read. Every test
ends with the heartbeat removed, so the other tests' jobs are never held, and a testbed
daemon started by ``up.sh --with-daemon`` is stopped first (one daemon per state dir).

Also a pytest plugin (tests/conftest.py loads it): the ``daemon_factory`` fixture is asked
for by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plugin.daemon import marks

from .testbed import DOWN_SH, PROJECT_ROOT, LocalCluster, SlurmCLI, scratch_url

#: Upper bound for the daemon to start (heartbeat written) or stop.
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 90.0


class DaemonProcess:
    """One ``adaptalloc daemon`` subprocess and what it logged."""

    def __init__(
        self,
        cluster: LocalCluster,
        workdir: Path,
        redis_url: str,
        config: str = "",
        policy: str | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.cluster = cluster
        self.state_dir = cluster.state_dir / "adaptalloc"
        self.heartbeat = self.state_dir / "heartbeat"
        self.log_path = workdir / f"daemon-{time.monotonic_ns()}.log"
        self.config_path = workdir / "adaptalloc.toml"
        base = "[daemon]\nmetrics_port = 0\nlearn = false\nsweep_interval_s = 1.0\n"
        self.config_path.write_text(base + config)
        self.args = [
            "--config",
            str(self.config_path),
            "--redis-url",
            redis_url,
            "--state-dir",
            str(self.state_dir),
            *args,
        ]
        if policy is not None:
            policy_path = workdir / "policy.toml"
            policy_path.write_text(policy)
            self.args += ["--policy", str(policy_path)]
        self.proc: subprocess.Popen[bytes] | None = None

    #: The source tree the daemon runs from (a benchmark may run another build's).
    tree: Path = PROJECT_ROOT

    def start(self, wait: bool = True) -> DaemonProcess:
        env = dict(os.environ, PYTHONPATH=str(self.tree))
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(  # noqa: S603 - our interpreter and module, no shell
                [sys.executable, "-m", "plugin", "daemon", *self.args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=self.tree,
            )
        if wait:
            self.wait_for("the daemon's heartbeat", self.fresh_heartbeat, START_TIMEOUT_S)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def fresh_heartbeat(self) -> bool:
        try:
            stamp = int(self.heartbeat.read_text().strip())
        except (OSError, ValueError):
            return False
        self._check_alive()
        return time.time() - stamp <= 10

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            pytest.fail(
                f"the daemon exited with {self.proc.returncode}; its log:\n"
                + self.log_text()[-3000:],
                pytrace=False,
            )

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM and wait; the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def wait_exit(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """Wait for an exit already asked for (another SIGTERM would force it); the exit code."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(
                f"the daemon did not stop within {timeout:.0f}s; its log's tail:\n"
                + self.log_text()[-2000:],
                pytrace=False,
            )

    def kill(self) -> None:
        """SIGKILL (no teardown): the heartbeat stays behind until the test removes it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        out = []
        for line in self.log_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and (name is None or event.get("event") == name):
                out.append(event)
        return out

    def decision(self, job_id: int) -> dict[str, Any] | None:
        found = [e for e in self.events("decision") if e.get("job_id") == job_id]
        return found[-1] if found else None

    def wait_decision(self, job_id: int, timeout: float = 60.0) -> dict[str, Any]:
        found: dict[str, Any] = {}

        def decided() -> bool:
            self._check_alive()
            event = self.decision(job_id)
            if event is not None:
                found.update(event)
            return event is not None

        self.wait_for(f"the daemon's decision on job {job_id}", decided, timeout)
        return found

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail(
                    f"gave up after {timeout:.0f}s waiting for {what}; daemon log tail:\n"
                    + self.log_text()[-2000:],
                    pytrace=False,
                )
            time.sleep(0.1)


def with_redis_url(daemon: DaemonProcess, url: str) -> DaemonProcess:
    """`daemon`, not yet started, pointed at another Redis (a Sentinel or Cluster URL)."""
    at = daemon.args.index("--redis-url")
    daemon.args[at + 1] = url
    return daemon


def stop_testbed_daemon(cluster: LocalCluster) -> None:
    """Stop a daemon up.sh --with-daemon started (it holds the state directory)."""
    pid_file = cluster.state_dir / "run" / "adaptalloc-daemon.pid"
    if pid_file.exists():
        subprocess.run(  # noqa: S603 - fixed argument list, no shell
            [str(DOWN_SH), "--daemon-only"],
            cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=180,
            check=False,
        )


@pytest.fixture
def daemon_factory(
    local_cluster: LocalCluster, redis_client: Any, tmp_path: Path
) -> Iterator[Callable[..., DaemonProcess]]:
    """``daemon_factory(config="", policy=None, args=()) -> DaemonProcess`` (not started).

    Uses the scratch Redis database; at teardown every daemon is stopped (killed if need
    be) and the heartbeat removed.
    """
    stop_testbed_daemon(local_cluster)
    made: list[DaemonProcess] = []

    def make(
        config: str = "", policy: str | None = None, args: tuple[str, ...] = ()
    ) -> DaemonProcess:
        process = DaemonProcess(local_cluster, tmp_path, scratch_url(), config, policy, args)
        made.append(process)
        return process

    yield make
    for process in made:
        if process.alive():
            process.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
            try:
                process.proc.wait(STOP_TIMEOUT_S)  # type: ignore[union-attr]
            except subprocess.TimeoutExpired:
                process.kill()
    (local_cluster.state_dir / "adaptalloc" / "heartbeat").unlink(missing_ok=True)
    (local_cluster.state_dir / "adaptalloc" / "modes").unlink(missing_ok=True)


def job_fields(slurm: SlurmCLI, job_id: int) -> dict[str, Any]:
    """The job as ``squeue --json`` shows it (admin_comment with its spaces), or {}."""
    for job in slurm.json("squeue").get("jobs", []):
        if job.get("job_id") == job_id:
            found: dict[str, Any] = job
            return found
    return {}


def journal_kept_before_release(
    slurm: SlurmCLI, jobs: list[int], state_dir: Path, app: str, reason: str
) -> None:
    """What a daemon killed between a batch's record and its release leaves: each job's
    marker replaced by a "kept" record (range 1-2), and ``inflight.json`` naming them, in the
    journal's first layout (no version, no submitted limit), which a newer daemon still reads."""
    journal: dict[str, Any] = {}
    for job in jobs:
        fields = job_fields(slurm, job)
        record = marks.admin_comment(marks.kept_record(1, 2, "fallback"))
        slurm.run("scontrol", "update", f"JobId={job}", f"AdminComment={record}")
        journal[str(job)] = {
            "submit": fields["submit_time"],
            "action": "keep",
            "comment": record,
            "resize": None,
            "rule": "fallback",
            "fail_open": None,
            "app": app,
            "reason": reason,
            "range": [1, 2],
        }
    (state_dir / "inflight.json").write_text(json.dumps(journal))


def held(job: dict[str, Any]) -> bool:
    return job.get("job_state") == "PENDING" and job.get("priority") == 0


def assert_capped_release(
    slurm: SlurmCLI, job_id: int, decision: dict[str, Any], nodes: int, asked: str
) -> dict[str, str]:
    """The decision released `job_id` pinned at no more than `nodes` nodes with its limit
    left as the user wrote it (`asked`, as scontrol shows it: above the job's maximum, so
    Slurm decides whether it starts), and Slurm's job shows exactly that; its fields."""
    assert decision["status"] == "released"
    n, limit = decision["nodes"], decision["new_time_limit_min"]
    assert 1 <= n <= nodes
    assert limit is None, f"a limit above the maximum was changed to {limit} min"
    fields = slurm.show_job(job_id)
    assert fields["NumNodes"] == f"{n}-{n}"
    assert fields["TimeLimit"] == asked
    return fields
