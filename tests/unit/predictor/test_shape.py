"""Shapes beyond the Downey model (shape.py): what is read from the runs and who speaks there."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

import predictor
from predictor.downey import relative_runtime
from predictor.shape import DOWNEY_ONLY, ShapeSettings, accelerating, step_slopes

RNG = np.random.default_rng(31)


def test_a_downey_curve_never_steepens_from_one_step_to_the_next() -> None:
    """The module's premise: the log-log slope of consecutive steps never grows, in either
    mode, across the pieces, for any spacing of the sizes."""
    for _ in range(2000):
        A = float(np.exp(RNG.uniform(0.0, np.log(5000.0))))
        sigma = float(RNG.uniform(0.0, 1.0) if RNG.random() < 0.5 else RNG.uniform(1.0, 20.0))
        n = np.unique(np.round(np.exp(RNG.uniform(0.0, np.log(20000.0), 6))))
        if n.size < 3:
            continue
        b = step_slopes(n, relative_runtime(n, A, sigma))
        assert np.all(np.diff(b) <= 1e-9), (A, sigma, n, b)


def test_acceleration_is_the_last_step_steeper_by_more_than_kappa() -> None:
    n = np.array([1.0, 2.0, 4.0])
    assert accelerating(n, np.array([180.8, 214.2, 107.5]), 0.2)  # slopes -0.24, 0.99
    assert not accelerating(n, np.array([100.0, 60.0, 33.0]), 0.2)  # 0.74, 0.86: +0.12
    assert accelerating(n, np.array([100.0, 60.0, 33.0]), 0.1)
    assert not accelerating(n[:2], np.array([100.0, 60.0]), 0.1)  # one step: nothing to compare
    assert not accelerating(n, np.array([180.8, 214.2, 107.5]), float("inf"))


def test_acceleration_must_rise_above_the_noise_of_closely_spaced_sizes() -> None:
    """Sizes 32, 36 and 38: a 2% wobble on the last runtime is a slope jump of 0.37, which
    2% runtime noise explains (its standard deviation there is 0.68)."""
    n = np.array([32.0, 36.0, 38.0])
    t = 100 * relative_runtime(n, 500.0, 0.3) * np.array([1.0, 1.0, 0.98])
    assert accelerating(n, t, 0.2, 0.0)
    assert not accelerating(n, t, 0.2, 0.02)
    # Doubling steps: a jump of 1.2 (two processes slower than one, then linear) is far
    # beyond it.
    assert accelerating(np.array([1.0, 2.0, 4.0]), np.array([180.8, 214.2, 107.5]), 0.2, 0.02)


def test_an_accelerating_prediction_continues_the_last_step_and_reckons_with_the_plateau() -> None:
    n, t = np.array([1.0, 2.0, 4.0]), np.array([180.844, 214.189, 107.536])
    obs = predictor.prepare(n, t)
    at = np.array([2, 3, 8, 32])
    p = predictor.predict_observations(obs, at)
    alone = predictor.predict_observations(obs, at, shapes=DOWNEY_ONLY)
    assert p.speaker == ("", "", "accelerating", "accelerating")
    # Inside the sizes ADEPT's prediction stands; beyond them the last step's Amdahl law.
    assert_allclose(p.runtime[:2], alone.runtime[:2])
    assert_allclose(p.runtime[2:], 0.883 + 426.6 / at[2:], rtol=1e-3)
    assert p.upper is not None
    assert alone.upper is not None
    assert np.all(p.upper[2:] >= alone.runtime[2:])  # the Downey plateau stays in reach
    assert alone.speaker == ("",) * 4


def test_exact_downey_curves_let_nobody_else_speak() -> None:
    for A, sigma in ((50.0, 0.5), (20.0, 3.0), (400.0, 1.0)):
        n = np.array([2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
        fit = predictor.fit(n, 100 * relative_runtime(n, A, sigma))
        assert fit.speaker is None
        assert not [p for p in fit.diagnostics.patterns if p.kind in ("accelerating", "rising")]


def test_a_rise_kept_in_the_fit_lets_sevcik_speak_at_every_size() -> None:
    """Three sizes, the last slower than the middle one (bfs1d_roadnet_ca's 1, 16 and 256):
    the rise stays in ADEPT's fit (too few sizes to leave it out), so Sevcik's
    T = a/n + b + c·n, which passes through all three, speaks everywhere."""
    n, t = np.array([1.0, 16.0, 256.0]), np.array([0.188491, 0.0605445, 0.116046])
    fit = predictor.fit(n, t)
    assert fit.speaker is not None
    assert (fit.speaker.reason, fit.speaker.fit.model, fit.speaker.start) == ("rising", "sevcik", 1)
    assert fit.speaker.sizes == (16, 256)
    p = predictor.predict_observations(predictor.prepare(n, t), [4, 64, 512])
    assert p.speaker == ("rising",) * 3
    assert_allclose(p.runtime, fit.speaker.runtime([4, 64, 512]))
    assert p.runtime[2] > t[2]  # still rising past the data


def test_a_rise_left_out_of_the_fit_speaks_from_the_minimum_on() -> None:
    """Enough sizes for ADEPT to leave the rising tail out: its fit of the sizes before the
    minimum stands there, Sevcik's from the minimum's size on."""
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0])
    t = np.array([0.188491, 0.124299, 0.100622, 0.076801, 0.0605445, 0.065521, 0.0715795,
                  0.0828745, 0.116046])  # fmt: skip
    fit = predictor.fit(n, t)
    assert fit.speaker is not None
    assert fit.speaker.reason == "rising"
    assert fit.speaker.start == 16.0
    curve = predictor.Curve.from_fit(fit)
    assert curve.runtime([512.0])[0] > 0.116046
    downey = dataclasses.replace(curve, speaker=None)
    assert_allclose(curve.runtime([4.0]), downey.runtime([4.0]))
    assert curve.runtime([64.0])[0] > downey.runtime([64.0])[0]


def test_the_rise_rule_can_be_turned_off() -> None:
    n, t = np.array([1.0, 16.0, 256.0]), np.array([0.188491, 0.0605445, 0.116046])
    assert predictor.fit(n, t, shapes=ShapeSettings(rise=False)).speaker is None


def test_kappa_must_be_positive() -> None:
    with pytest.raises(ValueError, match="accelerate"):
        ShapeSettings(accelerate=0.0)
