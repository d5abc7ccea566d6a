"""``adaptalloc simulate --html DIR``: the comparison as one self-contained HTML page.

DIR/index.html holds the setup, the comparison table and four charts drawn as inline SVG (no
script, no external file, no extra dependency, so the page opens anywhere and can be mailed):

* mean response time per policy, split into mean wait and mean run time;
* the distribution of response times (share of jobs done within t, t on a log scale);
* the busy share of the machine over time, per policy;
* mean bounded slowdown and overall utilization per policy.

Every piece of text from outside (the trace's path, the policy file's name) is HTML-escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from plugin.errors import InputError, printable
from plugin.formats.swf import SwfTrace
from plugin.report.numbers import format_number, format_percent
from plugin.report.sim_figures import duration, setup_sentences, table_rows
from policies.simulation import Experiment, PolicyResult, usage_over_time
from predictor.downey import FloatArray

__all__ = ["render_report", "write_report"]

COLOURS = {"adaptive": "#1b9e77", "rigid": "#7570b3", "greedy": "#d95f02"}
_OTHER = "#666666"
#: Time bins of the utilization chart.
USAGE_BINS = 120
#: Points per curve of the response-time distribution.
CDF_POINTS = 200
_W, _H = 640, 300  # chart size in px
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 20, 20, 50  # margins


def _colour(name: str) -> str:
    return COLOURS.get(name, _OTHER)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _svg(body: list[str], title: str) -> str:
    return (
        f'<figure><svg viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img" '
        f'aria-label="{_e(title)}" xmlns="http://www.w3.org/2000/svg" '
        f'font-family="sans-serif" font-size="12">{"".join(body)}</svg>'
        f"<figcaption>{_e(title)}</figcaption></figure>"
    )


def _axes(y_ticks: Sequence[tuple[float, str]], y_label: str) -> list[str]:
    """The plot frame, horizontal grid lines at the y ticks (y in [0, 1] of the plot height)."""
    x0, x1, y0, y1 = _LEFT, _W - _RIGHT, _H - _BOTTOM, _TOP
    out = [
        f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="none" stroke="#999"/>'
    ]
    for frac, label in y_ticks:
        y = y0 - frac * (y0 - y1)
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(label)}</text>')
    mid = (y0 + y1) / 2
    out.append(
        f'<text x="14" y="{mid:.1f}" transform="rotate(-90 14 {mid:.1f})" '
        f'text-anchor="middle">{_e(y_label)}</text>'
    )
    return out


def _nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `top`."""
    if not (math.isfinite(top) and top > 0):
        return [0.0, 1.0]
    raw = top / count
    step = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * step:
            step *= factor
            break
    n = math.ceil(top / step - 1e-9)
    return [k * step for k in range(n + 1)]


def _bars(
    title: str,
    y_label: str,
    groups: Sequence[tuple[str, Sequence[tuple[float, str, str]]]],
    show: Callable[[float], str],
) -> str:
    """Stacked bars: one per group (policy), each a stack of (value, colour, part name)."""
    totals = [sum(v for v, _, _ in parts) for _, parts in groups]
    ticks = _nice_ticks(max(totals, default=1.0))
    top = ticks[-1]
    body = _axes([(t / top, show(t)) for t in ticks], y_label)
    x0, x1, y0, y1 = _LEFT, _W - _RIGHT, _H - _BOTTOM, _TOP
    slot = (x1 - x0) / max(len(groups), 1)
    width = min(80.0, slot * 0.5)
    for k, (name, parts) in enumerate(groups):
        x = x0 + slot * (k + 0.5) - width / 2
        base = 0.0
        for value, colour, part in parts:
            h = (value / top) * (y0 - y1)
            y = y0 - (base / top) * (y0 - y1) - h
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{max(h, 0):.1f}" '
                f'fill="{colour}"><title>{_e(name)} {_e(part)}: {_e(show(value))}</title></rect>'
            )
            base += value
        total_y = y0 - (base / top) * (y0 - y1)
        body.append(
            f'<text x="{x + width / 2:.1f}" y="{total_y - 4:.1f}" text-anchor="middle">'
            f"{_e(show(base))}</text>"
        )
        body.append(
            f'<text x="{x + width / 2:.1f}" y="{y0 + 18}" text-anchor="middle">{_e(name)}</text>'
        )
    return _svg(body, title)


def _lines(
    title: str,
    y_label: str,
    x_label: str,
    series: Mapping[str, tuple[FloatArray, FloatArray]],
    x_ticks: Sequence[tuple[float, str]],
    x_range: tuple[float, float],
) -> str:
    """One polyline per policy; y in [0, 1], x mapped linearly from `x_range`."""
    body = _axes([(t, format_percent(t, 3)) for t in (0.0, 0.25, 0.5, 0.75, 1.0)], y_label)
    x0, x1, y0, y1 = _LEFT, _W - _RIGHT, _H - _BOTTOM, _TOP
    lo, hi = x_range
    span = hi - lo if hi > lo else 1.0

    def px(x: float) -> float:
        return x0 + (x - lo) / span * (x1 - x0)

    for x, label in x_ticks:
        body.append(f'<text x="{px(x):.1f}" y="{y0 + 16}" text-anchor="middle">{_e(label)}</text>')
    body.append(
        f'<text x="{(x0 + x1) / 2:.1f}" y="{_H - 8}" text-anchor="middle">{_e(x_label)}</text>'
    )
    for k, (name, (xs, ys)) in enumerate(series.items()):
        points = " ".join(
            f"{px(float(x)):.1f},{y0 - float(y) * (y0 - y1):.1f}"
            for x, y in zip(xs, ys, strict=True)
        )
        colour = _colour(name)
        body.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
        )
        body.append(f'<text x="{x0 + 10 + 90 * k}" y="{y1 + 16}" fill="{colour}">{_e(name)}</text>')
    return _svg(body, title)


