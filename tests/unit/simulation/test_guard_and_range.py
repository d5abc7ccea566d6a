"""The kill guard and the range release in the simulator, as the daemon runs them.

Engine: hand traces with hand allocations (times in seconds, plain arithmetic). Adaptive: the
policy variants on a real trace with learned curves, where the promise is checked: with the
guard no job is killed at a limit adaptalloc shortened.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import policies
from plugin.daemon import guard as daemon_guard
from plugin.formats.swf import read_swf
from policies.simulation import (
    ALL_POLICIES,
    VARIANTS,
    Allocation,
    ClusterView,
    Experiment,
    Schedule,
    Setup,
    TraceJob,
    simulate,
)
from policies.simulation.adaptive import MAX_SAFETY, SAFETY_GROWTH, AdaptiveSizer, with_safety
from policies.simulation.engine import GUARD_MARGIN_S
from policies.simulation.sizing import minutes

from .helpers import NASA, assert_never_oversubscribed, trace


class GuardedSizer:
    """Each job pinned at its size with its trace limit and a guard limit given by hand."""

    name = "guarded"

    def __init__(self, jobs: list, guard: list[float | None]) -> None:  # type: ignore[type-arg]
        self.jobs, self.guard = jobs, guard
        self.told: list[tuple[int, float]] = []

    def allocate(self, job: int, view: ClusterView, user_limit: float | None = None) -> Allocation:
        j = self.jobs[job]
        return Allocation(j.nodes, j.nodes, j.limit, "", self.guard[job])

    def raised(self, job: int, now: float) -> None:
        self.told.append((job, now))


def _run(jobs: list, guard: list[float | None]) -> tuple[Schedule, GuardedSizer]:  # type: ignore[type-arg]
    sizer = GuardedSizer(jobs, guard)
    return simulate(jobs, 4, sizer, lambda j, n: jobs[j].runtime), sizer


def test_the_guard_raises_a_limit_that_would_kill() -> None:
    # J0 runs 100 s with a limit of 60: killed at 60 unwatched; watched (user's 200) it is
    # raised 45 s before its limit, at 15, and completes at 100.
    jobs = trace((0, 2, 100, 60))
    killed, _ = _run(jobs, [None])
    assert killed.killed.tolist() == [True]
    assert killed.end.tolist() == [60]
    assert killed.raised_limits == 0
    saved, sizer = _run(jobs, [200.0])
    assert saved.killed.tolist() == [False]
    assert saved.end.tolist() == [100]
    assert saved.limit.tolist() == [200]
    assert saved.raised_limits == 1
    assert sizer.told == [(0, 60 - GUARD_MARGIN_S)]


def test_a_job_that_outruns_the_users_limit_too_is_killed_there() -> None:
    jobs = trace((0, 2, 300, 60))
    s, _ = _run(jobs, [200.0])
    assert s.killed.tolist() == [True]
    assert s.end.tolist() == [200]
    assert s.raised_limits == 1


def test_the_guard_also_raises_a_job_ending_within_its_margin() -> None:
    # 30 s of a 60 s limit: still running 45 s before it (at 15), so raised as the daemon
    # would, though it would have ended in time; a limit not above the user's is not watched.
    jobs = trace((0, 2, 30, 60), (0, 2, 30, 60))
    s, _ = _run(jobs, [200.0, 60.0])
    assert s.raised is not None
    assert s.raised.tolist() == [True, False]
    assert s.killed.tolist() == [False, False]
    assert s.end.tolist() == [30, 30]


def test_until_the_raise_easy_plans_with_the_short_limit() -> None:
    # 6 nodes. J0 (3 nodes, runs 100, limit 50, guard 200). J1 (4 nodes) at 1 waits. At 2,
    # J2 (1 node, 5 s) backfills: J1's reservation is at 50, J0's shortened limit. The guard
    # raises J0 at 5; at J3's submit (10) J1's reservation is at 200, and J1 starts when J0
    # ends, at 100: a reservation made before the raise came late, as on the real cluster.
    jobs = trace((0, 3, 100, 50), (1, 4, 10), (2, 1, 5), (10, 1, 5))
    sizer = GuardedSizer(jobs, [200.0, None, None, None])
    s = simulate(jobs, 6, sizer, lambda j, n: jobs[j].runtime, record_reservations=True)
    assert [(r.at, r.start) for r in s.reservations if r.job == 1] == [(2, 50), (10, 200)]
    assert s.start.tolist() == [0, 100, 2, 10]
    assert not s.killed.any()
    assert_never_oversubscribed(s)


def test_the_simulators_guard_constants_are_the_daemons() -> None:
    assert GUARD_MARGIN_S == daemon_guard.RAISE_MARGIN_S
    assert SAFETY_GROWTH == daemon_guard.SAFETY_GROWTH
    assert MAX_SAFETY == daemon_guard.MAX_SAFETY


def test_with_safety_lengthens_only_shortened_limits_never_past_the_users() -> None:
    assert with_safety(10, 60, 1.0) == 10
    assert with_safety(10, 60, 1.25) == 13
    assert with_safety(40, 60, 4.0) == 60
    assert with_safety(60, 60, 4.0) == 60


def _nasa(count: int = 400) -> Experiment:
    swf = read_swf(NASA).head(count)
    return Experiment(swf.jobs, Setup(machine=swf.machine))


def _tight() -> Experiment:
    """One application, 120 jobs of 8 nodes one at a time, each run 1 h under a 66 min limit
    (a tight user), 30% run noise, the true curves (oracle): limits the policy shortens are
    then outrun now and then, as the trace's generous limits rarely are."""
    jobs = [TraceJob(k, 4000.0 * k, 3600.0, 8, 3960.0, executable=1) for k in range(120)]
    return Experiment(jobs, Setup(machine=64, noise=0.3, curves="oracle"))


