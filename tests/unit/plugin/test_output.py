"""plugin.cli.render: the JSON documents' keys and types, number formatting, text rendering."""

from __future__ import annotations

import dataclasses
import io
import json
import math

import numpy as np
import pytest
from rich.console import Console

import predictor
from plugin.cli.render import (
    diagnostics,
    finite,
    fit_document,
    fit_sentences,
    predictions_document,
    render_fit,
    render_predictions,
    to_json,
)
from plugin.formats.observations_csv import load_observations, read_observations
from plugin.report.numbers import format_number, format_percent, format_runtime

from .conftest import LU_CSV

CONTRACT_KEYS = [
    "model", "method", "A", "sigma", "mode", "t1", "t1_known", "fit_error",
    "max_useful_n", "pws_n", "anomalies", "patterns", "reliability",
]  # fmt: skip
EXTRA_KEYS = ["status", "message", "identified", "n_observations", "runs", "dropped", "delta"]


@pytest.fixture(scope="module")
def lu_obs() -> predictor.Observations:
    return load_observations(read_observations(LU_CSV))


@pytest.fixture(scope="module")
def lu_fit(lu_obs: predictor.Observations) -> predictor.Fit:
    return predictor.fit_observations(lu_obs, method="adept")


def amdahl_fit() -> predictor.Fit:
    """Pure Amdahl data on 1..8 nodes: ADEPT cannot tell A from σ (identified is False)."""
    n = np.array([1, 2, 4, 8], dtype=float)
    result = predictor.fit(n, 100.0 * (0.05 + 0.95 / n), method="adept")
    assert not result.identified
    return result


def test_fit_document_keys_in_contract_order(lu_fit: predictor.Fit) -> None:
    doc = fit_document(lu_fit)
    assert list(doc) == CONTRACT_KEYS + EXTRA_KEYS


def test_fit_document_values(lu_fit: predictor.Fit) -> None:
    doc = fit_document(lu_fit)
    assert doc["model"] == "downey"
    assert doc["method"] == "adept"
    assert doc["A"] == lu_fit.A
    assert doc["sigma"] == lu_fit.sigma
    assert doc["mode"] == lu_fit.mode
    assert doc["t1_known"] is False
    assert doc["max_useful_n"] == lu_fit.max_useful_n
    assert doc["pws_n"] == lu_fit.pws_n
    assert doc["n_observations"] == 6
    assert doc["runs"] == 6
    assert doc["dropped"] == []
    assert lu_fit.envelope is not None
    assert doc["delta"] == lu_fit.envelope.delta


def test_a_clean_fit_has_empty_diagnostic_lists(lu_fit: predictor.Fit) -> None:
    # LU's runs are regular and past the knee: nothing to flag, but every key is there.
    assert diagnostics(lu_fit) == {"anomalies": [], "patterns": [], "reliability": []}


def test_lm_fit_has_no_delta(lu_obs: predictor.Observations) -> None:
    doc = fit_document(predictor.fit_observations(lu_obs, method="lm"))
    assert doc["method"] == "lm"
    assert doc["delta"] is None


def test_dropped_runs_are_listed() -> None:
    n = [2, 2, 2, 2, 4, 4, 8]
    t = [10.0, 10.1, 9.9, 30.0, 5.2, 5.1, 2.8]
    doc = fit_document(predictor.fit(n, t))
    assert doc["dropped"] == [{"n": 2, "runtime": 30.0}]
    assert doc["runs"] == 6


def test_non_finite_values_become_null(lu_fit: predictor.Fit) -> None:
    broken = dataclasses.replace(lu_fit, A=math.nan, t1=math.inf, fit_error=-math.inf)
    doc = fit_document(broken)
    assert doc["A"] is None
    assert doc["t1"] is None
    assert doc["fit_error"] is None
    assert doc["max_useful_n"] is None
    assert json.loads(to_json(doc))["A"] is None


def test_finite() -> None:
    assert finite(1.5) == 1.5
    assert finite(np.float64(2.0)) == 2.0
    assert isinstance(finite(np.float64(2.0)), float)
    assert finite(math.nan) is None
    assert finite(math.inf) is None


def test_to_json_refuses_nan_rather_than_emit_invalid_json() -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        to_json({"x": math.nan})


