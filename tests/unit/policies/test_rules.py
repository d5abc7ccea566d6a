"""Each rule on hand-built curves, against answers computed independently here: closed forms
of the Downey model and brute force over whole sizes with the thesis' scalar formulas."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import predictor
from policies import DEFAULTS, Candidate, ClusterState, ExplorationBudget, Request
from policies.feasible import Allowed
from policies.profile import RuntimeProfile
from policies.rules import (
    cap_rule,
    efficiency_rule,
    exploration_rule,
    fallback_rule,
    largest_efficient,
    load_adaptive_rule,
    percent,
    pws_rule,
)

from ..predictor.reference import speedup_table
from .curves import make_curve, unreliable
from .reasons import assert_names

ANY = Allowed(None, "")


def brute_largest_efficient(A: float, sigma: float, lo: int, hi: int, theta: float) -> int:
    """Largest n in [lo, hi] with S(n)/n ≥ θ, S from the thesis' piecewise formulas."""
    ok = [n for n in range(lo, hi + 1) if speedup_table(n, A, sigma) / n >= theta]
    return max(ok) if ok else lo - 1


# --- efficiency -----------------------------------------------------------------------------


def test_efficiency_vs_t1_matches_the_closed_form_on_the_first_piece() -> None:
    # First piece, E(n) = A / (A + σ(n-1)/2) ≥ θ  <=>  n ≤ 1 + 2A(1/θ - 1)/σ = 67.67 here.
    A, sigma, theta = 100.0, 1.0, 0.75
    curve = make_curve(A, sigma, t1_known=True, observed=(1, 8, 64, 128))
    settings = replace(DEFAULTS, efficiency_threshold=theta)
    expected = math.floor(1 + 2 * A * (1 / theta - 1) / sigma)
    assert expected == 67 == brute_largest_efficient(A, sigma, 1, 200, theta)
    c = efficiency_rule(RuntimeProfile.of(curve, 1, 200), settings)
    assert (c.rule, c.nodes) == ("efficiency", 67)
    e67 = speedup_table(67, A, sigma) / 67
    assert_names(c.reason, "efficiency", "75%", "one-node runtime", "67 nodes", percent(e67))


def test_efficiency_vs_the_smallest_observed_size_matches_its_closed_form() -> None:
    # τ(n) = f + (1-f)/n with f = σ/(2A) on the first piece, so with n0 the smallest observed
    # size E(n) = (f·n0 + 1 - f)/(f·n + 1 - f) ≥ θ  <=>  n ≤ ((f·n0 + 1 - f)/θ - (1 - f))/f.
    A, sigma, theta, n0 = 200.0, 0.5, 0.85, 4
    f = sigma / (2 * A)
    expected = math.floor(((f * n0 + 1 - f) / theta - (1 - f)) / f)
    assert expected == 145
    curve = make_curve(A, sigma, observed=(n0, 16, 64))
    c = efficiency_rule(
        RuntimeProfile.of(curve, 4, 256), replace(DEFAULTS, efficiency_threshold=theta)
    )
    assert c.nodes == expected
    assert "(relative to the smallest observed size, 4 nodes) up to 145 nodes" in c.reason


@pytest.mark.parametrize(
    ("A", "sigma", "theta", "lo", "hi"),
    [
        (24.25, 0.82, 0.5, 4, 64),  # NPB LU's fit: crosses past the knee
        (24.25, 0.82, 0.6, 2, 64),
        (10.0, 2.5, 0.4, 1, 100),  # high-variance mode
        (500.0, 0.0, 0.9, 16, 4096),  # σ = 0: linear up to A
        (8.0, 1.0, 0.3, 1, 20),
    ],
)
def test_efficiency_vs_t1_matches_brute_force(
    A: float, sigma: float, theta: float, lo: int, hi: int
) -> None:
    curve = make_curve(A, sigma, t1_known=True, observed=(1, 2, 4))
    got = efficiency_rule(
        RuntimeProfile.of(curve, lo, hi), replace(DEFAULTS, efficiency_threshold=theta)
    ).nodes
    expected = brute_largest_efficient(A, sigma, lo, hi, theta)
    assert got == max(expected, lo)