def test_with_the_guard_no_job_is_killed_at_a_limit_adaptalloc_shortened() -> None:
    ex = _tight()
    # the user's limit as written (a job left as submitted keeps it to the second)
    user = np.array(ex.requests.limit) - 1e-6
    plain = ex.run("adaptive").schedule
    guarded = ex.run("adaptive_guard")
    # without the guard: kills the user's own limit would not have made
    assert (plain.killed & (plain.limit < user)).sum() > 0
    assert plain.raised_limits == 0
    s = guarded.schedule
    assert s.raised_limits > 0
    assert guarded.metrics.raised == s.raised_limits
    assert not (s.killed & (s.limit < user)).any()
    assert_never_oversubscribed(s)


def test_a_raise_grows_the_applications_safety() -> None:
    ex = _nasa()
    sizer = ex.sizer("adaptive_guard")
    assert isinstance(sizer, AdaptiveSizer)
    assert sizer.guard is not None
    app = int(sizer.guard[0])
    sizer.raised(0, 0.0)
    sizer.raised(0, 1.0)
    assert sizer.safety[app] == pytest.approx(SAFETY_GROWTH**2)
    for _ in range(20):
        sizer.raised(0, 2.0)
    assert sizer.safety[app] == MAX_SAFETY


def test_the_range_release_hands_the_decisions_range_to_the_scheduler() -> None:
    ex = _nasa(200)
    sizer = ex.sizer("adaptive_range")
    assert isinstance(sizer, AdaptiveSizer)
    assert sizer.settings.release == "range"
    oracle = Experiment(ex.jobs, replace(ex.setup, curves="oracle"))
    ranged = oracle.sizer("adaptive_range")
    assert isinstance(ranged, AdaptiveSizer)
    view = ClusterView(now=0.0, idle_nodes=128, pending_demand_nodes=0, total_nodes=128)
    widened = 0
    for job in range(len(oracle.jobs)):
        lo, hi = oracle.requests.lo[job], oracle.requests.hi[job]
        limit = oracle.requests.limit[job]
        expected = policies.decide(
            policies.Request(lo, hi, time_limit_min=minutes(limit)),
            oracle.curves.policy_curve(job, (lo, oracle.jobs[job].nodes, hi)),
            policies.ClusterState(idle_nodes=128, pending_demand_nodes=0, total_nodes=128),
            replace(policies.DEFAULTS, release="range"),
            ranged.budget,
        )
        got = ranged.allocate(job, view)
        if expected.nodes is None:
            continue
        high = expected.nodes if expected.max_nodes is None else expected.max_nodes
        assert (got.min_nodes, got.max_nodes) == (expected.nodes, high)
        widened += got.max_nodes > got.min_nodes
    assert widened > 0


def test_every_variant_runs_and_is_known() -> None:
    assert set(VARIANTS) <= set(ALL_POLICIES)
    ex = _nasa(150)
    for name in VARIANTS:
        result = ex.run(name)
        assert len(result.schedule) == len(ex.jobs)
        assert_never_oversubscribed(result.schedule)
    with pytest.raises(ValueError, match="adaptive_range_guard"):
        ex.run("adaptive_sideways")
