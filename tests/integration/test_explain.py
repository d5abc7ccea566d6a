"""``adaptalloc explain`` as the testbed's unprivileged users, against a real daemon: a user
reads why their own job (advise or enforce) got its size, and is refused another user's job
in one line; the explanation files cannot be read or listed by another user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .daemon_harness import DaemonProcess
from .test_daemon_writes import BOOTSTRAP
from .testbed import PROJECT_ROOT, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]


def as_user(user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run a command as `user` (runuser, no shell), with the testbed's SLURM_CONF."""
    return subprocess.run(  # noqa: S603 - fixed argument list, no shell
        ["runuser", "-u", user, "--", "env", f"SLURM_CONF={os.environ['SLURM_CONF']}", *argv],  # noqa: S607
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def explain(user: str, state_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``adaptalloc explain`` run as `user` from this checkout (the venv's packages)."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = PROJECT_ROOT / ".venv" / "lib" / version / "site-packages"
    return as_user(
        user,
        f"PYTHONPATH={PROJECT_ROOT}:{site}",
        "HOME=/tmp",
        "ADAPTALLOC_CONFIG=/nonexistent.toml",  # users need no config: --state-dir
        "/usr/bin/python3",
        "-c",
        BOOTSTRAP,
        "explain",
        "--state-dir",
        str(state_dir),
        *args,
    )


def test_users_read_their_own_explanations_and_are_refused_anothers(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    daemon = daemon_factory(
        config='mode = "advise"\n', policy='[partition.batch]\nmode = "enforce"\n'
    ).start()
    me, other = slurm.test_user, slurm.other_user
    tag = "--comment=adaptalloc:v1 app=explain-it"
    advised = submit_job("--nodes=1-3", "--time=9", tag, wrap="true", as_user=me)
    enforced = submit_job("--nodes=1-3", "--partition=batch", tag, wrap="true", as_user=me)
    theirs = submit_job("--nodes=1-3", tag, wrap="true", as_user=other)
    for job in (advised, enforced, theirs):
        daemon.wait_decision(job)
    state = daemon.state_dir
    uid = int(as_user(me, "id", "-u").stdout)
    other_uid = int(as_user(other, "id", "-u").stdout)
    files = [
        state / "explain" / str(owner) / f"{job}.json"
        for owner, job in ((uid, advised), (uid, enforced), (other_uid, theirs))
    ]
    # written off the decision loop, just after the decision's log line
    daemon.wait_for("the explanation files", lambda: all(f.is_file() for f in files), 30)

    shown = explain(me, state, str(advised))
    assert shown.returncode == 0, shown.stderr
    assert f"Job {advised} (app {me}/explain-it)" in shown.stdout
    assert "advise mode" in shown.stdout
    assert "Asked for: 1-3 nodes, time limit 9 min." in shown.stdout
    doc = json.loads(explain(me, state, str(enforced), "--format", "json").stdout)
    assert (doc["job_id"], doc["mode"], doc["status"]) == (enforced, "enforce", "released")
    assert doc["user"] == me

    for user, job in ((other, advised), (other, enforced), (me, theirs)):
        refused = explain(user, state, str(job))
        assert refused.returncode == 1
        assert refused.stdout == ""
        assert refused.stderr.strip() == (
            f"adaptalloc: error: job {job} is not yours: adaptalloc explains only your own jobs"
        )
    assert explain(other, state, str(theirs)).returncode == 0

    # The files themselves: another user can neither read nor list them.
    path = files[0]
    assert as_user(me, "cat", str(path)).returncode == 0
    assert as_user(other, "cat", str(path)).returncode != 0
    assert as_user(other, "ls", str(state / "explain")).returncode != 0
    assert as_user(other, "ls", str(path.parent)).returncode != 0