def test_efficiency_baseline_can_be_forced() -> None:
    curve = make_curve(40.0, 0.5, observed=(8, 16, 32))
    as_t1 = efficiency_rule(
        RuntimeProfile.of(curve, 8, 128), replace(DEFAULTS, efficiency_baseline="t1")
    )
    assert "relative to the model's estimate of the one-node runtime" in as_t1.reason
    assert as_t1.nodes == brute_largest_efficient(40.0, 0.5, 8, 128, 0.5)
    auto = efficiency_rule(RuntimeProfile.of(curve, 8, 128), DEFAULTS)
    assert "relative to the smallest observed size, 8 nodes" in auto.reason
    assert auto.nodes is not None
    assert as_t1.nodes is not None
    assert auto.nodes >= as_t1.nodes  # E(8) < 1 against T(1), so the smallest-size E is higher


def test_efficiency_below_threshold_everywhere_and_above_everywhere() -> None:
    slow = make_curve(10.0, 1.0, t1_known=True, observed=(1, 2))
    c = efficiency_rule(RuntimeProfile.of(slow, 50, 60), DEFAULTS)
    assert (c.rule, c.nodes) == ("efficiency", 50)
    assert_names(c.reason, "efficiency", "below 50%", "50 nodes", "smallest size", "20%")
    fast = make_curve(1000.0, 0.1, t1_known=True, observed=(1, 2))
    c = efficiency_rule(RuntimeProfile.of(fast, 4, 16), DEFAULTS)
    assert c.nodes == 16
    assert " through 16 nodes, the largest size allowed (" in c.reason


def test_long_ranges_are_evaluated_in_chunks_like_every_size_at_once() -> None:
    curve = make_curve(20_000.0, 0.3, t1_known=True, observed=(1, 64))
    lo, hi, theta = 1, 100_000, 0.6
    every = np.arange(lo, hi + 1)
    expected = int(every[curve.efficiency(every) >= theta].max())
    assert largest_efficient(RuntimeProfile.of(curve, lo, hi), "t1", theta) == expected
    assert largest_efficient(RuntimeProfile.of(curve, lo, hi), "t1", 1e-9) == hi
    assert largest_efficient(RuntimeProfile.of(curve, 50_000, hi), "t1", 0.9999) == 49_999


# --- pws and cap ----------------------------------------------------------------------------


def brute_pws(A: float, sigma: float, lo: int, hi: int) -> int:
    eta = [speedup_table(n, A, sigma) ** 2 / n for n in range(lo, hi + 1)]
    best = max(eta)
    return lo + next(i for i, e in enumerate(eta) if e >= best * (1 - 1e-12))


@pytest.mark.parametrize(
    ("A", "sigma", "lo", "hi"),
    [(24.25, 0.82, 4, 64), (24.25, 0.82, 40, 64), (24.25, 0.82, 2, 16), (10, 2.5, 1, 80)],
)
def test_pws_is_the_best_size_in_range(A: float, sigma: float, lo: int, hi: int) -> None:
    curve = make_curve(A, sigma)
    c = pws_rule(RuntimeProfile.of(curve, lo, hi))
    assert c.nodes == brute_pws(A, sigma, lo, hi)
    p = curve.pws_n
    assert c.rule == "pws"
    if lo <= p <= hi:
        assert_names(c.reason, "S(n)²/n", f"{p} nodes", "processor working set")
        assert "within the range" not in c.reason
    elif p < lo:
        assert_names(c.reason, "S(n)²/n", f"{p} nodes", "below the job's minimum", f"{lo} nodes")
    else:
        assert c.reason.endswith(
            f"above the largest size allowed; within the range it is largest at {hi} nodes"
        )


def cap(curve: predictor.Curve, lo: int, hi: int, cluster: ClusterState | None = None) -> Candidate:
    """The cap rule at `cluster`'s load (unknown unless given), under the default settings."""
    return cap_rule(curve, lo, hi, cluster or ClusterState(), DEFAULTS)


