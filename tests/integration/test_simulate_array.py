"""`adaptalloc simulate --slurm-array`: a sweep's cells as a job array on the real testbed,
submitted by the unprivileged user, gathered into the report a local run prints."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .testbed import PROJECT_ROOT, SlurmCLI

pytestmark = pytest.mark.integration

NASA = PROJECT_ROOT / "tests" / "data" / "swf" / "NASA-iPSC-1993-3.1-cln.swf"
SWEEP = ("--jobs", "120", "--load", "0.7,1.0", "--seeds", "2")
#: A readiness bound for the array's cells (a hang becomes a clear failure), not a speed check.
CELLS_TIMEOUT_S = 900.0


def _submitter(slurm: SlurmCLI) -> str | None:
    """The unprivileged test user when it can run this interpreter, else None (root).

    On this machine the virtualenv's Python lives under /root (pyenv), which the test user
    cannot enter, and the system's Python (3.11.2) cannot import redis-py without
    async_timeout: there the array is submitted by root, and the test says so. On a cluster
    where adaptalloc is installed for its users, the user submits and the cells run as it.
    """
    probe = subprocess.run(  # noqa: S603 - fixed argument list
        ["/usr/sbin/runuser", "-u", slurm.test_user, "--", sys.executable, "-c", ""],
        capture_output=True,
        check=False,
    )
    if probe.returncode == 0:
        return slurm.test_user
    print(f"{slurm.test_user} cannot run {sys.executable}: the array is submitted by root")
    return None


def _adaptalloc(*args: str, user: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m plugin -q ARGS` (an argument list), as `user` with the testbed's SLURM_CONF."""
    argv = [sys.executable, "-m", "plugin", "-q", *args]
    if user is not None:
        argv = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={os.environ['SLURM_CONF']}"]
        argv += [sys.executable, "-m", "plugin", "-q", *args]
    return subprocess.run(  # noqa: S603 - our interpreter, an argument list
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=dict(os.environ, PYTHONIOENCODING="utf-8"),
    )


def _home_of(user: str | None, tmp_path: Path) -> Path:
    """A directory `user` owns under tmp_path (its parents traversable), as on a cluster."""
    home = tmp_path / f"as-{user or 'root'}"
    home.mkdir()
    if user is not None:
        shutil.chown(home, user=user)
    for parent in (tmp_path, *tmp_path.parents):
        if parent.stat().st_mode & 0o011 != 0o011:
            parent.chmod(parent.stat().st_mode | 0o011)
    return home


def _json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def test_a_sweep_runs_as_a_job_array_and_gathers_into_the_local_report(
    local_cluster: Any, slurm: SlurmCLI, tmp_path: Path
) -> None:
    user = _submitter(slurm)
    results = _home_of(user, tmp_path) / "sweep"
    proc = _adaptalloc("simulate", str(NASA), *SWEEP, "--slurm-array", str(results), user=user)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    words = proc.stdout.split()
    assert words[:3] == ["Submitted", "4", "cells"], proc.stdout
    job = int(words[words.index("job") + 1].rstrip(";"))
    cells = [results / "cells" / f"{i}.json" for i in range(4)]
    ended = False
    try:
        slurm.wait_for(
            f"the 4 tasks of array job {job} to end",
            lambda: (
                not slurm.run(
                    "squeue", "-h", "-j", str(job), "-o", "%i", check=False
                ).stdout.strip()
            ),
            timeout=CELLS_TIMEOUT_S,
        )
        ended = True
    finally:
        if not ended:
            slurm.run("scancel", str(job), check=False)
    assert all(c.exists() for c in cells), sorted(p.name for p in (results / "logs").iterdir())
    uid = pwd.getpwnam(user or "root").pw_uid
    for cell in cells:  # written by the array's tasks, as the user who submitted
        assert cell.stat().st_uid == uid
    # slurmdbd can hold the first task's record a moment before its array fields (job_id 0)
    record = slurm.wait_sacct_job(job, {"COMPLETED"}, where=lambda r: r["array"]["job_id"] != 0)
    assert record["user"] == (user or "root")
    assert record["array"]["job_id"] == job

    gathered = _json(_adaptalloc("simulate", "--gather", str(results), "--format", "json"))
    local = _json(_adaptalloc("simulate", str(NASA), *SWEEP, "--format", "json"))
    assert list(gathered) == list(local)
    assert gathered["loads"] == local["loads"]  # the same figures, intervals and all
    assert [x["load"] for x in gathered["loads"]] == [0.7, 1.0]
    assert gathered["policies"]["adaptive"]["ci95"]["mean_response_s"] is not None
    for key in ("curves", "dropped", "applications", "settings", "adaptive_rules", "refits"):
        assert gathered[key] == local[key], key
    assert gathered["trace"] == dict(local["trace"], path=str(NASA.resolve()))


def test_a_hostile_directory_name_is_refused_before_anything_is_submitted(
    local_cluster: Any, slurm: SlurmCLI, tmp_path: Path
) -> None:
    user = _submitter(slurm)
    home = _home_of(user, tmp_path)
    before = slurm.run("squeue", "-h", "-o", "%i").stdout.split()
    for name in ("x\n#SBATCH --uid=0", "out-%u"):
        proc = _adaptalloc(
            "simulate", str(NASA), "--jobs", "20", "--slurm-array", str(home / name), user=user
        )
        assert proc.returncode != 0
        assert "Traceback" not in proc.stderr
        assert "adaptalloc: error:" in proc.stderr
        assert "control character or a %" in proc.stderr
        assert not (home / name).exists()
    assert slurm.run("squeue", "-h", "-o", "%i").stdout.split() == before
