"""Prediction intervals (intervals.py): their shape; their coverage is measured in
tests/benchmarks/test_synthetic_accuracy.py."""

from __future__ import annotations

import numpy as np
import pytest

import predictor
from predictor.downey import relative_runtime
from predictor.intervals import SPREAD, interval, log_distance_outside

N = np.array([2.0, 4.0, 8.0, 16.0, 32.0])


@pytest.mark.parametrize("method", ["adept", "lm"])
def test_intervals_contain_the_prediction_and_widen_with_extrapolation(method: str) -> None:
    rng = np.random.default_rng(4)
    t = 100 * relative_runtime(N, 200.0, 0.5) * np.exp(rng.normal(0, 0.03, N.size))
    at = np.array([6, 24, 48, 96, 256])
    p = predictor.predict_observations(predictor.prepare(N, t), at, method=method)
    assert p.lower is not None
    assert p.upper is not None
    assert np.all(p.lower < p.runtime)
    assert np.all(p.runtime < p.upper)
    ratio = np.log(p.upper / p.runtime)
    assert np.all(np.diff(ratio[1:]) > 0)  # 24 → 256: ever further out
    assert p.level == 0.9


def test_interval_formula() -> None:
    """s = sqrt(a² + r² + (b·d)²), half-width z·s with z = 1.6449 at 90%."""
    a, b = SPREAD["adept"].floor, SPREAD["adept"].per_log_distance
    lo, hi = interval(np.array([10.0]), np.array([64.0]), np.array([0.03]), 2.0, 16.0, "adept")
    s = np.sqrt(a**2 + 0.03**2 + (b * np.log(4.0)) ** 2)
    assert hi[0] == pytest.approx(10.0 * np.exp(1.6448536 * s))
    assert lo[0] == pytest.approx(10.0 * np.exp(-1.6448536 * s))


def test_distance_outside_is_zero_inside_and_log_outside() -> None:
    d = log_distance_outside(np.array([1.0, 4.0, 8.0, 64.0]), 2.0, 16.0)
    assert d == pytest.approx([np.log(2.0), 0.0, 0.0, np.log(4.0)])


def test_a_level_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match="level must lie in"):
        interval(np.array([1.0]), np.array([2.0]), np.array([0.0]), 1.0, 2.0, "lm", level=1.0)


def test_an_unidentified_curve_spans_both_ends_of_its_valley() -> None:
    """Amdahl data (every size before the knee): the instance that ends the line right after
    the data and the one that continues it to the domain's end fit alike, so the interval
    reaches both predictions, far apart at 4x the largest size."""
    n = np.array([2.0, 4.0, 8.0, 16.0])
    t = 100 * relative_runtime(n, 5000.0, 0.2)  # knee at 5000: the data end long before it
    obs = predictor.prepare(n, t)
    at = np.array([64])
    shipped = predictor.predict_observations(obs, at)
    near = predictor.predict_observations(obs, at, settings=predictor.SearchSettings(valley="near"))
    assert not predictor.fit_observations(obs).identified
    assert near.runtime[0] > 1.5 * shipped.runtime[0]
    assert shipped.lower is not None
    assert shipped.upper is not None
    assert shipped.lower[0] <= shipped.runtime[0]
    assert shipped.upper[0] >= near.runtime[0]


def test_an_identified_curve_keeps_its_own_interval() -> None:
    """Exact data well past the knee: the plausible instances are the fit itself, so the
    interval is intervals.py's around it."""
    n = np.array([4.0, 8.0, 16.0, 32.0, 64.0, 128.0])
    t = 100 * relative_runtime(n, 20.0, 0.5)
    obs = predictor.prepare(n, t)
    at = np.array([48, 256])
    p = predictor.predict_observations(obs, at)
    assert predictor.fit_observations(obs).identified
    assert p.residual is not None
    assert p.lower is not None
    assert p.upper is not None
    lo, hi = interval(p.runtime, at.astype(float), p.residual, 4.0, 128.0, "adept")
    np.testing.assert_allclose(p.lower, lo, rtol=1e-12)
    np.testing.assert_allclose(p.upper, hi, rtol=1e-12)


def test_three_sizes_add_the_misfit_term_their_residuals_cannot_show() -> None:
    """A fit through as many sizes as parameters has zero residuals; its interval carries
    the misfit term m (s = sqrt(a² + r² + (b·d)² + m²)), and with a fourth size it does not."""
    spread = SPREAD["adept"]
    at, runtime, residual = np.array([8.0]), np.array([10.0]), np.array([0.0])
    _, hi3 = interval(runtime, at, residual, 2.0, 32.0, "adept", sizes=3)
    _, hi4 = interval(runtime, at, residual, 2.0, 32.0, "adept", sizes=4)
    assert hi3[0] == pytest.approx(10.0 * np.exp(1.6448536 * np.hypot(spread.floor, spread.misfit)))
    assert hi4[0] == pytest.approx(10.0 * np.exp(1.6448536 * spread.floor))
    assert spread.misfit > spread.floor


def test_a_three_size_prediction_and_the_stored_curve_carry_the_same_misfit_term() -> None:
    n = np.array([1.0, 4.0, 16.0])
    t = 100 * relative_runtime(n, 40.0, 0.5)
    p = predictor.predict_observations(predictor.prepare(n, t), [8])
    assert p.upper is not None
    # An exact Downey curve: residuals 0, the interval is the floor and the misfit term.
    half = np.log(p.upper[0] / p.runtime[0])
    spread = SPREAD["adept"]
    assert half >= 1.6448536 * np.hypot(spread.floor, spread.misfit) * (1 - 1e-6)
    # The time limit's interval (Curve.runtime_interval) is predict's: the limit and
    # `predict` agree on how unsure a 3-size curve is.
    curve = predictor.Curve.from_fit(predictor.fit(n, t))
    _, upper = curve.runtime_interval([8])
    assert np.log(upper[0] / curve.runtime([8])[0]) == pytest.approx(half, rel=1e-9)
    # With a fourth size the residuals carry the misfit and the term is not added.
    n4 = np.array([1.0, 4.0, 16.0, 32.0])
    curve4 = predictor.Curve.from_fit(predictor.fit(n4, 100 * relative_runtime(n4, 40.0, 0.5)))
    _, upper4 = curve4.runtime_interval([8])
    assert np.log(upper4[0] / curve4.runtime([8])[0]) < 1.6448536 * spread.misfit