def test_cap_low_and_high_variance_and_unknown() -> None:
    low = make_curve(24.25, 0.82)  # ⌈2A-1⌉ = ⌈47.5⌉ = 48
    assert cap(low, 4, 64) == Candidate(
        "cap",
        48,
        "the speedup stops growing at 48 nodes (2A-1 with A = 24.2), so more nodes cannot "
        "speed the job",
    )
    assert cap(low, 4, 32).nodes == 32
    assert "keeps growing up to 48 nodes" in cap(low, 4, 32).reason
    assert cap(low, 64, 128).nodes == 64
    assert cap(low, 64, 128).reason.endswith("below the job's minimum, so at most 64 nodes")
    high = make_curve(10.0, 2.0)  # A + Aσ - σ = 28
    assert cap(high, 1, 100).nodes == 28
    assert "(A+Aσ-σ with A = 10, σ = 2)" in cap(high, 1, 100).reason
    # No knee in the runs (observed 4-32): A is not identified, and the curve knows no
    # speedup past the largest size its runs saw.
    unseen = make_curve(700.0, 3.0, identified=False)
    unknown = cap(unseen, 1, 100)
    assert unknown.nodes == 32
    assert unknown.reason == (
        "the runs show no knee yet and ran up to 32 nodes, so the curve knows no speedup "
        "past that: at most 32 nodes"
    )
    assert cap(unseen, 40, 100).nodes == 40  # never below the user's minimum
    beyond = cap(unseen, 1, 16)
    assert beyond.nodes == 16
    assert "at or beyond the largest size allowed, 16 nodes" in beyond.reason


@pytest.mark.parametrize(
    ("idle", "pending", "top"),
    [(100, 0, 100), (100, 50, 100), (100, 51, 32), (40, 50, 32), (None, 0, 32)],
)
def test_no_knee_caps_at_the_largest_run_unless_the_partition_is_lightly_loaded(
    idle: int | None, pending: int, top: int
) -> None:
    # Pressure ≤ light_pressure (0.5): nobody waits for the nodes past the runs' largest
    # size (32), so the cap is the range's maximum; 51/100 is just past it; unknown load is
    # not light.
    unseen = make_curve(700.0, 3.0, identified=False)
    c = cap(unseen, 1, 100, ClusterState(idle_nodes=idle, pending_demand_nodes=pending))
    assert c.nodes == top
    if top == 100:
        assert c.reason == (
            "the runs show no knee yet and ran up to 32 nodes, and the partition is lightly "
            f"loaded ({pending} nodes pending for 100 idle, pressure {pending / 100:.2f}), so "
            "nobody waits for the nodes past that: at most 100 nodes, where a run may find "
            "the knee"
        )
    # A knee the runs show caps whatever the load.
    assert cap(make_curve(24.25, 0.82), 4, 64, ClusterState(idle_nodes=100)).nodes == 48


# --- load-adaptive --------------------------------------------------------------------------

EFF, PWS, CAP = Candidate("efficiency", 40, ""), Candidate("pws", 20, ""), Candidate("cap", 48, "")


@pytest.mark.parametrize(
    ("idle", "pending", "expected", "words"),
    [
        (None, 0, 30, "the load is unknown (taken as neutral), so the job takes 30 nodes, 50%"),
        (100, 0, 40, "lightly loaded (0 nodes pending for 100 idle, pressure 0.00 ≤ 0.5)"),
        (100, 50, 40, "lightly loaded (50 nodes pending for 100 idle, pressure 0.50 ≤ 0.5)"),
        (40, 50, 30, "moderately loaded (50 nodes pending for 40 idle, pressure 1.25, between"),
        (10, 100, 4, "crowded (100 nodes pending for 10 idle, pressure 10.00 ≥ 8)"),
        (10, 50, 12, "heavily loaded (50 nodes pending for 10 idle, pressure 5.00 ≥ 2)"),
        (0, 2, 20, "heavily loaded (2 nodes pending for 0 idle, pressure 2.00 ≥ 2)"),
    ],
)
def test_load_adaptive_interpolates_by_pressure(
    idle: int | None, pending: int, expected: int, words: str
) -> None:
    cluster = ClusterState(idle_nodes=idle, pending_demand_nodes=pending)
    c = load_adaptive_rule(EFF, PWS, CAP, cluster, replace(DEFAULTS, limit_to_idle=False), 4)
    # pressure 5 is halfway from heavy (2) to crowded (8): 4 + ⌊0.5·(20 - 4)⌋ = 12
    assert c.nodes == expected
    assert words in c.reason


def test_load_adaptive_moderate_weight_is_linear() -> None:
    # pressure 1.25 between 0.5 and 2: w = (2 - 1.25)/1.5 = 0.5 -> 20 + ⌊0.5·20⌋ = 30;
    # pressure 0.8: w = 0.8 -> 20 + ⌊16⌋ = 36.
    cluster = ClusterState(idle_nodes=50, pending_demand_nodes=40)
    c = load_adaptive_rule(EFF, PWS, CAP, cluster, DEFAULTS)
    assert c.nodes == 36
    assert "so the job takes 36 nodes, 80% of the way from the efficient size 20 to the " in (
        c.reason
    )


