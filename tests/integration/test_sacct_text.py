"""The text fallback of finished_jobs against the real sacct of the testbed.

Jobs are submitted as the testbed's unprivileged user, some with hostile names, comments
and wckeys. The JSON path is the real ``sacct --json``; the fallback is reached by failure
injection only: a runner that raises the backend's own SlurmCommandError for the
``--json`` call (what run_command raises when sacct aborts with exit -6) and runs every
other command, the text query included, for real.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from structlog.testing import capture_logs

from plugin.config import Config, LearnerConfig
from plugin.learning.learner import Learner
from plugin.slurm import CliSlurmReader, SlurmCommandError
from plugin.slurm.cli_backend import run_command
from plugin.slurm.records import JobRecord
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .testbed import SlurmCLI, SubmitJob, own, scratch_url

pytestmark = pytest.mark.integration

#: Fields the JSON path of 22.05 cannot report and the text path does: the JSON says exit
#: code 0 for every job (parse.py), and has no user for a job whose user has no
#: association in slurmdbd (the testbed's test user has none).
JSON_BLIND = ("exit_code", "user")


def json_aborts(args: Sequence[str], timeout_s: float) -> str:
    """Run Slurm's commands for real, except that ``sacct --json`` fails as 22.05's did."""
    if args[0] == "sacct" and "--json" in args:
        raise SlurmCommandError("sacct --json --allusers ... failed (exit -6): injected")
    return run_command(args, timeout_s)


def fresh_name() -> str:
    return f"it-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def finished_jobs(
    submit_job: SubmitJob, slurm: SlurmCLI
) -> Callable[[dict[str, tuple[tuple[str, ...], str, str]]], tuple[dict[str, int], float, float]]:
    """Submit jobs as the test user (label -> (sbatch args, wrap, final state)), wait until
    sacct has each one's full record; return label -> id and a window holding their ends."""

    def run(
        specs: dict[str, tuple[tuple[str, ...], str, str]],
    ) -> tuple[dict[str, int], float, float]:
        since = time.time() - 1
        ids = {
            label: submit_job(*args, wrap=wrap, as_user=slurm.test_user)
            for label, (args, wrap, _) in specs.items()
        }
        for label, (_, _, state) in specs.items():
            slurm.wait_sacct_job(ids[label], {state}, where=lambda r: r["allocation_nodes"] > 0)
        return ids, since, time.time() + 1

    return run


def mine(jobs: list[JobRecord], ids: dict[str, int]) -> dict[int, JobRecord]:
    wanted = set(ids.values())
    return {job.job_id: job for job in jobs if job.job_id in wanted}


def test_text_path_returns_the_json_paths_records(
    finished_jobs: Callable[..., tuple[dict[str, int], float, float]], slurm: SlurmCLI
) -> None:
    nonce_like = f"~{uuid.uuid4().hex[:12]}~"
    ids, since, until = finished_jobs(
        {
            "steps": (
                ("--job-name=sacct-text-steps", "--nodes=2", "--ntasks=4"),
                "srun -n 4 true; srun -n 3 true",
                "COMPLETED",
            ),
            "hostile": (
                (
                    f"--job-name=a|b\nc {nonce_like} 'q'",
                    f"--comment=x|y\nz {nonce_like}|\n1\n1",
                    "--wckey=w|k",
                    "--nodes=1",
                ),
                "sleep 1",
                "COMPLETED",
            ),
            "boundary": (("--job-name=1\n1", "--comment=|", "--nodes=1"), "sleep 1", "COMPLETED"),
            "failed": (("--job-name=sacct-text-failed", "--nodes=1"), "exit 3", "FAILED"),
        }
    )
    states = ("COMPLETED", "FAILED")
    from_json = mine(CliSlurmReader().finished_jobs(since, until, states), ids)
    with capture_logs() as logs:
        from_text = mine(
            CliSlurmReader(runner=json_aborts).finished_jobs(since, until, states), ids
        )
    assert [e["event"] for e in logs] == ["sacct_json_failed"]
    assert sorted(from_text) == sorted(from_json) == sorted(ids.values())
    for job_id, text in from_text.items():
        json_ = from_json[job_id]
        for field in dataclasses.fields(JobRecord):
            if field.name not in JSON_BLIND:
                assert getattr(text, field.name) == getattr(json_, field.name), (job_id, field)
        assert text.user == slurm.test_user
        assert json_.user in ("", slurm.test_user)
        assert json_.exit_code is None  # 22.05's JSON: not trusted
    hostile = from_text[ids["hostile"]]
    assert hostile.name == f"a|b\nc {nonce_like} 'q'"
    assert hostile.comment == f"x|y\nz {nonce_like}|\n1\n1"
    assert hostile.wckey == "w|k"
    assert from_text[ids["boundary"]].name == "1\n1"
    assert from_text[ids["steps"]].tasks == 4
    assert from_text[ids["failed"]].exit_code == 3


def test_the_learner_keeps_learning_when_sacct_json_fails(
    redis_client: Any,
    slurm: SlurmCLI,
    finished_jobs: Callable[..., tuple[dict[str, int], float, float]],
) -> None:
    name = fresh_name()
    ids, _, _ = finished_jobs(
        {f"j{n}": ((f"--job-name={name}", f"--nodes={n}"), "sleep 1", "COMPLETED") for n in (1, 2)}
    )
    config = Config(learner=LearnerConfig(initial_lookback_s=1800.0, refit_debounce_s=0.0))
    learner = Learner(
        CurveStore(connect(scratch_url())), CliSlurmReader(runner=json_aborts), config
    )
    with capture_logs() as logs:
        poll = learner.poll_once()
    assert poll.source == "sacct"
    assert "sacct_json_failed" in [e["event"] for e in logs]
    # The fixture submits as the test user: their runs, under their own key.
    observed = {
        o.job_id: o.nodes for o in learner.store.observations(own(name, user=slurm.test_user))
    }
    assert observed == {str(ids["j1"]): 1, str(ids["j2"]): 2}
