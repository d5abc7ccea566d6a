"""A job whose stored curve the policy will not size with, on the real Redis: the daemon's
Decider releases it with its minimum and its user's limit, its range's top cut where the
curve saw the speedup stop (policies/rules.py, `refused_top`), and the exploration budget
does not count it. The range reaching Slurm is tests/integration/test_daemon_range.py's;
Slurm is not needed here: the Decider's cluster state is given."""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import policies
from plugin.appkey import AppKey, AppKeyRule
from plugin.daemon.decider import Budget, Decider
from plugin.daemon.record import decision_record
from plugin.slurm import JobRecord
from plugin.store.curves import CurveStore, Observation, Retention

from .held import held_job, learned_curve
from .testbed import adaptalloc

pytestmark = pytest.mark.integration

#: A speedup that stops growing past 8 nodes (Downey's shape with A about 8).
SPEEDUP = {1: 1.0, 2: 1.96, 4: 3.7, 8: 6.2, 16: 7.3, 32: 7.6}


def _job(now: float) -> JobRecord:
    return held_job(21, "it-refused", now, (2, 64), 120)


def _idle(_: JobRecord) -> policies.ClusterState:
    return policies.ClusterState(idle_nodes=64, total_nodes=64)


def test_a_refused_curve_cuts_the_top_of_the_range_it_leaves_to_slurm(
    redis_client: Any, tmp_path: Path
) -> None:
    store = CurveStore(redis_client, Retention(max_observations=50, max_age_s=None))
    key = AppKey("it-refused", owner="ann")
    now = time.time()
    runs = [
        Observation(f"{i}", key, n, 3000.0 / s, now - 3600.0 + i, source="csv")
        for i, (n, s) in enumerate(SPEEDUP.items())
    ]
    curves, stored = learned_curve(store, key, runs)
    assert stored.curve is not None  # for the type checker: learned_curve checked it
    knee = stored.curve.max_useful_n
    assert knee is not None
    assert knee < 64
    # A site whose fit-error gate refuses every curve: the curve sizes nothing.
    config = policies.default_config()
    strict = replace(config, defaults=replace(config.defaults, max_fit_error=1e-12))
    budget = Budget()
    out = Decider(AppKeyRule(), strict, curves, budget).decide(_job(now), _idle)
    assert out.rule == "fallback", out.reason
    assert out.action == "resize", out.reason
    assert out.resize is not None
    top = max(knee, sorted(SPEEDUP)[len(SPEEDUP) // 2])
    assert (out.resize.min_nodes, out.resize.max_nodes) == (2, top)
    assert out.resize.time_limit_min is None  # the user's limit stands
    assert f"released as 2-{top} nodes" in out.reason
    # A decided job in the exploration budget's share, without predicted node-hours: no
    # size was set with the curve.
    assert budget.value() == policies.ExplorationBudget(jobs_decided=1)
    # As the daemon records it, `adaptalloc decisions` and the report show the range, not
    # its minimum, and the report estimates no savings at a size Slurm may not have given.
    store.record_decision(decision_record(out, "released", 0.1))
    table = adaptalloc("decisions", "--job", "21", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert re.search(rf"2-64\s+2-{top}\s", table.stdout), table.stdout  # range, then chosen
    report = adaptalloc("report", str(key), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert f"2-64 → 2-{top}" in report.stdout
    document = adaptalloc("report", str(key), "--format", "json", cwd=tmp_path)
    summary = json.loads(document.stdout)["decision_summary"]
    assert (summary["count"], summary["ranged"], summary["estimated"]) == (1, 1, 0)
    # Under the default gate the same curve sizes the job.
    sized = Decider(AppKeyRule(), config, curves, Budget()).decide(_job(now), _idle)
    assert sized.rule != "fallback", sized.reason
