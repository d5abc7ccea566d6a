"""predictor.sizes: a problem size never run, borrowed from its siblings, on exact data.

Two exact data sets, each from one of the papers' equations (no noise):

* Kishimoto and Ichikawa's N-T and P-T models: T(N, P) = k4·P·g(N) + k5·g(N)/P + k6 with a
  cubic g (eqs. 1-2), sizes N = 1000 … 5000, P = 1 … 64;
* the Downey family per size (thesis ch. 3): A(N) = 8·(N/1000)^0.5, σ = 0.5,
  T(1) = 10 s·(N/1000)^1.2, sizes N = 1000 … 64000, n = 1 … 64.

The bar: a prediction at an unseen problem size within 10%.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from predictor.downey import FloatArray, relative_runtime
from predictor.models.sized import fit_nt_pt
from predictor.sizes import borrow_curve, fit_downey_interp, fit_sizes

P = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)


def kishimoto(N: FloatArray, Pv: FloatArray) -> FloatArray:
    g = 2e-9 * N**3 + 1e-5 * N**2 + 0.01 * N + 5.0  # seconds on the base configuration
    out: FloatArray = 1e-4 * Pv * g + 1.0 * g / Pv + 0.5
    return out


def downey(N: FloatArray, n: FloatArray) -> FloatArray:
    A = 8.0 * (N / 1000.0) ** 0.5
    return 10.0 * (N / 1000.0) ** 1.2 * relative_runtime(n, A, 0.5)


def grid(sizes: list[float], truth: object) -> tuple[FloatArray, FloatArray, FloatArray]:
    N, n = np.meshgrid(np.asarray(sizes, float), P, indexing="ij")
    return N.ravel(), n.ravel(), truth(N.ravel(), n.ravel())  # type: ignore[operator]


def test_the_joint_nt_pt_fit_recovers_the_papers_model() -> None:
    N, n, t = grid([1000, 2000, 3000, 4000, 5000], kishimoto)
    model = fit_nt_pt(N, n, t)
    assert_allclose(model.runtime(N, n), t, rtol=0.02)


def test_nt_pt_predicts_an_unseen_size_within_10_percent() -> None:
    N, n, t = grid([1000, 2000, 4000, 5000], kishimoto)
    model = fit_nt_pt(N, n, t)
    truth = kishimoto(np.full(P.shape, 3000.0), P)
    assert np.max(np.abs(model.runtime(3000.0, P) / truth - 1.0)) < 0.10


def test_downey_interpolation_predicts_an_unseen_size_within_10_percent() -> None:
    N, n, t = grid([1000, 4000, 16000, 64000], downey)
    model = fit_downey_interp(N, n, t)
    truth = downey(np.full(P.shape, 8000.0), P)
    assert np.max(np.abs(model.runtime(8000.0, P) / truth - 1.0)) < 0.10


@pytest.mark.parametrize(
    ("sizes", "unseen", "truth"),
    [
        ([1000.0, 2000.0, 4000.0, 5000.0], 3000.0, kishimoto),
        ([1000.0, 4000.0, 16000.0, 64000.0], 8000.0, downey),
    ],
)
def test_the_chosen_model_predicts_an_unseen_size_within_10_percent(
    sizes: list[float], unseen: float, truth: object
) -> None:
    N, n, t = grid(sizes, truth)
    fits = fit_sizes(N, n, t, target=unseen)
    assert fits.sizes == tuple(sizes)
    scores = [v for v in fits.loso_error.values() if v is not None]
    assert fits.loso_error[fits.method] == min(scores)  # chosen by leave-one-size-out
    expected = truth(np.full(P.shape, unseen), P)  # type: ignore[operator]
    assert np.max(np.abs(fits.runtime(unseen, P) / expected - 1.0)) < 0.10
    curve = borrow_curve(fits, unseen, P)
    assert np.max(np.abs(curve.runtime(P) / expected - 1.0)) < 0.10
    assert not curve.reliable  # a borrowed curve never shortens a time limit
    assert "borrowed from problem sizes" in curve.diagnostics.reliability[-1].problem


def test_each_model_wins_on_its_own_family() -> None:
    N, n, t = grid([1000, 2000, 4000, 5000], kishimoto)
    assert fit_sizes(N, n, t, target=3000).method == "nt_pt"
    N, n, t = grid([1000, 4000, 16000, 64000], downey)
    assert fit_sizes(N, n, t, target=8000).method == "downey_interp"


def test_two_sizes_cannot_be_cross_validated_and_use_the_downey_family() -> None:
    N, n, t = grid([1000, 4000], downey)
    fits = fit_sizes(N, n, t)
    assert fits.method == "downey_interp"
    assert fits.loso_error["downey_interp"] is None


@pytest.mark.parametrize(
    ("size", "n", "runtime", "match"),
    [
        ([1.0, 1.0], [1.0, 2.0], [2.0, 1.0], "two or more problem sizes"),
        ([1.0, 2.0], [1.0, 2.0], [2.0, -1.0], "runtime must be finite"),
        ([1.0, np.nan], [1.0, 2.0], [2.0, 1.0], "size must be finite"),
        ([1.0, 2.0], [1.0], [2.0, 1.0], "same length"),
    ],
)
def test_bad_input_is_refused(
    size: list[float], n: list[float], runtime: list[float], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        fit_sizes(size, n, runtime)


def test_with_two_sizes_and_a_target_only_the_nearest_size_can_be_scored() -> None:
    N, n, t = grid([1000, 4000], downey)
    fits = fit_sizes(N, n, t, target=2000.0)
    assert fits.method == "nearest_scaled"
    assert [k for k, v in fits.loso_error.items() if v is not None] == ["nearest_scaled"]
