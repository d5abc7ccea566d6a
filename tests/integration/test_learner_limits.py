"""The learner fits runs with the limits their users asked (predictor/heterogeneous.py), on the
real local Slurm and the real Redis.

A job the daemon sized carries the user's own limit in its record (plugin/daemon/marks.py:
``limit=`` minutes, ``for=`` the size it is read as written for), because Slurm's accounting
then holds the limit the daemon set; the learner's observation of the finished job holds the
user's limit, not the rescaled one. Runs whose inputs differ, but whose limits say so, give a
curve the policy's gate accepts where the plain fit of the same runs is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from unit.plugin.runs_with_limits import runs_with_limits

import policies
from plugin.appkey import AppKey, AppKeyRule
from plugin.config import Config, LearnerConfig
from plugin.daemon.decider import Budget, Decider
from plugin.learning.learner import Ingestor, refit_app
from plugin.slurm import CliSlurmReader
from plugin.store.connection import connect
from plugin.store.curves import CurveStore, Observation
from policies import DEFAULTS
from policies.decide import unusable_because
from predictor.downey import relative_runtime

from .daemon_harness import DaemonProcess
from .held import held_job, learned_curve
from .test_daemon_range import learn_downey
from .testbed import SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
CONFIG = Config(learner=LearnerConfig(initial_lookback_s=1800.0, refit_debounce_s=0.0))


def test_a_sized_job_is_observed_with_the_limit_its_user_asked(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory, tmp_path: Path
) -> None:
    learn_downey(scratch_url(), "it-limits", tmp_path)
    daemon = daemon_factory().start()
    # Submitted as an ordinary user: the limit is theirs, the record the daemon's (root's).
    job = submit_job(
        "--nodes=1-8",
        "--time=60",
        "--comment=adaptalloc:v1 app=it-limits",
        wrap="sleep 1",
        as_user=slurm.test_user,
    )
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize", decision
    slurm.wait_job_state(job, {"COMPLETED"})
    slurm.wait_sacct_job(job, {"COMPLETED"}, where=lambda r: r["allocation_nodes"] > 0)
    reader = CliSlurmReader()
    now = time.time()
    records = [r for r in reader.finished_jobs(now - 1800.0, now + 60.0) if r.job_id == job]
    assert len(records) == 1
    record = records[0]
    # The record the daemon wrote: the user's 60 min, read as written for the minimum, 1 node.
    assert "limit=60 for=1" in (record.admin_comment or "")
    shortened = decision["new_time_limit_min"]
    assert shortened is not None
    assert shortened < 60  # accounting holds the daemon's limit ...
    assert record.time_limit_min == shortened
    store = CurveStore(connect(scratch_url()))
    observed = Ingestor(store, CONFIG.appkey.rule(), None, None).observation(record)
    # ... and the observation the user's.
    assert (observed.limit_s, observed.written_for) == (3600.0, 1)
    assert observed.nodes == decision["nodes"]
    assert observed.app.owner == slurm.test_user  # the run teaches its own user's curve


def test_runs_with_their_limits_give_a_curve_the_gate_accepts(redis_client: object) -> None:
    store = CurveStore(connect(scratch_url()))
    suffix = f"{time.time_ns()}"
    plain, covariate = AppKey(f"it-plain-{suffix}"), AppKey(f"it-cov-{suffix}")
    assert store.add_observations(plain, runs_with_limits(plain, limited=0)) == 150
    assert store.add_observations(covariate, runs_with_limits(covariate)) == 150
    assert all(o.limit_s is not None for o in store.observations(covariate))  # stored with them
    assert refit_app(store, plain).status == "written"
    assert refit_app(store, covariate).status == "written"
    refused = store.curve(plain)
    accepted = store.curve(covariate)
    assert refused is not None
    assert accepted is not None
    assert refused.covariate is None
    assert "fitting error" in unusable_because(refused, DEFAULTS)
    assert accepted.covariate is not None
    assert accepted.covariate.use is not None  # the limit-use bound of the size check
    assert unusable_because(accepted, DEFAULTS) == ""
    # Its shape: T(1)/T(n) within 20% of the truth over the sizes.
    at = np.array([1.0, 4.0, 16.0, 64.0])
    got = accepted.runtime(1.0) / accepted.runtime(at)
    assert np.max(np.abs(np.log(got * relative_runtime(at, 24.0, 0.8)))) < 0.2


def test_killed_runs_in_the_store_raise_the_limit_use_bound_of_the_refit(
    redis_client: object,
) -> None:
    """Runs stopped at their limits are stored apart (never fitted as completed runs); a refit
    counts those that ended within its runs' span in the curve's limit-use bound, at their
    lower bounds, and keeps the largest size they were stopped at; older ones do not count.
    (They are read at the app's next refit, which new completed runs bring.)"""
    store = CurveStore(connect(scratch_url()))
    suffix = time.time_ns()
    curves = {}
    for when in ("within", "before"):
        app = AppKey(f"it-killed-{when}-{suffix}")
        runs = runs_with_limits(app)
        oldest = min(o.end_time for o in runs)
        ends = [oldest + 10.0 + i if when == "within" else oldest - 10.0 - i for i in range(30)]
        # Killed at their users' limits, on the size those were written for.
        killed = [
            Observation(f"{app.name}.k{i}", app, 4, 7200.0, end, limit_s=7200.0, written_for=4)
            for i, end in enumerate(ends)
        ]
        # Preempted on four times the size: lower bounds too, but no limit ran out there.
        preempted = [
            Observation(
                f"{app.name}.p{i}",
                app,
                16,
                600.0,
                end,
                limit_s=7200.0,
                written_for=4,
                preempted=True,
            )
            for i, end in enumerate(ends[:3])
        ]
        assert store.add_censored({app: killed + preempted}) == 33
        store.add_observations(app, runs)
        assert refit_app(store, app).status == "written"
        curve = store.curve(app)
        assert curve is not None
        assert curve.covariate is not None
        assert curve.covariate.use is not None
        curves[when] = curve
    within, before = curves["within"], curves["before"]
    assert within.covariate is not None
    assert before.covariate is not None
    assert within.covariate.use is not None
    assert before.covariate.use is not None
    assert within.covariate.use >= 0.0 > before.covariate.use
    # The largest size a counted run was killed at, not preempted, is stored with the curve
    # (the refused curve's range cut reads it: policies/rules.py, refused_top).
    assert (within.covariate.stopped_n, before.covariate.stopped_n) == (4, None)
    assert (within.A, within.sigma) == (before.A, before.sigma)  # the shape is the runs' alone


def test_the_budget_counts_a_covariate_curves_runtime_at_the_jobs_own_limit(
    redis_client: object,
) -> None:
    """The exploration budget's node-hours of a job sized with a covariate curve are n·T(n)
    of the curve read for the job's limit (`Curve.for_limit`), as decide evaluated it and
    the simulator counts it, not of the curve at its reference limit."""
    store = CurveStore(connect(scratch_url()))
    name = f"it-budget-{time.time_ns()}"
    app = AppKey(name, owner="ann")  # held_job's user: the job's own key
    curves, stored = learned_curve(store, app, runs_with_limits(app))
    curve = stored.curve
    assert curve is not None  # for the type checker: learned_curve checked it
    assert curve.covariate is not None
    budget = Budget()
    job = held_job(31, name, time.time(), (2, 64), 600)
    state = policies.ClusterState(idle_nodes=64, total_nodes=64)
    out = Decider(AppKeyRule(), policies.default_config(), curves, budget).decide(
        job, lambda _: state
    )
    assert out.action == "resize", out.reason
    assert out.resize is not None
    n = out.resize.min_nodes
    at_limit = n * float(curve.for_limit(600 * 60.0, 2).runtime(n)) / 3600.0
    at_reference = n * float(curve.runtime(n)) / 3600.0
    assert abs(at_limit - at_reference) > 0.1 * at_reference  # the job's limit matters
    assert budget.value().jobs_decided == 1
    assert budget.value().node_hours_decided == pytest.approx(at_limit, rel=1e-3)
