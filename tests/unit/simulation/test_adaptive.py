"""The adaptive policy in the simulator is `policies.decide`, not a copy of it."""

from __future__ import annotations

from dataclasses import replace

import pytest

import policies
from policies.rules import refused_top
from policies.second_size import one_size
from policies.simulation import ClusterView, Experiment, Setup
from policies.simulation.adaptive import AdaptiveSizer
from policies.simulation.sizing import minutes

from .helpers import trace


def _experiment(**setup: object) -> Experiment:
    jobs = trace((0, 16, 3000, 3600), (10, 4, 600), (20, 1, 100))
    return Experiment(jobs, Setup(machine=64, seed=11, **setup))  # type: ignore[arg-type]


def test_each_allocation_is_the_decision_of_policies_decide() -> None:
    ex = _experiment()
    sizer = ex.sizer("oracle")
    assert isinstance(sizer, AdaptiveSizer)
    view = ClusterView(now=5.0, idle_nodes=20, pending_demand_nodes=30, total_nodes=64)
    for job in range(3):
        lo, hi, limit = ex.requests.lo[job], ex.requests.hi[job], ex.requests.limit[job]
        expected = policies.decide(
            policies.Request(lo, hi, time_limit_min=minutes(limit)),
            ex.curves.policy_curve(job, (lo, ex.jobs[job].nodes, hi)),
            policies.ClusterState(idle_nodes=20, pending_demand_nodes=30, total_nodes=64),
            policies.DEFAULTS,
            sizer.budget,
        )
        got = sizer.allocate(job, view)
        assert expected.nodes is not None
        assert (got.min_nodes, got.max_nodes) == (expected.nodes, expected.nodes)
        assert expected.time_limit_min is not None
        assert got.limit == 60.0 * expected.time_limit_min
        assert got.rule == expected.rule
    assert sum(sizer.rules.values()) == 3
    assert sizer.budget.jobs_decided == 3


def test_the_configured_settings_are_used() -> None:
    small = _experiment(settings=replace(policies.DEFAULTS, strategy="efficiency"))
    result = small.run("oracle")
    assert set(result.rules) <= {"efficiency", "cap"}


def test_a_decision_left_as_submitted_hands_the_range_to_the_scheduler() -> None:
    # A fit error above max_fit_error makes every curve unusable: the fallback leaves the job
    # its range (the top cut at the curve's knee, policies/rules.py refused_top) and its
    # user's limit, and Slurm sizes it at start. The exploration budget counts it as a
    # decided job, without node-hours: no size is set with a predicted runtime.
    ex = _experiment(settings=replace(policies.DEFAULTS, max_fit_error=1e-12))
    sizer = ex.sizer("oracle")
    assert isinstance(sizer, AdaptiveSizer)
    curve = ex.curves.policy_curve(0, (8, 16, 32))
    unusable = replace(curve, fit_error=0.5)
    ex.curves.stored[0] = unusable
    got = sizer.allocate(0, ClusterView(0.0, 64, 0, 64))
    cut = refused_top(unusable, ex.requests.lo[0], ex.requests.hi[0])
    assert cut is not None
    assert cut.top is not None
    assert cut.top < ex.requests.hi[0]
    assert (got.min_nodes, got.max_nodes) == (ex.requests.lo[0], cut.top)
    assert got.limit == ex.requests.limit[0]
    assert got.rule == "fallback"
    assert sizer.budget == policies.ExplorationBudget(jobs_decided=1)
    # Without a knee nothing is cut: the range as submitted.
    ex.curves.stored[0] = replace(unusable, max_useful_n=None)
    again = sizer.allocate(0, ClusterView(0.0, 64, 0, 64))
    assert (again.min_nodes, again.max_nodes) == (ex.requests.lo[0], ex.requests.hi[0])


def test_adaptive_jobs_are_never_killed_by_their_exact_curves() -> None:
    # With no run noise the oracle's curve is the truth, so the policy's time limit (scaled with a
    # safety factor, in whole minutes) always covers the runtime.
    result = _experiment(noise=0.0).run("oracle")
    assert result.metrics.killed == 0