def test_load_adaptive_never_goes_past_the_idle_nodes_nor_below_the_minimum() -> None:
    some = load_adaptive_rule(EFF, PWS, CAP, ClusterState(idle_nodes=25), DEFAULTS, 4)
    assert some.nodes == 25
    assert some.reason.endswith(", limited to the 25 idle nodes so that it can start now")
    # Below the efficient size too (it was kept at 20 before, waiting for 15 more nodes).
    few = load_adaptive_rule(EFF, PWS, CAP, ClusterState(idle_nodes=5), DEFAULTS, 4)
    assert few.nodes == 5
    none = load_adaptive_rule(EFF, PWS, CAP, ClusterState(idle_nodes=2), DEFAULTS, 4)
    assert none.nodes == 4
    assert none.reason.endswith(", but with only 2 idle it takes the user's minimum, 4 nodes")
    off = replace(DEFAULTS, limit_to_idle=False)
    assert load_adaptive_rule(EFF, PWS, CAP, ClusterState(idle_nodes=5), off, 4).nodes == 40


def test_load_adaptive_respects_the_cap_and_equal_sizes() -> None:
    capped = load_adaptive_rule(EFF, PWS, Candidate("cap", 35, ""), ClusterState(100), DEFAULTS)
    assert capped.nodes == 35
    same = load_adaptive_rule(EFF, Candidate("pws", 40, ""), CAP, ClusterState(), DEFAULTS)
    assert same.nodes == 40
    assert same.reason.startswith("the efficient and the larger useful size are both 40 nodes")
    no_cap = load_adaptive_rule(EFF, PWS, Candidate("cap", None, ""), ClusterState(100), DEFAULTS)
    assert no_cap.nodes == 40


# --- exploration ----------------------------------------------------------------------------

SHAKY = make_curve(24.25, 0.82, t1=3600.0, diagnostics=unreliable("runner_up", 32))
SHAKY_4_64 = RuntimeProfile.of(SHAKY, 4, 64)


def node_hours(curve: predictor.Curve, n: int) -> float:
    return n * float(curve.runtime(n)) / 3600.0


def test_exploration_runs_the_suggested_size_within_budget() -> None:
    budget = ExplorationBudget(jobs_decided=9, node_hours_decided=1000.0)
    # 1 of 10 jobs ≤ 10%, and 32 nodes · T(32) is well under 10% of the node-hours.
    got = exploration_rule(SHAKY_4_64, ANY, budget, DEFAULTS)
    assert got.eligible
    assert (got.candidate.rule, got.candidate.nodes) == ("exploration", 32)
    assert_names(
        got.candidate.reason,
        "not reliable",
        "runner_up",
        "32 nodes",
        "exploration budget",
        "0 of 9 jobs",
        "0.0 of 1000.0 node-hours",
    )


def test_exploration_job_share_counts_this_job() -> None:
    eight = exploration_rule(SHAKY_4_64, ANY, ExplorationBudget(8, 0, 1e6, 0.0), DEFAULTS)
    assert not eight.eligible
    assert eight.candidate.nodes is None
    assert_names(eight.candidate.reason, "32 nodes", "runner_up", "1 of 9 jobs", "10% budget")
    # 2 of 20 jobs is within 10%, 2 of 19 is not.
    assert exploration_rule(SHAKY_4_64, ANY, ExplorationBudget(19, 1, 1e6, 0.0), DEFAULTS).eligible
    assert not exploration_rule(
        SHAKY_4_64, ANY, ExplorationBudget(18, 1, 1e6, 0.0), DEFAULTS
    ).eligible


def test_exploration_node_hour_share_counts_this_job() -> None:
    this = node_hours(SHAKY, 32)
    # Allowed exactly when used + this ≤ 0.1·(total + this): total ≥ 9·this with nothing used.
    enough = ExplorationBudget(100, 0, 9 * this * 1.001, 0.0)
    short = ExplorationBudget(100, 0, 9 * this * 0.999, 0.0)
    assert exploration_rule(SHAKY_4_64, ANY, enough, DEFAULTS).eligible
    refused = exploration_rule(SHAKY_4_64, ANY, short, DEFAULTS)
    assert not refused.eligible
    assert "node-hours, above the 10% budget" in refused.candidate.reason


