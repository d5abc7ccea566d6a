"""A job no size of whose range fits its user's limit, on the real Redis: on a heavily loaded
partition the daemon's Decider releases it from where its pessimistic runtime stops falling
up to 1.5 times that (policies/decide.py, `_flat_range`), with the user's limit kept, as the
policy decides on the same learned curve; on a moderately loaded partition it is left to
Slurm as before. Slurm is not needed: the Decider's cluster state is given."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

import policies
from plugin.appkey import AppKey, AppKeyRule
from plugin.daemon.decider import Budget, Decider
from plugin.store.curves import CurveStore, Observation, Retention
from predictor.downey import speedup

from .held import held_job, learned_curve

pytestmark = pytest.mark.integration

#: Ten hours on one node, a speedup that stops at 11 nodes (Downey, A = 6, sigma = 0.5):
#: every size of 4-64 runs past an hour, the least about 100 minutes, from 11 nodes up.
SIZES = np.array([2, 4, 8, 16, 32, 64])
RUNTIMES_S = 36000.0 / speedup(SIZES, 6.0, 0.5)
LIMIT_MIN = 60
#: Pending demand 50 times the idle nodes: far above heavy_pressure (2).
BUSY = policies.ClusterState(idle_nodes=4, pending_demand_nodes=200, total_nodes=64)
#: Pressure 1: neither light nor heavy.
MODERATE = policies.ClusterState(idle_nodes=64, pending_demand_nodes=64, total_nodes=64)


def test_a_job_no_size_fits_is_sized_on_a_busy_partition_only(redis_client: Any) -> None:
    store = CurveStore(redis_client, Retention(max_observations=50, max_age_s=None))
    key = AppKey("it-knee", owner="ann")
    now = time.time()
    runs = [
        Observation(f"{i}", key, int(n), float(t), now - 3600.0 + i, source="csv")
        for i, (n, t) in enumerate(zip(SIZES, RUNTIMES_S, strict=True))
    ]
    curves, stored = learned_curve(store, key, runs)
    assert stored.curve is not None  # for the type checker: learned_curve checked it
    job = held_job(31, "it-knee", now, (4, 64), LIMIT_MIN)
    config = policies.default_config()
    request = policies.Request(4, 64, LIMIT_MIN, "debug", "phys", "ann", job_id="31")

    out = Decider(AppKeyRule(), config, curves, Budget()).decide(job, lambda _: BUSY)
    policy = policies.decide(request, stored.curve, BUSY, config.defaults)
    assert policy.nodes is not None
    assert 4 < policy.nodes < 64
    assert policy.max_nodes == int(1.5 * policy.nodes)
    assert out.rule == policy.rule != "fallback", out.reason
    assert out.resize is not None
    assert (out.resize.min_nodes, out.resize.max_nodes) == (policy.nodes, policy.max_nodes)
    assert out.resize.time_limit_min is None  # the user's 60 min stand
    assert "every size from 4 nodes to 64 nodes" in out.reason
    assert f"released as {policy.nodes}-{policy.max_nodes} nodes all the same" in out.reason

    # Moderately loaded: left to Slurm within the range (its top cut where the curve saw
    # the speedup stop, as for any curve that cannot size the job), the limit kept.
    calm = Decider(AppKeyRule(), config, curves, Budget()).decide(job, lambda _: MODERATE)
    policy = policies.decide(request, stored.curve, MODERATE, config.defaults)
    assert calm.rule == policy.rule == "fallback", calm.reason
    assert "cannot tell at which size" in calm.reason
    assert "pinned at" not in calm.reason
    assert calm.resize is not None
    assert (calm.resize.min_nodes, calm.resize.max_nodes) == (policy.nodes, policy.max_nodes)
    assert calm.resize.min_nodes == 4 < calm.resize.max_nodes
    assert calm.resize.time_limit_min is None
