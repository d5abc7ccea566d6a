"""The scheduler: FCFS against hand-computed schedules, EASY backfilling, kills, no
oversubscription, on hand-written, random and real traces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin.formats.swf import read_swf
from policies.simulation import Allocation, ClusterView, Experiment, Setup, simulate
from policies.simulation.sizing import RigidSizer

from .helpers import (
    LUBLIN,
    NASA,
    assert_never_oversubscribed,
    assert_reservations_kept,
    run_rigid,
    trace,
)

# --- FCFS, rigid jobs, no backfilling: schedules worked out by hand -------------------------


def test_fcfs_head_blocks_later_jobs() -> None:
    # 4 nodes. J0 (2 nodes, 10 s) starts at 0. J1 (3 nodes) arrives at 1 with 2 free: waits
    # for J0 to end at 10, runs 10-15. J2 (1 node) arrives at 2; 2 nodes are free but FCFS
    # keeps it behind J1; at 10 J1 takes 3, J2 the last node: 10-13. J3 (2 nodes) arrives
    # at 12 with 0 free; J2 ends at 13 (1 free), J1 at 15 (4 free): J3 runs 15-19.
    jobs = trace((0, 2, 10), (1, 3, 5), (2, 1, 3), (12, 2, 4))
    s = run_rigid(jobs, machine=4, backfill=False)
    assert s.start.tolist() == [0, 10, 10, 15]
    assert s.end.tolist() == [10, 15, 13, 19]
    assert s.nodes.tolist() == [2, 3, 1, 2]
    assert not s.killed.any()


def test_fcfs_simultaneous_submits_and_finishes_first() -> None:
    # 4 nodes. J0 (4 nodes, 5 s), J1 (1 node, 2 s), J2 (2 nodes, 1 s) all at 0: J0 runs 0-5,
    # then J1 (5-7) and J2 (5-6) together (3 of 4 nodes). J3 (2 nodes, 4 s) arrives at 3,
    # waits: 1 node free at 5. J2 ends at 6 (3 free): J3 runs 6-10. J4 (1 node) arrives at 6:
    # the finish at 6 is processed first, then the submit; J3 goes first (FCFS), leaving one
    # node, which J4 takes: 6-7.
    jobs = trace((0, 4, 5), (0, 1, 2), (0, 2, 1), (3, 2, 4), (6, 1, 1))
    s = run_rigid(jobs, machine=4, backfill=False)
    assert s.start.tolist() == [0, 5, 5, 6, 6]
    assert s.end.tolist() == [5, 7, 6, 10, 7]


def test_fcfs_orders_by_submit_time_then_trace_order() -> None:
    # 2 nodes, jobs not in submit order in the trace. J1 (submit 0, 2 nodes, 3 s) runs 0-3.
    # J0 and J3 both arrive at 10: J0 first (trace order), 1 node, 10-15; J3 needs 2 nodes,
    # waits for J0: 15-17. J2 arrives at 100 on an idle machine: 100-101.
    jobs = trace((10, 1, 5), (0, 2, 3), (100, 2, 1), (10, 2, 2))
    s = run_rigid(jobs, machine=2, backfill=False)
    assert s.start.tolist() == [10, 0, 100, 15]
    assert s.end.tolist() == [15, 3, 101, 17]


def test_fcfs_kills_at_the_time_limit() -> None:
    # 2 nodes. J0 (1 node) would run 100 s but its limit is 60: killed at 60. J1 (2 nodes,
    # 10 s) waits for it: 60-70. J2 (1 node, 5 s, limit 20) arrives at 5 and waits behind J1
    # (no backfilling): 70-75.
    jobs = trace((0, 1, 100, 60), (0, 2, 10), (5, 1, 5, 20))
    s = run_rigid(jobs, machine=2, backfill=False)
    assert s.start.tolist() == [0, 60, 70]
    assert s.end.tolist() == [60, 70, 75]
    assert s.killed.tolist() == [True, False, False]
    assert s.runtime.tolist() == [60, 10, 5]


def test_fcfs_start_times_follow_submit_order() -> None:
    rng = np.random.default_rng(3)
    jobs = trace(
        *(
            (float(t), int(n), float(r))
            for t, n, r in zip(
                np.cumsum(rng.exponential(30, 300)),
                rng.integers(1, 17, 300),
                rng.exponential(200, 300) + 1,
                strict=True,
            )
        )
    )
    s = run_rigid(jobs, machine=16, backfill=False)
    assert np.all(np.diff(s.start) >= 0)  # submit order = trace order here
    assert_never_oversubscribed(s)


# --- EASY backfilling ------------------------------------------------------------------------


def test_easy_backfills_a_short_job_before_the_reservation() -> None:
    # The first trace again, with EASY. At 2 the head J1 (3 nodes) has a reservation at 10
    # (J0's limit) with 4 - 3 = 1 extra node. J2 (1 node, limit 3) ends by 5 ≤ 10: it starts
    # now, 2-5. J1 still starts at 10 (15), J3 at 15 (19).
    jobs = trace((0, 2, 10), (1, 3, 5), (2, 1, 3), (12, 2, 4))
    s = run_rigid(jobs, machine=4, backfill=True, record=True)
    assert s.start.tolist() == [0, 10, 2, 15]
    assert s.end.tolist() == [10, 15, 5, 19]
    (r,) = [r for r in s.reservations if r.at == 2]
    assert (r.job, r.start, r.extra) == (1, 10, 1)
    assert_reservations_kept(s)


def test_easy_backfills_a_long_job_on_extra_nodes_only() -> None:
    # 4 nodes. J0 (2 nodes, 10 s). J1 (3 nodes) waits: reservation at 10, extra 1. J2 (1 node,
    # 100 s) runs past 10 but uses only the extra node: starts at 2. J3 (1 node, 100 s) would
    # need a second extra node: it waits until J1 is done (15). J1 starts at 10 as reserved.
    jobs = trace((0, 2, 10), (1, 3, 5), (2, 1, 100), (3, 1, 100))
    s = run_rigid(jobs, machine=4, backfill=True, record=True)
    assert s.start.tolist() == [0, 10, 2, 15]
    assert_reservations_kept(s)
    assert_never_oversubscribed(s)


def test_easy_uses_limits_not_runtimes() -> None:
    # J0's limit is 50 though it runs 10: the head J1's reservation is at 50. J2 (limit 30)
    # ends by 2 + 30 ≤ 50, so it backfills; the head still starts when J0 really ends (10).
    jobs = trace((0, 2, 10, 50), (1, 3, 5), (2, 1, 25, 30))
    s = run_rigid(jobs, machine=4, backfill=True, record=True)
    assert s.start.tolist() == [0, 10, 2]
    assert [r.start for r in s.reservations if r.job == 1] == [50]
    assert_reservations_kept(s)


def test_easy_kills_and_backfills() -> None:
    # The kill trace with EASY: at 5 the head J1 (2 nodes) has its reservation at 60 (J0's
    # limit); J2 (limit 20) ends by 25: backfilled, 5-10.
    jobs = trace((0, 1, 100, 60), (0, 2, 10), (5, 1, 5, 20))
    s = run_rigid(jobs, machine=2, backfill=True)
    assert s.start.tolist() == [0, 60, 5]
    assert s.killed.tolist() == [True, False, False]


class RangeSizer:
    """Every job as the range [1, its size] (a greedy job), with its trace limit."""

    name = "range"

    def __init__(self, jobs: list) -> None:  # type: ignore[type-arg]
        self.jobs = jobs

    def allocate(self, job: int, view: ClusterView, user_limit: float | None = None) -> Allocation:
        return Allocation(1, self.jobs[job].nodes, self.jobs[job].limit)


def test_a_range_takes_the_free_nodes_at_start() -> None:
    # 4 nodes. J0 (range 1-3) starts alone: takes 3. J1 (range 1-4) at 1: 1 node free, takes
    # it. Runtimes here do not depend on the size.
    jobs = trace((0, 3, 10), (1, 4, 10))
    s = simulate(jobs, 4, RangeSizer(jobs), lambda j, n: jobs[j].runtime)
    assert s.nodes.tolist() == [3, 1]
    assert s.start.tolist() == [0, 1]


class TableSizer:
    """Each job's allocation given by hand: (min, max) nodes, limit from the trace."""

    name = "table"

    def __init__(self, jobs: list, ranges: list[tuple[int, int]]) -> None:  # type: ignore[type-arg]
        self.jobs, self.ranges = jobs, ranges

    def allocate(self, job: int, view: ClusterView, user_limit: float | None = None) -> Allocation:
        lo, hi = self.ranges[job]
        return Allocation(lo, hi, self.jobs[job].limit)


