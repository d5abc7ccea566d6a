"""ADEPT's reliability judgment (Table 3): each problem, its action and the suggested run."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import ArrayLike, NDArray

import predictor
from predictor.downey import relative_runtime
from predictor.reliability import Instance, ReliabilitySettings, disagreement_size

N = np.array([16.0, 25.0, 36.0, 81.0])


def downey(n: ArrayLike, A: float, sigma: float) -> NDArray[np.float64]:
    return 5000 * relative_runtime(n, A, sigma)


def problems(fit: predictor.Fit) -> list[str]:
    return [r.problem for r in fit.diagnostics.reliability]


def test_a_well_placed_set_of_observations_is_reliable() -> None:
    n = np.array([4.0, 16.0, 64.0, 256.0])
    f = predictor.fit(n, downey(n, 60.0, 0.7))
    assert f.diagnostics.reliability == ()
    assert predictor.Curve.from_fit(f).reliable


@pytest.mark.parametrize(("A", "sigma"), [(320.0, 0.6), (105.0, 0.9)])
def test_linear_section_only_is_flagged_and_the_suggested_run_resolves_it(
    A: float, sigma: float
) -> None:
    """Table 3, row 1 (and ADEPT's Figure 9, middle and right): inputs before the knee leave A
    open; one run at the suggested size identifies the curve."""
    f = predictor.fit(N, downey(N, A, sigma))
    [problem] = f.diagnostics.reliability
    assert problem.problem == "first_piece_only"
    assert problem.suggest_n is not None
    assert problem.suggest_n > N[-1]
    assert f"{problem.suggest_n} nodes" in problem.action
    n2 = np.r_[N, problem.suggest_n]
    resolved = predictor.fit(n2, downey(n2, A, sigma))
    assert resolved.identified
    assert resolved.diagnostics.reliability == ()
    assert resolved.A == pytest.approx(A, rel=0.01)
    assert resolved.sigma == pytest.approx(sigma, abs=0.01)


def test_high_variance_data_that_reach_the_working_set_are_not_flagged() -> None:
    """A = 700, σ = 3 has its knee at 2797 nodes; once the runs reach the 932-node working set
    of the Amdahl part, every size worth running is known and nothing is reported."""
    f = predictor.fit(N, downey(N, 700.0, 3.0))
    [problem] = f.diagnostics.reliability
    n2 = np.r_[N, problem.suggest_n]
    after = predictor.fit(n2, downey(n2, 700.0, 3.0))
    assert not after.identified
    assert after.diagnostics.reliability == ()
    assert after.pws_n == pytest.approx(problem.suggest_n, abs=1)


def test_high_fitting_error_is_reported() -> None:
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    t = np.array([100.0, 40.0, 35.0, 12.0, 10.0])  # no Downey curve comes within 10%
    f = predictor.fit(n, t)
    high = [r for r in f.diagnostics.reliability if r.problem == "high_fit_error"]
    assert high
    assert high[0].suggest_n is None
    assert high[0].detail["fit_error"] == pytest.approx(f.fit_error)


@pytest.mark.slow
def test_runner_up_instances_are_found_and_resolved_by_the_suggested_run() -> None:
    """Table 3, row 3: an instance with a very different A fits nearly as well. Over a seeded
    sample of noisy four-point problems, every runner-up found is gone after one more run at
    the suggested size, taken from the true curve. The runner-up is judged on identified fits
    only; at 2% noise the knee test (adept.py, knee_noise) leaves few four-point fits
    identified, so it is off for the first fit: this test is about the runner-up mechanism."""
    old = predictor.SearchSettings(knee_noise=0.0)
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(150):
        A, sigma = rng.uniform(20, 400), rng.choice([rng.uniform(0, 1), rng.uniform(1, 6)])
        n = np.unique(np.round(np.exp(rng.uniform(np.log(2), np.log(2.5 * A), 4))))
        if n.size < 4:
            continue
        t = downey(n, A, sigma) * np.exp(rng.normal(0, 0.02, n.size))
        runner = [
            r
            for r in predictor.fit(n, t, settings=old).diagnostics.reliability
            if r.problem == "runner_up"
        ]
        if not runner:
            continue
        found += 1
        k = runner[0].suggest_n
        assert k is not None
        assert k > n[-1] or k < n[0]
        assert runner[0].detail["runner_up_A"] > 0
        # Judged as shipped: one of the six found is past a knee the data never reach
        # (6..477 nodes, knee ~2100), which the knee test no longer calls identified.
        after = predictor.fit(np.r_[n, k], np.r_[t, downey(np.array([k]), A, sigma)])
        assert "runner_up" not in problems(after)
    assert found >= 1


def test_disagreement_size_is_where_two_curves_differ_by_a_fifth() -> None:
    a = Instance(A=320.0, s=0.6, scale=1.0)
    b = Instance(A=700.0, s=1.2, scale=1.0)
    size, diff = disagreement_size(a, b, 16.0, 81.0, ReliabilitySettings())
    assert size is not None
    assert diff >= 0.2
    every = np.arange(82.0, 81 * 16)
    ta, tb = a.runtime(every), b.runtime(every)
    first = every[np.argmax(np.abs(ta - tb) / np.minimum(ta, tb) >= 0.2)]
    assert first <= size <= first * 1.03  # the search steps 1.4% at a time


def test_diagnostics_round_trip_through_the_curve() -> None:
    f = predictor.fit(N, downey(N, 320.0, 0.6))
    curve = predictor.Curve.from_fit(f)
    assert curve.diagnostics == f.diagnostics
    assert not curve.reliable
    assert predictor.Curve.from_dict(curve.to_dict()) == curve
