"""Placement, weak-scaling and partition-choice rules on exact synthetic data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from policies import ClusterState, Request
from policies.partition import Option, Queue, choose_partition, overlap_share, wait_estimate
from policies.placement import MIN_PLACEMENTS, PLACEMENT, PLACEMENT_KEPT, choose_placement
from policies.weak import WEAK, WEAK_KEPT, decide_weak
from predictor.downey import FloatArray
from predictor.placement import fit_placement
from predictor.weak import fit_weak


def runs(f: FloatArray, g: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Outer measurements of Ntagiou's tree: one node with p = 1, 2, 4, 8, 16 tasks and c = 2..16
    nodes with one task each; T(c, p) = 1000 / (g(c) f(p))."""
    p = np.array([1, 2, 4, 8, 16], dtype=float)
    c = np.array([2, 4, 8, 16], dtype=float)
    cs = np.concatenate([np.ones_like(p), c])
    ps = np.concatenate([p, np.ones_like(c)])
    fp = np.interp(ps, [1, 2, 4, 8, 16], f)
    gc = np.interp(cs, [1, 2, 4, 8, 16], g)
    return cs, ps, 1000.0 / (gc * fp)


def test_memory_bound_code_spreads() -> None:
    # Memory-bound: 16 tasks on a node are barely faster than 4; nodes scale almost linearly.
    c, p, t = runs(np.array([1, 1.6, 2.0, 2.2, 2.3]), np.array([1, 2, 3.9, 7.7, 15]))
    model = fit_placement(c, p, t)
    got = choose_placement(64, 4, 16, model, threshold=0.5)
    assert got.rule == PLACEMENT
    assert (got.nodes, got.tasks_per_node) == (16, 4)
    assert [r.nodes for r in got.table] == [4, 8, 16]  # the node counts that were run
    assert got.table[0].efficiency == 1.0
    # The chosen placement is the fastest predicted one with efficiency ≥ θ.
    best = min((r for r in got.table if r.efficiency >= 0.5), key=lambda r: r.runtime_s)
    assert best.nodes == got.nodes


def test_compute_bound_code_with_a_slow_network_packs() -> None:
    # Tasks on one node scale perfectly; across nodes the network eats the gain.
    c, p, t = runs(np.array([1, 2, 4, 8, 16.0]), np.array([1, 1.2, 1.3, 1.35, 1.4]))
    model = fit_placement(c, p, t)
    got = choose_placement(64, 4, 16, model, threshold=0.5)
    assert (got.nodes, got.tasks_per_node) == (4, 16)


def test_efficiency_threshold_holds_back_spreading() -> None:
    # Spreading is faster, but 16 nodes for 4 tasks each waste most of them.
    c, p, t = runs(np.array([1, 1.9, 3.6, 6.5, 11.0]), np.array([1, 2, 4, 8, 16.0]))
    model = fit_placement(c, p, t)
    loose = choose_placement(64, 4, 16, model, threshold=0.3)
    tight = choose_placement(64, 4, 16, model, threshold=0.9)
    assert loose.nodes == 16
    assert tight.nodes is not None
    assert tight.nodes < 16
    for choice, theta in ((loose, 0.3), (tight, 0.9)):
        row = next(r for r in choice.table if r.nodes == choice.nodes)
        assert row.efficiency >= theta


def test_too_few_placements_keep_the_request() -> None:
    model = fit_placement([4, 8], [16, 8], [100.0, 60.0])
    got = choose_placement(64, 4, 16, model, threshold=0.5)
    assert got.rule == PLACEMENT_KEPT
    assert got.nodes is None
    assert str(MIN_PLACEMENTS) in got.reason
    none = choose_placement(64, 4, 16, None, threshold=0.5)
    assert none.nodes is None


def test_cpus_per_node_and_task_count_bound_the_candidates() -> None:
    c, p, t = runs(np.array([1, 1.6, 2.0, 2.2, 2.3]), np.array([1, 2, 3.9, 7.7, 15]))
    model = fit_placement(c, p, t)
    got = choose_placement(8, 1, 16, model, threshold=0.5, cpus_per_node=4)
    # ⌈8/c⌉ ≤ 4 and c ≤ 8 tasks leave 2..8 nodes; of those, 2, 4 and 8 were run.
    assert [r.nodes for r in got.table] == [2, 4, 8]
    assert got.nodes is not None
    assert 2 <= got.nodes <= 8
    nothing = choose_placement(64, 1, 2, model, threshold=0.5, cpus_per_node=4)
    assert nothing.nodes is None
    assert "fits" in nothing.reason


