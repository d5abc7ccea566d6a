"""ADEPT sections VIII-IX on synthetic data built from the model plus the paper's deviations."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from numpy.typing import ArrayLike, NDArray

import predictor
from predictor.analysis import analyze, regular_spacing
from predictor.anomalies import (
    AnomalySettings,
    candidates,
    declining_tail,
    fluctuation,
    fluctuation_metric,
    interpolation_deviation,
    weight_factor,
)
from predictor.downey import relative_runtime
from predictor.observations import prepare
from predictor.patterns import is_power_of_two, is_square, optimized_sizes

SETTINGS = AnomalySettings()


def downey(n: ArrayLike, A: float, sigma: float, t1: float = 1000.0) -> NDArray[np.float64]:
    return t1 * relative_runtime(n, A, sigma)


# --- the fluctuation metric ---------------------------------------------------------------


def test_fluctuation_metric_follows_the_paper_formula() -> None:
    n = np.array([2.0, 4.0, 10.0])
    t = np.array([50.0, 26.0, 11.0])
    expected = [(50 * 2 / 4) / 26 * (1 + 2 / 4), (26 * 4 / 10) / 11 * (1 + 6 / 10)]
    assert_allclose(fluctuation_metric(n, t), expected)


def test_a_downey_curve_is_calm_without_knowing_t1() -> None:
    for A, sigma in [(300.0, 0.8), (50.0, 0.2), (800.0, 4.0)]:
        n = np.array([16.0, 25.0, 36.0, 49.0, 64.0, 81.0, 100.0])
        assert fluctuation(n, downey(n, A, sigma, t1=3.7), 0.1) == 0.0
        assert candidates(n, downey(n, A, sigma), 0.1).size == 0


def test_weight_reduction_formula() -> None:
    """W' = max(0, W(θ - min(φ, D))/φ) with φ = 10, θ = 5."""
    assert weight_factor(0.0, SETTINGS) == pytest.approx(0.5)
    assert weight_factor(2.0, SETTINGS) == pytest.approx(0.3)
    assert weight_factor(5.0, SETTINGS) == 0.0
    assert weight_factor(50.0, SETTINGS) == 0.0
    with pytest.raises(ValueError, match="theta"):
        AnomalySettings(theta=20.0)


# --- individual anomalous points (Figure 7) --------------------------------------------------


@pytest.mark.parametrize("t1_known", [False, True])
def test_anomalous_point_at_64_is_found_and_down_weighted(t1_known: bool) -> None:
    """Figure 7 (top): one point too fast; found with or without T(1), its weight reduced."""
    n = np.array([16.0, 25.0, 36.0, 49.0, 64.0, 81.0, 100.0, 121.0])
    if t1_known:
        n = np.r_[1.0, n]
    t = downey(n, 300.0, 0.8)
    t[n == 64] *= 0.8
    analysis = analyze(prepare(n, t), SETTINGS)
    [anomaly] = analysis.anomalies
    assert (anomaly.n, anomaly.kind) == (64, "point")
    assert anomaly.deviation > 1.0
    assert anomaly.weight == pytest.approx(weight_factor(anomaly.deviation, SETTINGS))
    assert analysis.weight[n == 64][0] == pytest.approx(anomaly.weight)


def test_down_weighting_keeps_the_prediction_near_the_truth() -> None:
    """Figure 7 (bottom left): with the anomaly's weight reduced, neighbours predict well."""
    n = np.array([16.0, 25.0, 36.0, 49.0, 64.0, 81.0, 100.0])
    t = downey(n, 60.0, 0.8)  # the knee at 60 lies inside the data: the curve is identified
    t[n == 49] *= 0.75
    truth = downey(np.array([144.0, 196.0]), 60.0, 0.8)
    handled = predictor.predict(n, t, [144, 196])
    plain = predictor.predict(n, t, [144, 196], diagnosis=predictor.DiagnosisSettings(handle=False))
    assert np.abs(handled / truth - 1).max() < np.abs(plain / truth - 1).max()
    assert np.abs(handled / truth - 1).max() < 0.05


def test_a_point_far_off_gets_no_weight() -> None:
    """Figure 7 (bottom right): a speedup 20% too high at 80 nodes is dropped."""
    n = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0])
    t = downey(n, 120.0, 0.5)
    t[n == 80] /= 1.5
    analysis = analyze(prepare(n, t), SETTINGS)
    assert [(a.n, a.weight) for a in analysis.anomalies] == [(80, 0.0)]
    assert not analysis.keep[n == 80][0]


def test_fewer_than_four_points_have_no_point_anomalies() -> None:
    n = np.array([2.0, 4.0, 8.0])
    t = downey(n, 50.0, 0.5) * np.array([1.0, 0.6, 1.0])
    assert analyze(prepare(n, t), SETTINGS).anomalies == ()


