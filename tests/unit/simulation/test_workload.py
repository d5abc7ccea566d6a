"""Downey's workload model: seeded draws, the job's runtime at other sizes, its curve."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

import predictor
from policies.simulation import JobCurves, TraceJob, draw_downey
from policies.simulation.workload import model_curve
from predictor.downey import relative_runtime

from .helpers import trace


def test_draws_follow_the_model() -> None:
    d = draw_downey(20_000, 128, seed=7)
    assert d.A.min() >= 1.0
    assert d.A.max() <= 128.0
    assert d.sigma.min() >= 0.0
    assert d.sigma.max() <= 2.0
    # log A uniform on [0, ln 128]: mean ln(128)/2; σ uniform on [0, 2]: mean 1.
    assert np.log(d.A).mean() == pytest.approx(math.log(128) / 2, rel=0.02)
    assert d.sigma.mean() == pytest.approx(1.0, rel=0.02)


def test_draws_are_reproducible_and_prefix_stable() -> None:
    a, b = draw_downey(500, 64, seed=3), draw_downey(500, 64, seed=3)
    assert np.array_equal(a.A, b.A)
    assert np.array_equal(a.sigma, b.sigma)
    short = draw_downey(100, 64, seed=3)
    assert np.array_equal(short.A, a.A[:100])  # --jobs 100 gives the first jobs' curves
    assert np.array_equal(short.sigma, a.sigma[:100])
    other = draw_downey(500, 64, seed=4)
    assert not np.array_equal(other.A, a.A)


def test_draws_refuse_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_parallelism"):
        draw_downey(3, 0.5, seed=1)
    with pytest.raises(ValueError, match="count"):
        draw_downey(-1, 8, seed=1)


def test_runtime_is_the_trace_runtime_at_the_requested_size() -> None:
    jobs = trace((0, 8, 1000), (0, 1, 50))
    curves = JobCurves(jobs, draw_downey(2, 64, seed=1))
    assert curves.runtime(0, 8) == 1000.0
    assert curves.runtime(1, 1) == 50.0


def test_runtime_elsewhere_follows_the_curve() -> None:
    jobs = trace((0, 8, 1000))
    draws = draw_downey(1, 64, seed=1)
    curves = JobCurves(jobs, draws)
    A, sigma = float(draws.A[0]), float(draws.sigma[0])
    for n in (1, 4, 16, 64):
        expected = 1000.0 * relative_runtime(n, A, sigma) / relative_runtime(8, A, sigma)
        assert curves.runtime(0, n) == pytest.approx(float(expected))
    # Downey runtimes never grow with n.
    t = [curves.runtime(0, n) for n in range(1, 65)]
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(t))
    assert_allclose(curves.scales([8], [4]), [curves.runtime(0, 4) / 1000.0])


def test_policy_curve_is_the_exact_model() -> None:
    jobs = trace((0, 8, 1000))
    draws = draw_downey(1, 64, seed=2)
    curves = JobCurves(jobs, draws)
    c = curves.policy_curve(0, (4, 8, 16))
    assert c.observed_n == (4, 8, 16)
    assert not c.t1_known
    assert c.identified
    assert c.reliable
    assert c.fit_error == 0.0
    assert float(c.runtime(8)) == pytest.approx(1000.0)
    for n in (2, 5, 40):
        assert float(c.runtime(n)) == pytest.approx(curves.runtime(0, n))
    assert c == model_curve(float(draws.A[0]), float(draws.sigma[0]), c.t1, (16, 8, 4))
    assert curves.policy_curve(0, (1, 8)).t1_known


def test_stored_curves_replace_the_model_for_their_executable() -> None:
    stored = model_curve(10.0, 0.5, 3600.0, (1, 2, 4, 8))
    jobs = [
        TraceJob(1, 0.0, 100.0, 4, 100.0, executable=7),
        TraceJob(2, 0.0, 100.0, 4, 100.0, executable=8),
        TraceJob(3, 0.0, 100.0, 4, 100.0, executable=None),
    ]
    curves = JobCurves(jobs, draw_downey(3, 64, seed=1), {7: stored})
    assert [curves.from_store(k) for k in range(3)] == [True, False, False]
    assert curves.policy_curve(0, (2, 4, 8)) is stored
    ratio = float(stored.runtime(8) / stored.runtime(4))
    assert curves.runtime(0, 8) == pytest.approx(100.0 * ratio)
    assert curves.scales([4, 4, 4], [8, 4, 4])[0] == pytest.approx(ratio)


def test_a_fitted_curve_can_be_stored() -> None:
    """A store curve is any predictor.Curve, fitted ones included."""
    n = np.array([1, 2, 4, 8, 16])
    fit = predictor.fit(n, 100.0 * relative_runtime(n, 12.0, 0.4))
    curve = predictor.Curve.from_fit(fit)
    jobs = [TraceJob(1, 0.0, 50.0, 4, 60.0, executable=3)]
    curves = JobCurves(jobs, draw_downey(1, 8, seed=1), {3: curve})
    assert curves.runtime(0, 16) < 50.0


def test_trace_jobs_check_themselves() -> None:
    with pytest.raises(ValueError, match="runtime"):
        TraceJob(1, 0.0, 0.0, 1, 10.0)
    with pytest.raises(ValueError, match="nodes"):
        TraceJob(1, 0.0, 1.0, 0, 10.0)
    with pytest.raises(ValueError, match="limit"):
        TraceJob(1, 0.0, 1.0, 1, math.nan)
    with pytest.raises(ValueError, match="submit"):
        TraceJob(1, -1.0, 1.0, 1, 1.0)
