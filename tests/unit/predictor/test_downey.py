"""The Downey model against the thesis' equations, its limits and its derived sizes."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from predictor.downey import (
    efficiency,
    max_useful_size,
    processor_working_set,
    relative_runtime,
    relative_runtime_s,
    s_to_sigma,
    sigma_to_s,
    speedup,
)

from .reference import pws_brute_force, speedup_high, speedup_low, speedup_table

RNG = np.random.default_rng(20091)


def random_instances(count: int) -> list[tuple[float, float, float]]:
    """(n, A, σ) spread over both modes, with σ = 0 and σ = 1 exactly among them."""
    out = []
    for k in range(count):
        A = float(np.exp(RNG.uniform(0, np.log(5000))))
        sigma = [0.0, 1.0, float(RNG.uniform(0, 1)), float(RNG.uniform(1, 50))][k % 4]
        n = float(np.exp(RNG.uniform(0, np.log(30000))))
        out.append((n, A, sigma))
    return out


def test_speedup_matches_thesis_equations_in_both_modes() -> None:
    cases = random_instances(4000)
    expected = np.array([speedup_table(*c) for c in cases])
    n, A, sigma = (np.array(col) for col in zip(*cases, strict=True))
    assert_allclose(speedup(n, A, sigma), expected, rtol=1e-12)


@pytest.mark.parametrize("A", [1.0, 2.5, 24.7, 700.0])
def test_modes_agree_at_sigma_one(A: float) -> None:
    n = np.arange(1, int(4 * A) + 3)
    low = [speedup_low(k, A, 1.0) for k in n]
    high = [speedup_high(k, A, 1.0) for k in n]
    assert_allclose(low, high, rtol=1e-12)
    assert_allclose(speedup(n, A, 1.0), low, rtol=1e-12)
    assert pws_brute_force(low) == pws_brute_force(high) == processor_working_set(A, 1.0)
    assert max_useful_size(A, 1.0) == pytest.approx(2 * A - 1)


def test_runtime_is_inverse_speedup_and_normalised_at_one_node() -> None:
    n = np.array([1.0, 3.0, 17.0, 400.0])[:, None]
    A = np.array([2.0, 30.0, 900.0])[None, :]
    for sigma in (0.0, 0.6, 1.0, 4.0):
        assert_allclose(relative_runtime(n, A, sigma) * speedup(n, A, sigma), 1.0, rtol=1e-12)
        assert_allclose(relative_runtime(1.0, A, sigma), 1.0, rtol=1e-12)
        assert_allclose(efficiency(n, A, sigma), speedup(n, A, sigma) / n, rtol=1e-12)


def test_speedup_bounded_by_n_and_the_average_parallelism_and_never_falls() -> None:
    n = np.arange(1, 3000)[:, None]
    for A, sigma in [(10.0, 0.0), (50.0, 0.5), (50.0, 1.0), (200.0, 7.0), (3.0, 40.0)]:
        s = speedup(n, A, sigma)[:, 0]
        assert np.all(s <= np.minimum(n[:, 0], A) * (1 + 1e-12))
        assert np.all(np.diff(s) >= -1e-12)


def test_limits_match_the_theoretical_bounds() -> None:
    """σ = 0 gives min(n, A); σ → ∞ approaches An/(A+n-1) (thesis eq. 3.8)."""
    n = np.arange(1, 500, dtype=float)
    A = 37.0
    assert_allclose(speedup(n, A, 0.0), np.minimum(n, A), rtol=1e-12)
    assert_allclose(speedup(n, A, 1e9), A * n / (A + n - 1), rtol=1e-6)


def test_broadcasts_over_sizes_and_parameter_arrays() -> None:
    n = np.array([1.0, 8.0, 64.0])[:, None, None]
    A = np.array([16.0, 128.0])[None, :, None]
    sigma = np.array([0.0, 0.5, 2.0, 9.0])[None, None, :]
    out = speedup(n, A, sigma)
    assert out.shape == (3, 2, 4)
    assert out[2, 0, 0] == pytest.approx(16.0)
    assert out[1, 1, 3] == pytest.approx(speedup_high(8.0, 128.0, 9.0))


def test_max_useful_size_is_where_speedup_reaches_its_limit() -> None:
    for A, sigma in [(12.0, 0.0), (12.0, 0.4), (80.0, 1.0), (80.0, 2.5), (400.0, 11.0)]:
        m = float(max_useful_size(A, sigma))
        expected = 2 * A - 1 if sigma <= 1 else A + A * sigma - sigma
        assert m == pytest.approx(expected)
        assert speedup(m, A, sigma) == pytest.approx(A, rel=1e-12)
        if sigma > 0:
            assert speedup(m * 0.9, A, sigma) < A * (1 - 1e-9)


def test_processor_working_set_is_smallest_maximiser_of_s2_over_n() -> None:
    for _, drawn_A, sigma in random_instances(600):
        A = min(drawn_A, 400.0)  # keep the brute force short
        end = int(max_useful_size(A, sigma)) + 3
        s = [speedup_table(k, A, sigma) for k in range(1, end + 1)]
        assert processor_working_set(A, sigma) == pws_brute_force(s), (A, sigma)


def test_processor_working_set_vectorized() -> None:
    A = np.array([10.0, 10.0, 300.0, 300.0])
    sigma = np.array([0.0, 1.0, 0.3, 6.0])
    got = processor_working_set(A, sigma)
    assert got.shape == (4,)
    assert got[0] == 10  # σ = 0: S = n up to A, then flat, so S²/n peaks at A
    for k in range(4):
        assert got[k] == processor_working_set(A[k], sigma[k])


def test_shape_coordinate_round_trip_and_continuity() -> None:
    sigma = np.array([0.0, 0.3, 1.0, 1.5, 12.0, 1e3])
    assert_allclose(s_to_sigma(sigma_to_s(sigma)), sigma, rtol=1e-12)
    assert sigma_to_s(1.0) == pytest.approx(1.0)
    assert sigma_to_s(1.0 + 1e-9) == pytest.approx(1.0, abs=1e-8)
    assert float(sigma_to_s(np.inf)) == 2.0


def test_second_piece_at_min_s_one_never_wins_in_high_mode() -> None:
    """The evaluation trick in relative_runtime_s (see its docstring) against explicit masking."""
    n = np.exp(np.linspace(0, np.log(1e5), 400))[:, None]
    A = np.exp(np.linspace(0, np.log(1e4), 50))[None, :]
    for s in np.linspace(1.0, 1.999, 20):
        f = s / (2 * A)
        masked = np.maximum(f + (1 - f) / n, 1 / A)
        assert_allclose(relative_runtime_s(n, A, s), masked, rtol=1e-13)


def test_processor_working_set_for_vanishing_sigma() -> None:
    """2A/σ overflows for σ near the smallest doubles; the curve is linear up to A there."""
    for sigma in (1e-308, 5e-324, 1e-300):
        assert processor_working_set(50.0, sigma) == processor_working_set(50.0, 0.0) == 50


@pytest.mark.parametrize("sigma", [0.0, 0.4, 1.0, 1.0 + 1e-12, 3.7, 250.0, np.inf, np.nan, 5e-324])
@pytest.mark.parametrize("A", [1.0, 1.5, 37.25, 4096.0, 1e300])
def test_one_instance_evaluates_to_the_bit_of_the_array_path(A: float, sigma: float) -> None:
    """Float parameters take relative_runtime's scalar path (a decision's one curve); it must
    give the same bits as the general path, which 1-element parameter arrays take."""
    n = np.concatenate([np.arange(1.0, 3000.0), np.exp(np.linspace(0.0, 14.0, 200))])
    scalar = relative_runtime(n, A, sigma)
    general = relative_runtime(n, np.array([A]), np.array([sigma]))
    assert np.array_equal(scalar, general, equal_nan=True)
    assert np.array_equal(relative_runtime(n, np.float64(A), np.float64(sigma)), general, True)