# --- the declining phase ----------------------------------------------------------------------


def test_points_past_the_peak_are_excluded() -> None:
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0])
    # Runtimes rise after 32 nodes (37.3 s): by 21% at 64, beyond what 5% noise explains.
    t = np.r_[downey(n[:6], 40.0, 0.5), [45.0, 80.0]]
    analysis = analyze(prepare(n, t), SETTINGS)
    assert [(a.n, a.kind) for a in analysis.anomalies] == [(64, "decline"), (128, "decline")]
    assert analysis.keep.tolist() == [True] * 6 + [False] * 2
    f = predictor.fit(n, t)
    assert f.fit_error < 0.01  # the tail no longer drags the curve


def test_a_single_final_point_past_the_peak_is_ambiguous() -> None:
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    t = downey(n, 40.0, 0.5)
    t[-1] = 1.5 * t[-2]
    analysis = analyze(prepare(n, t), SETTINGS)
    assert [(a.n, a.kind) for a in analysis.anomalies] == [(32, "ambiguous_final")]
    assert not analysis.keep[-1]


def test_a_rise_within_the_noise_is_not_a_decline() -> None:
    """Failed before (decline_tol 5% alone): 7% above the peak is within 5% noise (η0)."""
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    t = np.r_[downey(n[:6], 40.0, 0.5), [40.0]]
    analysis = analyze(prepare(n, t), SETTINGS)
    assert analysis.anomalies == ()
    assert analysis.keep.all()
    paper = AnomalySettings(noise=0.0)
    assert [a.kind for a in analyze(prepare(n, t), paper).anomalies] == ["ambiguous_final"]


def test_noise_on_a_flat_top_is_not_a_decline() -> None:
    t = np.array([100.0, 52.0, 30.0, 20.0, 20.5, 19.9, 20.3])
    assert declining_tail(t, 0.05).indices.size == 0


def test_exclusions_never_leave_fewer_than_three_sizes() -> None:
    """With three sizes, the lone final point is the only evidence about the tail: kept."""
    n = np.array([1.0, 16.0, 256.0])
    t = np.array([2.14, 0.159, 0.646])  # the BFS curve on its smallest, middle, largest size
    analysis = analyze(prepare(n, t), SETTINGS)
    assert [(a.n, a.kind) for a in analysis.anomalies] == [(256, "ambiguous_final")]
    assert analysis.keep.all()


# --- stepwise scalability (Figure 8) ---------------------------------------------------------


def test_omp_ft_like_step_splits_between_5_and_6() -> None:
    n = np.arange(1.0, 9.0)
    t = downey(n, 50.0, 0.5)
    t[n >= 6] *= 0.7  # the data fit the next cache level from 6 threads on
    f = predictor.fit(n, t)
    [pattern] = f.diagnostics.patterns
    assert pattern.kind == "stepwise"
    assert pattern.phases == ((1, 2, 3, 4, 5), (6, 7, 8))
    assert len(f.segments) == 2
    assert_allclose(f.runtime(n), t, rtol=0.01)  # each phase fits its own points
    assert_allclose(predictor.predict(n, t, [2, 7]), t[[1, 6]], rtol=0.01)


def test_three_phase_stepwise() -> None:
    n = np.arange(2.0, 14.0)
    t = downey(n, 80.0, 0.4)
    t[n >= 6] *= 0.7
    t[n >= 10] *= 0.7
    f = predictor.fit(n, t)
    [pattern] = f.diagnostics.patterns
    assert pattern.phases == ((2, 3, 4, 5), (6, 7, 8, 9), (10, 11, 12, 13))
    assert_allclose(f.runtime(n), t, rtol=0.01)


def test_fewer_than_five_points_are_not_split() -> None:
    n = np.array([1.0, 2.0, 3.0, 4.0])
    t = downey(n, 50.0, 0.5) * np.array([1.0, 1.0, 0.7, 0.7])
    assert analyze(prepare(n, t), SETTINGS).patterns == ()


# --- specially optimized sizes (Figure 8, bottom right) ---------------------------------------


def test_size_rules() -> None:
    n = np.arange(1, 20)
    assert n[is_power_of_two(n)].tolist() == [1, 2, 4, 8, 16]
    assert n[is_square(n)].tolist() == [1, 4, 9, 16]


def test_power_of_two_optimized_code_keeps_only_its_sizes() -> None:
    n = np.arange(2.0, 19.0)
    t = downey(n, 40.0, 0.6)
    special = is_power_of_two(n.astype(int))
    t[special] *= 0.8
    f = predictor.fit(n, t)
    assert f.diagnostics.patterns[0].feasible == "powers_of_two"
    assert f.observations.n[~special.astype(bool)].size > 0  # the input is kept for display
    assert_allclose(f.runtime(n[special]), t[special], rtol=0.01)


