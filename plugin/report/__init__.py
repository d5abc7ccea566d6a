"""Per-application efficiency reports: terminal, JSON/CSV, static HTML.

The pipeline is visible in the modules, as in reportseff:

    query.py      the store -> AppInputs          (the only module that reads Redis)
    assemble.py   AppInputs -> AppReport          (pure; groups.py, decisions.py,
                                                   accuracy.py's live accuracy and the
                                                   envelope band of predictor/band.py)
    terminal.py   AppReport -> rich tables
    export.py     AppReport -> JSON documents, CSV rows
    svg.py        AppReport -> inline SVG plots
    html.py       AppReport -> pages and a sortable index (jinja2, templates/)

model.py holds the data classes that flow between them; numbers.py the number formats the
CLI shares. simulation.py (with sim_figures.py) is ``adaptalloc simulate --html``'s page.
plugin/cli/report.py is the command line (``adaptalloc report``). The names of html.py and
query.py are imported on first use (``__getattr__``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from plugin.report.accuracy import accuracy_section
from plugin.report.assemble import assemble, fleet_row, size_grid
from plugin.report.export import (
    FLEET_COLUMNS,
    JOB_COLUMNS,
    app_document,
    fleet_document,
    job_rows,
    jobs_document,
    write_csv,
)
from plugin.report.model import AppInputs, AppReport, FleetRow, Run
from plugin.report.terminal import render_app, render_fleet, render_fleet_accuracy

if TYPE_CHECKING:
    from plugin.report.html import INDEX, SiteWriter, page_name, render_app_page, render_index
    from plugin.report.query import app_inputs, fleet_inputs, fleet_scores

#: Names of the two modules that load jinja2 (html.py) and the store, so redis (query.py):
#: imported on first use, so that the CLI's commands that only format numbers
#: (``plugin.report.numbers``) start without them.
_LAZY = {
    "INDEX": "plugin.report.html",
    "SiteWriter": "plugin.report.html",
    "page_name": "plugin.report.html",
    "render_app_page": "plugin.report.html",
    "render_index": "plugin.report.html",
    "app_inputs": "plugin.report.query",
    "fleet_inputs": "plugin.report.query",
    "fleet_scores": "plugin.report.query",
}


def __getattr__(name: str) -> Any:
    """A name of html.py or query.py, imported from its module when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "FLEET_COLUMNS",
    "INDEX",
    "JOB_COLUMNS",
    "AppInputs",
    "AppReport",
    "FleetRow",
    "Run",
    "SiteWriter",
    "accuracy_section",
    "app_document",
    "app_inputs",
    "assemble",
    "fleet_document",
    "fleet_inputs",
    "fleet_row",
    "fleet_scores",
    "job_rows",
    "jobs_document",
    "page_name",
    "render_app",
    "render_app_page",
    "render_fleet",
    "render_fleet_accuracy",
    "render_index",
    "size_grid",
    "write_csv",
]