def _time_unit(seconds: float) -> tuple[str, float]:
    """The unit to chart times up to `seconds` in: (name, seconds per unit)."""
    for name, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= 2 * size:
            return name, size
    return "seconds", 1.0


def _response_chart(results: Mapping[str, PolicyResult]) -> str:
    unit, size = _time_unit(max(r.metrics.mean_response_s for r in results.values()))
    groups = []
    for name, r in results.items():
        m = r.metrics
        wait, run = m.mean_wait_s / size, (m.mean_response_s - m.mean_wait_s) / size
        groups.append(
            (name, [(wait, "#bbbbbb", "mean wait"), (run, _colour(name), "mean run time")])
        )
    return _bars(
        "Mean response time: mean wait (grey) and mean run time (colour)",
        unit,
        groups,
        lambda x: format_number(x, 3),
    )


def _response_distribution(results: Mapping[str, PolicyResult]) -> str:
    all_responses = [r.schedule.end - r.schedule.submit for r in results.values()]
    low = max(1.0, min(float(np.min(x)) for x in all_responses))
    high = max(low * 10, *(float(np.max(x)) for x in all_responses))
    grid = np.logspace(math.log10(low), math.log10(high), CDF_POINTS)
    series = {}
    for (name, _), responses in zip(results.items(), all_responses, strict=True):
        done = np.searchsorted(np.sort(responses), grid, side="right") / len(responses)
        series[name] = (np.log10(grid), done)
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    ticks = [(float(d), duration(10.0**d)) for d in decades if low <= 10.0**d <= high]
    return _lines(
        "Share of jobs whose response time is at most t",
        "jobs done",
        "response time t (log scale)",
        series,
        ticks,
        (math.log10(low), math.log10(high)),
    )


def _usage_chart(results: Mapping[str, PolicyResult]) -> str:
    series = {}
    t0 = min(float(np.min(r.schedule.submit)) for r in results.values())
    t1 = max(float(np.max(r.schedule.end)) for r in results.values())
    for name, r in results.items():
        edges, share = usage_over_time(r.schedule, USAGE_BINS)
        mids = (edges[:-1] + edges[1:]) / 2
        series[name] = ((mids - t0) / 86400.0, share)
    days = (t1 - t0) / 86400.0
    ticks = [(float(d), f"{d:g}") for d in _nice_ticks(days, 6) if d <= days]
    return _lines(
        "Busy share of the machine over time",
        "utilization",
        "days since the first submit",
        series,
        ticks,
        (0.0, days),
    )


def _slowdown_chart(results: Mapping[str, PolicyResult]) -> str:
    groups = [
        (name, [(r.metrics.mean_bounded_slowdown, _colour(name), "mean bounded slowdown")])
        for name, r in results.items()
    ]
    return _bars("Mean bounded slowdown (10 s bound)", "slowdown", groups, format_number)


def _utilization_chart(results: Mapping[str, PolicyResult]) -> str:
    groups = [
        (name, [(r.metrics.utilization, _colour(name), "utilization")])
        for name, r in results.items()
    ]
    return _bars(
        "Utilization over the makespan",
        "utilization",
        groups,
        lambda x: format_percent(x, 3),
    )


def _table(results: Mapping[str, PolicyResult]) -> str:
    head = "<th></th>" + "".join(
        f'<th style="color:{_colour(name)}">{_e(name)}</th>' for name in results
    )
    rows = []
    for label, *cells in table_rows(results):
        tds = "".join(f"<td>{_e(c)}</td>" for c in cells)
        rows.append(f"<tr><th>{_e(label)}</th>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


_STYLE = """
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 0.3em 0.8em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child { text-align: left; }
figure { margin: 1.5em 0; }
figcaption { font-size: 0.9em; color: #555; }
"""


def render_report(
    trace: SwfTrace,
    experiment: Experiment,
    results: Mapping[str, PolicyResult],
    config: str,
) -> str:
    """The whole page as a string."""
    sentences = "".join(f"<p>{_e(s)}</p>" for s in setup_sentences(trace, experiment, config))
    adaptive = results.get("adaptive")
    rules = ""
    if adaptive is not None and adaptive.rules:
        listed = ", ".join(f"{rule} {count:,}" for rule, count in adaptive.rules.items())
        rules = f"<p>Adaptive decisions by rule: {_e(listed)}.</p>"
    charts = [
        _response_chart(results),
        _response_distribution(results),
        _usage_chart(results),
        _utilization_chart(results),
        _slowdown_chart(results),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>adaptalloc simulate: {_e(trace.source)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>What-if simulation</h1>{sentences}{_table(results)}"
        "<p>In parentheses: the change against rigid (the trace as submitted).</p>"
        f"{rules}{''.join(charts)}</body></html>\n"
    )


def write_report(
    directory: Path,
    trace: SwfTrace,
    experiment: Experiment,
    results: Mapping[str, PolicyResult],
    config: str,
) -> Path:
    """Write directory/index.html (creating the directory); InputError if it cannot."""
    path = directory / "index.html"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(render_report(trace, experiment, results, config), encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot write {printable(str(path))}: {exc.strerror or type(exc).__name__}"
        ) from exc
    return path
