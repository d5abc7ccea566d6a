"""The report as a static site: one page per app and a sortable index, self-contained.

Pages are rendered with jinja2 (templates in plugin/report/templates/, package data) with
autoescaping on, so every string from the report (app names, job ids, decision rules and
reasons, notes) is HTML-escaped; the only markup inserted unescaped is the SVG from svg.py,
which escapes its own text, and this package's own CSS and JS.

Self-contained: the CSS and the small sorting script are inlined, the plots are inline
SVG; nothing is fetched, so the pages work offline from file://. A Content-Security-Policy
allows exactly the page's own style and script (by hash) and nothing else: even text that
escaped escaping could not run a script or load anything.

`SiteWriter` writes pages one at a time (memory holds one app's report), each atomically
(temporary file, then rename), and the index last.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import re
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from plugin.errors import printable
from plugin.report.accuracy import section_sentences
from plugin.report.assemble import fleet_row
from plugin.report.model import AccuracySection, AppReport, FleetRow, SizeRow
from plugin.report.numbers import format_number, format_percent, format_runtime
from plugin.report.svg import accuracy_plot, efficiency_plot, histogram_plot, speedup_plot
from plugin.report.terminal import decision_sentence, stamp

__all__ = ["INDEX", "SiteWriter", "page_name", "render_app_page", "render_index"]

INDEX = "index.html"
#: Rows of decisions and of job groups listed on an app's page (the figures count them all).
LISTED_DECISIONS = 200
LISTED_GROUPS = 500
_UNSAFE = re.compile(r"[^a-z0-9._@-]")


def page_name(app: str) -> str:
    """The file name of an app's page: ``app-<key>.html``.

    App keys from the store are already safe file names; anything else is reduced to safe
    characters and given a hash, so that two different names never share a page.
    """
    slug = _UNSAFE.sub("_", app.lower())[:80]
    if slug != app or not slug:
        slug += "-" + hashlib.sha256(app.encode("utf-8")).hexdigest()[:10]
    return f"app-{slug}.html"


def _dash(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if _dash(value) else format_number(float(value or 0.0), digits)


def _pct(value: float | None) -> str:
    return "—" if _dash(value) else format_percent(float(value or 0.0), 3)


def _secs(value: float | None) -> str:
    return "—" if _dash(value) else format_runtime(float(value or 0.0))


def _nodes(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _dv(value: float | None) -> str:
    """A cell's sort value: the number, or empty."""
    return "" if _dash(value) else repr(value)


def _shown(value: Any) -> Any:
    """Every value a template prints: text with its control characters shown as escapes
    (``\\x1b``), as in the terminal; autoescaping then makes it inert HTML. Markup (the
    SVG, this package's CSS and JS) passes unchanged."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return printable(value)
    return value


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _asset(name: str) -> str:
    return (resources.files("plugin.report") / "templates" / name).read_text(encoding="utf-8")


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("plugin.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    env.filters.update(num=_num, pct=_pct, secs=_secs, nodes=_nodes, stamp=stamp, dv=_dv)
    style, script = _asset("style.css"), _asset("sort.js")
    env.globals.update(
        # Our own files, inlined as they are; the CSP admits exactly these by hash.
        style=Markup(style),  # noqa: S704
        script=Markup(script),  # noqa: S704
        style_hash=_digest(style),
        script_hash=_digest(script),
    )
    return env


def _anomaly_note(row: SizeRow) -> str:
    if row.anomaly == "point":
        weight = "" if row.anomaly_weight is None else f", counted at {row.anomaly_weight:.0%}"
        return f"anomalous run{weight}"
    return {
        "decline": "past the speedup peak: left out",
        "ambiguous_final": "slower than the runs before: left out",
    }.get(row.anomaly, row.anomaly)


def _pattern_lines(report: AppReport) -> list[str]:
    out = []
    for p in report.patterns:
        if p.kind == "stepwise":
            spans = "; ".join(f"{ph[0]:,}–{ph[-1]:,}" for ph in p.phases if ph)
            out.append(
                "The speedup jumps between phases (a superlinear step, e.g. data fitting a "
                f"cache): each phase has its own curve ({spans} nodes)."
            )
        elif p.kind == "optimized_sizes":
            rule = (p.feasible or "special sizes").replace("_", " ")
            out.append(f"The application runs markedly better on {rule}: run it on those.")
    return out


def _band_caption(report: AppReport) -> str:
    band = report.band
    if band is None:
        return report.band_note
    return (
        "The shaded band is ADEPT's envelope: the speedups of all Downey curves that explain "
        f"every run within δ = {band.delta:.1%} ({band.instances:,} instances), the fit's own "
        "tolerance. It shows what the runs leave open, not a confidence interval."
    )


def render_app_page(report: AppReport, index_href: str | None = INDEX, generated: str = "") -> str:
    """One app's page as HTML text."""
    grid = report.grid

    def eff_at(n: int | None) -> str:
        if n is None or grid is None or n not in grid.n:
            return ""
        return f" (efficiency {_pct(grid.efficiency[grid.n.index(n)])})"

    template = _environment().get_template("app.html.j2")
    return template.render(
        r=report,
        index_href=index_href,
        generated=generated,
        eff_at=eff_at,
        anomaly_note=_anomaly_note,
        pattern_lines=_pattern_lines(report),
        band_caption=_band_caption(report),
        decision_text=decision_sentence(report),
        decisions=report.decisions[:LISTED_DECISIONS],
        groups=report.groups[-LISTED_GROUPS:][::-1],
        speedup_svg=speedup_plot(report),
        efficiency_svg=efficiency_plot(report),
        histogram_svg=histogram_plot(report),
        **_accuracy(report.accuracy, f"Live accuracy of {report.app}", "this app"),
    )


