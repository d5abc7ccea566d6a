"""Closed-form Amdahl fit: exact recovery, agreement with a general solver, bounds."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import minimize

from predictor.amdahl import fit_amdahl
from predictor.downey import FloatArray

N = np.array([2.0, 4.0, 8.0, 16.0, 32.0])


def amdahl(n: FloatArray, f: float, c: float) -> FloatArray:
    return c * (f + (1 - f) / n)


def test_exact_data_is_recovered() -> None:
    t = amdahl(N, 0.03, 500.0)
    got = fit_amdahl(N, t, np.ones(5) / 5)
    assert got.f == pytest.approx(0.03, rel=1e-10)
    assert got.c == pytest.approx(500.0, rel=1e-10)
    assert got.max_error == pytest.approx(0.0, abs=1e-12)


def test_weighted_fit_matches_a_general_minimiser() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        t = amdahl(N, rng.uniform(0.001, 0.2), 100.0) * rng.uniform(0.9, 1.1, 5)
        w = rng.uniform(0.1, 1, 5)
        w /= w.sum()
        got = fit_amdahl(N, t, w)

        def objective(p: FloatArray, t: FloatArray = t, w: FloatArray = w) -> float:
            return float((w * (1 - amdahl(N, p[0], p[1]) / t) ** 2).sum())

        ref = minimize(
            objective,
            [0.05, t[0] * 2],
            method="Nelder-Mead",
            options={"xatol": 1e-12, "fatol": 1e-16, "maxiter": 20000},
        )
        assert got.wssre <= ref.fun * (1 + 1e-6) + 1e-15
        assert got.f == pytest.approx(ref.x[0], rel=1e-3, abs=1e-6)


def test_known_serial_runtime_is_kept() -> None:
    n = np.r_[1.0, N]
    t = amdahl(n, 0.05, 80.0) * np.r_[1.0, 1.02, 0.99, 1.0, 1.01, 0.98]
    got = fit_amdahl(n, t, np.ones(6) / 6, scale=80.0)
    assert got.c == pytest.approx(80.0)
    assert 0.0 < got.f < 0.1


def test_superlinear_data_is_clamped_to_perfect_scaling() -> None:
    t = 1000.0 / N * np.array([1.0, 0.9, 0.8, 0.7, 0.6])
    got = fit_amdahl(N, t, np.ones(5) / 5)
    assert got.f == 0.0
    assert got.c > 0


def test_runtimes_that_grow_are_clamped_to_no_speedup() -> None:
    t = np.array([10.0, 11.0, 12.0, 13.0, 14.0])
    got = fit_amdahl(N, t, np.ones(5) / 5)
    assert got.f == pytest.approx(1.0)


def test_broadcasts_over_weight_rows() -> None:
    t = amdahl(N, 0.02, 10.0)
    w = np.array([[1, 1, 1, 1, 1], [5, 4, 3, 2, 1]], dtype=float)
    got = fit_amdahl(N, t, w)
    assert got.f.shape == (2,)
    assert_allclose(got.f, 0.02, rtol=1e-9)
