"""The run at a second size (policies/second_size.py) on the real Redis: an application whose
stored runs all ran at one size has no curve (refit_app saves its note), and the daemon's
Decider explores one other size for its next job, with the user's limit kept; once that run
is stored and refitted, the application has a curve and the exploration stops. ``adaptalloc
decide --app`` shows the same run when given the daemon's exploration counters. Slurm is not
needed: the Decider's cluster state is given."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import policies
from plugin.appkey import AppKey, AppKeyRule
from plugin.daemon.decider import Budget, CurveSource, Decider
from plugin.learning.learner import refit_app
from plugin.slurm import JobRecord
from plugin.store.curves import CurveStore, Observation, Retention

from .held import held_job
from .testbed import adaptalloc

pytestmark = pytest.mark.integration

LIMIT_S = 3600.0


def _job(now: float) -> JobRecord:
    return held_job(11, "it-second", now, (2, 16), 60)


def _idle(_: JobRecord) -> policies.ClusterState:
    return policies.ClusterState(idle_nodes=16, total_nodes=16)


def _run(i: int, key: AppKey, nodes: int, runtime: float, now: float) -> Observation:
    return Observation(
        f"{i}", key, nodes, runtime, now - 3600.0 + i, source="csv", limit_s=LIMIT_S,
        written_for=2,
    )  # fmt: skip


def _with_room() -> Budget:
    """A budget with twenty decided jobs (400 node-hours) and none explored: one fits."""
    budget = Budget()
    for _ in range(20):
        budget.count(2, 36000.0, False)
    return budget


def test_an_app_run_at_one_size_is_explored_at_a_second(redis_client: Any) -> None:
    store = CurveStore(redis_client, Retention(max_observations=50, max_age_s=None))
    key = AppKey("it-second", owner="ann")
    now = time.time()
    # Three runs at 8 nodes, the slowest a quarter of its limit: 8 x 0.25 x 1.2 = 2.4, so
    # 3 nodes is the least size where it still ends within the limit x 1.2; the run goes no
    # further down than half the runs' size, 4 nodes.
    store.add_observations(key, [_run(i, key, 8, t, now) for i, t in enumerate((600, 900, 700))])
    assert refit_app(store, key).status == "no_curve"
    curves = CurveSource(lambda: store)
    budget = _with_room()
    d = Decider(AppKeyRule(), policies.default_config(), curves, budget)
    curves.begin_batch()
    out = d.decide(_job(now), _idle)
    assert out.action == "resize", out.reason
    assert out.rule == "exploration"
    assert out.resize is not None
    assert (out.resize.min_nodes, out.resize.max_nodes, out.resize.time_limit_min) == (4, 4, None)
    assert "all 3 runs of the app ran at 8 nodes" in out.reason
    assert budget.value().jobs_explored == 1

    # Without room in the budget the job is left as submitted, as before.
    fresh = Decider(AppKeyRule(), policies.default_config(), curves, Budget())
    assert fresh.decide(_job(now), _idle).rule == "fallback"

    # The run at 3 nodes stored and refitted: a curve, and no second-size exploration.
    store.add_observations(key, [_run(9, key, 3, 2000.0, now)])
    refit_app(store, key)
    curves.begin_batch()
    after = d.decide(_job(now), _idle)
    assert "ran at 8 nodes" not in after.reason, after.reason


def test_decide_app_shows_the_second_size_with_the_daemons_budget(
    redis_client: Any, tmp_path: Path
) -> None:
    store = CurveStore(redis_client, Retention(max_observations=50, max_age_s=None))
    key = AppKey("it-second-cli", owner="ann")
    now = time.time()
    store.add_observations(key, [_run(i, key, 8, t, now) for i, t in enumerate((600, 900, 700))])
    assert refit_app(store, key).status == "no_curve"
    job = ("decide", "--app", str(key), "--nodes", "2-16", "--time-limit", "60")
    where = ("--idle", "16", "--total", "16", "--format", "json")
    # The counters of _with_room: twenty jobs decided, 400 node-hours, none explored.
    proc = adaptalloc(*job, *where, "--budget", "20,0,400,0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["rule"], doc["nodes"], doc["time_limit_min"]) == ("exploration", 4, None)
    assert "all 3 runs of the app ran at 8 nodes" in doc["reason"]
    # Without them decide is a daemon that has decided nothing yet: left as submitted.
    proc = adaptalloc(*job, *where, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rule"] == "fallback"
