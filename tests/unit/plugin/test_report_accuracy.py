"""The report's live-accuracy section: figures from scores, the JSON document, the terminal
text and the HTML plot, with hostile app names in the tooltips."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest
from rich.console import Console

from plugin.report import (
    accuracy_section,
    app_document,
    assemble,
    fleet_row,
    render_app,
    render_app_page,
    render_index,
)
from plugin.report.export import FLEET_COLUMNS, fleet_document
from plugin.report.svg import INSIDE_COLOUR, OUTSIDE_COLOUR, accuracy_plot
from plugin.report.terminal import render_fleet_accuracy
from plugin.store.scores import Score

from .test_report_assemble import T0, make_inputs

HOSTILE = "<script>alert(1)</script>"


def scores(app: str = "lulesh", count: int = 40) -> tuple[Score, ...]:
    """`count` jobs: every fourth outside the interval (above it), the last one censored;
    half of them advise-mode records that Slurm ran at twice the advised size."""
    out = []
    for k in range(count):
        above = k % 4 == 0
        advise = k % 2 == 1
        out.append(
            Score(
                app=app,
                job_id=100 + k,
                submit_time=1,
                end_time=T0 + 60.0 * k,
                nodes=8 if advise else 4,
                runtime_s=200.0 if above else 105.0,
                predicted_s=100.0,
                lower_s=80.0,
                upper_s=125.0,
                mode="advise" if advise else "enforce",
                censored=k == count - 1,
                advised_nodes=4,
                advised_s=180.0 if advise else None,
                advised_lower_s=150.0 if advise else None,
                advised_upper_s=220.0 if advise else None,
            )
        )
    return tuple(out)


def test_an_apps_report_carries_its_accuracy_and_its_row_the_window() -> None:
    inputs = replace(make_inputs(), scores=scores(), now=T0 + 3600.0)
    report = assemble(inputs, band=False)
    section = report.accuracy
    assert section is not None
    assert section.kept.jobs == 40
    assert section.kept.censored == 1
    assert section.kept.above == 10  # every fourth, the censored one (k = 39) is inside
    assert section.kept.unknown == 1
    assert section.kept.coverage == pytest.approx(29 / 39)
    assert section.window.jobs == 40
    assert [b.mode for b in section.bought] == ["enforce", "advise"]
    assert len(section.points) == 40
    row = fleet_row(report)
    assert row.scored_jobs == 39
    assert row.coverage == pytest.approx(29 / 39)
    assert assemble(make_inputs(), band=False).accuracy is None


def test_the_json_document_has_the_section_and_the_fleet_its_columns() -> None:
    report = assemble(replace(make_inputs(), scores=scores(), now=T0 + 3600.0), band=False)
    doc = json.loads(json.dumps(app_document(report), allow_nan=False))
    live = doc["accuracy"]
    assert live["kept"]["judged"] == 39
    assert live["window"]["days"] == 7.0
    advise = next(b for b in live["bought"] if b["mode"] == "advise")
    # 20 advise jobs, the last one censored (left out): 19 at 4 nodes x 180 s.
    assert advise["advised_node_hours"]["estimate"] == pytest.approx(19 * 4 * 180.0 / 3600.0)
    assert "model estimates" in advise["estimates"]
    assert set(live["points"][0]) >= {"predicted_s", "actual_s", "lower_s", "upper_s", "where"}
    fleet = accuracy_section(scores() + scores("cg", 5), T0 + 3600.0, fleet=True)
    assert fleet is not None
    assert [app for app, _ in fleet.apps] == ["lulesh", "cg"]
    rows = fleet_document([fleet_row(report)], fleet)
    assert set(rows["apps"][0]) == set(FLEET_COLUMNS)
    assert rows["accuracy"]["apps"][1]["app"] == "cg"
    assert fleet_document([])["accuracy"] is None


def test_the_terminal_says_what_is_measured_and_what_is_estimated() -> None:
    report = assemble(replace(make_inputs(), scores=scores(), now=T0 + 3600.0), band=False)
    out = io.StringIO()
    render_app(report, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    assert "Live accuracy" in text
    assert "40 jobs scored (1 stopped at a limit or preempted" in text
    assert "74.4% of 39 inside the 90% interval (10 above, 0 below)" in text
    assert "What sizing would have bought (advise mode; model estimates" in text
    assert "Sized by adaptalloc (enforce mode)" in text
    none = io.StringIO()
    render_app(assemble(make_inputs(), band=False), Console(file=none, width=120))
    assert "No finished job of this app is scored yet" in none.getvalue()
    fleet = io.StringIO()
    section = accuracy_section(scores(HOSTILE), T0 + 3600.0, fleet=True)
    render_fleet_accuracy(section, Console(file=fleet, width=120, color_system=None))
    assert "live accuracy by app" in fleet.getvalue()


def test_the_plot_is_valid_svg_with_escaped_tooltips_and_coloured_points() -> None:
    section = accuracy_section(scores(HOSTILE), T0 + 3600.0)
    assert section is not None
    svg = str(accuracy_plot(section.points, f"Live accuracy of {HOSTILE}"))
    ET.fromstring(svg)  # noqa: S314 - our own output; well-formed XML
    assert HOSTILE not in svg
    assert "&lt;script&gt;" in svg
    assert svg.count(f'fill="{INSIDE_COLOUR}" fill-opacity="0.8"') == 29
    assert svg.count(f'fill="{OUTSIDE_COLOUR}" fill-opacity="0.8"') == 10
    assert svg.count("<path d=") >= 1  # the censored run: a triangle
    assert str(accuracy_plot((), "empty")) == ""


def test_the_pages_show_the_section() -> None:
    report = assemble(
        replace(make_inputs(app=HOSTILE), scores=scores(HOSTILE), now=T0 + 3600.0), band=False
    )
    page = render_app_page(report, generated="")
    assert "<h2>Live accuracy</h2>" in page
    assert len(re.findall(r"<svg\b", page)) >= 3
    assert "model estimate" in page
    index = render_index([fleet_row(report)], "", accuracy_section(scores(), T0, fleet=True))
    assert "Live accuracy of the fleet" in index
    assert "in 90% interval" in index
    assert "No finished job is scored yet" in render_index([fleet_row(report)], "")
