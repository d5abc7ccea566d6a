"""The roofline prior's choices (policies/roofline.py): which intensity, from which known type,
with which ratio; the prior itself is checked against its formula in
tests/unit/predictor/test_roofline.py."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import predictor
from policies.roofline import (
    Intensity,
    Known,
    NodeType,
    choose_intensity,
    estimate_intensity,
    plan_prior,
    prior_curve,
    time_ratio,
)
from predictor.roofline import PRIOR_PROBLEM

from .reasons import assert_names

# Three types: ridges 2 (std), 4 (big) and 8 (gpu) flop/byte.
STD = NodeType("std", 100.0, 50.0)
BIG = NodeType("big", 400.0, 100.0)
GPU = NodeType("gpu", 3200.0, 400.0)
N = np.array([1.0, 2.0, 4.0, 8.0, 16.0])


def curve(t1: float) -> predictor.Curve:
    """Amdahl with a 5% serial part, from T(1) = t1: the runs of one app on one type."""
    return predictor.Curve.from_fit(predictor.fit(N, t1 * (0.05 + 0.95 / N)))


def test_the_ratio_follows_the_roof_of_each_type() -> None:
    # Memory-bound on both (I = 1): bandwidths 100/50; compute-bound (I = 10): peaks 400/100.
    assert time_ratio(STD, BIG, 1.0) == pytest.approx((0.5, 1.0))
    assert time_ratio(STD, BIG, 10.0) == pytest.approx((0.25, 1.0))
    # Per core: 16 cores against 64, each of big's a quarter of a node.
    k, m = time_ratio(NodeType("std", 100.0, 50.0, 16), NodeType("big", 400.0, 100.0, 64), 10.0)
    assert (k, m) == pytest.approx((1.0, 4.0))


def test_the_intensity_between_two_types_ridges_is_estimated_from_their_curves() -> None:
    """An app of 3 flop/byte: compute-bound on std (100 GFLOP/s), memory-bound on big
    (300 GFLOP/s), so big runs it 3× as fast; the curves give 3 back."""
    known = [Known(STD, curve(3000.0), 5), Known(BIG, curve(1000.0), 5)]
    found = estimate_intensity(known)
    assert isinstance(found, Intensity)
    assert (found.source, found.bound, found.between) == ("runs", "exact", ("big", "std"))
    assert found.value == pytest.approx(3.0, rel=0.02)
    assert_names(found.words(), "intensity 3 flop/byte", "estimated from its runs on big and std")


def test_a_memory_bound_app_is_bounded_by_the_lower_ridge() -> None:
    known = [Known(STD, curve(3000.0), 5), Known(BIG, curve(1500.0), 5)]  # the bandwidth ratio
    found = estimate_intensity(known)
    assert isinstance(found, Intensity)
    assert found.bound == "at_most"
    assert found.value == pytest.approx(2.0)
    assert_names(found.words(), "≤ 2 flop/byte", "memory-bound on both")


def test_the_two_types_with_the_most_runs_are_compared() -> None:
    known = [
        Known(GPU, curve(100.0), 2),  # the fewest runs: left out
        Known(STD, curve(3000.0), 9),
        Known(BIG, curve(1000.0), 7),
    ]
    found = estimate_intensity(known)
    assert isinstance(found, Intensity)
    assert found.between == ("std", "big")


def test_no_estimate_without_two_types_or_a_shared_processor_count() -> None:
    assert_names(str(estimate_intensity([Known(STD, curve(10.0), 5)])), "fewer than two")
    small = predictor.Curve.from_fit(predictor.fit([1, 2, 4], [10.0, 5.2, 2.8]))
    large = predictor.Curve.from_fit(predictor.fit([16, 32, 64], [1.0, 0.6, 0.4]))
    apart = estimate_intensity([Known(STD, small, 3), Known(BIG, large, 3)])
    assert_names(str(apart), "share no processor count")
    same = NodeType("same", 200.0, 100.0)  # std's ridge
    assert_names(
        str(estimate_intensity([Known(STD, curve(20.0), 5), Known(same, curve(10.0), 5)])),
        "same ridge point",
    )


def test_the_jobs_tag_wins_over_the_runs() -> None:
    known = [Known(STD, curve(3000.0), 5), Known(BIG, curve(1000.0), 5)]
    tagged = choose_intensity(0.5, known)
    assert tagged == Intensity(0.5, "tag")
    assert_names(tagged.words() if isinstance(tagged, Intensity) else "", "the job's tag")
    assert isinstance(choose_intensity(None, known), Intensity)
    assert_names(str(choose_intensity(None, known[:1])), "unknown", "intensity=")


def test_the_prior_converts_from_the_closest_known_type() -> None:
    known = [Known(STD, curve(3000.0), 9), Known(GPU, curve(300.0), 3)]
    plan = plan_prior(BIG, known, Intensity(10.0, "tag"))
    assert not isinstance(plan, str)
    # To big at I = 10 (compute-bound everywhere): from std ×0.25, from gpu ×8: std is closer.
    assert plan.source.node_type == STD
    assert plan.time_ratio == pytest.approx(0.25)
    prior = prior_curve(plan)
    assert_allclose(prior.runtime(N), 0.25 * known[0].curve.runtime(N), rtol=1e-3)
    assert PRIOR_PROBLEM in [p.problem for p in prior.diagnostics.reliability]
    assert_names(
        plan.note(),
        "roofline prior",
        "on std",
        "4× as fast per node",
        "compute time only",
        "until runs on big",
    )
    assert plan.to_dict()["from"] == "std"


def test_no_prior_without_another_type() -> None:
    plan = plan_prior(BIG, [Known(BIG, curve(10.0), 3)], Intensity(1.0, "tag"))
    assert_names(str(plan), "no curve on another")


@pytest.mark.parametrize(
    ("peak", "bandwidth", "cores"), [(0.0, 1.0, None), (1.0, float("nan"), None), (1.0, 1.0, 0)]
)
def test_a_node_type_refuses_what_no_node_has(
    peak: float, bandwidth: float, cores: int | None
) -> None:
    with pytest.raises(ValueError, match="node type x"):
        NodeType("x", peak, bandwidth, cores)