def _accuracy(section: AccuracySection | None, title: str, what: str) -> dict[str, Any]:
    """The live-accuracy section's plot and sentences for a template."""
    if section is None:
        return {"accuracy": None, "accuracy_svg": "", "accuracy_lines": []}
    return {
        "accuracy": section,
        "accuracy_svg": accuracy_plot(section.points, title),
        "accuracy_lines": section_sentences(section, what),
    }


def render_index(
    rows: list[FleetRow], generated: str = "", accuracy: AccuracySection | None = None
) -> str:
    """The index page: one sortable row per app, linking to its page, and the fleet's live
    accuracy."""
    template = _environment().get_template("index.html.j2")
    return template.render(
        **_accuracy(accuracy, "Live accuracy of the fleet", "the fleet"),
        rows=[(row, quote(page_name(row.app))) for row in rows],
        total_runs=sum(r.runs for r in rows),
        total_node_hours=sum(r.node_hours for r in rows),
        total_decisions=sum(r.decisions for r in rows),
        total_saved=sum(r.node_hours_saved or 0.0 for r in rows),
        generated=generated,
    )


#: The mode of every page written: the owner's alone.
PAGE_MODE = 0o600


def _write(path: Path, text: str) -> None:
    """Write atomically: a reader never sees half a page. Mode PAGE_MODE whatever the
    caller's umask: the pages name users' applications, sizes and decisions; an admin who
    publishes them chooses who reads them (chmod, or a web server in the owner's group)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".html")
    try:
        os.fchmod(fd, PAGE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class SiteWriter:
    """Writes app pages into `directory` as reports come, then the index.

    Parameters
    ----------
    directory : Path
        Created if missing; existing pages of the same apps are replaced.
    generated : str
        When the report was made, shown in the footer ("" leaves it out: reproducible).
    link_index : bool
        Whether pages link back to the index (``report APP --html`` into a directory
        without one leaves the link out).
    accuracy : AccuracySection or None
        The fleet's live accuracy, for the index.
    """

    def __init__(
        self,
        directory: Path,
        generated: str = "",
        link_index: bool = True,
        accuracy: AccuracySection | None = None,
    ) -> None:
        self.directory = directory
        self.generated = generated
        self.link_index = link_index
        self.accuracy = accuracy
        self.rows: list[FleetRow] = []
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new one: the owner's

    def add(self, report: AppReport) -> Path:
        """Write one app's page; remember its index row."""
        path = self.directory / page_name(report.app)
        _write(path, render_app_page(report, INDEX if self.link_index else None, self.generated))
        self.rows.append(fleet_row(report))
        return path

    def finish(self) -> Path:
        """Write the index of every page added; returns its path."""
        path = self.directory / INDEX
        _write(path, render_index(self.rows, self.generated, self.accuracy))
        return path
