"""The learner against the real local Slurm (with accounting) and the real Redis.

Jobs run on the cluster become observations exactly once: on one poll, on the next, after
the learner restarts, and with two learners polling at the same time. Hostile job names
and comments submitted to the real Slurm create no keys outside ``adaptalloc:v2:``.
Each test names its jobs with a fresh random app name, so earlier runs' jobs (still in
accounting) never mix in.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import structlog

import predictor
from plugin.appkey import AppKey
from plugin.config import Config, LearnerConfig
from plugin.learning.learner import Learner
from plugin.slurm import CliSlurmReader
from plugin.store.connection import connect
from plugin.store.curves import CurveStore, Observation

from .testbed import PROJECT_ROOT, SlurmCLI, SubmitJob, own, scratch_url

pytestmark = pytest.mark.integration

CONFIG = Config(learner=LearnerConfig(initial_lookback_s=1800.0, refit_debounce_s=0.0))


def fresh_name() -> str:
    return f"it-{uuid.uuid4().hex[:10]}"


def new_learner(config: Config = CONFIG) -> Learner:
    """A learner as a restarted daemon would make it: its own connection and reader."""
    return Learner(CurveStore(connect(scratch_url())), CliSlurmReader(), config)


def finished(slurm: SlurmCLI, jobs: dict[int, str]) -> None:
    """Wait until sacct has each job's full record in the expected state."""
    for job_id, state in jobs.items():
        slurm.wait_sacct_job(job_id, {state}, where=lambda r: r["allocation_nodes"] > 0)


def job_ids(learner: Learner, app: AppKey) -> list[str]:
    return sorted(o.job_id for o in learner.store.observations(app))


@pytest.fixture
def run_jobs(submit_job: SubmitJob, slurm: SlurmCLI) -> Callable[..., dict[str, int]]:
    """Submit named jobs (label -> sbatch args), wait for accounting, return label -> id."""

    def run(specs: dict[str, tuple[tuple[str, ...], str, str]]) -> dict[str, int]:
        ids = {label: submit_job(*args, wrap=wrap) for label, (args, wrap, _) in specs.items()}
        finished(slurm, {ids[label]: state for label, (_, _, state) in specs.items()})
        return ids

    return run


def test_jobs_become_observations_exactly_once(
    redis_client: Any, run_jobs: Callable[..., dict[str, int]]
) -> None:
    name = fresh_name()
    ids = run_jobs(
        {
            "one": ((f"--job-name={name}", "--nodes=1"), "sleep 1", "COMPLETED"),
            "two": ((f"--job-name={name}", "--nodes=2"), "sleep 1", "COMPLETED"),
            "moldable": ((f"--job-name={name}", "--nodes=2-4"), "sleep 2", "COMPLETED"),
            "failed": ((f"--job-name={name}", "--nodes=2"), "sleep 1; exit 3", "FAILED"),
            "tagged": (
                (
                    "--job-name=anything",
                    "--nodes=1",
                    f"--comment=adaptalloc:v1 app={name} size=big",
                ),
                "sleep 1",
                "COMPLETED",
            ),
        }
    )
    app, sized = own(name), own(name, "big")
    learner = new_learner()
    first = learner.poll_once()
    assert first.source == "sacct"
    expected = sorted(str(ids[k]) for k in ("one", "two", "moldable"))
    assert job_ids(learner, app) == expected
    assert job_ids(learner, sized) == [str(ids["tagged"])]  # comment read from squeue
    nodes = {o.job_id: o.nodes for o in learner.store.observations(app)}
    assert nodes[str(ids["one"])] == 1
    assert nodes[str(ids["two"])] == 2
    assert 2 <= nodes[str(ids["moldable"])] <= 4

    assert learner.poll_once().stats.added == 0  # the overlap re-reads them: no double count
    restarted = new_learner()
    again = restarted.poll_once()
    assert again.since < first.until  # it resumed from the watermark in Redis
    assert again.stats.added == 0
    assert job_ids(restarted, app) == expected

    outcomes = {str(o.app): o for o in restarted.refit_dirty()}
    assert outcomes[str(own(name))].status == "written"  # runs at 1, 2 and 2-4 nodes
    assert outcomes[str(own(name, "big"))].status == "no_curve"  # one size only
    assert isinstance(restarted.store.curve(app), predictor.Curve)
    assert restarted.store.check(app) == []


LEARN = [sys.executable, "-m", "plugin", "-q", "learn", "--once", "--format", "json"]


