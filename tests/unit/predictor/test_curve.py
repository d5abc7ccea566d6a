"""Curve: evaluation, both efficiencies, and the JSON-able round trip."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

import predictor
from predictor.downey import relative_runtime
from predictor.segments import segment_runtime

N = np.array([4.0, 8.0, 16.0, 32.0, 64.0])
T = 900 * relative_runtime(N, 40.0, 0.5)


def test_curve_evaluates_like_its_fit() -> None:
    fit = predictor.fit(N, T)
    curve = predictor.Curve.from_fit(fit)
    at = np.array([1, 4, 20, 100, 1000])
    assert_allclose(curve.runtime(at), fit.runtime(at))
    assert_allclose(curve.efficiency(at), fit.efficiency(at))
    assert curve.observed_n == (4, 8, 16, 32, 64)
    assert curve.runs == 5
    assert curve.reliable


def test_efficiency_against_the_smallest_observed_size() -> None:
    curve = predictor.Curve.from_fit(predictor.fit(N, T))
    assert curve.efficiency_vs_smallest(4)[()] == pytest.approx(1.0)
    e = curve.efficiency_vs_smallest(N)
    assert_allclose(e, 4 * T[0] / (N * T), rtol=0.02)  # near the data, it is the data's own ratio


@pytest.mark.parametrize(
    "fit",
    [
        predictor.fit(N, T),
        predictor.fit(
            [16, 25, 36, 81], 5000 * relative_runtime(np.array([16, 25, 36, 81]), 700, 3)
        ),
    ],
    ids=["identified", "unidentified"],
)
def test_round_trip_through_json(fit: predictor.Fit) -> None:
    diagnostics = predictor.Diagnostics(
        anomalies=(predictor.Anomaly(n=8, runtime=1.5, kind="point", deviation=2.0, weight=0.3),),
        patterns=(predictor.Pattern(kind="stepwise", phases=((4, 8), (16, 32, 64))),),
        reliability=(
            predictor.ReliabilityProblem(
                "runner_up", "run once at 128 nodes", 128, {"runner_up_A": 9.0}
            ),
        ),
    )
    curve = predictor.Curve.from_fit(fit, diagnostics)
    back = predictor.Curve.from_dict(json.loads(json.dumps(curve.to_dict())))
    assert back == curve
    assert not back.reliable


@pytest.mark.parametrize(
    "change",
    [
        {"format": 99},
        {"A": 0.5},
        {"t1": -1.0},
        {"sigma": float("nan")},
        {"observed_n": []},
        {"pws_n": None},
    ],
)
def test_malformed_documents_are_refused(change: dict[str, object]) -> None:
    doc = predictor.Curve.from_fit(predictor.fit(N, T)).to_dict() | change
    with pytest.raises(ValueError, match="curve"):
        predictor.Curve.from_dict(doc)


def test_runtime_interval_contains_the_runtime_and_widens_outside_the_data() -> None:
    rng = np.random.default_rng(8)
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    t = 100 * relative_runtime(n, 200.0, 0.5) * np.exp(rng.normal(0, 0.03, n.size))
    curve = predictor.Curve.from_fit(predictor.fit(n, t))
    assert curve.residual > 0.0
    at = np.array([8.0, 32.0, 64.0, 256.0])
    lower, upper = curve.runtime_interval(at)
    runtime = curve.runtime(at)
    assert np.all(lower < runtime)
    assert np.all(runtime < upper)
    assert np.all(np.diff(np.log(upper / runtime))[1:] > 0)  # wider further out
    # The residual travels with the stored curve, so the interval does too.
    back = predictor.Curve.from_dict(json.loads(json.dumps(curve.to_dict())))
    assert back.residual == curve.residual
    assert np.array_equal(back.runtime_interval(at)[1], upper)


def test_a_curve_stored_before_residuals_reads_with_residual_zero() -> None:
    doc = predictor.Curve.from_fit(predictor.fit(N, T)).to_dict()
    del doc["residual"]
    assert predictor.Curve.from_dict(doc).residual == 0.0


def test_an_unidentified_curve_keeps_its_plausible_instances() -> None:
    """Data long before the knee: the stored curve keeps the instances its data cannot tell
    apart (one ends right after the data, far slower at 4x the largest size than the
    representative); how much they widen the interval is intervals.PLAUSIBLE_WEIGHT, chosen
    on the real curves, and the round trip keeps the interval."""
    n = np.array([2.0, 4.0, 8.0, 16.0])
    t = 100 * relative_runtime(n, 5000.0, 0.2)
    fit = predictor.fit(n, t)
    near = predictor.fit(n, t, settings=predictor.SearchSettings(valley="near"))
    curve = predictor.Curve.from_fit(fit)
    assert not curve.identified
    assert curve.plausible
    assert all(not p.identified and p.sizes == fit.segments[-1].sizes for p in curve.plausible)
    at = np.array([64.0])
    assert near.runtime(at)[0] > 1.5 * curve.runtime(at)[0]
    lower, upper = curve.runtime_interval(at)
    assert lower[0] < curve.runtime(at)[0] < upper[0]
    back = predictor.Curve.from_dict(json.loads(json.dumps(curve.to_dict())))
    assert back == curve
    assert np.array_equal(back.runtime_interval(at)[1], upper)


# Runs that keep scaling after a slow first step (two processes slower than one, then
# linear): the project_hpc_dam_break_mpi curve's first three sizes.
ACCELERATING = (np.array([1.0, 2.0, 4.0]), np.array([180.844, 214.189, 107.536]))


def test_an_accelerating_curve_lets_its_last_step_speak_beyond_the_data() -> None:
    """Past the largest size the stored curve follows Amdahl's law through its last two runs
    (the last step scaled linearly: it keeps halving), and its interval reaches the Downey
    curve's plateau there, which the runs cannot rule out."""
    fit = predictor.fit(*ACCELERATING)
    curve = predictor.Curve.from_fit(fit)
    assert curve.speaker is not None
    assert curve.speaker.reason == "accelerating"
    assert [p.kind for p in curve.diagnostics.patterns] == ["accelerating"]
    at = np.array([8.0, 16.0])
    # Through (2, 214.189) and (4, 107.536): T = c1 + c2/n with c1 = 0.883, c2 = 426.6.
    assert_allclose(curve.runtime(at), 0.883 + 426.6 / at, rtol=1e-3)
    downey = dataclasses.replace(curve, speaker=None).runtime(at)
    assert np.all(downey > 1.5 * curve.runtime(at))
    lower, upper = curve.runtime_interval(at)
    assert np.all(upper >= downey)
    assert np.all(lower < curve.runtime(at))
    # Inside the observed sizes the Downey curve stands.
    assert_allclose(curve.runtime([2.0]), dataclasses.replace(curve, speaker=None).runtime([2.0]))
    back = predictor.Curve.from_dict(json.loads(json.dumps(curve.to_dict())))
    assert back == curve
    assert np.array_equal(back.runtime_interval(at)[1], upper)


