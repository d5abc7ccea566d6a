"""Slurm refusing the daemon's writes while reads succeed, on the real testbed.

The daemon runs as the unprivileged user ``aatest``: its ``squeue`` reads work, its
``scontrol update``/``release`` on root's jobs are refused, as when a site forgets to make
the daemon's user a Slurm operator. Its heartbeat must go stale (so job_submit.lua holds no
more jobs) and, once the user is made an operator, every held job must be released within
its range, without restarting the daemon.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .daemon_harness import (
    DaemonProcess,
    held,
    job_fields,
)
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration

#: The bound promised for the heartbeat to go once writes fail: unhealthy_after_s is not
#: involved (the first refused release stops it), one sweep and one maintenance pass are.
STALE_BOUND_S = 15.0
RELEASE_BOUND_S = 60.0


#: The venv's interpreter lives under /root (unreadable by the test user), so the daemon runs
#: on Debian's python3 with the venv's packages. redis-py needs ``async_timeout`` on Python
#: before 3.11.3 (Debian 12 has 3.11.2); the standard library's asyncio.timeout is the same
#: thing, so the bootstrap names it so. Nothing of Slurm or Redis is replaced.
BOOTSTRAP = (
    "import asyncio, runpy, sys, types; "
    "shim = types.ModuleType('async_timeout'); shim.timeout = asyncio.timeout; "
    "sys.modules.setdefault('async_timeout', shim); "
    "sys.argv[0] = 'adaptalloc'; runpy.run_module('plugin', run_name='__main__')"
)


class UserDaemon(DaemonProcess):
    """A DaemonProcess run as another Unix user (``runuser``, no shell)."""

    user = "aatest"

    def start(self, wait: bool = True) -> DaemonProcess:
        env = dict(os.environ)
        site = PROJECT_ROOT / ".venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        argv = [
            "runuser",
            "-u",
            self.user,
            "--",
            "env",
            f"PYTHONPATH={PROJECT_ROOT}:{site / 'site-packages'}",
            f"SLURM_CONF={os.environ['SLURM_CONF']}",
            "HOME=/tmp",
            "/usr/bin/python3",
            "-c",
            BOOTSTRAP,
            "daemon",
            *self.args,
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=PROJECT_ROOT
            )
        if wait:
            self.wait_for("the daemon's heartbeat", self.fresh_heartbeat, 60.0)
        return self


def sacctmgr(*args: str) -> None:
    subprocess.run(  # noqa: S603 - fixed argument list, no shell
        ["sacctmgr", "-i", *args],  # noqa: S607 - Slurm's client from PATH
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def unprivileged_state_dir(local_cluster: LocalCluster, slurm: SlurmCLI) -> Iterator[Path]:
    """The daemon's state directory owned by the test user for the test (root's again after);
    the test user is no operator at the start and at the end."""
    state = local_cluster.state_dir / "adaptalloc"
    state.mkdir(exist_ok=True)
    before = state.stat()
    sacctmgr("modify", "user", slurm.test_user, "set", "adminlevel=None")
    subprocess.run(["chown", "-R", slurm.test_user, str(state)], check=True)  # noqa: S603,S607
    try:
        yield state
    finally:
        sacctmgr("modify", "user", slurm.test_user, "set", "adminlevel=None")
        subprocess.run(  # noqa: S603
            ["chown", "-R", f"{before.st_uid}:{before.st_gid}", str(state)],  # noqa: S607
            check=True,
        )


def user_daemon(
    cluster: LocalCluster,
    daemon_factory: Callable[..., DaemonProcess],
    state_dir: Path,
    extra_daemon_settings: str = "",
) -> UserDaemon:
    """A daemon to run as the test user, with a [daemon] config of its own (owned by that user)
    and the scratch Redis; not started."""
    config = state_dir / "test-user-daemon.toml"
    config.write_text(
        "[daemon]\nmetrics_port = 0\nlearn = false\nsweep_interval_s = 1.0\n"
        + extra_daemon_settings
    )
    subprocess.run(["chown", UserDaemon.user, str(config)], check=True)  # noqa: S603,S607
    plain = daemon_factory()
    daemon = UserDaemon(cluster, plain.log_path.parent, scratch_url())
    daemon.args = ["--config", str(config), "--redis-url", scratch_url()]
    daemon.args += ["--state-dir", str(daemon.state_dir)]
    return daemon


def test_refused_writes_stop_the_heartbeat_and_jobs_are_released_once_they_work(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Callable[..., DaemonProcess],
    unprivileged_state_dir: Path,
) -> None:
    # Slurm refusing writes the start-up check cannot foresee (its own test is below).
    daemon = user_daemon(
        local_cluster,
        daemon_factory,
        unprivileged_state_dir,
        "unhealthy_after_s = 10\ncheck_privileges = false\n",
    )
    daemon.start()
    try:
        job = submit_job("--nodes=1-3", "--comment=adaptalloc:v1 app=it-writes", wrap="true")
        refused_at = time.monotonic()
        # Refused: the job stays held, and the heartbeat goes.
        daemon.wait_for("the heartbeat to stop", lambda: not daemon.heartbeat.exists(), 60.0)
        stale_after = time.monotonic() - refused_at
        print(f"heartbeat removed {stale_after:.1f} s after the held job was submitted")
        assert stale_after <= STALE_BOUND_S
        assert held(job_fields(slurm, job))
        assert daemon.events("unhealthy")
        assert "releases" in daemon.events("unhealthy")[-1]["note"]
        # With no heartbeat, job_submit.lua holds nothing new.
        later = submit_job("--nodes=1-3", "--comment=adaptalloc:v1 app=it-writes", wrap="true")
        assert not held(job_fields(slurm, later))
        time.sleep(3.0)  # several sweeps of retries, all refused: still no heartbeat
        assert not daemon.heartbeat.exists()
        assert held(job_fields(slurm, job))
        # Writes work again: the same daemon releases the job, within its range.
        fixed_at = time.monotonic()
        sacctmgr("modify", "user", slurm.test_user, "set", "adminlevel=Operator")
        sacctmgr("add", "user", slurm.test_user, "account=root", "adminlevel=Operator")
        slurm.wait_for(
            f"job {job} released",
            lambda: not held(job_fields(slurm, job)),
            RELEASE_BOUND_S,
        )
        print(f"released {time.monotonic() - fixed_at:.1f} s after writes were allowed")
        decision = daemon.decision(job)
        assert decision is not None
        assert decision["status"] == "released"
        fields = slurm.wait_job_state(job, {"COMPLETED"})
        assert 1 <= int(fields["NumNodes"]) <= 3
        daemon.wait_for("the heartbeat again", daemon.fresh_heartbeat, 30.0)
        assert daemon.events("writes_recovered")
    finally:
        daemon.stop()


def test_a_daemon_without_the_privileges_it_needs_never_beats(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Callable[..., DaemonProcess],
    unprivileged_state_dir: Path,
) -> None:
    daemon = user_daemon(local_cluster, daemon_factory, unprivileged_state_dir)
    daemon.start(wait=False)
    try:
        daemon.wait_for(
            "the privilege check", lambda: bool(daemon.events("privileges_missing")), 60.0
        )
        assert "aatest" in daemon.events("privileges_missing")[0]["error"]
        time.sleep(3.0)  # several maintenance passes: still no heartbeat
        assert not daemon.heartbeat.exists()
        job = submit_job("--nodes=1-3", "--comment=adaptalloc:v1 app=it-privileges", wrap="true")
        assert not held(job_fields(slurm, job))  # the hook holds nothing without a heartbeat
    finally:
        daemon.stop()
