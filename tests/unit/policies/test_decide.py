"""The decision flow: range and partition limits, fallback, strategy and cap, exploration,
feasible sizes, and the time limit that goes with the size."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

import predictor
from policies import (
    DEFAULTS,
    RULES,
    ClusterState,
    ExplorationBudget,
    Feasible,
    Request,
    decide,
)
from policies.decide import MAX_NODES
from policies.profile import RuntimeProfile
from policies.time_limit import time_limit, upper_runtimes
from predictor.covariate import Covariate
from predictor.segments import Segment

from .curves import LU_CSV_NAME, make_curve, optimized_for, unreliable
from .reasons import assert_names

DATA = Path(__file__).resolve().parents[2] / "data" / "scaling"
# The Downey parameters ADEPT fits to NPB LU class W (Lan's thesis data): max useful 48, pws 33.
LU = make_curve(24.25, 0.82, t1=1.0, observed=(2, 4, 8, 16, 32, 64))
JOB = Request(4, 64, time_limit_min=60)
LIGHT = ClusterState(idle_nodes=64, total_nodes=64)
HEAVY = ClusterState(idle_nodes=4, pending_demand_nodes=200, total_nodes=64)


def test_the_known_curve_sizes() -> None:
    assert (LU.max_useful_n, LU.pws_n) == (48, 33)


def test_a_range_above_the_partition_limit_is_left_as_submitted() -> None:
    for cluster in (ClusterState(max_nodes_per_job=64), ClusterState(total_nodes=64)):
        d = decide(Request(80, 128, time_limit_min=60), LU, cluster)
        assert (d.nodes, d.time_limit_min, d.rule) == (None, None, "partition_limit")
        assert_names(d.reason, "80 nodes", "at most 64", "partition", "left as submitted")


def test_without_a_curve_the_fallback_decides() -> None:
    d = decide(JOB, None, LIGHT)
    assert (d.nodes, d.time_limit_min, d.rule) == (None, None, "fallback")
    assert_names(d.reason, "no curve", "left as submitted", "4-64 nodes")
    assert [c.rule for c in d.candidates] == ["fallback"]
    low = decide(JOB, None, LIGHT, replace(DEFAULTS, fallback="min"), missing="Redis is down")
    assert (low.nodes, low.time_limit_min) == (4, None)
    assert_names(low.reason, "Redis is down", "smallest size", "4 nodes")
    assert_names(low.time_limit_reason, "without a usable curve", "60 min")
    high = decide(
        Request(4, 128), None, ClusterState(max_nodes_per_job=64), replace(DEFAULTS, fallback="max")
    )
    assert high.nodes == 64
    assert high.reason.endswith(
        "the largest size allowed, 64 nodes; the partition allows at most 64 nodes per job"
    )


def test_an_unusable_curve_gets_the_fallback_with_every_candidate_listed() -> None:
    bad = replace(LU, fit_error=0.4)
    d = decide(JOB, bad, LIGHT)
    # Not sized by the curve: the job keeps its minimum and limit, and its range's top is cut
    # at the larger of the curve's maximum useful size (48) and its runs' median size (16).
    assert (d.nodes, d.max_nodes, d.time_limit_min, d.rule) == (4, 48, None, "fallback")
    assert d.reason.startswith(
        "the curve is unusable: its fitting error 40% exceeds max_fit_error 10%, so it is "
        "released as 4-48 nodes: the curve, though not used to size the job, shows no speedup "
        "past 48 nodes, and its runs' median size is 16 nodes"
    )
    assert [c.rule for c in d.candidates] == list(RULES)
    assert decide(JOB, bad, LIGHT, replace(DEFAULTS, max_fit_error=0.5)).rule == "load_adaptive"


def test_an_unusable_curve_cuts_the_range_only_where_it_saw_the_speedup_stop() -> None:
    bad = replace(LU, fit_error=0.4)
    as_submitted = (None, None, None, "fallback")

    def outcome(
        request: Request, curve: predictor.Curve, fallback: str = "as_submitted"
    ) -> tuple[int | None, int | None, int | None, str]:
        d = decide(request, curve, LIGHT, replace(DEFAULTS, fallback=fallback))
        return d.nodes, d.max_nodes, d.time_limit_min, d.rule

    # No knee: no evidence the speedup stops, nothing cut.
    assert outcome(JOB, replace(bad, max_useful_n=None)) == as_submitted
    # A range whose top is within the knee: nothing to cut.
    assert outcome(Request(4, 40, time_limit_min=60), bad) == as_submitted
    # The runs' median size above the knee keeps the sizes the users ran at.
    wide = replace(bad, observed_n=(32, 56, 60))
    assert outcome(JOB, wide) == (4, 56, None, "fallback")
    # A shared curve one user's runs moved: its knee is theirs, nothing of it is used.
    steered = replace(LU, diagnostics=unreliable("user_influence", suggest_n=None))
    assert outcome(JOB, steered) == as_submitted
    assert outcome(JOB, replace(steered, diagnostics=unreliable("runner_up", None)))[1] == 48
    # A knee and median at or below the minimum cut the range to it: a pin, not a range.
    low = replace(bad, max_useful_n=2, observed_n=(2, 3))
    assert outcome(Request(4, 64, time_limit_min=60), low) == (4, None, None, "fallback")
    assert (
        "so it is given its minimum, 4 nodes: the curve, though not"
        in decide(JOB, low, LIGHT).reason
    )
    # Listed sizes cannot be released as a range; a pinned fallback stays pinned.
    listed = Request(4, 64, time_limit_min=60, feasible=Feasible.listed((4, 8, 16, 64)))
    assert outcome(listed, bad) == as_submitted
    assert outcome(JOB, bad, fallback="min") == (4, None, None, "fallback")


def test_an_unusable_curve_cuts_no_range_below_a_size_its_runs_were_killed_at() -> None:
    """A run stopped at its limit on the cut's top or above says the sizes below may overrun a
    limit too: the range stays whole; a run stopped below the top cuts as before."""
    bad = replace(LU, fit_error=0.4)

    def stopped_at(n: int) -> predictor.Curve:
        return replace(bad, covariate=Covariate(0.0, 3600.0, 0.1, 5, 0.0, 1.0, stopped_n=n))

    killed_at = {n: decide(JOB, stopped_at(n), LIGHT) for n in (16, 48, 64)}
    assert (killed_at[16].nodes, killed_at[16].max_nodes) == (4, 48)
    for n in (48, 64):
        d = killed_at[n]
        assert (d.nodes, d.max_nodes, d.time_limit_min, d.rule) == (None, None, None, "fallback")
        assert d.reason.startswith(
            "the curve is unusable: its fitting error 40% exceeds max_fit_error 10%, and one "
            f"of its runs was killed at its time limit on {n} nodes, at or above the 48 "
            "nodes a cut of the range would keep, so the job is left as submitted (4-64 nodes)"
        )


def two_phases(fast_A: float, slow_t1: float) -> predictor.Curve:
    """A curve of two phases (as the property tests drew it): runs up to 217 nodes on a fast
    one (T(1) = 10,000 s), from 244 on a far slower one (T(1) = `slow_t1`), no knee."""
    slow = Segment(sizes=(244, 245), A=232.0, sigma=0.0, t1=slow_t1, identified=True)
    fast = Segment(sizes=(1, 217), A=fast_A, sigma=0.0, t1=10000.0, identified=True)
    return predictor.Curve(
        A=232.0,
        sigma=0.0,
        t1=slow_t1,
        t1_known=True,
        identified=False,
        method="adept",
        fit_error=0.0,
        max_useful_n=None,
        pws_n=232,
        observed_n=(1, 217, 244, 245),
        runs=4,
        segments=(fast, slow),
    )


#: The settings the property tests drew with those curves (the load between 0 and heavy).
PHASED = replace(
    DEFAULTS,
    efficiency_threshold=1.0,
    light_pressure=0.0,
    limit_to_idle=False,
    max_fit_error=1.0,
    release="pinned",
)


def test_a_size_where_the_curve_slows_down_is_lowered_to_the_largest_that_fits() -> None:
    """At 231 and 232 nodes the two-phase curve's runtime overruns the limit, at 230 it fits.
    The load rule's 231 is lowered to 230, not left as submitted (where Slurm would start
    it on 232), and a busier partition's 230 stays: more idle nodes never give a smaller
    size, nor leave the job alone."""
    settings = replace(PHASED, heavy_pressure=7.0, time_limit_safety_factor=2.0)
    curve, job = two_phases(2.0, 1909804.0), Request(230, 232, time_limit_min=274)
    busier, quieter = (decide(job, curve, ClusterState(idle, 4), settings) for idle in (0, 2))
    assert (busier.nodes, quieter.nodes) == (230, 230)
    assert_names(quieter.reason, "231 nodes", "every size from 231 nodes", "lowered to 230")


def test_a_listed_size_where_the_curve_slows_down_is_not_snapped_onto() -> None:
    """The rule's 230 nodes fit the limit, but the only listed size of the range, 256, lies in
    the curve's slow phase and overruns it: the job is left as submitted at any load, not
    pinned at 256 where the curve says it is killed."""
    settings = replace(
        PHASED, heavy_pressure=4.0, crowded_pressure=5.0, time_limit_safety_factor=1.0
    )
    curve = two_phases(1.0, 3986676.0)
    job = Request(230, 532, time_limit_min=274, feasible=Feasible.named("powers_of_two"))
    for idle in (0, 2):
        d = decide(job, curve, ClusterState(idle, 3), settings)
        assert (d.nodes, d.rule) == (None, "fallback")
        assert_names(d.reason, "exceeds the user's 274 min", "left as submitted")


def test_strategies_and_the_cap() -> None:
    light = decide(JOB, LU, LIGHT)
    assert (light.nodes, light.rule) == (48, "load_adaptive")
    # Under pressure: 200 nodes pending for 4 idle (pressure 50) gave the efficient size, 33
    # nodes (a long wait, 55% more node-hours than the user's minimum). Crowded: the minimum.
    heavy = decide(JOB, LU, HEAVY)
    assert (heavy.nodes, heavy.rule) == (4, "load_adaptive")
    assert "crowded" in heavy.reason
    assert "pressure 50.00" in heavy.reason
    # At the heavy pressure itself (8 pending for 4 idle = 2) the efficient size, 33, would not
    # fit the 4 idle nodes, so the job takes what can start now.
    at_heavy = decide(JOB, LU, ClusterState(idle_nodes=4, pending_demand_nodes=8, total_nodes=64))
    assert at_heavy.nodes == 4
    roomy = ClusterState(idle_nodes=40, pending_demand_nodes=80, total_nodes=64)
    assert decide(JOB, LU, roomy).nodes == 33  # pressure 2: the efficient size, within idle
    busier = ClusterState(idle_nodes=40, pending_demand_nodes=200, total_nodes=64)
    # pressure 5, halfway from heavy (2) to crowded (8): 4 + ⌊0.5·(33 - 4)⌋ = 18
    assert decide(JOB, LU, busier).nodes == 18
    pws = decide(JOB, LU, LIGHT, replace(DEFAULTS, strategy="pws"))
    assert (pws.nodes, pws.rule) == (33, "pws")
    # Efficiency against the 2-node runs stays at 50% up to 49 nodes, one past the knee.
    eff = decide(JOB, LU, LIGHT, replace(DEFAULTS, strategy="efficiency"))
    assert [c.nodes for c in eff.candidates if c.rule == "efficiency"] == [49]
    assert (eff.nodes, eff.rule) == (48, "cap")
    assert_names(eff.reason, "48 nodes", "2A-1", "A = 24.2", "efficiency", "49", "capped")


def test_a_curve_without_a_knee_caps_the_job_unless_the_partition_is_lightly_loaded() -> None:
    # Runs at 4-16 nodes of a code that scales far: no knee, A unidentified.
    unseen = make_curve(700.0, 3.0, observed=(4, 8, 16), identified=False)
    light = decide(JOB, unseen, LIGHT)
    assert (light.nodes, light.rule) == (64, "load_adaptive")
    cap = next(c for c in light.candidates if c.rule == "cap")
    assert cap.nodes == 64
    assert "lightly loaded (0 nodes pending for 64 idle" in cap.reason
    assert "nobody waits for the nodes past that" in cap.reason
    # An unidentified curve never shortens a limit (nor does any curve past its runs): the
    # larger size keeps the user's.
    assert light.time_limit_min is None
    assert "never shortens a limit: the user's 60 min stand" in light.time_limit_reason
    # Moderately loaded (pressure 1): the curve knows no speedup past its 16 nodes.
    moderate = ClusterState(idle_nodes=64, pending_demand_nodes=64, total_nodes=64)
    held = decide(JOB, unseen, moderate)
    assert held.nodes == 16
    assert "ran up to 16 nodes, so the curve knows no speedup past that" in held.reason


def test_the_partition_limit_cuts_the_range() -> None:
    d = decide(Request(4, 128), LU, ClusterState(idle_nodes=40, max_nodes_per_job=40))
    assert d.nodes == 40
    assert d.reason.endswith("; the partition allows at most 40 nodes per job")
    assert all(c.nodes is None or c.nodes <= 40 for c in d.candidates)


def test_snapping_to_the_applications_optimised_sizes() -> None:
    curve = replace(LU, diagnostics=optimized_for("powers_of_two"))
    d = decide(JOB, curve, ClusterState(idle_nodes=40, total_nodes=64))
    assert d.nodes == 32
    assert d.reason.endswith(
        "; snapped down to 32 nodes, the largest size not above 40 among powers of two (what "
        "this application is optimised for)"
    )
    # With the job's tag (squares) as well: powers of four.
    both = decide(replace(JOB, feasible=Feasible.named("squares")), curve, LIGHT)
    assert both.nodes == 16
    # A tag with nothing in the range is reported, and the choice is kept.
    stray = decide(replace(JOB, feasible=Feasible.listed({100})), LU, LIGHT)
    assert stray.nodes == 48
    assert stray.reason.endswith(
        "; no size in 4-64 is the size 100 (the job's tag), so any size is kept"
    )
    # Snapping up when nothing allowed lies below the choice.
    up = decide(replace(JOB, feasible=Feasible.listed({50, 60})), LU, HEAVY)
    assert up.nodes == 50
    assert "; snapped up to 50 nodes, the smallest size in the range among the sizes 50 and 60" in (
        up.reason
    )


def test_exploration_wins_when_eligible_even_over_an_unusable_fit() -> None:
    shaky = replace(LU, diagnostics=unreliable("runner_up", 16), fit_error=0.4)
    budget = ExplorationBudget(jobs_decided=50, node_hours_decided=100.0)
    d = decide(JOB, shaky, LIGHT, budget=budget)
    assert (d.nodes, d.rule) == (16, "exploration")
    # An unreliable curve never shortens a limit: the user's own stands.
    assert d.time_limit_min is None
    assert d.time_limit_reason.startswith("the curve is not reliable (runner_up)")
    none_left = decide(JOB, shaky, LIGHT, budget=ExplorationBudget(50, 5, 100.0, 0.0))
    assert none_left.rule == "fallback"


def test_a_decision_on_a_fitted_curve_with_diagnostics() -> None:
    runs = np.loadtxt(DATA / LU_CSV_NAME, delimiter=",", skiprows=1)
    fit = predictor.fit(runs[:, 0], runs[:, 1])
    curve = predictor.Curve.from_fit(
        fit, predictor.Diagnostics(patterns=optimized_for("powers_of_two").patterns)
    )
    d = decide(JOB, curve, ClusterState(idle_nodes=40, total_nodes=64))
    assert d.nodes == 32
    assert d.rule == "load_adaptive"
    # 60 min for 4 nodes, scaled by the fitted T(32)/T(4) widened by the fit error m on both
    # sides (32 is observed, so no flat extrapolation), with the 1.2 safety factor.
    m = curve.fit_error
    ratio = float(curve.runtime(32)) * (1 + m) / (float(curve.runtime(4)) * (1 - m))
    assert 0 < m <= DEFAULTS.max_fit_error
    assert d.time_limit_min == max(5, int(np.ceil(60 * ratio * 1.2)))


def test_reasons_are_one_sentence_each() -> None:
    for d in (decide(JOB, LU, LIGHT), decide(JOB, None, HEAVY), decide(JOB, LU, ClusterState())):
        for text in [d.reason, d.time_limit_reason, *(c.reason for c in d.candidates)]:
            assert text
            assert "\n" not in text
            assert not text.endswith(".")
            assert ". " not in text.replace("e.g. ", "")


def test_to_dict_is_the_cli_contract() -> None:
    d = decide(JOB, LU, LIGHT)
    assert list(d.to_dict()) == ["nodes", "time_limit_min", "rule", "reason", "max_nodes"]
    assert d.to_dict()["max_nodes"] is None  # pinned
    explained = d.to_dict(explain=True)
    assert list(explained) == [
        "nodes",
        "time_limit_min",
        "rule",
        "reason",
        "max_nodes",
        "time_limit_reason",
        "candidates",
    ]
    assert [c["rule"] for c in explained["candidates"]] == list(RULES[:-1])


def test_an_absurd_range_without_a_partition_limit_is_cut_to_max_nodes() -> None:
    curve = make_curve(1e7, 0.0, t1=1e9, observed=(1024, 4096))  # still speeding up at 2^20
    d = decide(Request(1024, 10**9), curve, ClusterState(), replace(DEFAULTS, strategy="pws"))
    assert d.nodes == MAX_NODES
    assert d.reason.endswith("; adaptalloc considers at most 1,048,576 nodes per job")
    huge = decide(Request(MAX_NODES + 1, 10**9), curve, ClusterState())
    assert (huge.nodes, huge.rule) == (None, "partition_limit")


# --- release with a range -------------------------------------------------------------------

RANGE = replace(DEFAULTS, release="range")


def test_pinned_by_default() -> None:
    d = decide(JOB, LU, LIGHT)
    assert (d.nodes, d.max_nodes) == (48, None)


def test_range_release_carries_the_efficient_to_the_larger_useful_size() -> None:
    # NPB LU 4-64: efficient size 33 (pws), larger useful size 48 (the cap).
    roomy = ClusterState(idle_nodes=40, total_nodes=64)
    pinned = decide(JOB, LU, roomy)
    d = decide(JOB, LU, roomy, RANGE)
    assert pinned.nodes == 40  # light load, limited to the 40 idle nodes
    assert (d.nodes, d.max_nodes, d.rule) == (33, 48, "load_adaptive")
    assert "range 33-48" in d.reason
    assert d.to_dict()["max_nodes"] == 48
    # The time limit fits the range's smallest size, 33, longer than the pinned 40's.
    at_33 = time_limit(JOB, RuntimeProfile.of(LU, 4, 64), 33, roomy, DEFAULTS)
    assert d.time_limit_min == at_33.minutes
    assert d.time_limit_reason == at_33.reason
    assert pinned.time_limit_min is not None
    assert d.time_limit_min is not None
    assert d.time_limit_min > pinned.time_limit_min
    # Crowded: the range starts at the user's minimum and Slurm may still give up to 48.
    crowded = decide(JOB, LU, HEAVY, RANGE)
    assert (crowded.nodes, crowded.max_nodes) == (4, 48)


def test_range_release_stays_pinned_for_exploration_fallback_and_feasible_sizes() -> None:
    shaky = replace(LU, diagnostics=unreliable("runner_up", 16))
    budget = ExplorationBudget(jobs_decided=50, node_hours_decided=100.0)
    explored = decide(JOB, shaky, LIGHT, RANGE, budget)
    assert (explored.nodes, explored.rule, explored.max_nodes) == (16, "exploration", None)
    fallback = decide(JOB, None, LIGHT, replace(RANGE, fallback="min"))
    assert (fallback.nodes, fallback.max_nodes) == (4, None)
    two = Request(4, 64, time_limit_min=60, feasible=Feasible.named("powers_of_two"))
    tagged = decide(two, LU, LIGHT, RANGE)
    assert (tagged.nodes, tagged.max_nodes) == (32, None)
    assert "pinned at 32 nodes" in tagged.reason
    # A range that narrows to one size is pinned.
    assert decide(Request(4, 4, 60), LU, LIGHT, RANGE).max_nodes is None


# --- sizes that fit the user's limit --------------------------------------------------------

# NPB LU's shape with T(1) = 10 h: T(n)·1.2 is 189 min at 4 nodes, 101 at 8, 91 at 9.
LONG_LU = make_curve(24.25, 0.82, t1=36000.0, observed=(2, 4, 8, 16, 32, 64))
TIGHT = Request(4, 64, time_limit_min=100)


def test_a_crowded_job_is_not_sized_where_its_user_limit_would_kill_it() -> None:
    # Crowded, the load rule takes the user's minimum, 4 nodes, whose predicted 158 min
    # exceed the user's 100: adaptalloc never raises a limit, so the job would be killed.
    d = decide(TIGHT, LONG_LU, HEAVY)
    assert (d.nodes, d.rule) == (9, "load_adaptive")
    assert_names(d.reason, "raised to 9 nodes", "100 min", "killed")
    assert d.time_limit_min is not None
    assert d.time_limit_min <= 100
    assert d.time_limit_min * 60.0 >= float(LONG_LU.runtime(np.array([9.0]))[0])
    # Released as a range, its low end is raised the same way, the high end kept.
    ranged = decide(TIGHT, LONG_LU, HEAVY, RANGE)
    assert (ranged.nodes, ranged.max_nodes) == (9, 48)
    # A limit every size fits changes nothing: the user's minimum, as before.
    assert decide(replace(TIGHT, time_limit_min=600), LONG_LU, HEAVY).nodes == 4


def test_a_size_raised_to_fit_the_limit_snaps_up_onto_the_feasible_sizes() -> None:
    # The least size that fits the 100 min is 9; among powers of two, 8 would overrun it
    # (T⁺(8)·1.2 = 102 min): the job gets 16, never the 8 that snapping down would give.
    powers = replace(TIGHT, feasible=Feasible.named("powers_of_two"))
    d = decide(powers, LONG_LU, HEAVY)
    assert (d.nodes, d.rule) == (16, "load_adaptive")
    assert_names(d.reason, "raised to 16 nodes", "powers of two")


#: Neither light nor heavy: pressure 1, between light_pressure 0.5 and heavy_pressure 2.
MODERATE = ClusterState(idle_nodes=64, pending_demand_nodes=64, total_nodes=64)


def test_a_limit_no_size_fits_leaves_the_job_as_submitted() -> None:
    # Every size of 4-8 runs past 60 min: the curve cannot tell where the limit holds, so
    # Slurm sizes the job as it would without adaptalloc, and the user's limit stands.
    d = decide(Request(4, 8, time_limit_min=60), LONG_LU, MODERATE)
    assert (d.nodes, d.rule, d.time_limit_min) == (None, "fallback", None)
    assert_names(d.reason, "every size from 8 nodes to 8 nodes", "60 min", "left as submitted")
    # Without a limit there is nothing to overrun: the strategy's size.
    assert decide(Request(4, 64), LONG_LU, HEAVY).nodes == 4


#: A code that stops speeding up at 11 nodes (2A - 1, A = 6): ten hours on one node.
KNEE_AT_11 = make_curve(6.0, 0.5, t1=36000.0, observed=(2, 4, 8, 16, 32, 64))


def test_a_busy_partition_releases_a_job_no_size_fits_from_where_the_runtime_flattens() -> None:
    """Every size of 4-64 runs past 60 min (T⁺ x 1.2 is at least 121 min). Left as submitted
    on a busy partition, the job gets what is free when it starts, often its minimum (T⁺ 170
    min); at 10 nodes T⁺ (103.5 min) is within 5% of the least of the range (101 min, from 11
    up), so no size Slurm could give it is predicted to finish it sooner. It is released as
    10-15 nodes (1.5 x 10): Slurm gives it more when more is free at its start. The limit
    stands."""
    job = Request(4, 64, time_limit_min=60)
    d = decide(job, KNEE_AT_11, HEAVY)
    assert (d.nodes, d.max_nodes, d.rule, d.time_limit_min) == (10, 15, "load_adaptive", 60)
    assert_names(
        d.reason, "every size from 4 nodes to 64 nodes", "released as 10-15 nodes", "within 5%"
    )
    upper = upper_runtimes(RuntimeProfile.of(KNEE_AT_11, 4, 64, (4, 64)), 60, 4)
    assert upper[10 - 4] <= 1.05 * upper.min() < upper[9 - 4]  # the least such size
    # The range's top bounds it: 4-12 nodes gives 10-12.
    assert (decide(Request(4, 12, 60), KNEE_AT_11, HEAVY).max_nodes) == 12
    # A well-scaling code's least is the range's top, a pin there: 4-8 nodes, 60 min, LU ten
    # times longer.
    top = decide(Request(4, 8, time_limit_min=60), LONG_LU, HEAVY)
    assert (top.nodes, top.max_nodes) == (8, None)
    assert_names(top.reason, "pinned at 8 nodes all the same")
    # Left as submitted on a moderately loaded partition, released as a range, or with
    # listed sizes (a cut top aside, as any refused curve's).
    powers = Request(4, 64, time_limit_min=60, feasible=Feasible.named("powers_of_two"))
    others = (
        decide(job, KNEE_AT_11, MODERATE),
        decide(job, KNEE_AT_11, HEAVY, RANGE),
        decide(powers, KNEE_AT_11, HEAVY),
    )
    for other in others:
        assert other.rule == "fallback"
        assert_names(other.reason, "cannot tell at which size")
    # A site whose fallback is the minimum gets it there on any partition: 10 nodes on a busy
    # one would be more than on a quieter one, and more pressure never gives more nodes.
    at_min = replace(DEFAULTS, fallback="min")
    for cluster in (HEAVY, MODERATE):
        d = decide(job, KNEE_AT_11, cluster, at_min)
        assert (d.nodes, d.max_nodes, d.rule) == (4, None, "fallback"), d.reason