def test_a_backfilled_range_takes_only_what_the_reservation_leaves() -> None:
    # 4 nodes. J0 (2 nodes, 10 s) runs 0-10. J1 (4 nodes, 5 s) at 1: reservation at 10 with
    # extra 2 + 2 - 4 = 0. J2 (range 1-2, limit 100) at 2 would run past 10 and there is no
    # extra node: it waits. J3 (range 1-2, limit 5) at 2 ends by 7 ≤ 10: it takes both free
    # nodes, 2-7. J1 runs 10-15 as reserved, then J2 takes 2 nodes at 15.
    jobs = trace((0, 2, 10), (1, 4, 5), (2, 2, 100), (2, 2, 5))
    sizer = TableSizer(jobs, [(2, 2), (4, 4), (1, 2), (1, 2)])
    s = simulate(jobs, 4, sizer, lambda j, n: jobs[j].runtime, record_reservations=True)
    assert s.start.tolist() == [0, 10, 15, 2]
    assert s.nodes.tolist() == [2, 4, 2, 2]
    assert_reservations_kept(s)


def test_a_range_backfilled_past_the_reservation_takes_the_extra_nodes() -> None:
    # 4 nodes. J0 (3 nodes, 10 s) runs 0-10, 1 free. J1 (2 nodes) at 1: reservation at 10,
    # extra 1 + 3 - 2 = 2. J2 (range 1-4, limit 100) runs past 10: it may take
    # min(free 1, extra 2) = 1 node, at 2.
    jobs = trace((0, 3, 10), (1, 2, 5), (2, 4, 100))
    sizer = TableSizer(jobs, [(3, 3), (2, 2), (1, 4)])
    s = simulate(jobs, 4, sizer, lambda j, n: jobs[j].runtime, record_reservations=True)
    assert s.start.tolist() == [0, 10, 2]
    assert s.nodes.tolist() == [3, 2, 1]
    assert_reservations_kept(s)


