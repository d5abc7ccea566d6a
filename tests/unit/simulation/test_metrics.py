"""The figures of a schedule, checked on hand-computed numbers."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from policies.simulation import summarize, usage_over_time
from policies.simulation.metrics import (
    MATURE_RUNS,
    bounded_slowdown,
    busy_nodes,
    ended_before_submit,
)

from .helpers import run_rigid, trace


def test_summary_of_a_hand_schedule() -> None:
    # The FCFS schedule of test_engine: starts 0, 10, 10, 15; ends 10, 15, 13, 19.
    jobs = trace((0, 2, 10), (1, 3, 5), (2, 1, 3), (12, 2, 4))
    s = run_rigid(jobs, machine=4, backfill=False)
    m = summarize(s)
    assert m.jobs == 4
    # responses 10, 14, 11, 7; waits 0, 9, 8, 3.
    assert m.mean_response_s == pytest.approx(42 / 4)
    assert m.mean_wait_s == pytest.approx(20 / 4)
    # bounded slowdowns: max(1, 10/10), 14/10, 11/10, 7/10 -> 1 = 1, 1.4, 1.1, 1.
    assert m.mean_bounded_slowdown == pytest.approx((1 + 1.4 + 1.1 + 1) / 4)
    # node-seconds 20 + 15 + 3 + 8 = 46 over 4 nodes × makespan 19.
    assert m.node_hours == pytest.approx(46 / 3600)
    assert m.makespan_s == 19
    assert m.utilization == pytest.approx(46 / (4 * 19))
    assert m.killed == 0
    assert set(m.to_dict()) == {
        "jobs",
        "mean_response_s",
        "mean_wait_s",
        "mean_bounded_slowdown",
        "utilization",
        "makespan_s",
        "node_hours",
        "killed",
        "killed_node_hours",
        "raised",
        "mean_bsld",
        "wasted_node_hours",
        "resubmitted",
        "abandoned",
        "sized",
        "recorded",
        "mature",
        "mature_sized",
        "unseen_response_s",
        "mature_response_s",
        "recorded_response_s",
    }
    assert m.raised == 0


def test_the_mean_response_splits_by_how_many_runs_the_key_had() -> None:
    """One key's jobs run one after another, each ending before the next is submitted; a
    second key's job, submitted with the last of them, waits behind it; a third key's job
    failed in the trace and is replayed as recorded. The first job of each of the first two
    keys is unseen (no job of its key had ended), the two after MATURE_RUNS ended are mature,
    the failed one is recorded; each part sums its jobs' responses over all jobs, and the
    jobs in between (1 to MATURE_RUNS − 1 ended) make up the rest of the mean."""
    first = [(10.0 * i, 1, 1.0) for i in range(MATURE_RUNS + 2)]
    last = 10.0 * (MATURE_RUNS + 1)
    # Submitted with the last one, it waits 1 s for the single node, then runs 3 s; the
    # failed job, submitted 0.5 s later, waits 3.5 s behind it, then runs 2 s.
    jobs = trace(*first, (last, 1, 3.0), (last + 0.5, 1, 2.0))
    jobs[-1] = replace(jobs[-1], status=0)  # failed
    s = run_rigid(jobs, machine=1, backfill=False)
    keys = np.array([0] * len(first) + [1, 2])
    m = summarize(s, keys=keys)
    responses = (s.end - s.submit).tolist()
    assert responses == [1.0] * len(first) + [4.0, 5.5]
    assert m.mature == 2
    assert m.mature_sized == 0  # the rigid baseline sizes nothing with a curve
    assert m.recorded == 1
    n = len(jobs)
    assert m.unseen_response_s == pytest.approx((1.0 + 4.0) / n)
    assert m.mature_response_s == pytest.approx(2.0 / n)
    assert m.recorded_response_s == pytest.approx(5.5 / n)
    learning = m.mean_response_s - m.unseen_response_s - m.mature_response_s
    assert learning - m.recorded_response_s == pytest.approx((MATURE_RUNS - 1) / n)
    # Without keys only the recorded part is known.
    plain = summarize(s)
    assert (plain.unseen_response_s, plain.mature_response_s) == (0.0, 0.0)
    assert plain.recorded_response_s == m.recorded_response_s


def test_bounded_slowdown_bounds_short_jobs() -> None:
    # A 1 s job that waited 9 s: response 10, bounded by 10 s, slowdown 1 (not 10).
    jobs = trace((0, 1, 20), (0, 1, 1))
    s = run_rigid(jobs, machine=1, backfill=False)
    assert bounded_slowdown(s).tolist() == [1.0, 21 / 10]


def test_busy_nodes_and_usage() -> None:
    jobs = trace((0, 2, 10), (1, 3, 5), (2, 1, 3), (12, 2, 4))
    s = run_rigid(jobs, machine=4, backfill=False)
    _, busy = busy_nodes(s)
    assert busy.max() == 4
    edges, share = usage_over_time(s, bins=19)
    assert edges[0] == 0
    assert edges[-1] == 19
    # The integral of the usage is the node-seconds.
    assert float(np.sum(share * np.diff(edges) * 4)) == pytest.approx(46)
    assert share[0] == pytest.approx(0.5)  # 0-1: J0's 2 nodes
    assert share[12] == pytest.approx(1.0)  # 12-13: J1 and J2, 4 nodes
    assert share[-1] == pytest.approx(0.5)  # 18-19: J3
    with pytest.raises(ValueError, match="bins"):
        usage_over_time(s, bins=0)


def test_ended_before_submit_counts_each_keys_earlier_ends() -> None:
    # FCFS on 4 nodes: ends 10, 15, 13, 19 (test_summary_of_a_hand_schedule); submits 0, 1, 2, 12.
    jobs = trace((0, 2, 10), (1, 3, 5), (2, 1, 3), (12, 2, 4))
    s = run_rigid(jobs, machine=4, backfill=False)
    # Keys 0, 1, 0, 0: job 3 (submitted at 12) follows job 0 (ended 10) of its key, not job 2
    # (ended 13) nor job 1 (another key).
    assert ended_before_submit(s, np.array([0, 1, 0, 0])).tolist() == [0, 0, 0, 1]
    # Every job one key: jobs 0 and 2 ended by 13, but only job 0 before 12.
    assert ended_before_submit(s, np.zeros(4, dtype=np.int64)).tolist() == [0, 0, 0, 1]


def test_ended_before_submit_matches_counting_on_a_random_schedule() -> None:
    rng = np.random.default_rng(7)
    jobs = trace(
        *(
            (float(t), int(n), float(r))
            for t, n, r in zip(
                np.sort(rng.uniform(0, 500, 60)),
                rng.integers(1, 4, 60),
                rng.uniform(1, 80, 60),
                strict=True,
            )
        )
    )
    s = run_rigid(jobs, machine=4, backfill=True)
    keys = rng.integers(0, 5, 60)
    brute = [int(np.sum((keys == keys[i]) & (s.end < s.submit[i]))) for i in range(len(keys))]
    assert ended_before_submit(s, keys).tolist() == brute
    assert max(brute) > 3  # the schedule is long enough for the count to matter
