"""Exploration at a size drawn from the job id (rules.py `drawn_size`): randomised
independently of what the job asks, deterministic, within the range and the budget."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from policies import DEFAULTS, ClusterState, ExplorationBudget, Request, decide
from policies.feasible import Allowed
from policies.profile import RuntimeProfile
from policies.rules import drawn_size, exploration_rule, exploration_waits
from policies.time_limit import pessimistic_runtimes

from .curves import make_curve, unreliable

ANY = Allowed(None, "")
# Unreliable with no size suggested: the judgment cannot say where to run next.
SILENT = make_curve(
    30.0, 0.5, observed=(4, 8, 16), diagnostics=unreliable("runner_up", suggest_n=None)
)
SILENT_4_64 = RuntimeProfile.of(SILENT, 4, 64)
ROOM = ExplorationBudget(100, 0, 1e6, 0.0)


def test_a_drawn_size_is_deterministic_inside_the_range_and_log_uniform() -> None:
    sizes = np.array([drawn_size(f"job{i}", 4, 64, ANY) for i in range(4000)])
    assert drawn_size("job7", 4, 64, ANY) == drawn_size("job7", 4, 64, ANY)
    assert sizes.min() >= 4
    assert sizes.max() <= 64
    # Log-uniform on [4, 64]: about a quarter of the draws per factor 2 (4-8, 8-16, ...).
    logs = np.log2(sizes / 4.0)
    shares = np.histogram(logs, bins=[0.0, 1.0, 2.0, 3.0, 4.01])[0] / sizes.size
    assert np.all(np.abs(shares - 0.25) < 0.04)


def test_a_drawn_size_respects_the_allowed_sizes() -> None:
    powers = Allowed((4, 8, 16, 32, 64), "powers of two")
    for i in range(200):
        assert drawn_size(f"j{i}", 4, 64, powers) in (4, 8, 16, 32, 64)
    assert drawn_size("j1", 5, 7, powers) is None


def test_an_unreliable_curve_with_no_suggestion_explores_a_drawn_size() -> None:
    ids = [f"{i}" for i in range(50)]
    got = [exploration_rule(SILENT_4_64, ANY, ROOM, DEFAULTS, job_id) for job_id in ids]
    eligible = [g for g in got if g.eligible]
    assert len(eligible) > 40  # every draw but those at the range's minimum
    for g in eligible:
        assert g.candidate.nodes is not None
        assert 4 < g.candidate.nodes <= 64
        assert "drawn at random" in g.candidate.reason
        assert "hash of the job id" in g.candidate.reason
    # Without a job id there is no random source, and the rule stays silent.
    assert not exploration_rule(SILENT_4_64, ANY, ROOM, DEFAULTS).eligible


def test_a_drawn_exploration_stays_within_the_budget() -> None:
    full = ExplorationBudget(10, 1, 1e6, 0.0)  # 2 of 11 jobs would exceed 10%
    got = exploration_rule(SILENT_4_64, ANY, full, DEFAULTS, "3")
    assert not got.eligible
    assert "budget" in got.candidate.reason


def test_decide_explores_a_drawn_size_and_says_so() -> None:
    cluster = ClusterState(idle_nodes=64, total_nodes=64)
    request = Request(4, 64, time_limit_min=60, job_id="12345")
    expected = drawn_size("12345", 4, 64, ANY)
    assert expected is not None
    assert expected > 4  # this id draws above the minimum (a draw of it explores nothing)
    decision = decide(request, SILENT, cluster, DEFAULTS, ROOM)
    assert decision.rule == "exploration"
    assert decision.nodes == expected
    assert "drawn at random" in decision.reason


def test_an_explored_size_is_raised_to_fit_the_users_limit_or_not_explored() -> None:
    """A run killed at its limit teaches the curve nothing: the drawn size is raised to the
    least size whose pessimistic runtime × safety fits the limit; with none, no exploration."""
    cluster = ClusterState(idle_nodes=64, total_nodes=64)
    ids = [f"{i}" for i in range(200)]
    small = next(i for i in ids if (drawn_size(i, 4, 64, ANY) or 0) in range(5, 9))
    drawn = drawn_size(small, 4, 64, ANY)
    assert drawn is not None
    upper = pessimistic_runtimes(SILENT_4_64) * DEFAULTS.time_limit_safety_factor / 60.0
    # A limit the drawn size overruns and a larger size (4 more nodes) fits.
    larger = drawn + 4
    limit = math.ceil(float(upper[larger - 4]))
    least = 4 + int(np.argmax(upper <= limit))
    assert least > drawn
    decision = decide(
        Request(4, 64, time_limit_min=limit, job_id=small), SILENT, cluster, DEFAULTS, ROOM
    )
    assert (decision.rule, decision.nodes) == ("exploration", least)
    assert "drawn at random" in decision.reason
    assert f"raised to {least} nodes" in decision.reason
    # A limit no size fits: the job is not explored (its curve is unusable: left with its
    # range, whose top the curve's knee may cut, and its limit).
    none_fit = math.floor(float(upper.min())) - 1
    refused = decide(
        Request(4, 64, time_limit_min=none_fit, job_id=small), SILENT, cluster, DEFAULTS, ROOM
    )
    assert (refused.rule, refused.nodes, refused.time_limit_min) == ("fallback", 4, None)
    assert refused.max_nodes is not None
    assert refused.max_nodes > drawn


def test_a_curve_one_user_moved_never_suggests_a_size() -> None:
    """A shared curve flagged user_influence was fitted on one user's runs; the size its
    judgment would suggest is theirs to choose. Exploration ignores it: another user's job is
    explored at a size drawn from its own job id, or not at all."""
    steered = make_curve(
        30.0, 0.5, observed=(4, 8, 16), diagnostics=unreliable("user_influence", suggest_n=64)
    )
    profile = RuntimeProfile.of(steered, 4, 64)
    for job_id in ("12345", "7", "99"):
        got = exploration_rule(profile, ANY, ROOM, DEFAULTS, job_id)
        if got.eligible:
            assert got.candidate.nodes == drawn_size(job_id, 4, 64, ANY)
            assert "drawn at random" in got.candidate.reason
    assert not exploration_rule(profile, ANY, ROOM, DEFAULTS).eligible  # no id: no draw
    # The same curve with another problem follows the judgment's suggestion.
    suggesting = make_curve(
        30.0, 0.5, observed=(4, 8, 16), diagnostics=unreliable("runner_up", suggest_n=64)
    )
    got = exploration_rule(RuntimeProfile.of(suggesting, 4, 64), ANY, ROOM, DEFAULTS, "12345")
    assert got.eligible
    assert got.candidate.nodes == 64


def test_an_explored_size_past_the_idle_nodes_is_not_explored_now() -> None:
    """An explored size is pinned: one past the idle nodes would make the job, and the queue
    behind it, wait for the machine to drain, while Slurm would start the job left as
    submitted on the nodes that are free. So exploration waits for a moment its size can
    start; the user's minimum never counts as waiting."""
    request = Request(4, 64, time_limit_min=60, job_id="12345")
    drawn = drawn_size("12345", 4, 64, ANY)
    assert drawn is not None
    assert drawn > 5
    room = decide(request, SILENT, ClusterState(idle_nodes=drawn, total_nodes=64), DEFAULTS, ROOM)
    assert (room.rule, room.nodes) == ("exploration", drawn)
    busy = ClusterState(idle_nodes=drawn - 1, total_nodes=64)
    waited = decide(request, SILENT, busy, DEFAULTS, ROOM)
    assert waited.rule != "exploration"
    explored = next(c for c in waited.candidates if c.rule == "exploration")
    assert explored.nodes is None
    assert f"only {drawn - 1} nodes are idle" in explored.reason
    assert "not explored now" in explored.reason
    # Without limit_to_idle the size is explored whatever is idle, as before.
    unlimited = replace(DEFAULTS, limit_to_idle=False)
    assert decide(request, SILENT, busy, unlimited, ROOM).rule == "exploration"
    # Unknown idle nodes (no cluster state): nothing tells the run would wait.
    assert decide(request, SILENT, ClusterState(), DEFAULTS, ROOM).rule == "exploration"


def test_exploration_waits_counts_the_users_minimum_as_free() -> None:
    crowded = ClusterState(idle_nodes=2, total_nodes=64)
    assert exploration_waits(4, 4, crowded, DEFAULTS) == ""
    assert exploration_waits(5, 4, crowded, DEFAULTS) != ""
    assert exploration_waits(2, 1, crowded, DEFAULTS) == ""
