"""The fitting objectives: closed forms against brute force, and ADEPT's weights."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from predictor.objective import distance_weights, max_relative_error, minimax_relative_error, wssre

RNG = np.random.default_rng(7)


def test_profiled_scale_is_the_minimiser_over_the_scale() -> None:
    for _ in range(50):
        t = RNG.uniform(1, 100, 6)
        tau = t * RNG.uniform(0.5, 1.5, 6) / 37.0
        w = RNG.uniform(0.1, 1.0, 6)
        best, c = wssre(tau, t, w)
        scan = np.linspace(c * 0.9, c * 1.1, 20001)
        brute = (w * (1 - scan[:, None] * tau / t) ** 2).sum(axis=1)
        assert best <= brute.min() + 1e-15
        assert c == pytest.approx(scan[np.argmin(brute)], rel=1e-4)


def test_given_scale_is_used_as_is() -> None:
    t = np.array([10.0, 5.0, 2.5])
    tau = np.array([1.0, 0.5, 0.26])
    err, c = wssre(tau, t, np.ones(3) / 3, scale=10.0)
    assert c == 10.0
    assert err == pytest.approx((1 - 2.6 / 2.5) ** 2 / 3)


def test_minimax_error_closed_form_against_scan() -> None:
    for _ in range(50):
        t = RNG.uniform(1, 100, 5)
        tau = t * RNG.uniform(0.8, 1.2, 5)
        scan = np.linspace(0.5, 1.5, 200001)
        brute = np.abs(1 - scan[:, None] * tau / t).max(axis=1).min()
        assert minimax_relative_error(tau, t) == pytest.approx(brute, abs=2e-5)
    assert minimax_relative_error(tau, t, scale=1.0) == pytest.approx(np.abs(1 - tau / t).max())


def test_distance_weights_follow_the_paper() -> None:
    """W_i = q·max_j|n_t - n_j| - |n_t - n_i|, normalised to sum to one."""
    n = np.array([16.0, 25.0, 36.0, 81.0])
    w = distance_weights(n, np.array([49.0]), q=2.0)
    raw = 2 * 33 - np.abs(49 - n)
    assert_allclose(w[0], raw / raw.sum())
    assert w[0].sum() == pytest.approx(1.0)
    assert np.argmax(w[0]) == 2  # 36 is closest to 49


def test_uniform_weights_for_q_infinite_and_batching_over_targets() -> None:
    n = np.array([2.0, 4.0, 8.0])
    assert_allclose(distance_weights(n, np.array([3.0]), np.inf), [[1 / 3] * 3])
    w = distance_weights(n, np.array([2.0, 8.0, 100.0]), 2.0)
    assert w.shape == (3, 3)
    assert np.argmax(w[0]) == 0
    assert np.argmax(w[1]) == 2
    assert np.argmax(w[2]) == 2


def test_max_relative_error() -> None:
    assert max_relative_error([9.0, 22.0], [10.0, 20.0]) == pytest.approx(0.1)
