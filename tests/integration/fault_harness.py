"""What the fault-matrix tests (tests/integration/test_fault_*.py) share.

Every fault test asserts the same promise: every held job is released within its
bound (`RELEASE_BOUND_S`), within the range its user asked for, none rejected, none released
twice, and the heartbeat tells the truth. `FaultOutcome` prints the figure the report keeps
for each fault ("held -> released in N s").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from plugin.slurm.parse import parse_time_minutes

from .daemon_harness import START_TIMEOUT_S, DaemonProcess, held, job_fields
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI

#: The promise's bound: a held job is released this long after the fault at the latest.
RELEASE_BOUND_S = 60.0
RELEASE_LINE = re.compile(r"_release_job_rec: release hold on JobId=(\d+) ")


class EnvDaemon(DaemonProcess):
    """A DaemonProcess with extra environment variables (`extra_env`), and optionally run
    through `bootstrap` (``python -c BOOTSTRAP daemon ...``) instead of ``-m plugin``."""

    extra_env: Mapping[str, str] = {}
    bootstrap: str | None = None
    bootstrap_args: tuple[str, ...] = ()

    def start(self, wait: bool = True) -> DaemonProcess:
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), **self.extra_env}
        head = ["-m", "plugin"]
        if self.bootstrap is not None:
            head = ["-c", self.bootstrap, *self.bootstrap_args]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(  # noqa: S603 - our interpreter and module, no shell
                [sys.executable, *head, "daemon", *self.args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=PROJECT_ROOT,
            )
        if wait:
            self.wait_for("the daemon's heartbeat", self.fresh_heartbeat, START_TIMEOUT_S)
        return self


def as_env_daemon(
    daemon: DaemonProcess,
    env: Mapping[str, str] | None = None,
    bootstrap: str | None = None,
    bootstrap_args: tuple[str, ...] = (),
) -> EnvDaemon:
    """`daemon` (from daemon_factory, so that its teardown applies) turned into an EnvDaemon."""
    daemon.__class__ = EnvDaemon
    assert isinstance(daemon, EnvDaemon)
    daemon.extra_env = dict(env or {})
    daemon.bootstrap = bootstrap
    daemon.bootstrap_args = bootstrap_args
    return daemon


def held_jobs(slurm: SlurmCLI, jobs: Iterable[int]) -> list[int]:
    """The jobs of `jobs` still pending at priority 0."""
    queue = {j["job_id"]: j for j in slurm.json("squeue").get("jobs", [])}
    return [job for job in jobs if job in queue and held(queue[job])]


def wait_released(
    slurm: SlurmCLI, jobs: Iterable[int], since: float, what: str, bound: float = RELEASE_BOUND_S
) -> float:
    """Wait until none of `jobs` is held (failing after `bound` s from `since`, a monotonic
    time); the seconds from `since` to the release, printed as the fault's figure."""
    wanted = list(jobs)
    slurm.wait_for(
        f"{what}: jobs {wanted} released",
        lambda: not held_jobs(slurm, wanted),
        max(bound - (time.monotonic() - since), 1.0),
    )
    took = time.monotonic() - since
    print(f"FAULT {what}: {len(wanted)} held -> released in {took:.1f} s (bound {bound:g} s)")
    return took


def assert_within_range(
    slurm: SlurmCLI, job: int, low: int, high: int, minutes: int | None
) -> None:
    """The job's size lies in [low, high] and its limit is at most `minutes` (Slurm's view;
    None: the job was submitted without a limit, any)."""
    fields = job_fields(slurm, job)
    if not fields:  # finished already: sacct keeps what it ran on
        record = slurm.wait_sacct_job(job, {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT"})
        nodes = int(record["allocation_nodes"] or low)
        assert low <= nodes <= high, (job, nodes)
        return
    shown = slurm.show_job(job)
    bounds = shown["NumNodes"].split("-")
    assert low <= int(bounds[0]) <= int(bounds[-1]) <= high, (job, shown["NumNodes"])
    if minutes is not None:
        limit = parse_time_minutes(shown["TimeLimit"])
        assert limit is not None, (job, shown["TimeLimit"])
        assert limit <= minutes, (job, shown["TimeLimit"])


def releases_logged(cluster: LocalCluster, offset: int) -> Counter[int]:
    """slurmctld's ``release hold on JobId=X`` lines after byte `offset` of its log, per job."""
    raw = (cluster.log_dir / "slurmctld.log").read_bytes()[offset:]
    return Counter(int(m.group(1)) for m in RELEASE_LINE.finditer(raw.decode("utf-8", "replace")))


def log_offset(cluster: LocalCluster) -> int:
    return (cluster.log_dir / "slurmctld.log").stat().st_size


def decisions_of(daemon: DaemonProcess, job: int) -> list[dict[str, Any]]:
    return [e for e in daemon.events("decision") if e.get("job_id") == job]


def state_dir_of(cluster: LocalCluster) -> Path:
    return cluster.state_dir / "adaptalloc"
