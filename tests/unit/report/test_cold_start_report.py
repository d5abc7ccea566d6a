"""The report's cold-start line: apps without a usable curve say what runs would make one, in
the terminal, the HTML pages and the JSON export; apps with a usable curve say nothing."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from rich.console import Console

from plugin.report import (
    app_document,
    assemble,
    fleet_document,
    fleet_row,
    render_app,
    render_app_page,
    render_fleet,
    render_index,
)
from plugin.report.export import FLEET_COLUMNS, csv_text
from plugin.report.model import AppReport
from unit.plugin.test_report_assemble import decision, make_inputs, make_runs

NOTE = "need runs at two or more distinct sizes to fit a speedup curve"
#: Runs at 4 nodes only, jobs asking up to 64: the predictor needs one more size.
NEEDS = "a curve needs runs at 1 more size: 8 or 16 nodes"


@pytest.fixture(scope="module")
def cold() -> AppReport:
    runs = make_runs(sizes=(4,), repeats=3)
    inputs = make_inputs(
        app="lu", runs=runs, decisions=[decision(1, 2, 64, None)], with_curve=False
    )
    return assemble(replace(inputs, curve_note=NOTE))


@pytest.fixture(scope="module")
def warm() -> AppReport:
    return assemble(make_inputs(app="lulesh"), band=False)


def text(render: Callable[..., None], *args: Any) -> str:
    """What a terminal renderer prints, without colour or wrapping."""
    out = io.StringIO()
    render(*args, Console(file=out, width=400, color_system=None))
    return out.getvalue()


def test_the_advice_is_assembled_from_the_runs_and_the_asked_range(cold: AppReport) -> None:
    assert cold.cold_start is not None
    assert cold.cold_start.condition == "min_sizes"
    assert cold.cold_start.sizes == (8, 16)
    assert NOTE in cold.cold_start.reason


def test_a_usable_curve_gets_no_advice(warm: AppReport) -> None:
    assert warm.curve is not None
    assert warm.cold_start is None
    assert fleet_row(warm).cold_start is None


def test_terminal_shows_one_line_per_app_without_a_usable_curve(
    cold: AppReport, warm: AppReport
) -> None:
    assert "Cold start: 3 runs at 1 size (4); " + NEEDS in text(render_app, cold)
    fleet = text(render_fleet, [fleet_row(warm), fleet_row(cold)])
    lines = [line for line in fleet.splitlines() if NEEDS in line]
    assert lines == [lines[0]]
    assert lines[0].startswith("lu: 3 runs at 1 size (4)")
    assert "lulesh:" not in fleet


def test_html_pages_and_index_show_the_advice(cold: AppReport, warm: AppReport) -> None:
    assert NEEDS in render_app_page(cold, generated="")
    assert "cold-start" not in render_app_page(warm, generated="")
    index = render_index([fleet_row(warm), fleet_row(cold)], generated="")
    assert "Without a usable curve" in index
    assert NEEDS in index


def test_json_exports_carry_the_advice(cold: AppReport, warm: AppReport) -> None:
    doc = json.loads(json.dumps(app_document(cold)))
    assert doc["cold_start"]["runs"] == 1
    assert doc["cold_start"]["sizes"] == [8, 16]
    assert doc["cold_start"]["helps"] is True
    assert NEEDS in doc["cold_start"]["text"]
    fleet = json.loads(json.dumps(fleet_document([fleet_row(warm), fleet_row(cold)])))
    by_app = {row["app"]: row["cold_start"] for row in fleet["apps"]}
    assert by_app["lulesh"] is None
    assert by_app["lu"]["condition"] == "min_sizes"


def test_the_csv_cell_is_the_one_line_text(cold: AppReport, warm: AppReport) -> None:
    rows = fleet_document([fleet_row(warm), fleet_row(cold)])["apps"]
    table = list(csv.DictReader(io.StringIO(csv_text(FLEET_COLUMNS, rows))))
    assert table[0]["cold_start"] == ""
    assert table[1]["cold_start"].startswith("3 runs at 1 size (4); " + NEEDS)
