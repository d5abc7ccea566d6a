"""The gate for curves of heterogeneous runs (predictor/heterogeneous.py): judged by the shape's
misfit against the runs' noise, not by the raw fit error; the time limit keeps the noise."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from policies import DEFAULTS, ClusterState, Request, decide
from policies.decide import unusable_because
from policies.profile import RuntimeProfile
from policies.time_limit import time_limit
from predictor import Curve
from predictor.covariate import Covariate
from predictor.diagnostics import Diagnostics
from predictor.downey import relative_runtime
from predictor.heterogeneous import fit_heterogeneous, misfit_problem

from .curves import make_curve

LIGHT = ClusterState(idle_nodes=64, total_nodes=64)
NOISY = Covariate(
    beta=0.9, reference=3600.0, noise=0.4, noise_df=60, misfit=0.03, lof_p=0.5, identifying=60
)


def heterogeneous(fit_error: float, covariate: Covariate | None) -> Curve:
    curve = make_curve(12.0, 0.5, t1=1000.0, observed=(2, 4, 8, 16, 32, 64))
    return replace(curve, fit_error=fit_error, residual=0.4, covariate=covariate)


def test_a_noisy_curve_whose_shape_passes_is_usable_despite_its_fit_error() -> None:
    curve = heterogeneous(0.6, NOISY)
    assert unusable_because(curve, DEFAULTS) == ""
    # Without a noise estimate the old gate holds.
    blind = heterogeneous(0.6, replace(NOISY, noise_df=0))
    assert "max_fit_error" in unusable_because(blind, DEFAULTS)
    # Nor when no run ran on another size than its limit was written for.
    rigid = heterogeneous(0.6, replace(NOISY, identifying=0))
    assert "max_fit_error" in unusable_because(rigid, DEFAULTS)
    plain = heterogeneous(0.6, None)
    assert "max_fit_error" in unusable_because(plain, DEFAULTS)


def test_a_shape_the_misfit_test_rejects_is_unusable() -> None:
    rejected = replace(NOISY, lof_p=0.001)
    curve = replace(
        heterogeneous(0.6, rejected),
        diagnostics=Diagnostics(reliability=(misfit_problem(rejected),)),
    )
    assert "shape_misfit" in unusable_because(curve, DEFAULTS)
    decision = decide(Request(4, 64, time_limit_min=60), curve, LIGHT)
    assert decision.rule == "fallback"
    # Not sized: the job keeps its minimum and limit; only its range's top may be cut.
    assert (decision.nodes, decision.time_limit_min) == (4, None)


def test_the_job_is_sized_with_its_own_limit_and_the_limit_keeps_the_noise() -> None:
    """Runs of one code on inputs whose run time follows the users' limits (β = 1, 40% noise):
    the curve sizes the job; its limit for the chosen size is never below the user's limit
    times the shape's ratio widened by the noise's interval."""
    rng = np.random.default_rng(11)
    n = rng.choice(np.array([4, 8, 16, 32, 64]), 120)
    limit = np.exp(rng.normal(np.log(7200.0), 1.0, n.size))
    t = 0.3 * limit * relative_runtime(n.astype(float), 16.0, 0.5)
    t *= np.exp(rng.normal(0.0, 0.4, n.size))
    curve = fit_heterogeneous(n, t, limit)
    assert curve is not None
    assert curve.covariate is not None
    assert curve.fit_error > DEFAULTS.max_fit_error or curve.residual > 0.3
    request = Request(4, 64, time_limit_min=120)
    decision = decide(request, curve, LIGHT)
    assert decision.nodes is not None
    assert decision.rule != "fallback"
    mine = curve.for_limit(7200.0)
    profile = RuntimeProfile.of(mine, 4, 64, (4, 64))
    limit_for = time_limit(request, profile, decision.nodes, LIGHT, DEFAULTS)
    shape_ratio = float(mine.runtime(decision.nodes) / mine.runtime(4))
    # The noise (40%) alone puts the ratio's interval a factor exp(2·q·0.4) > 2 wide.
    assert limit_for.minutes is None or limit_for.minutes >= min(120, 2.0 * 120 * shape_ratio)


def test_a_noisy_heterogeneous_curve_sizes_but_leaves_the_users_limit() -> None:
    """Noise above max_fit_error: the user's limit stands; a tight one may shorten it."""
    request = Request(4, 64, time_limit_min=120)
    for noise, shortened in ((0.4, False), (0.03, True)):
        curve = replace(heterogeneous(0.6, replace(NOISY, noise=noise)), residual=noise)
        profile = RuntimeProfile.of(curve, 4, 64, (4, 64))
        got = time_limit(request, profile, 32, LIGHT, DEFAULTS)
        assert (got.minutes is not None and got.minutes < 120) is shortened, got.reason
        if not shortened:
            assert "scatter by 40%" in got.reason