def test_a_sizer_may_not_ask_for_more_than_the_machine() -> None:
    jobs = trace((0, 8, 10))
    with pytest.raises(ValueError, match="more than the machine"):
        RigidSizer(jobs, 4)


# --- properties on random traces ---------------------------------------------------------------

random_jobs = st.lists(
    st.tuples(
        st.integers(0, 50),  # gap to the previous submit
        st.integers(1, 8),  # nodes
        st.integers(1, 100),  # runtime
        st.sampled_from([0.5, 1.0, 1.0, 2.0, 5.0]),  # limit / runtime
    ),
    min_size=1,
    max_size=60,
)


def _random_trace(rows: list[tuple[int, int, int, float]]) -> list:  # type: ignore[type-arg]
    t, out = 0, []
    for gap, nodes, runtime, factor in rows:
        t += gap
        out.append((t, nodes, runtime, max(1.0, runtime * factor)))
    return trace(*out)


@pytest.mark.slow  # long property run; the fast loop keeps the real traces (capacity, reservations)
@settings(max_examples=150, deadline=None)
@given(random_jobs, st.booleans())
def test_random_rigid_traces_keep_every_invariant(
    rows: list[tuple[int, int, int, float]], backfill: bool
) -> None:
    jobs = _random_trace(rows)
    s = run_rigid(jobs, machine=8, backfill=backfill, record=True)
    assert_never_oversubscribed(s)
    assert_reservations_kept(s)
    runtime = np.array([j.runtime for j in jobs])
    limit = np.array([j.limit for j in jobs])
    assert s.killed.tolist() == (runtime > limit).tolist()
    assert np.allclose(s.runtime, np.minimum(runtime, limit))
    if not backfill:
        assert not s.reservations


@pytest.mark.slow  # long property run; the fast loop keeps the real traces (capacity, reservations)
@settings(max_examples=100, deadline=None)
@given(random_jobs, st.integers(0, 2**31 - 1))
def test_random_moldable_traces_keep_every_invariant(
    rows: list[tuple[int, int, int, float]], seed: int
) -> None:
    jobs = _random_trace(rows)
    experiment = Experiment(jobs, Setup(machine=8, seed=seed, max_parallelism=16))
    for policy in ("greedy", "adaptive"):
        s = experiment.run(policy, record_reservations=True).schedule
        assert_never_oversubscribed(s)
        assert_reservations_kept(s)
        lo = np.array(experiment.requests.lo)
        hi = np.array(experiment.requests.hi)
        assert np.all((s.nodes >= lo) & (s.nodes <= hi))
        assert np.all(s.runtime <= s.limit * (1 + 1e-12))


# --- the real traces ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", [NASA, LUBLIN], ids=["nasa", "lublin"])
@pytest.mark.parametrize("policy", ["rigid", "greedy", "adaptive"])
def test_real_traces_never_oversubscribe(path: object, policy: str) -> None:
    swf = read_swf(str(path))
    jobs = swf.jobs[:2000]
    result = Experiment(jobs, Setup(machine=swf.machine)).run(policy, record_reservations=True)
    assert len(result.schedule) == 2000
    assert_never_oversubscribed(result.schedule)
    assert_reservations_kept(result.schedule)
