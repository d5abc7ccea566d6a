"""The fast paths of the ADEPT search compute exactly what the plain forms compute.

ADEPT's search takes argmins over instances whose WSSRE can tie exactly (the unidentified
valley), so a sum taken in another order can move the argmin and change a fit. The fast paths
are therefore held to bit-for-bit equality with the plain forms, and the search as a whole to
the fits and predictions recorded before them (data/search_reference.json: main's code of
2026-11-23 on every real curve, fitted whole and predicting from its first half).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import predictor
from predictor.adept import _first_copies
from predictor.anomalies import AnomalySettings
from predictor.envelope import Domain, derive_envelope
from predictor.grids import clip, geomspace, linspace
from predictor.objective import sum_leading, wssre, wssre_leading
from predictor.shape import DOWNEY_ONLY

RNG = np.random.default_rng(17)
HERE = Path(__file__).resolve().parent
SCALING = HERE.parents[1] / "data" / "scaling"
REFERENCE = json.loads((HERE / "data" / "search_reference.json").read_text())
MAINS_ANALYSIS = predictor.DiagnosisSettings(anomalies=AnomalySettings(noise=0.0))


@pytest.mark.parametrize("M", [1, 2, 5, 7, 8, 9, 15, 16, 17, 31, 32, 40, 129])
def test_sum_leading_equals_numpy_sum_over_the_last_axis_bit_for_bit(M: int) -> None:
    x = RNG.random((M, 300)) * RNG.lognormal(0, 3, (1, 300))
    assert np.array_equal(sum_leading(x), np.ascontiguousarray(x.T).sum(axis=-1))


@pytest.mark.parametrize("scale", [None, 1.7])
def test_wssre_leading_equals_wssre_bit_for_bit(scale: float | None) -> None:
    M, T, X = 6, 3, 50
    tau = RNG.uniform(0.01, 1.0, (T, X, M))
    t = RNG.uniform(0.01, 1.0, M)
    w = RNG.uniform(0.1, 1.0, (T, M))
    w /= w.sum(axis=1, keepdims=True)
    plain, c_plain = wssre(tau, t, w[:, None, :], scale)
    fast, c_fast = wssre_leading(np.moveaxis(tau, -1, 0), t, w.T[:, :, None], scale)
    assert np.array_equal(plain, fast)
    assert np.array_equal(c_plain, c_fast)


def test_contains_grid_equals_contains_on_every_grid_point() -> None:
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    t = predictor.downey.relative_runtime(n, 20.0, 1.5) * RNG.lognormal(0, 0.03, n.size)
    env, _, _ = derive_envelope(n, t, Domain())
    axis_A = np.exp(RNG.uniform(0, np.log(200.0), (4, 30)))
    axis_s = RNG.uniform(0, 2.0, (4, 25))
    grid = env.contains(axis_A[:, :, None], axis_s[:, None, :])
    assert grid.any()
    assert not grid.all()
    assert np.array_equal(env.contains_grid(axis_A, axis_s), grid)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_fits_and_predictions_are_the_recorded_ones(name: str) -> None:
    ref = REFERENCE[name]
    d = np.loadtxt(SCALING / name, delimiter=",", skiprows=1)
    fit = predictor.fit(d[:, 0], d[:, 1], diagnosis=MAINS_ANALYSIS)
    assert (fit.A, fit.sigma, fit.t1, fit.identified) == pytest.approx(
        (ref["A"], ref["sigma"], ref["t1"], ref["identified"]), rel=1e-9
    )
    obs = predictor.prepare(d[:, 0], d[:, 1])
    keep = np.isin(d[:, 0], obs.n[: max(3, len(obs) // 2)])
    runtime = predictor.predict(
        d[keep, 0], d[keep, 1], ref["at"], diagnosis=MAINS_ANALYSIS, shapes=DOWNEY_ONLY
    )
    np.testing.assert_allclose(runtime, ref["runtime"], rtol=1e-9)


@pytest.mark.parametrize("num", [1, 2, 3, 11, 17, 21, 128])
def test_linspace_equals_numpy_bit_for_bit(num: int) -> None:
    for start, stop in [(0.0, 1.0), (-1.0, 1.0), (np.log(3.7), np.log(4100.0)), (-0.03, 0.03)]:
        assert np.array_equal(linspace(start, stop, num), np.linspace(start, stop, num))
    assert np.array_equal(linspace(2.5, 2.5, num), np.linspace(2.5, 2.5, num))


@pytest.mark.parametrize("num", [2, 3, 17, 48])
def test_geomspace_equals_numpy_bit_for_bit(num: int) -> None:
    ends = np.exp(RNG.uniform(-3.0, 12.0, (200, 2)))
    for start, stop in [(1.0, 1e5), (2.5, 2.5), *ends.tolist()]:
        assert np.array_equal(geomspace(start, stop, num), np.geomspace(start, stop, num))


def test_clip_equals_numpy() -> None:
    x = RNG.normal(0, 3, 200)
    x[::17] = np.nan
    assert np.array_equal(clip(x, -1.0, 2.0), np.clip(x, -1.0, 2.0), equal_nan=True)


def test_a_repeated_branch_is_searched_once_as_its_first_copy() -> None:
    # local_minima repeats a grid's best pick (branch 0) when it found fewer minima.
    pick = np.array([[[5, 9, 5], [3, 3, 3]], [[7, 8, 2], [4, 4, 1]]])
    assert _first_copies(pick).tolist() == [[0, 1, 0, 3, 3, 3], [6, 7, 8, 9, 9, 11]]
