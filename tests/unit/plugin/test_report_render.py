"""plugin.report rendering: terminal, SVG and HTML, with hostile names and text everywhere."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from plugin.report import (
    SiteWriter,
    assemble,
    fleet_row,
    page_name,
    render_app,
    render_app_page,
    render_fleet,
    render_index,
)
from plugin.report.model import AppReport, GuardCounts, Run
from plugin.report.svg import (
    CURVE_COLOUR,
    HISTOGRAM_COLOUR,
    OBSERVED_COLOUR,
    efficiency_plot,
    histogram_plot,
    nice_ticks,
    speedup_plot,
)

from .test_report_assemble import T0, decision, make_inputs, make_runs

HOSTILE = "<script>alert(1)</script>"
QUOTES = '"onmouseover="alert(2)" \''
ANSI = "\x1b[31mred\x1b[0m [bold]markup[/bold]"
UNICODE = "π-solver ünïcode ✓ 中文"


@pytest.fixture(scope="module")
def hostile() -> AppReport:
    """An app named like a script, with decisions and runs carrying hostile text."""
    runs = (
        *make_runs(),
        Run("77_1", 8, 600.0, T0 + 50000.0),
        Run("77_2", 8, 610.0, T0 + 50000.0 + 1),
    )
    docs = [
        decision(1, 2, 64, 16, reason=ANSI, rule=QUOTES),
        decision(2, 2, 32, 8, reason=UNICODE, rule="=cmd|' /C calc'!A0"),
        decision(3, 2, 64, None, reason=HOSTILE, rule="[bold]j[/bold]"),
        decision(4, 2, 64, 16, rule=ANSI),
    ]
    return assemble(make_inputs(app=HOSTILE, runs=runs, decisions=docs))


@pytest.fixture(scope="module")
def page(hostile: AppReport) -> str:
    return render_app_page(hostile, generated="")


def svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.DOTALL)


# --- HTML -------------------------------------------------------------------------------


def test_hostile_text_is_escaped_in_the_page(page: str) -> None:
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<title>adaptalloc report: &lt;script&gt;" in page
    assert "<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>" in page
    # Only our own script element, and no attribute broken open by quotes.
    assert page.count("<script") == 1
    assert 'onmouseover="alert' not in page
    assert "&#34;onmouseover=&#34;alert(2)&#34;" in page
    # Control characters are shown as escapes, not sent to the browser.
    assert "\x1b" not in page
    assert "\\x1b[31mred" in page
    assert UNICODE in page


def test_the_csp_admits_exactly_the_inline_script_and_style(page: str) -> None:
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert csp is not None
    policy = csp.group(1)
    assert "default-src 'none'" in policy
    script = re.search(r"<script>(.*?)</script>", page, flags=re.DOTALL)
    style = re.search(r"<style>(.*?)</style>", page, flags=re.DOTALL)
    assert script is not None
    assert style is not None
    for body, directive in ((script.group(1), "script-src"), (style.group(1), "style-src")):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in policy
    assert "unsafe-inline" not in policy


def test_the_page_is_self_contained(page: str) -> None:
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page
    assert "url(http" not in page


def test_svgs_are_well_formed_xml_with_escaped_text(page: str) -> None:
    found = svgs(page)
    assert len(found) == 3  # speedup, efficiency, histogram
    for svg in found:
        root = ET.fromstring(svg)  # noqa: S314 - our own output
        assert root.tag.endswith("svg")
        assert HOSTILE not in svg
    texts = "".join(ET.fromstring(svgs(page)[0]).itertext())  # noqa: S314
    assert HOSTILE in texts  # the title, as text


def test_rendering_is_reproducible(hostile: AppReport) -> None:
    assert render_app_page(hostile) == render_app_page(hostile)
    assert speedup_plot(hostile) == speedup_plot(hostile)


def test_plots_draw_the_curve_runs_band_and_sizes(hostile: AppReport) -> None:
    speedup = str(speedup_plot(hostile))
    assert f'stroke="{CURVE_COLOUR}"' in speedup
    plain = [p for p in hostile.points if not p.anomaly]
    assert speedup.count(f'fill="{OBSERVED_COLOUR}"') == len(plain) + 1  # and the legend's
    assert "<polygon" in speedup  # the envelope band
    assert "processor working set" in speedup
    efficiency = str(efficiency_plot(hostile))
    assert "100%" in efficiency
    histogram = str(histogram_plot(hostile))
    assert histogram.count(f'fill="{HISTOGRAM_COLOUR}"') == 1 + 2  # legend, sizes 8 and 16


def test_histogram_bins_many_sizes() -> None:
    docs = [decision(k, 1, 512, k) for k in range(1, 101)]
    report = assemble(make_inputs(decisions=docs), band=False)
    histogram = str(histogram_plot(report))
    assert histogram.count("<rect x=") - 3 == 7  # bins 1, 2, 4, …, 64 (frame, bg, legend)
    assert "64+" in histogram


def test_no_curve_no_plots_but_a_page() -> None:
    report = assemble(make_inputs(with_curve=False))
    page = render_app_page(report)
    assert "not fitted yet" in page
    assert svgs(page) == []


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [(0.0, 1.05, [0.0, 0.5, 1.0]), (0.0, 23.0, [0, 5, 10, 15, 20]), (3.0, 3.0, [3.0])],
)
def test_nice_ticks(lo: float, hi: float, expected: list[float]) -> None:
    assert nice_ticks(lo, hi) == pytest.approx(expected)


def test_page_names_are_safe_and_distinct() -> None:
    assert page_name("lulesh@large") == "app-lulesh@large.html"
    names = {page_name(n) for n in (HOSTILE, "<script>alert(1)</script>x", "../../etc", "A")}
    assert len(names) == 4
    for name in names:
        assert re.fullmatch(r"app-[a-z0-9._@-]+\.html", name)
        assert Path(name).name == name  # no directory part: it stays in the site's directory


def test_index_lists_every_app_sortably(hostile: AppReport) -> None:
    plain = assemble(make_inputs(app="lulesh@large"), band=False)
    index = render_index([fleet_row(hostile), fleet_row(plain)])
    assert '<table class="sortable"' in index
    assert 'href="app-lulesh%40large.html"' in index
    assert f'href="{page_name(HOSTILE)}"' in index
    assert HOSTILE not in index
    assert index.count("<tr class=") == 2


def test_the_pages_show_the_kill_guard_counts() -> None:
    # The user's promise, visible where an admin looks: jobs killed at a limit adaptalloc set
    # (marked when not 0) and limits the guard raised, per app and in the index.
    guard = GuardCounts(
        limits_raised=3, killed_at_our_limit=1, censored_runs=2, limit_safety=1.5625
    )
    inputs = dataclasses.replace(make_inputs(app="lulesh"), guard=guard)
    report = assemble(inputs, band=False)
    page = render_app_page(report, generated="")
    facts = re.search(r'<dl class="facts">.*?</dl>', page, flags=re.DOTALL)
    assert facts is not None
    text = re.sub(r"<[^>]+>", " ", facts.group(0))
    assert re.search(r"killed at a limit adaptalloc set\s+1 \(the promise is 0\)", text)
    assert re.search(r"limits raised by the kill guard\s+3; this app's limits are now 1\.56", text)
    assert re.search(r"censored runs\s+2 ", text)
    assert '<dd class="bad">1 (the promise is 0)' in page
    index = render_index([fleet_row(report)])
    row = index.split('<tr class="', 1)[1].split("</tr>", 1)[0]
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    header = re.findall(r"<th[^>]*>([^<]*)</th>", index)
    assert cells[header.index("killed at our limit")] == "1"
    assert cells[header.index("limits raised")] == "3"


def test_site_writer_writes_pages_and_index(tmp_path: Path, hostile: AppReport) -> None:
    site = SiteWriter(tmp_path / "site", generated="2026-01-01 00:00")
    page = site.add(hostile)
    index = site.finish()
    assert page.parent == index.parent == tmp_path / "site"
    assert "2026-01-01 00:00" in index.read_text()
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == sorted(
        [page.name, "index.html"]
    )  # no temporary files left
    # The owner's alone (they name users' applications and decisions), whatever the umask.
    assert {p.stat().st_mode & 0o777 for p in (page, index)} == {0o600}


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_pages_are_the_owners_alone_whatever_the_umask(
    tmp_path: Path, hostile: AppReport, umask: int
) -> None:
    before = os.umask(umask)
    try:
        site = SiteWriter(tmp_path / "site")
        page, index = site.add(hostile), site.finish()
    finally:
        os.umask(before)
    assert {p.stat().st_mode & 0o777 for p in (page, index)} == {0o600}
    assert (tmp_path / "site").stat().st_mode & 0o077 == 0


# --- terminal ---------------------------------------------------------------------------


def terminal(report: AppReport, colour: bool) -> str:
    out = io.StringIO()
    console = Console(
        file=out, width=120, force_terminal=colour, color_system="standard" if colour else None
    )
    render_app(report, console)
    render_fleet([fleet_row(report)], console)
    return out.getvalue()


@pytest.mark.parametrize("colour", [False, True])
def test_terminal_escapes_hostile_text(hostile: AppReport, colour: bool) -> None:
    text = terminal(hostile, colour)
    assert "\x1b[31mred" not in text  # the data's own escape sequence never reaches the tty
    assert "\\x1b[31mred" in text  # it is shown escaped instead
    assert "[bold]j" in text  # rich markup in a rule is shown, not applied
    assert HOSTILE in text  # as text: a terminal does not run it
    if not colour:
        assert "\x1b" not in text


def test_a_range_release_shows_its_range_in_the_terminal_and_the_page() -> None:
    docs = [decision(1, 4, 64, 16), decision(2, 4, 64, 4, nodes_upto=24, rule="fallback")]
    report = assemble(make_inputs(decisions=docs))
    text = terminal(report, colour=False)
    assert "4-64 → 4-24" in text
    assert "4-64 → 16" in text
    assert "2 decisions (0 released as submitted, 1 with a narrowed range)" in text
    page = render_app_page(report)
    assert "4–24</td>" in page


def test_terminal_shows_the_figures(hostile: AppReport) -> None:
    text = terminal(hostile, colour=False)
    assert "runs per size against the curve" in text
    assert "Processor working set" in text
    assert "job arrays and groups" in text  # the 77_* array, summarised
    assert "as is" in text  # the decision released as submitted
    assert "model estimates" in text.lower()
    for row in hostile.sizes:
        assert f"{row.n:,}" in text