def weak_fit(a: float, k: float) -> object:
    n = np.array([1, 2, 4, 8, 1, 2, 4, 8], dtype=float)
    s = np.concatenate([10.0 * n[:4], 40.0 * n[4:]])
    return fit_weak(n, s, a + k * s / n)


def test_weak_scaling_takes_the_largest_efficient_size_and_keeps_the_limit() -> None:
    fit = fit_weak(
        np.array([1, 2, 4, 1, 2, 4.0]),
        np.array([10, 20, 40, 40, 80, 160.0]),
        np.array([2 + 1.0 * 10, 2 + 10, 2 + 10, 2 + 40, 2 + 40, 2 + 40.0]),
    )
    request = Request(2, 64, time_limit_min=60)
    got = decide_weak(request, fit, ClusterState(), threshold=0.5, missing="")
    assert got.rule == WEAK
    assert got.time_limit_min is None
    # α ≤ 1 − θ here, so the whole range is efficient.
    assert fit.alpha <= 0.5
    assert got.nodes == 64
    heavy = fit_weak(
        np.array([1, 2, 4, 1, 2, 4.0]),
        np.array([10, 20, 40, 40, 80, 160.0]),
        np.array([50 + 10, 50 + 10, 50 + 10, 50 + 40, 50 + 40, 50 + 40.0]),
    )
    got = decide_weak(request, heavy, ClusterState(total_nodes=32), threshold=0.5, missing="")
    bound = heavy.alpha / (heavy.alpha - 0.5)
    assert got.nodes == max(2, min(32, math.floor(bound)))
    assert got.nodes is not None
    assert 2 <= got.nodes <= 32


def test_weak_scaling_without_a_fit_is_left_as_submitted() -> None:
    got = decide_weak(Request(2, 8), None, ClusterState(), 0.5, "no sized runs")
    assert got.rule == WEAK_KEPT
    assert got.nodes is None
    assert "no sized runs" in got.reason


@pytest.mark.parametrize(
    ("queue", "n", "want"),
    [
        (Queue(8), 4, 0.0),
        (Queue(2, 0, ((4, 300.0), (2, 100.0))), 4, 100.0),  # 2 idle + 2 freed at 100 s
        (Queue(2, 4, ((4, 300.0), (2, 100.0))), 4, 300.0),  # the 4 pending come first
        (Queue(2, 0, ((4, 300.0),)), 16, math.inf),  # the partition is too small
        (Queue(0), 1, math.inf),
        (Queue(0, 0, ((1, math.inf),)), 1, math.inf),  # an unlimited job never frees
    ],
)
def test_wait_estimate(queue: Queue, n: int, want: float) -> None:
    assert wait_estimate(queue, n) == want


def test_partition_choice_by_completion_ties_to_the_first_listed() -> None:
    fast_busy = Option("big", 4, runtime_s=100.0, wait_s=600.0)
    slow_free = Option("debug", 8, runtime_s=400.0, wait_s=0.0)
    got = choose_partition([fast_busy, slow_free])
    assert got.partition == "debug"
    assert "400 s" in got.reason
    got = choose_partition([Option("a", 2, 50.0, 50.0), Option("b", 2, 100.0, 0.0)])
    assert got.partition == "a"
    none = choose_partition([Option("a", None, math.nan, 0.0), Option("b", 2, 10.0, math.inf)])
    assert none.partition is None


def test_a_huge_range_costs_only_the_measured_node_counts() -> None:
    c, p, t = runs(np.array([1, 1.6, 2.0, 2.2, 2.3]), np.array([1, 2, 3.9, 7.7, 15]))
    model = fit_placement(c, p, t)
    got = choose_placement(1 << 22, 1, 1 << 20, model, threshold=0.5)
    assert len(got.table) <= len(model.nodes)


def test_overlap_share_is_the_part_of_the_other_partition_inside_this_one() -> None:
    debug = {f"n{k}" for k in range(8)}
    big = {"n4", "n5", "n6", "n7"}
    assert overlap_share(big, debug) == 0.5  # a debug job lands on big's nodes half the time
    assert overlap_share(debug, big) == 1.0  # a big job always holds debug's nodes
    assert overlap_share(big, {"n0", "n1"}) == 0.0
    assert overlap_share(big, set()) == 0.0
    # a fractional share of a pending job still makes a finite, ordered wait
    assert wait_estimate(Queue(2, 1.5, ((2, 60.0),)), 1) == 60.0
