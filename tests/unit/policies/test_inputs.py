"""Request, ClusterState and ExplorationBudget refuse values a decision cannot be made from."""

from __future__ import annotations

from typing import Any

import pytest

from policies import ClusterState, ExplorationBudget, Request


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_nodes": 0, "max_nodes": 4}, "min_nodes must be at least 1, got 0"),
        ({"min_nodes": 8, "max_nodes": 4}, "max_nodes must be at least min_nodes, got 8-4"),
        ({"min_nodes": 2.5, "max_nodes": 4}, "min_nodes must be a whole number, got 2.5"),
        ({"min_nodes": True, "max_nodes": 4}, "min_nodes must be a whole number, got True"),
        ({"min_nodes": 1, "max_nodes": 4, "time_limit_min": 0}, "time_limit_min must be at"),
    ],
)
def test_request_refuses(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Request(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"idle_nodes": -1}, "idle_nodes must be at least 0"),
        ({"pending_demand_nodes": -1}, "pending_demand_nodes must be at least 0"),
        ({"idle_nodes": 10, "total_nodes": 8}, r"idle_nodes \(10\) cannot exceed total_nodes"),
        ({"max_nodes_per_job": 0}, "max_nodes_per_job must be at least 1"),
        ({"max_time_min": 0}, "max_time_min must be at least 1"),
    ],
)
def test_cluster_state_refuses(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClusterState(**kwargs)


def test_node_limit_is_the_tighter_of_max_nodes_and_partition_size() -> None:
    assert ClusterState().node_limit is None
    assert ClusterState(total_nodes=64).node_limit == 64
    assert ClusterState(max_nodes_per_job=32).node_limit == 32
    assert ClusterState(total_nodes=16, max_nodes_per_job=32).node_limit == 16
    assert not ClusterState().load_known
    assert ClusterState(idle_nodes=0).load_known


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jobs_decided": 1, "jobs_explored": 2}, "jobs_explored cannot exceed jobs_decided"),
        ({"node_hours_decided": -1.0}, "node_hours_decided must be finite and at least 0"),
        ({"node_hours_decided": float("nan")}, "node_hours_decided must be finite"),
        ({"node_hours_decided": float("inf")}, "node_hours_decided must be finite"),
        ({"node_hours_explored": "1"}, "node_hours_explored must be a number"),
        ({"node_hours_decided": 1.0, "node_hours_explored": 2.0}, "node_hours_explored cannot"),
    ],
)
def test_budget_refuses(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ExplorationBudget(**kwargs)


def test_budget_after_counts_every_decided_job_and_only_known_node_hours() -> None:
    start = ExplorationBudget(jobs_decided=3, jobs_explored=1, node_hours_decided=10.0)
    start = start.after(2, 1800.0, True)  # explored: 2 nodes x 0.5 h
    assert start == ExplorationBudget(4, 2, 11.0, 1.0)
    # Left as submitted (no size), or a size without a finite predicted runtime: a decided
    # job without node-hours.
    assert start.after(None, None, False) == ExplorationBudget(5, 2, 11.0, 1.0)
    assert start.after(8, float("inf"), False) == ExplorationBudget(5, 2, 11.0, 1.0)
    assert start.after(8, 3600.0, False) == ExplorationBudget(5, 2, 19.0, 1.0)
