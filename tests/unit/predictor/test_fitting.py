"""The public API: fit/predict, units, batching, degenerate curves, failure as a status."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import predictor
from predictor.downey import relative_runtime
from predictor.fitting import TARGET_BATCH
from predictor.lm import fit_lm

N = np.array([2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
T = 300 * relative_runtime(N, 30.0, 0.6) * np.array([1.0, 1.02, 0.98, 1.01, 0.99, 1.0])


def test_fit_reports_the_model_and_its_sizes() -> None:
    f = predictor.fit(N, T)
    assert (f.model, f.method, f.status, f.mode) == ("downey", "adept", "ok", "low")
    assert f.identified
    assert not f.t1_known
    assert f.A == pytest.approx(30.0, rel=0.05)
    assert f.max_useful_n == int(np.ceil(2 * f.A - 1 - 1e-9))
    assert 1 <= f.pws_n <= f.max_useful_n
    assert f.fit_error == pytest.approx(np.max(np.abs(f.runtime(N) / T - 1)))
    assert f.envelope is not None
    assert f.envelope.delta > 0


@pytest.mark.parametrize("unit", [1e-9, 1.0, 1e9, 1e290])
def test_the_unit_of_runtime_does_not_matter(unit: float) -> None:
    base = predictor.fit(N, T)
    f = predictor.fit(N, T * unit)
    assert f.A == pytest.approx(base.A, rel=1e-9)
    assert f.sigma == pytest.approx(base.sigma, rel=1e-9, abs=1e-12)
    assert f.t1 == pytest.approx(base.t1 * unit, rel=1e-9)
    assert_allclose(
        predictor.predict(N, T * unit, [100, 200]),
        predictor.predict(N, T, [100, 200]) * unit,
        rtol=1e-9,
    )


def test_runtimes_too_small_for_a_double_are_refused() -> None:
    with pytest.raises(ValueError, match="runtime must be at least"):
        predictor.fit(N, np.full(N.size, 1e-320))


def test_serial_runtime_is_kept_when_observed() -> None:
    n = np.r_[1.0, N]
    t = np.r_[300.0, T]
    f = predictor.fit(n, t)
    assert f.t1_known
    assert f.t1 == 300.0


def test_no_speedup_at_all_is_one_node() -> None:
    f = predictor.fit([2, 4, 8], [1.0, 1.0, 1.0])
    assert f.A == 1.0
    assert f.identified
    assert f.max_useful_n == 1
    assert f.pws_n == 1
    assert_allclose(f.speedup([1, 64]), 1.0)


def test_unidentified_fit_has_no_maximum_useful_size() -> None:
    n = np.array([16.0, 25.0, 36.0, 81.0])
    f = predictor.fit(n, 5000 * relative_runtime(n, 700.0, 3.0))
    assert not f.identified
    assert f.max_useful_n is None
    assert f.pws_n == pytest.approx(1400 / 1.5 - 1, abs=1)  # 1/f - 1: Amdahl's own


def test_predict_in_batches_equals_one_call_per_size() -> None:
    at = np.arange(1, TARGET_BATCH + 40)
    together = predictor.predict_observations(predictor.prepare(N, T), at)
    assert together.runtime.shape == at.shape
    for k in (0, TARGET_BATCH - 1, TARGET_BATCH, at.size - 1):
        alone = predictor.predict(N, T, [at[k]])
        assert together.runtime[k] == pytest.approx(alone[0], rel=1e-12)
    assert_allclose(together.efficiency, together.speedup / at)


def test_lm_is_a_single_instance_for_every_target() -> None:
    p = predictor.predict_observations(predictor.prepare(N, T), [4, 40, 400], method="lm")
    assert np.unique(p.A).size == 1
    f = predictor.fit(N, T, method="lm")
    assert_allclose(p.runtime, f.runtime([4, 40, 400]))


def test_a_fit_that_does_not_converge_is_a_status() -> None:
    res = fit_lm(N, T, max_nfev=2)
    assert not res.converged
    assert res.message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "genetic"}, "method must be one of"),
        ({"at": []}, "non-empty"),
        ({"at": [0, 4]}, "at least 1"),
        ({"at": [2.5]}, "whole sizes"),
        ({"at": [np.nan]}, "whole sizes"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict[str, object], message: str) -> None:
    args = {"method": "adept", "at": [8]} | kwargs
    with pytest.raises(ValueError, match=message):
        predictor.predict(N, T, args["at"], method=str(args["method"]))  # type: ignore[arg-type]
