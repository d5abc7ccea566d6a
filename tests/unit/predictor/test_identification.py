""" "Identified" only where the data show the knee (adept.py, knee_noise).

Before the knee test, noisy observations that all lie before the knee were called identified
in 42% of cases at 5% noise (23% at 2%), each giving the policies a spurious cap on the size.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import predictor
from predictor.adept import amdahl_rejected, knee_p_value, knee_significant
from predictor.downey import FloatArray, relative_runtime

# numpy's stubs type rounded sizes as some float; the values are float64.
Sizes = NDArray[np.floating[Any]]


def hidden_knee_cases(noise: float, count: int, seed: int) -> list[tuple[Sizes, FloatArray]]:
    """4-5 sizes spread over [n_max/32, n_max] with n_max at most half the knee (A, σ ≤ 1)."""
    rng = np.random.default_rng(seed)
    out: list[tuple[Sizes, FloatArray]] = []
    while len(out) < count:
        A, sigma = float(np.exp(rng.uniform(np.log(50), np.log(2000)))), rng.uniform(0, 1)
        top = np.round(A * rng.uniform(0.25, 0.5))
        n = np.unique(np.round(np.geomspace(max(top / 32, 2), top, int(rng.integers(4, 6)))))
        t = 100 * relative_runtime(n, A, sigma) * np.exp(rng.normal(0, noise, n.size))
        out.append((n, t))
    return out


@pytest.mark.parametrize("noise", [0.02, 0.05])
def test_noise_before_the_knee_is_not_called_a_knee(noise: float) -> None:
    """Failed before: 6 of 40 (2%) and 15 of 40 (5%) such fits were called identified.

    200 cases: with the analysis keeping noisy points it no longer mistakes for anomalies
    (anomalies.py, "beyond noise"), 40 were too few to hold a 5% bound (3 of 40 on this seed,
    6 of 200 here, 1 of 200 on seed 6)."""
    cases = hidden_knee_cases(noise, 200, seed=5)
    identified = [predictor.fit(n, t).identified for n, t in cases]
    assert sum(identified) <= 10  # ≤ 5%


def test_a_knee_in_exact_data_is_still_identified() -> None:
    n = np.array([4.0, 16.0, 64.0, 256.0])
    f = predictor.fit(n, 100 * relative_runtime(n, 60.0, 0.7))
    assert f.identified
    assert f.max_useful_n in (119, 120)  # 2A - 1 = 119 up to the search's resolution


def test_a_clear_knee_in_noisy_data_is_identified() -> None:
    """Runtime flat past the knee: Amdahl's law misses it by far more than 5% noise."""
    n = np.array([2.0, 8.0, 32.0, 128.0, 512.0])
    rng = np.random.default_rng(2)
    t = 100 * relative_runtime(n, 40.0, 0.2) * np.exp(rng.normal(0, 0.02, n.size))
    assert predictor.fit(n, t).identified


def test_amdahl_rejection_is_a_chi_square_test_at_the_assumed_noise() -> None:
    # Three sizes, mean squared relative residual 0.05²: X = 3, χ²(1) 95% point 3.84.
    assert not amdahl_rejected(np.array([0.05**2]), 3, 0.05, 0.05)[0]
    assert amdahl_rejected(np.array([0.07**2]), 3, 0.05, 0.05)[0]  # X = 5.9
    assert not amdahl_rejected(np.array([1.0]), 2, 0.05, 0.05)[0]  # no degree of freedom
    assert amdahl_rejected(np.array([0.0]), 3, 0.0, 0.05)[0]  # the test off


def test_the_knee_f_test_p_value() -> None:
    # F = (RSS_a - RSS_d) / (RSS_d / dof): 5 sizes, T(1) free -> dof 2; F = 0.02 / 0.005 = 4.
    rss_a, rss_d = np.array([0.03]), np.array([0.01])
    p = knee_p_value(rss_a, rss_d, 5, False)[0]
    assert p == pytest.approx(1.0 - (4.0 / 6.0) ** 0.5)  # F(1, 2) survival: 1 - sqrt(F/(F+2))
    assert knee_significant(rss_a, rss_d, 5, False, 0.6)[0]
    assert not knee_significant(rss_a, rss_d, 5, False, p)[0]
    assert knee_p_value(rss_a, rss_d, 3, False)[0] == 1.0  # no residual degree of freedom
    assert knee_p_value(np.array([0.01]), rss_d, 5, False)[0] == 1.0  # no gain: F = 0
    assert knee_p_value(rss_a, np.array([0.0]), 5, False)[0] == 0.0  # exact knee: F = inf
