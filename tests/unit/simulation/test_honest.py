"""The simulator hands no policy what no site has, and counts what kills cost.

One test (or a few) per point of the measurement's rules; each failed on the simulator before
them:

1. limits as the users wrote them; a trace without any gets a published model, not one made
   from the run time;
2. the truth (hidden applications) is drawn apart from the learner's keys;
3. a killed job is submitted again, its response runs to its completion, its waste is counted;
4. failed and cancelled trace jobs run as recorded under every policy;
5. the oracle says what it knows; a curve-only oracle knows the shape and not the run time;
6. world models relate the parallelism to the request as named;
7. policies are compared by paired ratios with intervals;
8. rigid_limits can shorten a limit;

and the docs page states every assumption the simulator prints.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import policies
from plugin.formats.swf import parse_swf
from policies.simulation import (
    POLICIES,
    ClusterView,
    Experiment,
    Setup,
    TraceJob,
    sweep,
)
from policies.simulation.adaptive import LIMIT_ONLY
from policies.simulation.assumptions import assumptions
from policies.simulation.engine import RECORDED
from policies.simulation.estimates import JOINT, bin_count, head_values, histogram, model_limits
from policies.simulation.experiment import ORACLE_CURVE, ORACLE_LABELS
from policies.simulation.sweep import BASELINE, paired_ratio, summarize_load
from policies.simulation.world import WORLDS, draw_truth

from .helpers import assert_never_oversubscribed, trace

# --- 1. limits -------------------------------------------------------------------------------


def test_the_users_limit_reaches_the_policies_as_written() -> None:
    # It was moved along the true curve to the range's minimum: L·τ(lo)/τ(r), a limit no
    # user could write without knowing the curve.
    jobs = trace((0, 16, 1000, 1200), (5, 8, 500, 3600), (9, 1, 10, 60))
    ex = Experiment(jobs, Setup(machine=64, seed=3))
    assert ex.requests.limit == (1200.0, 3600.0, 60.0)
    got = ex.sizer("greedy").allocate(0, ClusterView(0.0, 64, 0, 64))
    assert got.limit == 1200.0


def test_a_trace_without_requested_times_leaves_the_limit_to_the_simulator() -> None:
    header = "; MaxNodes: 16\n; MaxProcs: 16\n"
    line = "1 0 -1 100 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1"
    (job,) = parse_swf((header + line).splitlines(), "t.swf").jobs
    assert not job.limit_given
    assert job.limit == math.inf  # it was 2 × the run time, rounded up: 5 min


def _no_limits(runtimes: list[float]) -> list[TraceJob]:
    return [
        TraceJob(k, 60.0 * k, r, 1 + k % 4, math.inf, limit_given=False)
        for k, r in enumerate(runtimes)
    ]


def test_missing_limits_come_from_the_model_of_user_estimates_not_the_run_time() -> None:
    jobs = _no_limits([60.0] * 400 + [10 * 3600.0])
    ex = Experiment(jobs, Setup(machine=16, seed=2))
    limits = np.array([j.limit for j in ex.jobs])
    runtimes = np.array([j.runtime for j in ex.jobs])
    assert np.all(limits >= runtimes)
    assert ex.limits.modelled == len(jobs)
    assert ex.limits.max_estimate == 10 * 3600.0
    short = limits[:400]
    # The same 60 s run gets many different round values, most often the maximum (the
    # model's most popular); a limit made from the run time gave all 400 the same 5 min.
    assert len(set(short.tolist())) >= 8
    assert np.mean(short == 10 * 3600.0) > 0.2
    assert set(short.tolist()) >= {300.0, 600.0, 3600.0}
    # Another seed draws other limits; the same seed the same.
    again = Experiment(jobs, Setup(machine=16, seed=2))
    other = Experiment(jobs, Setup(machine=16, seed=3))
    assert [j.limit for j in again.jobs] == limits.tolist()
    assert [j.limit for j in other.jobs] != limits.tolist()


def test_the_estimate_histogram_is_the_models() -> None:
    assert [bin_count(n) for n in (20, 200, 1000, 10_000, 10**6)] == [10, 20, 35, 90, 565]
    assert bin_count(600) == 28  # 20 + 400 · 15/800
    head = head_values(18 * 3600.0)
    assert head[0] == 18 * 3600.0
    assert len(head) == 20
    assert set(JOINT) - {18 * 3600.0} <= set(head)
    values, counts = histogram(5000, 18 * 3600.0, np.random.default_rng(1))
    assert counts.sum() == 5000
    assert counts[0] == counts.max()  # the maximal estimate is the most popular
    top20 = np.sort(counts)[::-1][:20].sum()
    assert top20 / 5000 == pytest.approx(0.89, abs=0.02)
    assert np.all(values % 60.0 == 0)


def test_the_assignment_keeps_the_histogram_and_estimate_above_run_time() -> None:
    rng = np.random.default_rng(4)
    runtimes = rng.exponential(1800.0, 3000)
    jobs = _no_limits(runtimes.tolist())
    out = model_limits(jobs, np.random.default_rng(5))
    limits = np.array([j.limit for j in out.jobs])
    assert np.all(limits >= runtimes)
    values, counts = histogram(3000, out.max_estimate, np.random.default_rng(5))
    if out.raised == 0:
        got = dict(zip(*np.unique(limits, return_counts=True), strict=True))
        want = {v: c for v, c in zip(values.tolist(), counts.tolist(), strict=True) if c}
        assert got == want
    # Longer runs cannot get short limits, but short runs do get long ones: the limit says
    # little about the run time (rank correlation well below 1).
    rho = stats.spearmanr(runtimes, limits).statistic
    assert 0.0 < rho < 0.8


# --- 2. hidden applications ---------------------------------------------------------------------


def _keyed_jobs() -> list[TraceJob]:
    return [
        TraceJob(k, 30.0 * k, 600.0 + k, [2, 4, 8][k % 3], 3600.0, k % 12, 1) for k in range(600)
    ]


def test_the_truth_is_drawn_apart_from_the_learners_keys() -> None:
    ex = Experiment(_keyed_jobs(), Setup(machine=32, seed=1))
    keys, hidden = ex.apps.index, ex.truth.hidden
    pairs = set(zip(keys.tolist(), hidden.tolist(), strict=True))
    per_key = {k: {h for kk, h in pairs if kk == k} for k in set(keys.tolist())}
    per_app = {h: {k for k, hh in pairs if hh == h} for h in set(hidden.tolist())}
    assert max(len(v) for v in per_key.values()) >= 2  # a key mixes hidden applications
    assert max(len(v) for v in per_app.values()) >= 2  # an application under several keys
    assert ex.truth.applications_per_key(ex.apps) > 1.0
    # The jobs of one key no longer share one curve.
    A = np.asarray(ex.curves.A)
    assert any(len(set(A[keys == k].tolist())) > 1 for k in range(12))


def test_one_code_per_key_and_no_sharing_make_the_grouping_exact() -> None:
    ex = Experiment(_keyed_jobs(), Setup(machine=32, seed=1, codes_per_key=1, shared_codes=0.0))
    assert np.array_equal(ex.truth.hidden, ex.apps.index)
    with pytest.raises(ValueError, match="codes per key"):
        Setup(machine=32, codes_per_key=0)
    with pytest.raises(ValueError, match="shared-code"):
        Setup(machine=32, shared_codes=1.5)


# --- 3. kills ---------------------------------------------------------------------------------


def test_a_killed_job_is_submitted_again_until_it_completes() -> None:
    # Job 0 runs 1000 s with a 600 s limit: killed at 600, its user submits it again with
    # 1200 s (twice, under the partition's longest limit, job 1's 3600 s): it completes at
    # 1600. Its response was 600 s, as if a kill were a fast finish.
    jobs = trace((0, 2, 1000, 600), (0, 2, 100, 3600))
    ex = Experiment(jobs, Setup(machine=4, seed=1, noise=0.0))
    result = ex.run("rigid")
    s, m = result.schedule, result.metrics
    assert s.end[0] == pytest.approx(1600.0)
    assert s.limit[0] == 1200.0
    assert (m.killed, m.resubmitted, m.abandoned) == (1, 1, 0)
    assert m.mean_response_s == pytest.approx((1600.0 + 100.0) / 2)
    assert m.node_hours == pytest.approx(2 * (600 + 1000 + 100) / 3600)
    assert m.killed_node_hours == m.wasted_node_hours == pytest.approx(2 * 600 / 3600)
    assert m.to_dict()["wasted_node_hours"] == m.killed_node_hours
    assert m.mean_wait_s == pytest.approx(0.0)


def test_a_job_killed_at_the_partitions_longest_limit_is_abandoned() -> None:
    jobs = trace((0, 2, 5000, 3600), (0, 2, 100, 600))
    result = Experiment(jobs, Setup(machine=4, seed=1, noise=0.0)).run("rigid")
    assert result.schedule.end[0] == pytest.approx(3600.0)
    assert (result.metrics.resubmitted, result.metrics.abandoned) == (0, 1)
    doubled = Experiment(jobs, Setup(machine=4, seed=1, noise=0.0, max_time_s=7200.0))
    again = doubled.run("rigid")
    assert again.schedule.end[0] == pytest.approx(3600.0 + 5000.0)
    assert again.metrics.resubmitted == 1


def test_resubmissions_keep_the_machine_whole_on_a_real_trace() -> None:
    jobs = [
        TraceJob(k, 40.0 * k, 900.0, [2, 4, 8][k % 3], [600.0, 1800.0][k % 2], k % 5, 1)
        for k in range(200)
    ]
    ex = Experiment(jobs, Setup(machine=16, seed=3))
    for policy in ("rigid", "greedy", "adaptive"):
        result = ex.run(policy)
        assert result.metrics.killed > 0
        assert result.metrics.resubmitted > 0
        s = result.schedule
        assert len(s.all_runs()) == len(jobs) + result.metrics.resubmitted
        assert s.abandoned is not None
        assert np.all(~s.abandoned | s.killed)
        assert_never_oversubscribed(s)


# --- 4. failed and cancelled jobs ------------------------------------------------------------


def test_failed_and_cancelled_jobs_run_as_recorded_under_every_policy() -> None:
    jobs = [
        TraceJob(k, 60.0 * k, 700.0 + 10 * k, 8, 3600.0, k % 3, 1, status=[1, 0, 5][k % 3])
        for k in range(30)
    ]
    ex = Experiment(jobs, Setup(machine=32, seed=2))
    recorded = np.array([not j.completed for j in jobs])
    for policy in POLICIES:
        s = ex.run(policy).schedule
        assert np.all(s.nodes[recorded] == 8), policy
        assert np.allclose(
            (s.end - s.start)[recorded], [j.runtime for j in jobs if not j.completed]
        )
        assert all(s.rule[i] == RECORDED for i in np.flatnonzero(recorded))
        assert not s.killed[recorded].any()
    greedy = ex.run("greedy")
    assert greedy.metrics.recorded == int(recorded.sum())
    # A completed job is still moldable (status 1 and -1, unknown).
    assert TraceJob(1, 0.0, 1.0, 1, 1.0, status=-1).completed


# --- 5. the oracles ----------------------------------------------------------------------------


def test_the_oracle_says_what_it_knows_and_the_curve_only_oracle_knows_less() -> None:
    assert "oracle" in POLICIES
    assert ORACLE_CURVE in POLICIES
    assert ORACLE_LABELS["oracle"] == "oracle (true curve + own run time)"
    assert ORACLE_LABELS[ORACLE_CURVE] == "oracle (curve shape only)"
    # Two jobs of one hidden application at one size, one running 4× longer.
    jobs = trace((0, 8, 1000, 7200), (10, 8, 4000, 7200), (20, 8, 2000, 7200))
    ex = Experiment(jobs, Setup(machine=32, seed=5, codes_per_key=1, shared_codes=0.0))
    own = [ex.curves.policy_curve(j, (4, 8, 16)) for j in range(3)]
    shape = [ex.curves.shape_curve(j, (4, 8, 16)) for j in range(3)]
    assert own[1].t1 == pytest.approx(4 * own[0].t1)  # the job's own run time
    assert shape[0].t1 == shape[1].t1 == pytest.approx(own[2].t1)  # the median's, for all
    assert (shape[0].A, shape[0].sigma) == (own[0].A, own[0].sigma)
    assert ex.run(ORACLE_CURVE).refits == 0


# --- 6. world models ---------------------------------------------------------------------------


def test_world_models_tie_the_parallelism_to_the_request_as_named() -> None:
    jobs = [TraceJob(k, 10.0 * k, 600.0, 2 ** (k % 7), 3600.0, k) for k in range(700)]
    ex = Experiment(jobs, Setup(machine=128, seed=1))
    keys = ex.apps
    r = np.array([j.nodes for j in jobs], dtype=float)
    for world, (lo, hi) in (("cirne", (1.0, 4.0)), ("overask", (0.25, 1.0))):
        truth = draw_truth(jobs, keys, 1, 1e6, world, codes_per_key=1, shared=0.0)
        A = truth.per_job().A
        assert np.all(A >= np.maximum(1.0, lo * r) - 1e-9), world
        assert np.all(A <= hi * r + 1e-9), world
    downey = draw_truth(jobs, keys, 1, 128.0, "downey", codes_per_key=1, shared=0.0)
    A = downey.per_job().A
    assert np.all((A >= 1.0) & (A <= 128.0))
    assert abs(stats.spearmanr(r, A).statistic) < 0.15  # independent of the request
    assert np.mean(A < r) > 0.3  # often below it: greedy's extra nodes are waste there
    assert set(WORLDS) == {"cirne", "downey", "overask"}
    with pytest.raises(ValueError, match="no parallelism factor"):
        Setup(machine=8, world="downey", parallelism_factor=(1.0, 2.0))
    with pytest.raises(ValueError, match="world must be one of"):
        Setup(machine=8, world="flat")
    over = Experiment(jobs, Setup(machine=128, seed=1, world="overask"))
    assert np.median(np.asarray(over.curves.A) / r) < 1.0


# --- 7. paired ratios ----------------------------------------------------------------------------


def test_policies_are_compared_by_paired_ratios_with_intervals() -> None:
    ratio = paired_ratio([2.0, 3.0, 4.0], [2.0, 2.0, 2.0])
    half = stats.t.ppf(0.975, 2) * 0.5 / math.sqrt(3)
    assert ratio.mean == pytest.approx(1.5)
    assert ratio.ci95 == pytest.approx((1.5 - half, 1.5 + half))
    assert paired_ratio([1.0], [2.0]).ci95 is None
    figures = {"mean_response_s": 1.0, "mean_bsld": 1.0, "node_hours": 1.0}
    base = dict.fromkeys(
        ("jobs", "mean_wait_s", "mean_bounded_slowdown", "killed", "killed_node_hours"), 1.0
    )
    base |= dict.fromkeys(("wasted_node_hours", "resubmitted", "abandoned", "raised"), 0.0)
    base |= dict.fromkeys(("sized", "recorded", "utilization", "makespan_s"), 0.0)
    seeds = [
        {BASELINE: base | figures, "adaptive": base | {k: v * f for k, v in figures.items()}}
        for f in (0.9, 1.0, 1.1)
    ]
    out = summarize_load(seeds, (BASELINE, "adaptive"))
    assert out["adaptive"].vs["mean_response_s"].mean == pytest.approx(1.0)
    assert out["adaptive"].vs["node_hours"].ci95 is not None
    assert "vs_greedy" in out["adaptive"].to_dict()
    jobs = [TraceJob(k, 60.0 * k, 600.0, 4, 1800.0, k % 2) for k in range(30)]
    (result,) = sweep(jobs, Setup(machine=16), [0.7], seeds=3, policies=("greedy", "rigid"))
    assert result.policies["rigid"].vs["mean_response_s"].ci95 is not None
    assert result.policies["greedy"].vs["mean_response_s"].mean == 1.0


# --- 8. rigid_limits ------------------------------------------------------------------------------


def test_rigid_limits_keeps_the_size_and_can_shorten_the_limit() -> None:
    # Deciding on [r, r] gave L·T⁺(r)/T⁻(r)·safety ≥ L: never shorter, so rigid_limits was
    # rigid everywhere. Now: the limit the rule sets for r in the moldable range.
    jobs = trace(*[(10 * k, 16, 1000, 4 * 3600) for k in range(20)])
    ex = Experiment(jobs, Setup(machine=64, seed=1, curves="oracle", noise=0.0))
    sizer = ex.sizer("rigid_limits")
    got = sizer.allocate(0, ClusterView(0.0, 64, 0, 64))
    assert (got.min_nodes, got.max_nodes) == (16, 16)
    assert got.limit < 4 * 3600
    assert got.rule == LIMIT_ONLY
    lo = ex.requests.lo[0]
    curve = ex.curves.policy_curve(0, (lo, 16, ex.requests.hi[0]))
    tau = float(curve.runtime(16) / curve.runtime(lo))
    assert got.limit <= 60 * math.ceil(4 * 60 * tau * 1.2 * 1.5)  # the ratio rule, margins in
    rigid, limited = ex.run("rigid").schedule, ex.run("rigid_limits").schedule
    assert np.array_equal(rigid.nodes, limited.nodes)
    assert np.all(limited.limit <= rigid.limit)
    assert np.any(limited.limit < rigid.limit)
    fallback = Experiment(jobs, Setup(machine=64, seed=1)).sizer("rigid_limits")
    first = fallback.allocate(0, ClusterView(0.0, 64, 0, 64))  # learned: no curve yet
    assert (first.min_nodes, first.max_nodes, first.limit) == (16, 16, 4 * 3600.0)
    assert policies.DEFAULTS.time_limit_reference == "min"


def test_the_docs_page_lists_every_assumption_the_simulator_prints() -> None:
    page = Path(__file__).resolve().parents[3] / "docs" / "science" / "what-if-assumptions.md"
    text = page.read_text(encoding="utf-8")
    for world in WORLDS:
        for assumption in assumptions(Setup(machine=8, world=world)):
            assert f"| `{assumption.key}` |" in text, assumption.key
            assert assumption.favours
