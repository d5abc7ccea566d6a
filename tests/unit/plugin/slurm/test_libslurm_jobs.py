"""libslurm_jobs.pending_record: job_info members to the record squeue's read makes of them
(the edge cases squeue prints as text parse_pending reads back; the integration test
tests/integration/test_libslurm_reads.py compares whole queues on the testbed)."""

from __future__ import annotations

import dataclasses
import os

from plugin.slurm.libslurm_jobs import INFINITE16, NO_VAL16, RawJob, pending_record, user_name

BASE = RawJob(
    job_id=7,
    priority=0,
    num_nodes=2,
    max_nodes=8,
    time_limit=30,
    submit_time=1_700_000_000,
    user_id=0,
    num_tasks=2,
    ntasks_per_node=NO_VAL16,
    reason="JobHeldUser ",
    partition="debug,big",
    account="acct",
    wckey=None,
    command="/home/a/x.sh",
    work_dir="/home/a",
    name="n",
    comment=None,
    qos="normal",
)


def test_a_plain_record() -> None:
    r = pending_record(BASE, "alice")
    assert (r.job_id, r.user, r.partition, r.state, r.source) == (
        7,
        "alice",
        "debug,big",
        "PENDING",
        "libslurm",
    )
    assert (r.nodes_min, r.nodes_max, r.time_limit_min, r.submit_time) == (2, 8, 30, 1_700_000_000)
    assert (r.num_tasks, r.ntasks_per_node, r.priority) == (2, None, 0)
    assert (r.wckey, r.comment, r.admin_comment) == ("", "", None)
    assert (r.script, r.workdir) == ("/home/a/x.sh", "/home/a")
    assert r.state_reason == "JobHeldUser"  # stripped, as parse_pending does


def test_limits_squeue_prints_as_words_are_none() -> None:
    for minutes in (0xFFFFFFFF, 0xFFFFFFFE, 365 * 1440 + 1):  # UNLIMITED, NOT_SET, INVALID
        assert (
            pending_record(dataclasses.replace(BASE, time_limit=minutes), "u").time_limit_min
            is None
        )
    assert pending_record(dataclasses.replace(BASE, time_limit=365 * 1440), "u").time_limit_min == (
        365 * 1440
    )


def test_max_nodes_zero_is_the_minimum_and_tasks_per_node_words_are_none() -> None:
    r = pending_record(dataclasses.replace(BASE, max_nodes=0, ntasks_per_node=INFINITE16), "u")
    assert (r.nodes_min, r.nodes_max, r.ntasks_per_node) == (2, 2, None)
    r = pending_record(dataclasses.replace(BASE, ntasks_per_node=0), "u")
    assert r.ntasks_per_node == 0


def test_null_text_and_no_submit_time_read_as_squeue_prints_them() -> None:
    raw = dataclasses.replace(BASE, name="(null)", work_dir=None, command="", submit_time=0)
    r = pending_record(raw, "u")
    assert (r.name, r.workdir, r.script, r.submit_time) == ("", None, None, None)


def test_user_names_as_slurm_prints_them() -> None:
    assert user_name(0) == "root"
    assert user_name(os.getuid()) != "nobody" or os.getuid() == 65534
    assert user_name(2**31 - 7) == "nobody"  # no such account
