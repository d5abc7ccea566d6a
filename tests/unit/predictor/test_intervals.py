"""Prediction intervals (intervals.py): their shape and calibration constants; their coverage is
measured on the real curves by tests/benchmarks/test_predictor_real.py (which also chooses the
constants) and on the synthetic suite by tests/benchmarks/test_synthetic_accuracy.py."""

from __future__ import annotations

import numpy as np
import pytest

import predictor
from predictor import intervals
from predictor.downey import relative_runtime
from predictor.intervals import (
    CALIBRATION,
    SPREAD,
    half_width,
    interval,
    log_distance_outside,
    multiplier,
    spread,
)

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
    """s = sqrt(a² + r² + (b·d)²), half-width q·s with the calibration's q beyond the sizes of
    a fit on more than 3 sizes."""
    a, b = SPREAD["adept"].floor, SPREAD["adept"].per_log_distance
    lo, hi = interval(
        np.array([10.0]), np.array([64.0]), np.array([0.03]), 2.0, 16.0, "adept", sizes=5
    )
    s = np.sqrt(a**2 + 0.03**2 + (b * np.log(4.0)) ** 2)
    q = CALIBRATION["adept"].outside
    assert hi[0] == pytest.approx(10.0 * np.exp(q * s))
    assert lo[0] == pytest.approx(10.0 * np.exp(-q * s))


def test_each_class_takes_its_multiplier() -> None:
    q = CALIBRATION["adept"]
    at = np.array([1.0, 4.0, 16.0, 64.0])
    np.testing.assert_allclose(
        multiplier(at, 2.0, 16.0, "adept", sizes=3),
        [q.outside, q.inside_few, q.inside_few, q.outside],
    )
    np.testing.assert_allclose(
        multiplier(at, 2.0, 16.0, "adept", sizes=6),
        [q.outside, q.inside_many, q.inside_many, q.outside],
    )
    # Another level scales q by the ratio of normal quantiles; LM keeps the normal quantile.
    assert multiplier(at, 2.0, 16.0, "adept", 0.5, 6)[1] == pytest.approx(
        q.inside_many * 0.6744897501960817 / 1.6448536269514722
    )
    np.testing.assert_allclose(multiplier(at, 2.0, 16.0, "lm", sizes=6), 1.6448536269514722)


def test_an_alternative_widens_the_spread_by_its_log_distance() -> None:
    """Where another model speaks, the Downey curve's runtime is an alternative: D(n) is its
    log distance from the prediction, added in quadrature."""
    at, runtime, residual = np.array([64.0]), np.array([10.0]), np.array([0.02])
    plain = spread(at, residual, 2.0, 16.0, "adept", 6, runtime)
    wider = spread(at, residual, 2.0, 16.0, "adept", 6, runtime, np.array([[30.0]]))
    assert wider[0] == pytest.approx(np.hypot(plain[0], np.log(3.0)))


def test_distance_outside_is_zero_inside_and_log_outside() -> None:
    d = log_distance_outside(np.array([1.0, 4.0, 8.0, 64.0]), 2.0, 16.0)
    assert d == pytest.approx([np.log(2.0), 0.0, 0.0, np.log(4.0)])


def test_a_level_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match="level must lie in"):
        interval(np.array([1.0]), np.array([2.0]), np.array([0.0]), 1.0, 2.0, "lm", level=1.0)


def test_an_identified_curve_keeps_its_own_interval() -> None:
    """Exact data well past the knee, no other model speaking: the interval is intervals.py's
    around the prediction."""
    n = np.array([4.0, 8.0, 16.0, 32.0, 64.0, 128.0])
    t = 100 * relative_runtime(n, 20.0, 0.5)
    obs = predictor.prepare(n, t)
    at = np.array([48, 256])
    p = predictor.predict_observations(obs, at)
    assert predictor.fit_observations(obs).identified
    assert p.residual is not None
    assert p.lower is not None
    assert p.upper is not None
    lo, hi = interval(p.runtime, at.astype(float), p.residual, 4.0, 128.0, "adept", sizes=6)
    np.testing.assert_allclose(p.lower, lo, rtol=1e-12)
    np.testing.assert_allclose(p.upper, hi, rtol=1e-12)