def test_two_learner_processes_at_once_count_each_job_once(
    redis_client: Any, run_jobs: Callable[..., dict[str, int]], tmp_path: Any
) -> None:
    name = fresh_name()
    specs = {
        f"j{k}": ((f"--job-name={name}", f"--nodes={1 + k % 3}"), "sleep 1", "COMPLETED")
        for k in range(6)
    }
    ids = run_jobs(specs)
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    for _ in range(3):  # three rounds of two learners started together
        procs = [
            subprocess.Popen(  # noqa: S603 - our interpreter and module
                [*LEARN, "--redis-url", scratch_url(), "--debounce", "0"],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [p.communicate(timeout=300) for p in procs]
        for proc, (out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err
            json.loads(out)
    store = CurveStore(redis_client)
    assert sorted(o.job_id for o in store.observations(own(name))) == sorted(
        str(i) for i in ids.values()
    )
    assert store.check(own(name)) == []
    record = store.curve_record(own(name))
    assert record is not None
    assert record.n_observations == 6


HOSTILE_NAMES = [
    "\x1b[31mred\x1b[0m",
    "two\nlines",
    "adaptalloc:v2:{global}:apps",
    "adaptalloc:v2:app:{x}:obs",
    "lul*",
    "lul\u0435sh",
    "../../etc",
    "x" * 200,
]
HOSTILE_COMMENTS = [
    "adaptalloc:v1 app=../../evil",
    "adaptalloc:v1 app=a:b size=*",
    "adaptalloc:v1 app=\x1b[2J",
    "adaptalloc:v2 app=future",
    "adaptalloc:v1 app=" + "y" * 900,
]


def test_hostile_names_and_comments_create_no_keys_outside_the_namespace(
    redis_client: Any, run_jobs: Callable[..., dict[str, int]]
) -> None:
    good = fresh_name()
    specs: dict[str, tuple[tuple[str, ...], str, str]] = {
        f"name{k}": ((f"--job-name={n}",), "sleep 1", "COMPLETED")
        for k, n in enumerate(HOSTILE_NAMES)
    }
    specs |= {
        f"comment{k}": ((f"--job-name={good}", f"--comment={c}"), "sleep 1", "COMPLETED")
        for k, c in enumerate(HOSTILE_COMMENTS)
    }
    specs["control"] = ((f"--job-name={good}",), "sleep 1", "COMPLETED")
    ids = run_jobs(specs)
    learner = new_learner()
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        with structlog.testing.capture_logs() as events:
            learner.poll_once()
    finally:
        structlog.configure(**saved)
    assert job_ids(learner, own(good)) == [str(ids["control"])]  # bad tags refuse the job
    for key in redis_client.scan_iter("*"):
        assert key.startswith("adaptalloc:v2:"), key
        assert key.isascii(), key
        assert key.isprintable(), key
    for member in redis_client.zrange("adaptalloc:v2:{global}:apps", 0, -1):
        assert AppKey.parse(member) is not None
    counted = set(redis_client.hkeys("adaptalloc:v2:{global}:jobs"))
    hostile_ids = {str(ids[label]) for label in specs if label != "control"}
    assert counted.isdisjoint(hostile_ids)
    refused = {e["job_id"]: e for e in events if e.get("event") == "job_rejected"}
    for label in specs:
        if label == "control":
            continue
        event = refused[ids[label]]
        assert event["reason"] == "app_key"
        assert "\x1b" not in event["detail"]
        assert "\n" not in event["detail"]
        assert len(event["detail"]) < 300


def test_without_accounting_the_learner_reads_squeue(
    redis_client: Any, run_jobs: Callable[..., dict[str, int]]
) -> None:
    name = fresh_name()
    ids = run_jobs(
        {
            "one": ((f"--job-name={name}", "--nodes=1"), "sleep 1", "COMPLETED"),
            "three": ((f"--job-name={name}", "--nodes=3"), "sleep 1", "COMPLETED"),
        }
    )
    config = Config(learner=LearnerConfig(source="squeue", initial_lookback_s=600.0))
    learner = new_learner(config)
    result = learner.poll_once()
    assert result.source == "squeue"
    assert job_ids(learner, own(name)) == sorted(str(i) for i in ids.values())
    assert learner.store.watermark("squeue") == result.until
    assert learner.store.watermark("sacct") is None


def test_a_learner_catching_up_reads_bounded_windows(redis_client: Any) -> None:
    """After a long stop, each poll asks sacct for at most import_window_h hours."""
    learner = new_learner()
    now = learner.clock()
    learner.store.advance_watermark("sacct", now - 3 * 86400)
    since, until = learner.window()
    assert since == now - 3 * 86400 - CONFIG.learner.overlap_s
    assert until == since + CONFIG.learner.import_window_h * 3600
    first = learner.poll_once()
    assert first.watermark == first.until < now
    assert learner.window()[0] == first.until - CONFIG.learner.overlap_s


def test_a_run_killed_at_its_limit_is_a_censored_run_never_fitted(
    redis_client: Any, run_jobs: Callable[..., dict[str, int]]
) -> None:
    name = fresh_name()
    ids = run_jobs(
        {
            "one": ((f"--job-name={name}", "--nodes=1"), "sleep 1", "COMPLETED"),
            "two": ((f"--job-name={name}", "--nodes=2"), "sleep 1", "COMPLETED"),
            # Killed by Slurm at its 1-minute limit: it ran "at least 60 s" on 2 nodes.
            "killed": ((f"--job-name={name}", "--nodes=2", "--time=1"), "sleep 600", "TIMEOUT"),
        }
    )
    app = own(name)
    learner = new_learner()
    result = learner.poll_once()
    assert result.stats.censored >= 1
    assert job_ids(learner, app) == sorted(str(ids[k]) for k in ("one", "two"))
    [censored] = learner.store.censored_runs(app)
    assert censored.job_id == str(ids["killed"])
    assert censored.nodes == 2
    assert censored.runtime_s >= 60
    assert learner.store.guard_counts(app)["censored_runs"] == 1
    assert new_learner().poll_once().stats.censored == 0  # the overlap re-reads it: once
    refit = learner.store.refit_input(app)
    assert refit is not None
    assert str(ids["killed"]) not in {o.job_id for o in refit.observations}


def test_runs_record_tasks_node_type_and_numeric_size_from_real_accounting(
    redis_client: Any, run_jobs: Callable[..., dict[str, int]]
) -> None:
    """Placement and node types: sacct's srun steps give tasks (and tasks per node when they
    divide evenly), the partition is the node type, the tag's numeric size= is recorded as a
    number, and an app that ran on two partitions gets a curve per partition."""
    name = fresh_name()
    tag = f"--comment=adaptalloc:v1 app={name} size=1000"
    specs = {}
    for partition in ("debug", "batch"):
        for nodes, tasks in ((1, 2), (2, 4)):
            specs[f"{partition}-{nodes}"] = (
                (
                    f"--job-name={name}",
                    f"--partition={partition}",
                    f"--nodes={nodes}",
                    f"--ntasks={tasks}",
                    tag,
                ),
                f"srun -n {tasks} true; sleep {3 - nodes}",
                "COMPLETED",
            )
    specs["uneven"] = (
        (f"--job-name={name}", "--partition=debug", "--nodes=2", "--ntasks=3", tag),
        "srun -n 3 true; sleep 1",
        "COMPLETED",
    )
    ids = run_jobs(specs)
    learner = new_learner()
    learner.poll_once()
    app = own(name, "1000")
    runs = {o.job_id: o for o in learner.store.observations(app)}
    assert set(runs) == {str(i) for i in ids.values()}
    for label, job_id in ids.items():
        run = runs[str(job_id)]
        assert run.size == 1000.0
        assert run.node_type == ("batch" if label.startswith("batch") else "debug")
    two = runs[str(ids["debug-2"])]
    assert (two.nodes, two.tasks, two.tasks_per_node) == (2, 4, 2)
    one = runs[str(ids["batch-1"])]
    assert (one.nodes, one.tasks, one.tasks_per_node) == (1, 2, 2)
    uneven = runs[str(ids["uneven"])]
    assert (uneven.tasks, uneven.tasks_per_node) == (3, None)
    outcomes = {str(o.app): o for o in learner.refit_dirty()}
    assert outcomes[str(app)].status == "written"
    assert learner.store.node_types(app) == ["batch", "debug"]
    for partition in ("batch", "debug"):
        record = learner.store.curve_record(app, partition)
        assert record is not None
        assert record.n_observations == (2 if partition == "batch" else 3)


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_refit_cadence_waits_for_growth_a_new_size_or_an_old_curve(redis_client: Any) -> None:
    """(New with the refit cadence, policies/refit_cadence.py; before it, every change refitted.)
    g = 0.5 on a fit of 8 runs: 3 more runs at known sizes are not due (the app stays dirty),
    the 4th is; a run at a new size is due at once; so is any run once the curve is H old.
    g = 0 refits on every change, as before."""
    clock = _Clock(1_800_000_000.0)
    store = CurveStore(connect(scratch_url()), clock=clock)
    settings = LearnerConfig(refit_debounce_s=0.0, refit_growth=0.5, refit_max_age_h=1.0)
    learner = Learner(store, CliSlurmReader(), Config(learner=settings), clock=clock)
    app = AppKey(fresh_name())
    job = iter(range(1_000_000))

    def add(*sizes: int) -> None:
        clock.now += 60.0
        runs = [
            Observation(str(next(job)), app, n, 100.0 * (0.1 + 0.9 / n), clock.now - 1.0)
            for n in sizes
        ]
        assert store.add_observations(app, runs) == len(sizes)

    def refitted() -> bool:
        return any(o.app == app for o in learner.refit_dirty())

    add(1, 2, 4, 8, 1, 2, 4, 8)
    assert refitted()  # no curve yet: due
    record = store.curve_record(app)
    assert record is not None
    assert (record.n_observations, record.added_total) == (8, 8)
    add(1, 2, 4)  # 3 of the ⌈0.5 · 8⌉ = 4 runs it waits for
    assert not refitted()
    assert app in store.dirty_apps()  # still dirty: looked at again next round
    add(8)
    assert refitted()
    add(2)  # a size it ran on: 1 of 6
    assert not refitted()
    add(16)  # a size the curve never saw
    assert refitted()
    add(4)
    assert not refitted()
    clock.now += 3600.0  # the curve is H = 1 h old
    assert refitted()
    every = Learner(
        store,
        CliSlurmReader(),
        Config(learner=LearnerConfig(refit_debounce_s=0.0, refit_growth=0.0)),
        clock=clock,
    )
    add(4)
    assert any(o.app == app for o in every.refit_dirty())
