"""The master-worker cap (policies/master_worker.py): N_opt from the task figures (Costa et
al.'s formula on a worked example of our own: the slides give the formula, not numbers), the
knee learned from runs, and the cap applied to every kind of decision, never outside the
user's range."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

import predictor
from policies import DEFAULTS, ClusterState, Request, decide
from policies.decide import MAX_NODES
from policies.master_worker import (
    MASTER_WORKER,
    Figures,
    WorkerCap,
    capped,
    figures_cap,
    scaled_figures,
    speedup_cap,
)

from .curves import make_curve
from .reasons import assert_names

#: 2 s tasks, 50 MB in and 10 MB out, over a 10 Gbit/s link: N_opt = 2 / (50e6 / 1.25e9) = 50.
WORKED = Figures(tc=2.0, vi=50e6, vo=10e6)
LIGHT = ClusterState(idle_nodes=64, total_nodes=64)


def test_the_worked_example_keeps_fifty_workers_busy() -> None:
    cap = figures_cap(WORKED, link_gbs=1.25, tasks_per_node=16, where="batch")
    assert cap.n_opt == pytest.approx(50.0)
    assert cap.workers == 50
    assert cap.nodes == 4  # 50 workers and the master: 51 tasks, 16 a node
    assert cap.source == "figures"
    assert_names(
        cap.reason, "N_opt", "50 workers busy on batch", "Costa", "4 nodes", "16 tasks a node"
    )
    assert figures_cap(WORKED, 1.25, 1).nodes == 51  # Slurm's default: one task a node


def test_a_fraction_of_a_worker_is_not_one() -> None:
    # N_opt = 12.7: twelve workers keep busy, a thirteenth would wait part of each task.
    cap = figures_cap(Figures(1.27, 1e8, 0.0), link_gbs=1.0, tasks_per_node=1)
    assert cap.n_opt == pytest.approx(12.7)
    assert (cap.workers, cap.nodes) == (12, 13)
    # Communication-bound (N_opt < 1): still one worker and its master.
    tiny = figures_cap(Figures(0.01, 1e9, 1e9), link_gbs=1.0, tasks_per_node=1)
    assert (tiny.workers, tiny.nodes) == (1, 2)


def test_extreme_figures_give_a_size_not_an_overflow() -> None:
    """A tag's figures are user text: 1e300 s tasks moving 1e-300 bytes make N_opt overflow
    to infinity, which caps nothing (the most nodes adaptalloc considers)."""
    huge = figures_cap(Figures(1e300, 1e-300, 0.0), link_gbs=1e-300, tasks_per_node=1)
    assert huge.nodes == MAX_NODES
    tiny = figures_cap(Figures(1e-300, 1e300, 0.0), link_gbs=1.0, tasks_per_node=1)
    assert tiny.nodes == 2  # N_opt underflows to 0: one worker and its master
    endless = figures_cap(Figures(1.0, 1.0, 1.0), link_gbs=1e300, tasks_per_node=1)
    assert endless.nodes == MAX_NODES  # λ underflows to 0: the master is never held


def test_a_faster_type_needs_fewer_workers_to_saturate_its_master() -> None:
    """The heterogeneous case: a worker twice as fast computes a task in half the time, so
    the same master keeps half as many busy (Costa et al. tune each group on its own Tc)."""
    fast = scaled_figures(WORKED, 0.5)
    assert fast.tc == pytest.approx(1.0)
    assert (fast.vi, fast.vo) == (WORKED.vi, WORKED.vo)
    assert figures_cap(fast, 1.25, 1).workers == 25


@pytest.mark.parametrize(
    "bad", [(0.0, 1.0, 1.0), (math.inf, 1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 0.0, 0.0)]
)
def test_figures_refuse_what_no_task_has(bad: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError, match=r"tc|vi|vo"):
        Figures(*bad)


def master_worker_runs(n_opt: float, seed: int) -> predictor.Curve:
    """The curve fitted to runs of a synthetic master-worker code on 1..4·N_opt nodes, one
    task a node: a worker's cycle is its own transfer c plus Tc, the master serves one
    transfer at a time, so the throughput is min(N/(Tc + c), 1/c) tasks a second and the
    speedup levels off at N = (Tc + c)/c = N_opt + 1 (N_opt workers busy and one served).
    2000 tasks, c = 1 s, 2% noise."""
    rng = np.random.default_rng(seed)
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0])
    n = n[n <= 4 * n_opt]
    throughput = np.minimum(n / (n_opt + 1.0), 1.0)
    runtime = 2000.0 / throughput * (1.0 + 0.02 * rng.standard_normal(n.size))
    return predictor.Curve.from_fit(predictor.fit(n, runtime))


@pytest.mark.parametrize("n_opt", [6, 12, 24, 40])
def test_the_knee_learned_from_runs_is_where_the_master_saturated(n_opt: int) -> None:
    cap = speedup_cap(master_worker_runs(n_opt, seed=n_opt), DEFAULTS)
    assert isinstance(cap, WorkerCap)
    assert cap.source == "speedup"
    assert abs(cap.nodes - (n_opt + 1)) <= 1, cap
    assert_names(cap.reason, "levels off", "Costa", "more nodes would only wait")


def test_no_knee_is_learned_before_the_runs_show_one() -> None:
    before = make_curve(64.0, 0.1, identified=False, observed=(1, 2, 4, 8))
    why = speedup_cap(before, DEFAULTS)
    assert isinstance(why, str)
    assert_names(why, "not known", "levelled off")
    misfit = make_curve(13.0, 0.1, fit_error=0.9)
    assert_names(str(speedup_cap(misfit, DEFAULTS)), "not known", "fitting error")


def _cap(nodes: int) -> WorkerCap:
    return WorkerCap(nodes, float(nodes), "figures", f"a master keeps {nodes} workers busy")


def _decide_with(curve: predictor.Curve | None, **kw: object):  # type: ignore[no-untyped-def]
    settings = replace(DEFAULTS, **kw)  # type: ignore[arg-type]
    return lambda r: decide(r, curve, LIGHT, settings)


def test_a_size_past_the_cap_is_decided_again_within_it() -> None:
    curve = make_curve(40.0, 0.2, t1=36000.0, observed=(4, 8, 16, 32, 64))
    request = Request(4, 64, time_limit_min=600)
    plain = _decide_with(curve)(request)
    assert plain.nodes is not None
    assert plain.nodes > 12
    got = capped(request, _cap(12), _decide_with(curve))
    within = decide(replace(request, max_nodes=12), curve, LIGHT)
    assert (got.nodes, got.rule) == (12, MASTER_WORKER)
    assert got.time_limit_min == within.time_limit_min  # the limit fits the capped size
    assert_names(got.reason, "12 workers busy", "capped at 12 nodes", f"chose {plain.nodes}")
    assert got.candidates[-1].rule == MASTER_WORKER


def test_a_size_within_the_cap_stands_and_the_reason_says_so() -> None:
    curve = make_curve(6.0, 0.1, observed=(2, 4, 8, 16))
    request = Request(2, 64, time_limit_min=60)
    plain = _decide_with(curve)(request)
    got = capped(request, _cap(20), _decide_with(curve))
    assert (got.nodes, got.rule, got.time_limit_min) == (
        plain.nodes,
        plain.rule,
        plain.time_limit_min,
    )
    assert_names(got.reason, "within the 20 nodes master-worker allows")


def test_a_released_range_past_the_cap_is_cut_at_it() -> None:
    curve = make_curve(40.0, 0.2, t1=36000.0, observed=(4, 8, 16, 32, 64))
    request = Request(4, 64, time_limit_min=600)
    ranged = _decide_with(curve, release="range")
    plain = ranged(request)
    assert plain.nodes is not None
    assert plain.max_nodes is not None
    cap = plain.nodes + (plain.max_nodes - plain.nodes) // 2
    got = capped(request, _cap(cap), ranged)
    assert (got.nodes, got.max_nodes, got.rule) == (plain.nodes, cap, plain.rule)
    assert got.time_limit_min == plain.time_limit_min  # fitted to the range's smallest size
    assert_names(got.reason, f"top is cut to {cap} nodes")


def test_a_cap_above_the_range_changes_nothing_but_the_reason() -> None:
    curve = make_curve(40.0, 0.2, observed=(4, 8, 16, 32, 64))
    request = Request(4, 16, time_limit_min=60)
    plain = _decide_with(curve)(request)
    got = capped(request, _cap(51), _decide_with(curve))
    assert (got.nodes, got.rule, got.max_nodes) == (plain.nodes, plain.rule, plain.max_nodes)
    assert_names(got.reason, "do not exceed")


def test_a_job_left_as_submitted_is_released_with_its_range_cut() -> None:
    request = Request(2, 64, time_limit_min=60)
    got = capped(request, _cap(9), _decide_with(None))
    assert (got.nodes, got.max_nodes, got.time_limit_min, got.rule) == (2, 9, None, MASTER_WORKER)
    assert_names(got.reason, "cut to 2-9", "without the cap", "no curve")


def test_never_below_the_users_minimum() -> None:
    curve = make_curve(40.0, 0.2, observed=(4, 8, 16, 32, 64))
    request = Request(8, 64, time_limit_min=60)
    got = capped(request, _cap(3), _decide_with(curve))
    assert (got.nodes, got.max_nodes) == (8, None)
    assert_names(got.reason, "the job's minimum, 8 nodes, is above them")
    unsized = capped(request, _cap(3), _decide_with(None))
    assert (unsized.nodes, unsized.max_nodes) == (8, None)


def test_a_range_above_the_partition_is_left_alone() -> None:
    curve = make_curve(40.0, 0.2)
    got = capped(
        Request(80, 128), _cap(10), lambda r: decide(r, curve, ClusterState(total_nodes=64))
    )
    assert (got.nodes, got.rule) == (None, "partition_limit")


def test_every_capped_decision_stays_in_the_range_and_under_the_cap() -> None:
    curves = [None, make_curve(40.0, 0.2, observed=(4, 8, 16, 32, 64)), make_curve(3.0, 1.5)]
    ranges = [(1, 4), (2, 64), (8, 16), (16, 256)]
    for curve, (lo, hi), cap, release, fallback in itertools.product(
        curves, ranges, (1, 5, 12, 40, 300), ("pinned", "range"), ("submitted", "min", "max")
    ):
        request = Request(lo, hi, time_limit_min=120)
        got = capped(request, _cap(cap), _decide_with(curve, release=release, fallback=fallback))
        if got.nodes is None:  # as submitted: only where the whole range is under the cap
            assert hi <= cap, (curve, lo, hi, cap, got)
            continue
        top = got.max_nodes if got.max_nodes is not None else got.nodes
        assert lo <= got.nodes <= top <= hi, (curve, lo, hi, cap, got)
        assert top <= max(lo, cap), (curve, lo, hi, cap, got)
