"""adaptive_scaled: one curve shape per application, scaled per job by its user's limit."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

import policies
from policies.simulation import ClusterView, Experiment, Setup
from policies.simulation.learning import CurveLearner
from policies.simulation.scaled import (
    CHECK_WINDOW,
    CHECKED,
    CHECKED_RANGE,
    EXPLORE,
    GATE_ONLY,
    MIN_CHECKS,
    REFERENCE_S,
    SCALED,
    SECOND_SIZE,
    CheckedScaledSizer,
    ScaledCurve,
    ScaledSizer,
    normalised,
    out_of_sample_error,
)
from policies.simulation.sizing import MoldableRequests

from .helpers import trace

#: One application's shape g(n) (s per REFERENCE_S of limit): Downey σ = 0, A = 4, T(1) = 1000.
SHAPE = {1: 1000.0, 2: 500.0, 4: 250.0, 8: 250.0}


def _sizer(limits: list[float]) -> tuple[ScaledSizer, CurveLearner]:
    """A ScaledSizer over one application with one job per limit, ranges [1, 8]."""
    jobs = trace(*[(float(k), 1, 100.0, limit) for k, limit in enumerate(limits)])
    ex = Experiment(jobs, Setup(machine=8, seed=3))
    requests = MoldableRequests((1,) * len(jobs), (8,) * len(jobs), tuple(limits))
    learner = CurveLearner(1, debounce_s=0.0)
    sizer = ScaledSizer(
        ex.jobs, requests, ex.curves, policies.DEFAULTS, (learner, np.zeros(len(jobs), np.int64))
    )
    return sizer, learner


def test_a_run_is_normalised_by_its_users_limit() -> None:
    # 1,800 s of a 2-hour limit is a quarter of it: 900 s per hour of limit.
    assert normalised(1800.0, 7200.0) == 900.0
    sizer, learner = _sizer([7200.0])
    sizer.finished(0, 4, 1800.0, killed=False, now=10.0)
    assert learner._apps[0].runtimes == [900.0]
    assert learner._apps[0].nodes == [4]


def test_a_killed_run_is_not_an_observation() -> None:
    sizer, learner = _sizer([7200.0])
    sizer.finished(0, 4, 7200.0, killed=True, now=10.0)
    assert learner._apps[0].runtimes == []


def test_a_scaled_curve_multiplies_runtimes_and_keeps_the_shape() -> None:
    _, learner = _sizer([3600.0])
    for n, t in SHAPE.items():
        learner.observe(0, n, t, now=0.0)
    shape = learner.curve(0, now=1000.0)
    assert shape is not None
    scaled = ScaledCurve.of(shape, 3.0)
    sizes = np.array([1.0, 2.0, 4.0, 8.0])
    np.testing.assert_allclose(scaled.runtime(sizes), 3.0 * shape.runtime(sizes))
    low, high = shape.runtime_interval(sizes)
    s_low, s_high = scaled.runtime_interval(sizes)
    np.testing.assert_allclose(s_low, 3.0 * low)
    np.testing.assert_allclose(s_high, 3.0 * high)
    np.testing.assert_allclose(scaled.speedup(sizes), shape.speedup(sizes))
    np.testing.assert_allclose(scaled.efficiency(sizes), shape.efficiency(sizes))
    assert scaled.t1 == 3.0 * shape.t1
    with pytest.raises(ValueError, match="scale"):
        ScaledCurve.of(shape, 0.0)


def test_two_problem_sizes_share_one_shape_and_each_job_gets_its_own_scale() -> None:
    # Runs of a small problem (limit 1 h) and a ten-times larger one (limit 10 h) at every
    # size: T = L/3600 · g(n). Normalised, both are g exactly, so the learner fits one shape;
    # a new job with a 2-hour limit is predicted 2 · g(n): 1,000 s on 2 nodes, 500 s on 4.
    limits = [3600.0] * 4 + [36000.0] * 4 + [7200.0]
    sizer, _ = _sizer(limits)
    for k, (n, g) in enumerate(SHAPE.items()):
        sizer.finished(k, n, g, killed=False, now=0.0)
        sizer.finished(4 + k, n, 10.0 * g, killed=False, now=0.0)
    curve = sizer._curve(8, 1, 8, now=1000.0)
    assert isinstance(curve, ScaledCurve)
    assert curve.scale == 2.0
    np.testing.assert_allclose(curve.runtime(np.array([2.0, 4.0])), [1000.0, 500.0], rtol=0.02)
    assert curve.fit_error <= policies.DEFAULTS.max_fit_error
    # Fed raw, runs where the large problem ran on 1 and 2 nodes only and the small one on 4
    # and 8 only look like a 20× speedup from 2 to 4 nodes: no Downey curve fits that.
    raw = CurveLearner(1, debounce_s=0.0)
    for n, g in SHAPE.items():
        raw.observe(0, n, 10.0 * g if n <= 2 else g, now=0.0)
    mixed = raw.curve(0, now=1000.0)
    assert mixed is None or mixed.fit_error > policies.DEFAULTS.max_fit_error
    unbalanced, _ = _sizer([36000.0] * 2 + [3600.0] * 2 + [7200.0])
    for k, n in enumerate(SHAPE):
        unbalanced.finished(k, n, (10.0 if n <= 2 else 1.0) * SHAPE[n], killed=False, now=0.0)
    shape = unbalanced._curve(4, 1, 8, now=1000.0)
    assert shape is not None
    assert shape.fit_error <= policies.DEFAULTS.max_fit_error


def test_without_runs_the_job_runs_as_submitted() -> None:
    sizer, _ = _sizer([7200.0])
    got = sizer.allocate(0, ClusterView(0.0, 8, 0, 8))
    assert (got.min_nodes, got.max_nodes, got.limit, got.rule) == (1, 8, 7200.0, "fallback")


def test_the_variant_sees_only_submit_time_information() -> None:
    # Two traces equal but for the run times of the jobs not yet finished: every decision
    # of adaptive_scaled, after the same completed runs, is the same.
    rows = [(float(k), 4, 600.0 + 37.0 * k, 3600.0) for k in range(8)]
    other = [(s, n, 9.0 * t, limit) for s, n, t, limit in rows]
    decisions = []
    for policy, table in itertools.product((SCALED, CHECKED, EXPLORE), (rows, other)):
        ex = Experiment(trace(*rows[:4], *table[4:]), Setup(machine=16, seed=5))
        sizer = ex.sizer(policy)
        assert isinstance(sizer, ScaledSizer)
        for k, n in enumerate((2, 4, 8, 4)):
            sizer.finished(k, n, ex.jobs[k].runtime * 4.0 / n, killed=False, now=10.0 * k)
        view = ClusterView(now=500.0, idle_nodes=10, pending_demand_nodes=4, total_nodes=16)
        decisions.append([dataclasses.astuple(sizer.allocate(j, view)) for j in range(4, 8)])
    assert decisions[0] == decisions[1]
    assert decisions[2] == decisions[3]
    assert decisions[4] == decisions[5]


@pytest.mark.parametrize("policy", [SCALED, CHECKED, EXPLORE, GATE_ONLY])
def test_each_is_a_registered_variant_that_runs_a_trace(policy: str) -> None:
    jobs = trace(*[(60.0 * k, 4, 600.0, 3600.0) for k in range(20)])
    result = Experiment(jobs, Setup(machine=16, seed=5)).run(policy)
    assert len(result.schedule) == 20
    assert sum(result.rules.values()) == 20
    assert REFERENCE_S == 3600.0


def _checked(limits: list[float], explore: bool = False) -> CheckedScaledSizer:
    jobs = trace(*[(float(k), 1, 100.0, limit) for k, limit in enumerate(limits)])
    ex = Experiment(jobs, Setup(machine=8, seed=3))
    requests = MoldableRequests((1,) * len(jobs), (8,) * len(jobs), tuple(limits))
    learner = CurveLearner(1, debounce_s=0.0)
    index = np.zeros(len(jobs), np.int64)
    return CheckedScaledSizer(
        ex.jobs, requests, ex.curves, policies.DEFAULTS, (learner, index), explore=explore
    )


def test_a_run_is_scored_against_the_shape_of_its_submit_time() -> None:
    # The shape predicts 500 s per hour of limit on 2 nodes; a 2-hour job that ran 1,500 s
    # on 2 nodes is 750 s per hour: |ln(750/500)| = ln 1.5.
    assert out_of_sample_error(750.0, 500.0) == pytest.approx(math.log(1.5))
    sizer = _checked([3600.0] * 4 + [7200.0])
    for k, (n, g) in enumerate(SHAPE.items()):
        sizer.finished(k, n, g, killed=False, now=0.0)
    assert sizer.scores[0] == []  # decided without a curve: nothing to score
    assert sizer._curve(4, 1, 8, now=1000.0) is not None
    sizer.finished(4, 2, 1500.0, killed=False, now=2000.0)
    assert sizer.scores[0] == [pytest.approx(math.log(1.5), rel=0.05)]


def test_the_gate_needs_min_checks_scores_with_a_small_median() -> None:
    sizer = _checked([3600.0])
    sizer.scores[0] = [0.1, 2.0]
    assert sizer.checked_error(0) is None
    sizer.scores[0] = [0.1, 2.0, 0.2]  # median 0.2: e^0.2 - 1 = 22.1%
    assert sizer.checked_error(0) == pytest.approx(math.expm1(0.2))
    assert MIN_CHECKS == 3
    # only the last CHECK_WINDOW scores count
    sizer.scores[0] = [5.0] * 100 + [0.1] * CHECK_WINDOW
    assert sizer.checked_error(0) == pytest.approx(math.expm1(0.1))


def test_a_curve_only_the_gate_admits_sizes_the_job_but_keeps_its_users_limit() -> None:
    # Runs that no Downey curve fits within 10% (fit error above max_fit_error), but whose
    # application's last scores have a median of 10%: the job is sized with the curve, at the
    # user's limit.
    sizer = _checked([3600.0] * 5 + [7200.0])
    for k, (n, t) in enumerate(((1, 1000.0), (2, 900.0), (4, 200.0), (8, 400.0))):
        sizer.finished(k, n, t, killed=False, now=0.0)
    shape = sizer.shapes[0].curve(0, now=1000.0)
    assert shape is not None
    assert shape.fit_error > policies.DEFAULTS.max_fit_error
    view = ClusterView(now=1000.0, idle_nodes=8, pending_demand_nodes=0, total_nodes=8)
    refused = sizer.allocate(4, view)
    assert refused.rule == "fallback"
    sizer.scores[0] = [math.log1p(0.1)] * MIN_CHECKS
    got = sizer.allocate(5, view)
    assert got.rule != "fallback"
    assert 5 in sizer.admitted
    assert got.limit == 7200.0
    assert got.guard_limit is None


def test_an_app_with_runs_on_one_size_explores_the_middle_of_the_range_once() -> None:
    # Runs on 8 nodes only (greedy filled the range [1, 8]): the predictor refuses them, so
    # the next job is pinned at round(√(1·8)) = 3 nodes with its user's limit; while it runs,
    # the job after it is left as submitted.
    sizer = _checked([3600.0] * 5, explore=True)
    sizer.finished(0, 8, 250.0, killed=False, now=0.0)
    sizer.finished(1, 8, 260.0, killed=False, now=0.0)
    view = ClusterView(now=1000.0, idle_nodes=8, pending_demand_nodes=0, total_nodes=8)
    got = sizer.allocate(2, view)
    assert (got.min_nodes, got.max_nodes, got.limit, got.rule) == (3, 3, 3600.0, SECOND_SIZE)
    assert sizer.allocate(3, view).rule == "fallback"
    sizer.finished(2, 3, 340.0, killed=False, now=1500.0)
    assert sizer.exploring == {}
    assert sizer.sizes_run[0] == {3, 8}


def test_without_explore_an_app_on_one_size_is_left_as_submitted() -> None:
    sizer = _checked([3600.0] * 3)
    sizer.finished(0, 8, 250.0, killed=False, now=0.0)
    view = ClusterView(now=1000.0, idle_nodes=8, pending_demand_nodes=0, total_nodes=8)
    assert sizer.allocate(1, view).rule == "fallback"


def test_the_control_feeds_raw_run_times_and_scales_nothing() -> None:
    jobs = trace((0.0, 4, 600.0, 7200.0), (1.0, 4, 600.0, 7200.0))
    sizer = Experiment(jobs, Setup(machine=16, seed=5)).sizer(GATE_ONLY)
    assert isinstance(sizer, CheckedScaledSizer)
    assert sizer.scale(0) == 1.0
    sizer.finished(0, 4, 1800.0, killed=False, now=10.0)
    assert sizer.shapes[0]._apps[int(sizer.shapes[1][0])].runtimes == [1800.0]


@pytest.mark.parametrize("idle", [0, 3, 10, 16])
def test_the_range_variant_holds_the_pinned_size_within_the_users_range(idle: int) -> None:
    # After the same completed runs, adaptive_scaled_checked_range releases a range inside
    # the user's that holds the size adaptive_scaled_checked pins, with a limit written for
    # the range's minimum: never shorter than the pinned job's, never above the user's.
    rows = [(float(k), 4, 600.0 + 37.0 * k, 3600.0) for k in range(8)]
    got = {}
    for policy in (CHECKED, CHECKED_RANGE):
        ex = Experiment(trace(*rows), Setup(machine=16, seed=5))
        sizer = ex.sizer(policy)
        assert isinstance(sizer, CheckedScaledSizer)
        for k, n in enumerate((2, 4, 8, 4)):
            sizer.finished(k, n, ex.jobs[k].runtime * 4.0 / n, killed=False, now=10.0 * k)
        view = ClusterView(now=500.0, idle_nodes=idle, pending_demand_nodes=4, total_nodes=16)
        got[policy] = [sizer.allocate(j, view) for j in range(4, 8)]
    lo, hi, user = ex.requests.lo, ex.requests.hi, ex.requests.limit
    ranged = 0
    for j, pinned, released in zip(range(4, 8), got[CHECKED], got[CHECKED_RANGE], strict=True):
        assert pinned.rule != "fallback"
        assert lo[j] <= released.min_nodes <= pinned.min_nodes == pinned.max_nodes
        assert pinned.max_nodes <= released.max_nodes <= hi[j]
        assert pinned.limit <= released.limit <= user[j]
        ranged += released.min_nodes < released.max_nodes
    # Few idle nodes at submit pin the small end (limit_to_idle), where the range lets the
    # job grow to the larger useful size (8 for this shape) once nodes free; with 8 idle
    # both give 8.
    assert (ranged == 4) == (idle < 8)