def test_predictions_document_in_order_with_repeats(lu_obs: predictor.Observations) -> None:
    preds = predictor.predict_observations(lu_obs, at=[64, 16, 64], method="lm")
    doc = predictions_document(preds)
    assert list(doc) == ["predictions"]
    rows = doc["predictions"]
    assert [row["n"] for row in rows] == [64, 16, 64]
    assert all(list(row) == ["n", "runtime", "speedup", "efficiency", "interval"] for row in rows)
    assert all(isinstance(row["n"], int) for row in rows)
    assert rows[0] == rows[2]
    assert rows[1]["efficiency"] == pytest.approx(rows[1]["speedup"] / 16)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (24.250897, "24.25"),
        (0.0765229, "0.07652"),
        (0.97826, "0.9783"),
        (7910.0, "7910"),
        (12345.6, "12350"),
        (1.0, "1.000"),
        (0.09999999, "0.1000"),
        (9.99996, "10.00"),
        (999999.7, "1.000e+06"),
        (0.0, "0"),
        (-0.00512, "-0.005120"),
        (1.23456e-5, "1.235e-05"),
        (2.5e7, "2.500e+07"),
        (math.nan, "n/a"),
        (math.inf, "n/a"),
    ],
)
def test_format_number(value: float, expected: str) -> None:
    assert format_number(value) == expected


def test_format_runtime_and_percent() -> None:
    assert format_runtime(0.0765229) == "0.07652 s"
    assert format_percent(0.021219) == "2.1%"
    assert format_percent(0.7996, 3) == "80.0%"
    assert format_percent(0.0123, signed=True) == "+1.2%"
    assert format_percent(-0.0051, signed=True) == "-0.51%"
    assert format_percent(math.nan) == "n/a"


def test_fit_sentences_for_the_lu_file(lu_fit: predictor.Fit) -> None:
    sentences = fit_sentences(lu_fit)
    assert sentences[0] == (
        f"Average parallelism A = {format_number(lu_fit.A)}, "
        f"variance σ = {format_number(lu_fit.sigma)} (low-variance mode)."
    )
    assert sentences[1] == (
        f"Runs scale usefully up to {lu_fit.max_useful_n} nodes; "
        f"the processor working set is {lu_fit.pws_n} nodes."
    )
    assert sentences[2] == (
        f"Largest fitting error {format_percent(lu_fit.fit_error)} at the observed sizes."
    )
    assert sentences[3] == (
        f"T(1) was not observed; it is estimated at {format_runtime(lu_fit.t1)}."
    )
    assert len(sentences) == 4


def test_fit_sentences_when_not_identified_and_t1_observed() -> None:
    result = amdahl_fit()
    sentences = fit_sentences(result)
    assert f"T(1) was observed: {format_runtime(100.0)}." in sentences
    [problem] = result.diagnostics.reliability
    assert problem.problem == "first_piece_only"
    # The reliability judgment says it, with the run to make; no second sentence repeats it.
    assert sentences[-1] == problem.action
    assert f"run once at {problem.suggest_n} nodes" in sentences[-1]
    assert not any("only show the first (Amdahl) part" in s for s in sentences)


def test_fit_sentences_when_the_data_already_reach_the_working_set() -> None:
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    result = predictor.fit(n, 100.0 * (0.05 + 0.95 / n))  # Amdahl, f = 0.05: working set 19
    assert not result.identified
    assert result.diagnostics.reliability == ()
    assert fit_sentences(result)[-1] == (
        "The observations only show the first (Amdahl) part of the curve: A and σ are not "
        "determined separately; predictions past 64 nodes are an extrapolation."
    )


def test_no_speedup_is_said_plainly(lu_fit: predictor.Fit) -> None:
    flat = dataclasses.replace(lu_fit, A=1.0, sigma=0.5)
    assert fit_sentences(flat)[1] == (
        "Runs do not get faster on more than one node; the processor working set is 1 node."
    )


def test_failed_fit_says_so_first(lu_fit: predictor.Fit) -> None:
    failed = dataclasses.replace(lu_fit, status="failed", message="max evaluations\x1b[2J")
    first = fit_sentences(failed)[0]
    assert first.startswith("The fit did not converge (max evaluations\\x1b[2J)")


def render(draw: object) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None)
    assert callable(draw)
    draw(console)
    return buffer.getvalue()


def test_render_fit_has_tables_and_sentences(lu_fit: predictor.Fit) -> None:
    text = render(lambda console: render_fit(lu_fit, console, "runs[bold].csv"))
    assert "Downey model fitted with ADEPT to 6 sizes (6 runs) from runs[bold].csv." in text
    for sentence in fit_sentences(lu_fit):
        assert sentence in text
    for header in ("parameter", "value", "measured", "fitted", "error"):
        assert header in text
    assert "0.5000 s" in text  # the measured runtime at n = 2


def test_render_predictions_marks_extrapolation(lu_obs: predictor.Observations) -> None:
    preds = predictor.predict_observations(lu_obs, at=[16, 128], method="lm")
    text = render(lambda console: render_predictions(preds, console, "lm", 64))
    assert "Levenberg-Marquardt" in text
    for header in ("n", "runtime", "speedup", "efficiency"):
        assert header in text
    assert "Sizes above 64 nodes, the largest observed, are extrapolations." in text
    inside = render(lambda console: render_predictions(preds, console, "adept", 128))
    assert "extrapolation" not in inside