@pytest.mark.parametrize(
    ("curve", "lo", "hi", "allowed", "words"),
    [
        (make_curve(24.25, 0.82), 4, 64, ANY, "the curve is reliable, so there is nothing"),
        (SHAKY, 40, 64, ANY, "the next run is suggested at 32 nodes, not a feasible size in 40-64"),
        (SHAKY, 4, 64, Allowed((4, 16, 64), "x"), "not a feasible size in 4-64"),
        (
            make_curve(24.25, 0.82, diagnostics=unreliable("high_fit_error", None)),
            4,
            64,
            ANY,
            "the curve is not reliable (high_fit_error) but no size to run next is suggested",
        ),
        (
            make_curve(700.0, 3.0, identified=False),  # no knee yet, but no problem either
            4,
            64,
            ANY,
            "the curve is reliable, so there is nothing to explore",
        ),
    ],
)
def test_exploration_not_eligible(
    curve: predictor.Curve, lo: int, hi: int, allowed: Allowed, words: str
) -> None:
    got = exploration_rule(
        RuntimeProfile.of(curve, lo, hi), allowed, ExplorationBudget(100, 0, 1e9, 0), DEFAULTS
    )
    assert not got.eligible
    assert got.candidate.nodes is None
    assert words in got.candidate.reason


@pytest.mark.parametrize("key", ["exploration_job_share", "exploration_node_hour_share"])
def test_a_zero_share_turns_exploration_off(key: str) -> None:
    off = replace(DEFAULTS, **{key: 0.0})  # type: ignore[arg-type]
    got = exploration_rule(SHAKY_4_64, ANY, ExplorationBudget(100, 0, 1e9, 0), off)
    assert not got.eligible
    assert got.candidate.reason.endswith("but exploration is off")


# --- fallback -------------------------------------------------------------------------------


def test_fallback_modes() -> None:
    request = Request(4, 64)
    why = "no curve is known for this application"
    kept = fallback_rule(request, 4, 48, why, DEFAULTS)
    assert (kept.rule, kept.nodes) == ("fallback", None)
    assert_names(kept.reason, why, "left as submitted", "4-64 nodes")
    low = fallback_rule(request, 4, 48, why, replace(DEFAULTS, fallback="min"))
    assert (low.rule, low.nodes) == ("fallback", 4)
    assert_names(low.reason, why, "smallest size", "4 nodes")
    high = fallback_rule(request, 4, 48, why, replace(DEFAULTS, fallback="max"))
    assert high.nodes == 48
    assert high.reason.endswith("the largest size allowed, 48 nodes")


def test_efficiency_and_pws_handle_a_stepwise_curve() -> None:
    # Two Downey phases: a slow one observed at 4-16 nodes, a much faster one from 32 (the data
    # fit in cache); a size uses the phase of its closest observation, so from 24 nodes on the
    # curve jumps. Efficiency is then not monotone: it falls below 85% at 9 nodes and is far
    # above it again at 24, which a search for one crossing would miss.
    fast = predictor.Segment((32, 64), 200.0, 0.2, 1000.0, True)
    slow = predictor.Segment((4, 8, 16), 12.0, 1.0, 3000.0, True)
    base = make_curve(200.0, 0.2, 1000.0, observed=(4, 8, 16, 32, 64))
    curve = replace(base, segments=(slow, fast))
    settings = replace(DEFAULTS, efficiency_threshold=0.85)
    for lo, hi in ((4, 24), (4, 20), (4, 128), (20, 40)):
        sizes = np.arange(lo, hi + 1)
        t = curve.runtime(sizes)
        e = 4 * float(curve.runtime(4)) / (sizes * t)
        expected = int(sizes[e >= 0.85].max()) if (e >= 0.85).any() else lo
        assert efficiency_rule(RuntimeProfile.of(curve, lo, hi), settings).nodes == expected, (
            lo,
            hi,
        )
        eta = 1.0 / (sizes * t * t)
        assert pws_rule(RuntimeProfile.of(curve, lo, hi)).nodes == int(sizes[np.argmax(eta)]), (
            lo,
            hi,
        )
    assert efficiency_rule(RuntimeProfile.of(curve, 4, 24), settings).nodes == 24
    assert efficiency_rule(RuntimeProfile.of(curve, 4, 20), settings).nodes == 8
