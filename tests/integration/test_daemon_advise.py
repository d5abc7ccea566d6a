"""Advise mode on the real local Slurm and Redis: no job is held or changed, every moldable
job gets an advise record with the range its user asked for, and a SIGHUP that enforces one
partition takes effect for the next job there (the rollout of docs/admin/rollout.md)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .daemon_harness import DaemonProcess, job_fields
from .testbed import SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]


def stored(job_ids: list[int]) -> dict[int, Any]:
    """The decision records in Redis of these jobs (the stream's newest 500)."""
    store = CurveStore(connect(scratch_url()))
    wanted = set(job_ids)
    return {
        d.record.job_id: d.record for d in store.decisions(count=500) if d.record.job_id in wanted
    }


def test_advise_holds_and_changes_nothing_and_records_every_moldable_job(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    daemon = daemon_factory(config='mode = "advise"\n').start()
    # The first takes the whole cluster at once (Slurm starts it inside sbatch, before the
    # daemon can see it pending); the others wait behind it (whole nodes: --exclusive).
    tag = "--comment=adaptalloc:v1 app=advise-it"
    moldable = [
        submit_job("--nodes=2-8", "--exclusive", "--time=5", tag, wrap="sleep 4") for _ in range(4)
    ]
    rigid = submit_job("--nodes=2", "--time=5", wrap="sleep 1")
    for job in moldable:
        event = daemon.wait_decision(job)
        assert event["mode"] == "advise"
        assert event["status"] in ("advised", "advised_late")
        assert (event["min_nodes"], event["max_nodes"]) == (2, 8)
    statuses = {daemon.decision(job)["status"] for job in moldable}  # type: ignore[index]
    assert "advised" in statuses  # at least one was seen pending
    for job in [*moldable, rigid]:
        fields = job_fields(slurm, job)
        assert not fields.get("admin_comment"), "advise mode wrote an admin comment"
        assert fields.get("priority") != 0, "advise mode held a job"
    assert not daemon.events("batch")  # no held job was ever applied (resized, released)
    assert daemon.decision(rigid) is None
    records = stored(moldable)
    assert sorted(records) == sorted(moldable)
    assert {r.mode for r in records.values()} == {"advise"}
    assert not daemon.events("release_pending")


def test_a_sighup_enforcing_one_partition_takes_effect_for_the_next_job(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory, tmp_path: Path
) -> None:
    daemon = daemon_factory(config='mode = "advise"\n', policy="").start()
    tag = "--comment=adaptalloc:v1 app=advise-switch"
    before = submit_job("--nodes=1-3", tag, wrap="true")
    assert daemon.wait_decision(before)["mode"] == "advise"
    (tmp_path / "policy.toml").write_text('[partition.debug]\nmode = "enforce"\n')
    daemon.signal(signal.SIGHUP)

    def published() -> bool:
        return any(
            "partition debug enforce" in e.get("modes", [])
            for e in daemon.events("modes_published")
        )

    daemon.wait_for("the new modes", published, 30)
    after = submit_job("--nodes=1-3", tag, wrap="true")  # debug: the default partition
    elsewhere = submit_job("--nodes=1-3", "--partition=batch", tag, wrap="true")
    decision = daemon.wait_decision(after)
    assert (decision["mode"], decision["status"]) == ("enforce", "released")
    assert "adaptalloc:v1:kept" in str(job_fields(slurm, after).get("admin_comment"))
    assert daemon.wait_decision(elsewhere)["mode"] == "advise"
    assert not job_fields(slurm, elsewhere).get("admin_comment")
