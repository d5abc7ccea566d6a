"""The all-runs curve across node sizes (policies/fallback.py) on the real Redis: the runs'
node types as the store keeps them, the curves as refit_app saves them, read by the
daemon's CurveSource and Decider. Slurm is not needed: the cores per node of each
partition are given as sinfo would (`cpus`), since the testbed's two node types have the
same CPUs (deploy/local/slurm.conf.in).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import policies
from plugin.appkey import AppKey, AppKeyRule
from plugin.daemon.decider import Budget, CurveSource, Decider
from plugin.learning.learner import refit_app
from plugin.slurm import JobRecord
from plugin.store.curves import CurveStore, Observation, Retention

from .held import held_job

pytestmark = pytest.mark.integration

#: NAS LU class W's relative speedups (the thesis' Table 5.1 shape).
LU_SPEEDUP = {1: 1.0, 2: 1.97, 4: 3.83, 8: 7.24, 16: 13.07}
CPUS = {"fat": 32, "thin": 16, "thin2": 16}


def _job(partition: str, now: float) -> JobRecord:
    return held_job(7, "it-sizes", now, (2, 8), 600, partition)


def _idle(_: JobRecord) -> policies.ClusterState:
    return policies.ClusterState(idle_nodes=16, total_nodes=16)


def test_runs_on_fat_nodes_are_not_read_as_thin_nodes(redis_client: Any) -> None:
    store = CurveStore(redis_client, Retention(max_observations=50, max_age_s=None))
    key = AppKey("it-sizes")
    now = time.time()
    runs = [
        Observation(f"{i}", key, n, 3000.0 / s, now - 3600.0 + i, node_type="fat", source="csv")
        for i, (n, s) in enumerate(LU_SPEEDUP.items())
    ]
    store.add_observations(key, runs)
    assert refit_app(store, key).status == "written"
    assert store.node_types(key) == []  # one type: only the curve of all runs
    curves = CurveSource(lambda: store)
    d = Decider(AppKeyRule(), policies.default_config(), curves, Budget())
    curves.begin_batch()
    on_fat = d.decide(_job("fat", now), _idle, cpus=CPUS.get)
    on_thin = d.decide(_job("thin", now), _idle, cpus=CPUS.get)
    assert on_fat.action == "resize", on_fat.reason
    assert on_thin.rule == "fallback", on_thin.reason
    assert "32 cores" in on_thin.reason

    # Runs on both sizes: each type has its own curve, and thin2 (thin's 16 cores, no runs
    # of its own) falls back to the curve of all runs only if none was on 32 cores: refused.
    thin = [
        Observation(f"{50 + i}", key, n, 5000.0 / s, now - 1800.0 + i, node_type="thin",
                    source="csv")
        for i, (n, s) in enumerate(LU_SPEEDUP.items())
    ]  # fmt: skip
    store.add_observations(key, thin)
    assert refit_app(store, key).status == "written"
    assert sorted(store.node_types(key)) == ["fat", "thin"]
    curves.begin_batch()
    on_thin = d.decide(_job("thin", now), _idle, cpus=CPUS.get)
    assert on_thin.action == "resize", on_thin.reason
    assert d.decide(_job("thin2", now), _idle, cpus=CPUS.get).rule == "fallback"
