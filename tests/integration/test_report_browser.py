"""The report's HTML in a real headless Chromium (Debian's chromium package).

A screenshot of an app page must show the plots drawn: pixels of the curve's stroke
colour, the runs' marker colour and the envelope band's blend. A page for an app named
like a script must show the name as text: the DOM Chromium dumps after running the page
holds the escaped text, no element the name or the decision reasons would have made, and
an unchanged document title (the payload would set it).

These tests fail, never skip, when chromium is missing: deploy/test.sh installs it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib import image

import predictor
from plugin.appkey import AppKey
from plugin.learning.learner import curve_from_fit, refit_app
from plugin.report import SiteWriter, assemble
from plugin.report.model import AppInputs, Run
from plugin.report.svg import BAND_COLOUR, BAND_OPACITY, CURVE_COLOUR, OBSERVED_COLOUR
from plugin.store.curves import CurveStore, Observation, Retention
from plugin.store.decisions import DecisionRecord, StoredDecision

from .test_report_cli import ok, runtime
from .testbed import adaptalloc

pytestmark = pytest.mark.integration

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
TIMEOUT_S = 120
#: What the hostile payloads would set the title to, had they run.
PWNED = "PWNED-BY-PAYLOAD"
HOSTILE_APP = "<script>document.title='" + PWNED + "'</script>"
HOSTILE_REASON = f"<img src=x onerror=\"document.title='{PWNED}'\"> & <b>bold</b>"


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail(
            "chromium is not installed; deploy/test.sh installs it (apt-get install chromium)",
            pytrace=False,
        )
    return path


def browse(chromium: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "chromium-profile"
    return subprocess.run(  # noqa: S603 - fixed flags, our own files
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env=dict(os.environ, HOME=str(tmp_path)),
    )


def screenshot(chromium: str, page: Path, tmp_path: Path, size: str = "1200,1600") -> Any:
    png = tmp_path / (page.stem + ".png")
    proc = browse(chromium, tmp_path, f"--screenshot={png}", f"--window-size={size}", page.as_uri())
    assert png.is_file(), proc.stderr[-2000:]
    pixels = image.imread(str(png))
    return pixels[..., :3] * (255.0 if pixels.dtype.kind == "f" else 1.0)


def count_colour(pixels: Any, colour: str | Sequence[float], tol: float = 12) -> int:
    """Pixels within `tol` of `colour` ("#rrggbb" or an RGB triple) in every channel."""
    rgb = (
        np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
        if isinstance(colour, str)
        else np.array(colour)
    )
    return int(np.sum(np.all(np.abs(pixels - rgb) <= tol, axis=-1)))


def test_the_plots_are_drawn(chromium: str, redis_client: Any, tmp_path: Path) -> None:
    """An app stored through the store's API, its site written by the CLI, shown by Chromium."""
    app = AppKey("lulesh")
    store = CurveStore(redis_client, Retention(max_observations=100, max_age_s=None))
    store.add_observations(
        app,
        [
            Observation(str(100 + i), app, n, runtime(n), 1.8e9 + i)
            for i, n in enumerate((2, 4, 8, 16, 32, 64))
        ],
    )
    assert refit_app(store, app).status == "written"
    for k, nodes in enumerate((8, 16, 16, 32)):
        store.record_decision(
            DecisionRecord(job_id=500 + k, app="lulesh", min_nodes=2, max_nodes=64,
                           nodes=nodes, rule="efficiency")
        )  # fmt: skip
    site = tmp_path / "site"
    ok(adaptalloc("report", "--all", "--html", site, cwd=tmp_path))

    pixels = screenshot(chromium, site / "app-lulesh.html", tmp_path)
    assert count_colour(pixels, CURVE_COLOUR) > 500  # two curves, 2.5 px wide
    assert count_colour(pixels, OBSERVED_COLOUR) > 6 * 2 * 20  # 6 runs on two plots
    band = tuple(255 * (1 - BAND_OPACITY) + BAND_OPACITY * int(BAND_COLOUR[i : i + 2], 16)
                 for i in (1, 3, 5))  # fmt: skip
    assert count_colour(pixels, band, tol=6) > 50  # the envelope, past the largest run
    assert count_colour(pixels, "#2a9d8f") > 1000  # the histogram's bars

    index = screenshot(chromium, site / "index.html", tmp_path, "1200,600")
    dark = np.sum(np.all(index < 100, axis=-1))
    assert dark > 1000  # the index's table is there as text
    assert count_colour(index, CURVE_COLOUR) < 20  # and the check above is not vacuous


def test_a_hostile_app_name_shows_as_text(chromium: str, tmp_path: Path) -> None:
    """Assembled without the store (which refuses such names), as a report of anything could."""
    runs = tuple(Run(str(10 + i), n, runtime(n), 1.8e9 + i) for i, n in enumerate((2, 4, 8, 16)))
    prepared = predictor.prepare([r.nodes for r in runs], [r.runtime_s for r in runs])
    curve = curve_from_fit(predictor.fit_observations(prepared))
    docs = (
        StoredDecision("1800000000000-0", DecisionRecord(
            job_id=1, min_nodes=2, max_nodes=16, nodes=8, rule=HOSTILE_REASON,
            reason=HOSTILE_REASON)),
    )  # fmt: skip
    report = assemble(AppInputs(HOSTILE_APP, runs, curve, decisions=docs))
    site = SiteWriter(tmp_path / "site", link_index=False)
    page = site.add(report)
    index = site.finish()
    shown = "&lt;script&gt;document.title='" + PWNED + "'&lt;/script&gt;"
    titles = {page: f"adaptalloc report: {shown}", index: "adaptalloc: application efficiency"}

    for path, expected in titles.items():
        proc = browse(chromium, tmp_path, "--virtual-time-budget=3000", "--dump-dom", path.as_uri())
        dom = proc.stdout
        assert "</html>" in dom, proc.stderr[-2000:]
        title = re.search(r"<title>(.*?)</title>", dom, flags=re.DOTALL)
        assert title is not None
        assert title.group(1) == expected  # the payload did not run: it would have set it
        assert shown in dom  # the name, as text
        assert dom.count("<script") == 1  # ours only
        assert "<img" not in dom
        assert "<b>bold</b>" not in dom
    pixels = screenshot(chromium, page, tmp_path)
    assert count_colour(pixels, CURVE_COLOUR) > 500  # the page still draws its plots
