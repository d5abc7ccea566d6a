"""The libslurm queue read (LibslurmSlurm.pending_jobs, plugin/slurm/libslurm_jobs.py)
against the real testbed: for a varied set of pending jobs (an unprivileged user's, hostile
names and comments, task counts, tasks per node, several partitions, limits, holds, an
array, one that runs) it gives the ``squeue --Format`` read's records field by field; the
admin comments come from the same read, verbatim; an unchanged queue is answered "no
change" and a change is seen; a binding without the read falls back to ``squeue``."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from plugin.slurm.cli_backend import CliSlurmReader
from plugin.slurm.libslurm_backend import LibslurmSlurm, import_binding
from plugin.slurm.records import JobRecord

from .testbed import PROJECT_ROOT, SlurmCLI

pytestmark = pytest.mark.integration

BINDING = import_binding()
needs_binding = pytest.mark.skipif(
    BINDING is None, reason="the libslurm binding is not built (deploy/setup.sh)"
)
PWNED = PROJECT_ROOT / ".local" / "libslurm-read-pwned"
#: Quotes, a command substitution, backticks, a backslash, a newline, forged fields and a
#: squeue-looking separator, non-ASCII.
HOSTILE = f'x"; $(touch {PWNED}) `id` \\ ~R~ AdminComment=forged\nJobId=1 JobName=é'
LATER = "--begin=now+3600"  # stays pending (BeginTime) unless held


def comparable(records: list[JobRecord], ids: set[int]) -> dict[int, JobRecord]:
    """The records of `ids`, ``source`` left out (it names the reader)."""
    return {r.job_id: dataclasses.replace(r, source="") for r in records if r.job_id in ids}


def wait_until(predicate: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


@needs_binding
def test_the_libslurm_read_gives_squeues_records_field_by_field(
    slurm: SlurmCLI, submit_job: Callable[..., int]
) -> None:
    assert BINDING is not None
    user = slurm.test_user
    jobs = {
        "hostile": submit_job(
            "--nodes=1-4",
            LATER,
            f"--job-name={HOSTILE}",
            f"--comment={HOSTILE}",
            wrap="true",
            as_user=user,
        ),
        "tasks": submit_job("--nodes=2-4", "--ntasks=8", LATER, wrap="true", as_user=user),
        "per_node": submit_job(
            "--nodes=1-3",
            "--ntasks-per-node=2",
            "--cpus-per-task=2",
            LATER,
            wrap="true",
            as_user=user,
        ),
        "tasks_no_nodes": submit_job("--ntasks=8", "--ntasks-per-node=4", LATER, wrap="true"),
        "partitions": submit_job(
            "--partition=debug,big", "--nodes=1-2", "--time=90", LATER, wrap="true", as_user=user
        ),
        "days": submit_job("--nodes=2-8", "--time=2-03:04:00", LATER, wrap="true"),
        "held": submit_job("--hold", "--nodes=1-4", "--time=5", wrap="true", as_user=user),
        "held_marked": submit_job("--hold", "--nodes=2-6", wrap="true", as_user=user),
        "null_name": submit_job("--job-name=(null)", "--nodes=1", LATER, wrap="true"),
        "array": submit_job("--array=1-3", "--nodes=1-2", LATER, wrap="true", as_user=user),
        "nodelist": submit_job("--nodelist=node[1-2]", "--nodes=2-3", LATER, wrap="true"),
    }
    marker = f"adaptalloc:v1:held {HOSTILE}"
    slurm.run("scontrol", "update", f"JobId={jobs['held_marked']}", f"AdminComment={marker}")
    running = submit_job("--nodes=1", wrap="sleep 120")
    wait_until(
        lambda: (
            slurm.run("squeue", "-h", "-o", "%T", "-j", str(running)).stdout.strip() == "RUNNING"
        )
    )
    ids = set(jobs.values()) | {running}

    reader = LibslurmSlurm(BINDING)
    ours = comparable(reader.pending_jobs(), ids)
    theirs = comparable(CliSlurmReader().pending_jobs(), ids)
    assert reader.read_fallbacks == 0
    assert set(theirs) == set(jobs.values())  # every pending job; the running one is not
    assert set(ours) == set(theirs)
    for name, job_id in jobs.items():
        for field in dataclasses.fields(JobRecord):
            mine, squeue = getattr(ours[job_id], field.name), getattr(theirs[job_id], field.name)
            assert mine == squeue, f"{name} ({job_id}): {field.name} {mine!r} != {squeue!r}"
    # The cases the comparison is about, as squeue shows them (not vacuous).
    assert ours[jobs["hostile"]].name == HOSTILE
    assert ours[jobs["hostile"]].comment == HOSTILE
    assert ours[jobs["hostile"]].user == user
    assert ours[jobs["tasks"]].num_tasks == 8
    assert ours[jobs["per_node"]].ntasks_per_node == 2
    assert ours[jobs["partitions"]].partition == "debug,big"
    assert ours[jobs["partitions"]].time_limit_min == 90
    assert ours[jobs["days"]].time_limit_min == 2 * 1440 + 3 * 60 + 4
    assert ours[jobs["held"]].state_reason == "JobHeldUser"
    assert ours[jobs["held"]].priority == 0
    assert ours[jobs["null_name"]].name == ""
    assert not PWNED.exists()

    # The admin comments, from the same read: the field verbatim, "" where there is none.
    comments = reader.held_admin_comments([jobs["held"], jobs["held_marked"]])
    assert comments == {jobs["held"]: "", jobs["held_marked"]: marker}
    exact = {r.job_id: r.admin_comment for r in CliSlurmReader().jobs() if r.job_id in ids}
    assert exact[jobs["held_marked"]] == marker


@needs_binding
def test_an_unchanged_queue_is_not_sent_again_and_a_change_is_seen(
    slurm: SlurmCLI, submit_job: Callable[..., int]
) -> None:
    assert BINDING is not None
    job = submit_job("--hold", "--nodes=1-4", wrap="true", as_user=slurm.test_user)
    reader = LibslurmSlurm(BINDING)
    # slurmctld's scheduler changes jobs now and then (the last test's too): read until a
    # read finds the queue as the one before it left it.
    for _ in range(20):
        last = comparable(reader.pending_jobs(), {job})
        time.sleep(1.2)  # past the second slurmctld stamped the answer with
        again = comparable(reader.pending_jobs(), {job})
        if reader.unchanged_reads:
            break
    assert reader.unchanged_reads >= 1
    assert again == last
    unchanged = reader.unchanged_reads
    slurm.run("scontrol", "update", f"JobId={job}", "TimeLimit=33", "AdminComment=changed")
    changed = comparable(reader.pending_jobs(), {job})
    assert reader.unchanged_reads == unchanged
    assert changed[job].time_limit_min == 33
    assert reader.held_admin_comments([job]) == {job: "changed"}
    # The client's own write: the last read's admin comments no longer count; the job's own
    # record answers.
    reader.set_admin_comment([job], "mine")
    assert reader.held_admin_comments([job]) == {job: "mine"}


@needs_binding
def test_a_binding_without_the_read_falls_back_to_squeue(
    slurm: SlurmCLI, submit_job: Callable[..., int]
) -> None:
    assert BINDING is not None
    job = submit_job("--hold", "--nodes=2-5", wrap="true", as_user=slurm.test_user)
    # A binding built before the read existed: the same library, without slurm_load_jobs.
    old_lib = SimpleNamespace(
        slurm_init=BINDING.lib.slurm_init,
        slurm_load_job=BINDING.lib.slurm_load_job,
        slurm_free_job_info_msg=BINDING.lib.slurm_free_job_info_msg,
        SHOW_ALL=BINDING.lib.SHOW_ALL,
        SHOW_LOCAL=BINDING.lib.SHOW_LOCAL,
    )
    reader = LibslurmSlurm(SimpleNamespace(ffi=BINDING.ffi, lib=old_lib))  # type: ignore[arg-type]
    records = comparable(reader.pending_jobs(), {job})
    assert reader.read_fallbacks == 1
    assert records == comparable(CliSlurmReader().pending_jobs(), {job})
    assert (records[job].nodes_min, records[job].nodes_max, records[job].priority) == (2, 5, 0)
    assert reader.held_admin_comments([job]) == {job: ""}  # each job's own record


@needs_binding
def test_the_guards_read_gives_what_squeue_json_says_of_the_watched_jobs(
    slurm: SlurmCLI, submit_job: Callable[..., int]
) -> None:
    assert BINDING is not None
    running = submit_job("--nodes=2", "--time=7", wrap="sleep 120", as_user=slurm.test_user)
    pending = submit_job("--nodes=1-3", "--time=9", LATER, wrap="true")
    done = submit_job("--nodes=1", wrap="true")
    wait_until(
        lambda: (
            slurm.run("squeue", "-h", "-o", "%T", "-j", str(running)).stdout.strip() == "RUNNING"
        )
    )
    wait_until(
        lambda: (
            slurm.run("squeue", "-h", "-o", "%T", "-j", str(done)).stdout.strip()
            in ("COMPLETED", "")
        )
    )
    ids = [running, pending, done, max(running, pending, done) + 100000]
    ours = {r.job_id: r for r in LibslurmSlurm(BINDING).jobs_of(ids)}
    theirs = {r.job_id: r for r in CliSlurmReader().jobs_of(ids)}
    assert set(ours) == set(theirs) == {running, pending, done}  # the unknown id left out
    guard_fields: tuple[str, ...] = ("state", "start_time", "end_time", "time_limit_min")
    guard_fields = (*guard_fields, "submit_time", "nodes_alloc", "nodes_min", "nodes_max")
    for job_id, record in ours.items():
        for name in (*guard_fields, "name", "user", "account", "partition", "priority"):
            mine, json_ = getattr(record, name), getattr(theirs[job_id], name)
            assert mine == json_, f"{job_id}: {name} {mine!r} != {json_!r}"
    assert (ours[running].state, ours[running].nodes_alloc) == ("RUNNING", 2)
    assert ours[running].time_limit_min == 7
    assert ours[pending].state == "PENDING"
    assert ours[done].state == "COMPLETED"
