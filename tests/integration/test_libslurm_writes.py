"""The libslurm writer (plugin/slurm/libslurm_backend.py) against the real testbed: each
held job's resize, time limit, admin comment and release in one update, for many jobs; a
vanished job refused alone; a hostile comment stored verbatim; a user without the
privileges refused for every job with nothing changed (the applier then fails open through
its step-by-step path, tests/integration/test_daemon_writes.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from integration.sdiag import reset_rpc_stats, rpc_counts
from plugin.slurm.cli_backend import CliSlurmReader
from plugin.slurm.libslurm_backend import LibslurmSlurm, import_binding, probe_binding
from plugin.slurm.writer import JobUpdate, Resize

from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI

pytestmark = pytest.mark.integration

BINDING = import_binding()
needs_binding = pytest.mark.skipif(
    BINDING is None, reason="the libslurm binding is not built (deploy/setup.sh)"
)
RELEASE_LINE = re.compile(r"_release_job_rec: release hold on JobId=(\d+) ")
#: Quotes, a command substitution, backticks, a backslash, a forged field, non-ASCII.
PWNED = PROJECT_ROOT / ".local" / "libslurm-test-pwned"
HOSTILE = f"adaptalloc:v1 app=x\"; $(touch {PWNED}) `id` \\ ;' Comment=forged AdminComment=é"


def held_jobs(
    submit_job: Callable[..., int], slurm: SlurmCLI, count: int, as_user: str | None
) -> list[int]:
    """`count` jobs held at submission (priority 0, JobHeldUser) that stay pending once
    released (a begin time an hour ahead), with a range of 1-4 nodes."""
    return [
        submit_job("--hold", "--nodes=1-4", "--begin=now+3600", wrap="true", as_user=as_user)
        for _ in range(count)
    ]


@needs_binding
def test_the_binding_matches_the_testbed(local_cluster: LocalCluster) -> None:
    assert probe_binding() == CliSlurmReader().version()[:2]


@needs_binding
def test_many_jobs_each_in_one_update_and_a_vanished_one_blocks_none(
    local_cluster: LocalCluster, slurm: SlurmCLI, submit_job: Callable[..., int]
) -> None:
    assert BINDING is not None
    jobs = held_jobs(submit_job, slurm, 12, slurm.test_user)
    vanished = jobs.pop(5)
    slurm.run("scancel", str(vanished))
    offset = (local_cluster.log_dir / "slurmctld.log").stat().st_size
    writer = LibslurmSlurm(BINDING, parallelism=4)
    updates = [
        JobUpdate(j, Resize(j, 2, 2, 10 + k), f"{HOSTILE} n={k}")
        for k, j in enumerate([*jobs, vanished])
    ]
    refused = writer.update_jobs(updates)
    assert list(refused) == [vanished]
    assert refused[vanished]  # Slurm's own words, e.g. "Job/step already completing or completed"
    seen = {r.job_id: r for r in CliSlurmReader().jobs() if r.job_id in jobs}
    for k, j in enumerate(jobs):
        job = seen[j]
        assert (job.nodes_min, job.nodes_max, job.time_limit_min) == (2, 2, 10 + k)
        assert job.admin_comment == f"{HOSTILE} n={k}"  # verbatim, as one C string
        assert job.state == "PENDING"
        assert job.priority
        assert job.state_reason != "JobHeldUser"  # released (BeginTime once scheduled)
    log = (local_cluster.log_dir / "slurmctld.log").read_bytes()[offset:].decode("utf-8", "replace")
    released = Counter(int(m.group(1)) for m in RELEASE_LINE.finditer(log))
    assert released == Counter(jobs)  # each once, in its own update; the vanished one not
    assert not PWNED.exists()
    # The admin comments read back through the binding: the field itself, verbatim; a job id
    # slurmctld does not know is left out.
    unknown = max(jobs) + 100000
    comments = writer.held_admin_comments([*jobs, unknown])
    assert comments == {j: f"{HOSTILE} n={k}" for k, j in enumerate(jobs)}


#: Runs update_jobs as another user: job ids in argv, the refusals as JSON on stdout.
AS_USER = (
    "import json, sys; "
    "from plugin.slurm.libslurm_backend import LibslurmSlurm, import_binding; "
    "from plugin.slurm.writer import JobUpdate, Resize; "
    "ids = [int(a) for a in sys.argv[1:]]; "
    "w = LibslurmSlurm(import_binding()); "
    "print(json.dumps(w.update_jobs([JobUpdate(j, Resize(j, 2, 2, 9), 'adaptalloc:v1 x') "
    "for j in ids])))"
)


@needs_binding
def test_without_privileges_every_job_is_refused_and_left_as_it_was(
    slurm: SlurmCLI, submit_job: Callable[..., int]
) -> None:
    jobs = held_jobs(submit_job, slurm, 3, None)  # root's jobs; the test user may not touch them
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = PROJECT_ROOT / ".venv" / "lib" / version / "site-packages"
    out = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [  # noqa: S607
            "runuser",
            "-u",
            slurm.test_user,
            "--",
            "env",
            f"PYTHONPATH={PROJECT_ROOT}:{site}",
            f"SLURM_CONF={os.environ['SLURM_CONF']}",
            "HOME=/tmp",
            "/usr/bin/python3",
            "-c",
            AS_USER,
            *map(str, jobs),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=PROJECT_ROOT,
    ).stdout
    refused = {int(k): v for k, v in json.loads(out.splitlines()[-1]).items()}
    assert set(refused) == set(jobs)
    assert all("denied" in text.lower() for text in refused.values()), refused
    seen = {r.job_id: r for r in CliSlurmReader().jobs() if r.job_id in jobs}
    for j in jobs:
        job = seen[j]
        assert (job.nodes_min, job.nodes_max, job.priority) == (1, 4, 0)
        assert job.state_reason == "JobHeldUser"
        assert not job.admin_comment


@needs_binding
def test_the_daemon_costs_slurmctld_one_update_and_no_read_of_its_own_per_held_job(
    slurm: SlurmCLI, submit_job: Callable[..., int], daemon_factory: Callable[..., Any]
) -> None:
    """What the latency work is for, counted by slurmctld itself (sdiag): with the libslurm
    backend a held job's resize, limit, comment and release are one REQUEST_UPDATE_JOB
    (three with scontrol), and its admin comment comes with the cycle's queue read
    (REQUEST_JOB_INFO, shared by the jobs of a cycle): no REQUEST_JOB_INFO_SINGLE per job
    (before the libslurm queue read: one each) and no REQUEST_FED_INFO."""
    daemon = daemon_factory(config='[slurm]\nbackend = "libslurm"\n').start()
    assert daemon.events("daemon_started")[0]["backend"] == "libslurm"
    reset_rpc_stats()
    jobs = [
        submit_job("--nodes=1-4", "--begin=now+3600", wrap="true", as_user=slurm.test_user)
        for _ in range(6)
    ]
    for job in jobs:
        assert daemon.wait_decision(job)["status"] == "released"
    counts = rpc_counts()
    daemon.stop()
    assert counts.get("REQUEST_SUBMIT_BATCH_JOB") == len(jobs)
    assert counts.get("REQUEST_UPDATE_JOB") == len(jobs)
    assert "REQUEST_JOB_INFO_SINGLE" not in counts
    assert counts.get("REQUEST_JOB_INFO", 0) >= 1
    assert "REQUEST_FED_INFO" not in counts