def test_a_curve_stored_before_speakers_reads_without_one() -> None:
    """A format-1 document (stored before CURVE_FORMAT 2) is read, with no speaker, and its
    interval is computed with today's calibration."""
    doc = predictor.Curve.from_fit(predictor.fit(N, T)).to_dict()
    doc["format"] = 1
    del doc["speaker"]
    old = predictor.Curve.from_dict(doc)
    assert old.speaker is None
    lower, upper = old.runtime_interval([8.0, 128.0])
    assert np.all(lower < old.runtime([8.0, 128.0]))
    assert np.all(old.runtime([8.0, 128.0]) < upper)


@pytest.mark.parametrize(
    "speaker",
    [
        {"reason": "guess", "fit": {"model": "dowdy", "params": {"c1": 1, "c2": 2}}, "start": 4},
        {"reason": "rising", "fit": {"model": "sevcik", "params": {"a": 1}}, "start": 4},
        {"reason": "rising", "fit": {"model": "dowdy", "params": {"c1": 1, "c2": 2}}, "start": 0},
        {"reason": "rising", "fit": {"model": "dowdy", "params": {"c1": -5, "c2": 2}}, "start": 1},
    ],
)
def test_a_malformed_speaker_is_refused(speaker: dict[str, object]) -> None:
    doc = predictor.Curve.from_fit(predictor.fit(N, T)).to_dict()
    fit = dict(speaker["fit"])  # type: ignore[call-overload]
    doc["speaker"] = speaker | {"fit": fit | {"wssre": 0.0}}
    with pytest.raises(ValueError, match=r"speaker|model|curve"):
        predictor.Curve.from_dict(doc)


def test_an_identified_curve_has_no_plausible_instances() -> None:
    curve = predictor.Curve.from_fit(predictor.fit(N, T))
    assert curve.identified
    assert curve.plausible == ()
    assert curve.to_dict()["plausible"] == []


def test_a_curve_stored_before_plausible_instances_reads_with_none() -> None:
    doc = predictor.Curve.from_fit(predictor.fit(N, T)).to_dict()
    del doc["plausible"]
    assert predictor.Curve.from_dict(doc).plausible == ()


def test_a_plausible_instance_out_of_range_is_refused() -> None:
    doc = predictor.Curve.from_fit(predictor.fit(N, T)).to_dict()
    doc["plausible"] = [{"sizes": [4, 8], "A": 0.5, "sigma": 1.0, "t1": 1.0, "identified": False}]
    with pytest.raises(ValueError, match="plausible"):
        predictor.Curve.from_dict(doc)


def test_a_single_phase_curve_and_a_given_runtime_evaluate_to_the_same_bits() -> None:
    """Curve.runtime's one-phase path is segment_runtime's formula; runtime_interval reading
    the caller's runtimes (a decision's profile) gives the interval it computes itself."""
    rng = np.random.default_rng(8)
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    t = 100 * relative_runtime(n, 200.0, 0.5) * np.exp(rng.normal(0, 0.03, n.size))
    curve = predictor.Curve.from_fit(predictor.fit(n, t))
    at = np.arange(1.0, 600.0)
    assert not curve.segments
    assert np.array_equal(curve.runtime(at), segment_runtime(curve.phases, at))
    for some in (curve, *(predictor.Curve.from_fit(predictor.fit(n[:k], t[:k])) for k in (3, 4))):
        given = some.runtime_interval(at, runtime=some.runtime(at))
        assert all(
            np.array_equal(a, b) for a, b in zip(given, some.runtime_interval(at), strict=True)
        )