def test_three_sizes_add_the_misfit_term_their_residuals_cannot_show() -> None:
    """A fit through as many sizes as parameters has zero residuals; its spread carries the
    misfit term m (s = sqrt(a² + r² + (b·d)² + m²)), and with a fourth size it does not."""
    constants = SPREAD["adept"]
    at, residual = np.array([8.0]), np.array([0.0])
    s3 = spread(at, residual, 2.0, 32.0, "adept", sizes=3)
    s4 = spread(at, residual, 2.0, 32.0, "adept", sizes=4)
    assert s3[0] == pytest.approx(np.hypot(constants.floor, constants.misfit))
    assert s4[0] == pytest.approx(constants.floor)
    assert constants.misfit > constants.floor


def test_a_prediction_and_the_stored_curve_carry_the_same_interval() -> None:
    """The time limit's interval (Curve.runtime_interval) is predict's: the limit and
    `predict` agree on how unsure a curve is, with 3 sizes (misfit term, q_in for few sizes)
    and with more."""
    for n in (np.array([1.0, 4.0, 16.0]), np.array([1.0, 4.0, 16.0, 32.0])):
        t = 100 * relative_runtime(n, 40.0, 0.5)
        p = predictor.predict_observations(predictor.prepare(n, t), [8])
        assert p.upper is not None
        half = np.log(p.upper[0] / p.runtime[0])
        q = CALIBRATION["adept"].inside_few if n.size == 3 else CALIBRATION["adept"].inside_many
        few = SPREAD["adept"].misfit if n.size == 3 else 0.0
        assert half >= q * np.hypot(SPREAD["adept"].floor, few) * (1 - 1e-6)
        curve = predictor.Curve.from_fit(predictor.fit(n, t))
        _, upper = curve.runtime_interval([8])
        assert np.log(upper[0] / curve.runtime([8])[0]) == pytest.approx(half, rel=1e-6)


def test_the_plausible_instances_widen_as_much_as_their_weight_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Amdahl data long before the knee: an unidentified fit whose plausible instances part
    beyond the data. `predict` and the stored curve weigh their distance by
    PLAUSIBLE_WEIGHT (chosen on the real curves): at 0 the spread is s(n) without them."""
    n = np.array([2.0, 4.0, 8.0, 16.0])
    t = 100 * relative_runtime(n, 5000.0, 0.2)
    obs = predictor.prepare(n, t)
    at = np.array([64])
    curve = predictor.Curve.from_fit(predictor.fit_observations(obs))
    assert not curve.identified
    monkeypatch.setattr(intervals, "PLAUSIBLE_WEIGHT", 0.0)
    p = predictor.predict_observations(obs, at)
    assert p.spread is not None
    assert p.residual is not None
    base = spread(at.astype(float), p.residual, 2.0, 16.0, "adept", 4)
    np.testing.assert_allclose(p.spread, base, rtol=1e-12)
    narrow = curve.runtime_interval(at.astype(float))
    monkeypatch.setattr(intervals, "PLAUSIBLE_WEIGHT", 1.0)
    wide = predictor.predict_observations(obs, at)
    assert wide.spread is not None
    assert wide.spread[0] > 2 * p.spread[0]
    assert curve.runtime_interval(at.astype(float))[1][0] > narrow[1][0]


def test_fewer_sizes_never_narrow_an_interval() -> None:
    """Repeated runs on 3 sizes can carry a residual of their own; the interval of such a fit
    is at least as wide as a fit on more sizes with the same residual would get, so dropping
    a size never narrows it (and never shortens a time limit)."""
    at = np.array([2.0, 4.0, 8.0, 64.0])
    for r in (0.0, 0.05, 0.125, 0.4):
        residual = np.full(at.size, r)
        few = half_width(at, residual, 2.0, 32.0, "adept", sizes=3)
        many = half_width(at, residual, 2.0, 32.0, "adept", sizes=4)
        assert np.all(few >= many - 1e-12)
    # Where residuals are 0 the few-sizes width is the misfit term's, wider than many's.
    zero = np.zeros(at.size)
    assert np.all(
        half_width(at, zero, 2.0, 32.0, "adept", sizes=3)[:3]
        > half_width(at, zero, 2.0, 32.0, "adept", sizes=4)[:3]
    )
