"""plugin.report.export: JSON documents and CSV tables of the same figures."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from plugin.report import (
    FLEET_COLUMNS,
    JOB_COLUMNS,
    app_document,
    assemble,
    fleet_document,
    fleet_row,
    job_rows,
)
from plugin.report.export import csv_text, safe_cell
from plugin.report.model import AppReport, Run

from .test_report_assemble import T0, decision, make_inputs, make_runs


@pytest.fixture(scope="module")
def report() -> AppReport:
    runs = make_runs() + tuple(Run(f"5000_{k}", 8, 600.0 + k, T0 + 9000 + k) for k in range(6))
    decided = [decision(k, 2, 64, 16) for k in (1000, 1001, 1002)]  # the first three runs
    return assemble(make_inputs(runs=runs, decisions=decided))


def test_app_document_is_strict_json_with_the_figures(report: AppReport) -> None:
    doc = app_document(report, decisions=2)
    text = json.dumps(doc, allow_nan=False)  # no NaN or Infinity anywhere
    back = json.loads(text)
    assert back["app"] == "lulesh"
    assert back["curve"]["pws_n"] == report.curve.pws_n  # type: ignore[union-attr]
    assert [s["n"] for s in back["sizes"]] == [2, 4, 8, 16, 32, 64]
    assert back["sizes"][0]["speedup"] == report.sizes[0].speedup
    assert back["band"]["delta"] == report.band.delta  # type: ignore[union-attr]
    assert len(back["curve_points"]["n"]) == len(back["curve_points"]["speedup"])
    assert len(back["decisions"]) == 2
    assert back["decision_summary"]["count"] == 3
    assert back["decisions"][0]["node_hours_saved"] == pytest.approx(
        report.decisions[0].node_hours_saved
    )
    array = next(g for g in back["groups"] if g["kind"] == "array")
    assert array["tasks"] == 6
    assert array["group_id"] == "5000"


def test_fleet_document_rows_have_the_csv_columns(report: AppReport) -> None:
    doc = fleet_document([fleet_row(report)])
    assert list(doc["apps"][0]) == list(FLEET_COLUMNS)
    json.dumps(doc, allow_nan=False)


def test_per_job_rows_summarise_arrays(report: AppReport) -> None:
    rows = job_rows(report)
    assert all(list(r) == list(JOB_COLUMNS) for r in rows)
    arrays = [r for r in rows if r["kind"] == "array"]
    assert len(arrays) == 1
    assert arrays[0]["tasks"] == 6
    assert sum(r["tasks"] for r in rows) == report.runs
    # A lone job that was decided carries its requested range and rule.
    first = next(r for r in rows if r["first_job"] == "1000")
    assert (first["requested_min"], first["requested_max"], first["rule"]) == (2, 64, "efficiency")
    undecided = next(r for r in rows if r["first_job"] == "1005")
    assert undecided["rule"] is None
    json.dumps({"jobs": rows}, allow_nan=False)


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("plain", "plain"),
        (-3.5, "-3.5"),  # numbers are never altered
        (None, ""),
        (True, "true"),
        ([4, 8], "4;8"),
        (float("nan"), ""),
    ],
)
def test_safe_cell(value: Any, cell: Any) -> None:
    assert str(safe_cell(value)) == cell


def test_csv_is_rfc4180_and_round_trips() -> None:
    rows: list[dict[str, Any]] = [
        {"app": 'a,"b"', "reason": "line1\nline2", "n": 3, "x": -1.25},
        {"app": "=cmd|' /C calc'!A0", "reason": "<script>alert(1)</script>", "n": None, "x": 0.5},
    ]
    text = csv_text(("app", "reason", "n", "x"), rows)
    assert text.startswith("app,reason,n,x\r\n")
    assert '"a,""b"""' in text
    assert '"line1\nline2"' in text
    back = list(csv.reader(io.StringIO(text, newline="")))
    assert back[1] == ['a,"b"', "line1\nline2", "3", "-1.25"]
    assert back[2] == ["'=cmd|' /C calc'!A0", "<script>alert(1)</script>", "", "0.5"]