@pytest.mark.parametrize("policy", ["rigid", "greedy"])
def test_baselines_report_no_rules(policy: str) -> None:
    assert dict(_experiment().run(policy).rules) == {}


def test_an_application_run_at_one_size_only_is_explored_at_a_second_size() -> None:
    # The learned policy, three completed runs of job 0's application, all at 16 nodes,
    # each a sixth of its user's limit: no curve fits one size, so the job is pinned at the
    # least size where the slowest run, slowed down linearly, fits the limit x 1.2 (the
    # range's minimum, 8, here), the user's limit kept, and counted as explored.
    ex = _experiment()
    sizer = ex.sizer("adaptive")
    assert isinstance(sizer, AdaptiveSizer)
    assert sizer.learner is not None
    limit = ex.requests.limit[0]
    for k in range(3):
        sizer.finished(0, 16, limit / 6.0, False, 100.0 * k)
    sizer.budget = policies.ExplorationBudget(jobs_decided=20, node_hours_decided=100.0)
    view = ClusterView(now=1000.0, idle_nodes=64, pending_demand_nodes=0, total_nodes=64)
    got = sizer.allocate(0, view)
    assert (got.min_nodes, got.max_nodes, got.rule) == (8, 8, "exploration")
    assert got.limit == limit
    assert (sizer.budget.jobs_decided, sizer.budget.jobs_explored) == (21, 1)
    assert sizer.budget.node_hours_explored == pytest.approx(16 * limit / 6.0 / 3600.0)
    # Once the run at 8 nodes is in the store, the application has two sizes: no more.
    sizer.finished(0, 8, limit / 3.0, False, 1100.0)
    learner, apps = sizer.learner
    assert [r.nodes for r in learner.runs(int(apps[0]), 5000.0)] == [16, 16, 16, 8]
    assert one_size(learner.runs(int(apps[0]), 5000.0)) is None
    assert [r.nodes for r in learner.runs(int(apps[0]), 1000.0)] == [16, 16, 16]


def test_jobs_left_as_submitted_make_the_budget_a_cold_start_explores_in() -> None:
    # One job of another application was sized with a curve (100 predicted node-hours), and
    # eight jobs without a curve were left as submitted: they count as decided jobs, without
    # node-hours, so the second size of an application run three times at one size is 1 of
    # 10 jobs, within the 10% budget (counted over jobs decided with a curve only, it would
    # be 1 of 2 and refused).
    ex = _experiment()
    sizer = ex.sizer("adaptive")
    assert isinstance(sizer, AdaptiveSizer)
    sizer.budget = policies.ExplorationBudget(jobs_decided=1, node_hours_decided=100.0)
    view = ClusterView(now=0.0, idle_nodes=64, pending_demand_nodes=0, total_nodes=64)
    for _ in range(8):
        assert sizer.allocate(0, view).rule == "fallback"
    assert sizer.budget == policies.ExplorationBudget(jobs_decided=9, node_hours_decided=100.0)
    limit = ex.requests.limit[0]
    for k in range(3):
        sizer.finished(0, 16, limit / 6.0, False, 100.0 * k)
    later = ClusterView(now=1000.0, idle_nodes=64, pending_demand_nodes=0, total_nodes=64)
    assert sizer.allocate(0, later).rule == "exploration"
    assert (sizer.budget.jobs_decided, sizer.budget.jobs_explored) == (10, 1)


def test_a_fallback_to_the_minimum_is_not_counted_as_explored() -> None:
    # fallback = "min" sizes a job without a curve at its minimum: a decision, not an
    # exploration, even though no curve made it (unlike a second size).
    ex = _experiment(settings=replace(policies.DEFAULTS, fallback="min"))
    sizer = ex.sizer("adaptive")
    assert isinstance(sizer, AdaptiveSizer)
    view = ClusterView(now=0.0, idle_nodes=64, pending_demand_nodes=0, total_nodes=64)
    got = sizer.allocate(0, view)
    lo = ex.requests.lo[0]
    assert (got.min_nodes, got.max_nodes, got.rule) == (lo, lo, "fallback")
    assert (sizer.budget.jobs_decided, sizer.budget.jobs_explored) == (1, 0)
