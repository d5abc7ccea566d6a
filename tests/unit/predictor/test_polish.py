"""The Gauss-Newton polish after the pattern search (predictor/polish.py)."""

from __future__ import annotations

import numpy as np
import pytest

import predictor
from predictor.adept import FAST, SearchSettings, search
from predictor.downey import (
    FloatArray,
    first_piece_end,
    relative_runtime,
    relative_runtime_s,
    sigma_to_s,
)
from predictor.envelope import Domain
from predictor.objective import distance_weights
from predictor.polish import polish, tau_and_gradient

RNG = np.random.default_rng(5)
UNPOLISHED = SearchSettings(polish_steps=0)
# Exact Downey data ending just past the knee (the synthetic suite's "at / uneven / 0%" case,
# seed 2026, that the pattern search alone extrapolated with 0.07% error).
AT_KNEE = (np.array([2.0, 3.0, 4.0, 6.0, 8.0, 12.0]), 11.29, 0.0362)


def test_tau_and_gradient_are_the_model_and_its_derivatives() -> None:
    n = np.array([1.0, 2.0, 5.0, 17.0, 60.0, 300.0, 2000.0])
    A = np.exp(RNG.uniform(0.0, 6.0, 200))
    s = RNG.uniform(0.0, 1.99, 200)
    tau, d_log_A, d_s = tau_and_gradient(n, A, s)
    np.testing.assert_allclose(tau, relative_runtime_s(n, A[:, None], s[:, None]), rtol=1e-14)
    h = 1e-6

    def at(a: FloatArray, sv: FloatArray) -> FloatArray:
        return relative_runtime_s(n, a[:, None], sv[:, None])

    numeric_A = (at(A * np.exp(h), s) - at(A * np.exp(-h), s)) / (2 * h)
    numeric_s = (at(A, s + h) - at(A, s - h)) / (2 * h)
    # Central differences straddle a piece boundary only within h of it: skip those entries.
    smooth = np.abs(numeric_A - d_log_A) < 1e-3
    assert smooth.mean() > 0.95
    np.testing.assert_allclose(d_log_A[smooth], numeric_A[smooth], atol=1e-8)
    smooth = np.abs(numeric_s - d_s) < 1e-3
    assert smooth.mean() > 0.95
    np.testing.assert_allclose(d_s[smooth], numeric_s[smooth], atol=1e-8)


def test_exact_data_at_the_knee_extrapolate_exactly() -> None:
    n, A, sigma = AT_KNEE
    t = 100.0 * relative_runtime(n, A, sigma)
    at = np.array([18.0, 24.0, 36.0, 48.0])
    truth = 100.0 * relative_runtime(at, A, sigma)
    rough = np.abs(predictor.predict(n, t, at, settings=UNPOLISHED) / truth - 1.0)
    sharp = np.abs(predictor.predict(n, t, at) / truth - 1.0)
    # The pattern search alone leaves 4e-4; one step takes 3 digits off, a second the rest.
    assert rough.max() > 1e-4
    assert sharp.max() < 1e-6
    polished_twice = SearchSettings(polish_steps=2)
    assert np.abs(predictor.predict(n, t, at, settings=polished_twice) / truth - 1.0).max() < 1e-9


@pytest.mark.parametrize("noise", [0.0, 0.02, 0.05])
def test_the_polish_never_raises_the_error_nor_moves_a_valley_instance(noise: float) -> None:
    domain = Domain()
    for _ in range(20):
        A, sigma = float(np.exp(RNG.uniform(np.log(5), np.log(500)))), RNG.uniform(0.0, 4.0)
        n = np.unique(np.round(np.geomspace(2, RNG.uniform(0.3, 3.0) * A, RNG.integers(3, 7))))
        t = relative_runtime(n, A, sigma) * np.exp(RNG.normal(0.0, noise, n.size))
        targets = np.array([2.0 * n[-1], 4.0 * n[-1]])
        found = search(n, t, targets, UNPOLISHED, domain)
        w = distance_weights(n, targets, FAST.q)
        before = (found.wssre, found.A, found.s, found.scale)
        # resolve_valley / parsimony replaced some of these; polish whatever came out.
        err, A_p, s_p, _ = polish(n, t, w, before, found.envelope, domain, None, 2)
        assert np.all(err <= found.wssre)
        in_valley = first_piece_end(found.A, found.s) >= n[-1] * (1 - 1e-9)
        assert np.array_equal(A_p[in_valley], found.A[in_valley])
        assert np.array_equal(s_p[in_valley], found.s[in_valley])
        moved = (A_p != found.A) | (s_p != found.s)
        assert np.all(first_piece_end(A_p[moved], s_p[moved]) < n[-1])
        assert np.all(found.envelope.contains(A_p, s_p))


def test_the_polish_is_off_with_zero_steps() -> None:
    n, A, sigma = AT_KNEE
    t = relative_runtime(n, A, sigma)
    w = distance_weights(n, np.array([24.0]), FAST.q)
    found = search(n, t, np.array([24.0]), UNPOLISHED)
    best = (found.wssre, found.A, found.s, found.scale)
    assert polish(n, t, w, best, found.envelope, Domain(), None, 0) is best
    assert float(sigma_to_s(sigma)) != pytest.approx(float(found.s[0]), rel=1e-6)
