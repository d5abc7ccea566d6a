"""The mixed_sizes reliability problem: runs at one size that spread beyond run-to-run noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import predictor
from predictor.downey import relative_runtime
from predictor.observations import prepare, thin
from predictor.reliability import ReliabilitySettings, mixed_sizes

SCALING = Path(__file__).resolve().parents[2] / "data" / "scaling"
SIZES = np.array([1, 2, 4, 8, 16, 32])


def downey(n: NDArray[np.float64], A: float = 60.0, sigma: float = 0.5) -> NDArray[np.float64]:
    return 1000.0 * relative_runtime(n.astype(float), A, sigma)


def kinds(fit: predictor.Fit) -> list[str]:
    return [r.problem for r in fit.diagnostics.reliability]


def test_spread_counts_every_run_even_those_dropped_as_outliers() -> None:
    """A run of another problem size is what the outlier rule drops: the spread still sees it."""
    obs = prepare([4, 4, 4, 8, 16], [100.0, 101.0, 200.0, 60.0, 40.0])
    assert obs.dropped == ((4, 200.0),)
    assert obs.runtime[0] == pytest.approx(100.5)
    assert obs.spread is not None
    np.testing.assert_allclose(obs.spread, [2.0, 1.0, 1.0])


def test_thinning_keeps_the_spread_aligned_with_the_sizes() -> None:
    n = np.repeat(np.arange(1, 41), 2)
    t = np.where(np.arange(n.size) % 2 == 0, 1.0, 1.0 + n / 100.0) * 1000.0 / n
    obs = thin(prepare(n, t), 8)
    assert obs.spread is not None
    np.testing.assert_allclose(obs.spread, 1.0 + obs.n / 100.0)


def test_two_problem_sizes_under_one_key_are_flagged_with_the_size_tag_advice() -> None:
    rng = np.random.default_rng(3)
    n = np.repeat(SIZES, 4)
    big = np.tile([1.0, 2.0], n.size // 2)  # half the runs are a problem twice as large
    t = downey(n) * big * np.exp(rng.normal(0.0, 0.05, n.size))
    f = predictor.fit(n, t)
    assert "mixed_sizes" in kinds(f)
    [problem] = [r for r in f.diagnostics.reliability if r.problem == "mixed_sizes"]
    assert problem.suggest_n is None
    assert problem.detail["spread_ratio"] > 1.5
    assert int(problem.detail["spread_n"]) in SIZES
    assert "size=" in problem.action
    assert "--comment" in problem.action
    doc = problem.to_dict()
    assert doc["problem"] == "mixed_sizes"
    assert doc["spread_ratio"] == problem.detail["spread_ratio"]
    curve = predictor.Curve.from_fit(f)
    assert not curve.reliable
    again = predictor.Curve.from_dict(curve.to_dict())
    assert again.diagnostics.reliability == curve.diagnostics.reliability


def test_five_percent_noise_is_not_flagged() -> None:
    rng = np.random.default_rng(11)
    n = np.repeat(SIZES, 20)
    t = downey(n) * np.exp(rng.normal(0.0, 0.05, n.size))
    assert "mixed_sizes" not in kinds(predictor.fit(n, t))


def test_the_real_repeats_are_not_flagged() -> None:
    """gamer_fdm_wave_only: 7 sizes × 4 runs on a real machine (the data the limit was chosen
    from, so this checks the wiring, not the limit's quality)."""
    data = np.loadtxt(SCALING / "gamer_fdm_wave_only.csv", delimiter=",", skiprows=1)
    f = predictor.fit(data[:, 0], data[:, 1])
    assert "mixed_sizes" not in kinds(f)


def test_the_limit_is_a_strict_ratio_and_a_setting() -> None:
    n = np.array([4, 8])
    assert mixed_sizes(n, np.array([1.5, 1.0]), ReliabilitySettings()) is None
    found = mixed_sizes(n, np.array([1.2, 1.51]), ReliabilitySettings())
    assert found is not None
    assert found.detail == {"spread_n": 8.0, "spread_ratio": 1.51}
    assert mixed_sizes(n, np.array([1.2, 1.0]), ReliabilitySettings(mixed_ratio=1.1)) is not None
    assert mixed_sizes(n, None, ReliabilitySettings()) is None
    with pytest.raises(ValueError, match="mixed_ratio"):
        ReliabilitySettings(mixed_ratio=1.0)
