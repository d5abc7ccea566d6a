"""The figures of a schedule, checked on hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pytest

from policies.simulation import summarize, usage_over_time
from policies.simulation.metrics import bounded_slowdown, busy_nodes

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
    }
    assert m.raised == 0


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
