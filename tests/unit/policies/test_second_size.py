"""The run at a second size for an application whose runs all ran at one size
(policies/second_size.py): where it goes, its budget, and when it is not proposed."""

from __future__ import annotations

import pytest

from policies.config import PolicySettings
from policies.feasible import parse_feasible
from policies.inputs import ClusterState, ExplorationBudget, Request
from policies.second_size import MIN_RUNS, Run, one_size, second_size

SETTINGS = PolicySettings()
#: Room in the budget for one exploration more: 20 decided, none explored.
ROOM = ExplorationBudget(jobs_decided=20, node_hours_decided=1000.0)
IDLE = ClusterState(idle_nodes=64, total_nodes=64)


def _runs(uses: list[float], nodes: int = 16, limit_s: float = 3600.0) -> list[Run]:
    """Runs at `nodes`, each using the given share of its limit."""
    return [Run(nodes, use * limit_s, limit_s) for use in uses]


def _request(lo: int = 4, hi: int = 32, limit_min: int | None = 60) -> Request:
    return Request(lo, hi, time_limit_min=limit_min, job_id="7")


def test_goes_down_to_the_least_size_where_the_slowest_run_still_fits() -> None:
    # The slowest run used 40% of its limit: at n it takes at most 16/n x that, and
    # 16 x 0.4 x 1.2 = 7.68, so 8 nodes is the least size that fits the limit with safety.
    second = second_size(_request(), _runs([0.2, 0.4, 0.3]), IDLE, SETTINGS, ROOM)
    assert second is not None
    d = second.decision
    assert (d.nodes, d.max_nodes, d.time_limit_min, d.rule) == (8, None, None, "exploration")
    assert "all 3 runs of the app ran at 16 nodes" in d.reason
    assert "time limit is kept" in d.reason
    # The budget counts the median run, slowed down linearly: 0.3 x 3600 s x 16/8.
    assert second.runtime_s == pytest.approx(0.3 * 3600.0 * 2.0)


def test_goes_no_further_down_than_half_the_runs_size() -> None:
    # 16 x 0.1 x 1.2 = 1.92: by the slowest of three runs, 2 nodes would fit, but the next
    # input may need more of its limit than all three did; at 8 nodes a run overruns only
    # if it would have used more than half its limit at 16.
    second = second_size(_request(lo=1), _runs([0.1, 0.05, 0.08]), IDLE, SETTINGS, ROOM)
    assert second is not None
    assert second.decision.nodes == 8
    assert "8 nodes, half the runs' size" in second.decision.reason
    assert "from 2 nodes up" in second.decision.reason
    assert second.runtime_s == pytest.approx(0.08 * 3600.0 * 2.0)


def test_the_safe_size_is_at_least_the_users_minimum() -> None:
    second = second_size(_request(lo=12), _runs([0.1, 0.1, 0.1]), IDLE, SETTINGS, ROOM)
    assert second is not None
    assert second.decision.nodes == 12


def test_goes_up_when_no_smaller_size_is_safe() -> None:
    # 16 x 0.9 x 1.2 > 16: no size below 16 is sure to end within the limit, so it
    # doubles, within the range.
    second = second_size(_request(hi=24), _runs([0.9, 0.5, 0.6]), IDLE, SETTINGS, ROOM)
    assert second is not None
    assert second.decision.nodes == 24
    assert "above it" in second.decision.reason
    assert second.runtime_s == pytest.approx(0.6 * 3600.0)  # a larger size runs no longer


@pytest.mark.parametrize(
    ("request_", "runs", "cluster", "budget", "why"),
    [
        (_request(hi=16), _runs([0.9, 0.9, 0.9]), IDLE, ROOM, "no size is safe below, none above"),
        (_request(), _runs([0.2, 0.2]), IDLE, ROOM, "fewer than MIN_RUNS runs"),
        (_request(), [*_runs([0.2, 0.2]), Run(8, 100.0, 3600.0)], IDLE, ROOM, "two sizes"),
        (_request(), [Run(16, 99.0, None)] * 3, IDLE, ROOM, "no run has a limit"),
        (_request(limit_min=None), _runs([0.2] * 3), IDLE, ROOM, "the job has no limit"),
        (_request(), _runs([0.2] * 3), IDLE, ExplorationBudget(), "no budget yet"),
        (_request(), _runs([0.4] * 3), ClusterState(idle_nodes=2, total_nodes=64), ROOM,
         "the explored size would wait for nodes"),
        (_request(), _runs([0.3] * 3, nodes=64), ClusterState(64, max_nodes_per_job=16), ROOM,
         "the partition caps the range below the safe size"),
    ],
)  # fmt: skip
def test_not_proposed(
    request_: Request, runs: list[Run], cluster: ClusterState, budget: ExplorationBudget, why: str
) -> None:
    assert second_size(request_, runs, cluster, SETTINGS, budget) is None, why


def test_sizes_the_user_listed_are_left_to_them() -> None:
    listed = Request(4, 32, time_limit_min=60, feasible=parse_feasible("4,8,16,32"))
    assert second_size(listed, _runs([0.2] * 3), IDLE, SETTINGS, ROOM) is None


def test_exploration_switched_off_proposes_nothing() -> None:
    off = PolicySettings(exploration_job_share=0.0)
    assert second_size(_request(), _runs([0.2] * 3), IDLE, off, ROOM) is None


def test_one_size_needs_min_runs_at_one_size() -> None:
    assert one_size(_runs([0.1] * MIN_RUNS)) == 16
    assert one_size(_runs([0.1] * (MIN_RUNS - 1))) is None
    assert one_size([*_runs([0.1] * MIN_RUNS), Run(4, 1.0, None)]) is None


def test_a_share_of_a_limit_too_large_to_hold_goes_up_not_down() -> None:
    # A stored limit of a denormal number of seconds: runtime / limit overflows to inf, so
    # no smaller size can be shown safe; the run goes up, and nothing raises.
    runs = [Run(16, 100.0, 1e-320)] * 3
    second = second_size(_request(), runs, IDLE, SETTINGS, ROOM)
    assert second is not None
    assert second.decision.nodes == 32