def test_squares_optimized_code() -> None:
    n = np.arange(2.0, 40.0)
    t = downey(n, 60.0, 0.4)
    t[is_square(n.astype(int))] *= 0.8
    found = optimized_sizes(n.astype(np.int64), t)
    assert found is not None
    assert found.rule == "squares"


def test_curvature_alone_is_no_pattern() -> None:
    """A U-shaped curve on powers of two: every interior point is below its neighbours'
    chord, squares included; that is curvature, not tuning."""
    n = 2 ** np.arange(9)
    t = np.array([2.14, 0.965, 0.503, 0.290, 0.159, 0.130, 0.141, 0.284, 0.646])
    assert optimized_sizes(n, t) is None


def test_fewer_than_nine_points_are_not_searched_for_optimized_sizes() -> None:
    n = np.arange(2, 10)
    t = downey(n.astype(float), 40.0, 0.6)
    t[is_power_of_two(n)] *= 0.8
    assert optimized_sizes(n, t) is None


# --- gate on few or irregular points ----------------------------------------------------------


@pytest.mark.parametrize("sizes", [[2, 4, 32, 64, 128], [1, 2, 4, 32, 64]])
@pytest.mark.parametrize(("A", "sigma"), [(10.0, 0.0), (10.0, 1.0), (20.0, 0.5), (50.0, 2.0)])
def test_noise_free_data_with_a_jump_in_spacing_raise_no_anomaly(
    sizes: list[int], A: float, sigma: float
) -> None:
    """Failed before: 14 of 30 (A, σ) pairs on each layout flagged a point (64 or 32)."""
    n = np.array(sizes, dtype=float)
    analysis = analyze(prepare(n, downey(n, A, sigma)), SETTINGS)
    assert [a for a in analysis.anomalies if a.kind == "point"] == []
    assert analysis.patterns == ()


def test_four_noisy_points_raise_no_point_anomaly() -> None:
    """Failed before: 19 of 200 four-point fits at 5% noise flagged a point anomaly."""
    rng = np.random.default_rng(1)
    flagged = 0
    for _ in range(200):
        A, sigma = np.exp(rng.uniform(np.log(10), np.log(2000))), rng.uniform(0, 5)
        n = np.unique(np.round(np.geomspace(2, A * rng.uniform(0.3, 4), 4)))
        t = downey(n, A, sigma) * np.exp(rng.normal(0, 0.05, n.size))
        analysis = analyze(prepare(n, t), SETTINGS)
        flagged += any(a.kind == "point" for a in analysis.anomalies) or bool(analysis.patterns)
    assert flagged == 0


def test_regular_spacing() -> None:
    assert regular_spacing(np.arange(1.0, 9.0))
    assert regular_spacing(np.array([1.0, 16.0, 25.0, 36.0, 49.0]))  # n = 1 is not counted
    assert regular_spacing(2.0 ** np.arange(1, 8))
    assert not regular_spacing(np.array([2.0, 4.0, 32.0, 64.0]))


@pytest.mark.parametrize("sizes", [5, 6])
def test_regular_noisy_points_rarely_raise_anomalies(sizes: int) -> None:
    """Failed before: at 5% noise, 5-6 evenly spaced sizes flagged an anomaly or a step in
    17% / 36% of these fits (ε = 0.1 is within what noise moves R by); now 1% / 4%."""
    rng = np.random.default_rng(3)
    flagged = 0
    for _ in range(100):
        A, sigma = np.exp(rng.uniform(np.log(10), np.log(2000))), rng.uniform(0, 5)
        n = np.unique(np.round(np.geomspace(2, A * rng.uniform(0.3, 4), sizes)))
        t = downey(n, A, sigma) * np.exp(rng.normal(0, 0.05, n.size))
        analysis = analyze(prepare(n, t), SETTINGS)
        flagged += bool(analysis.anomalies) or bool(analysis.patterns)
    assert flagged <= 8


def test_interpolation_deviation_and_its_noise_factor() -> None:
    n = np.array([2.0, 4.0, 8.0, 16.0])
    t = np.array([8.0, 4.0, 2.0 * 0.8, 1.0])  # a power law with the third point 20% fast
    d, g = interpolation_deviation(n, t, 2)
    assert d == pytest.approx(np.log(0.8))
    assert g == pytest.approx(np.sqrt(1.5))
    d_end, g_end = interpolation_deviation(n, t, 0)  # extrapolated from the next two
    assert g_end == pytest.approx(np.sqrt(1 + 4 + 1))
    assert d_end == pytest.approx(np.log(8.0) - (2 * np.log(4.0) - np.log(1.6)))
