"""Hand-written SVG plots of one app: speedup, efficiency, the histogram of chosen sizes, and
live accuracy (predicted against actual runtime of the finished jobs, log-log).

Why not matplotlib: a page needs three small line plots, and writing their SVG directly
costs well under a millisecond per plot against tens of milliseconds for a matplotlib
figure (tests/benchmarks/test_report_speed.py measures both), which matters for a fleet of
thousands of apps. The output is plain, reproducible text (no embedded dates, ids or
fonts), inlined into the page, and works offline.

Escaping: every piece of text in the SVG (labels, tooltips with job ids) goes through
`esc` (XML escaping of ``& < > " '``); numbers are formatted by this module. The plots are
returned as `markupsafe.Markup` only after that, so the HTML templates (autoescape on) can
inline them.

Colours are module constants so that the screenshot test can look for them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

from plugin.errors import printable
from plugin.report.model import AccuracyPoint, AppReport

__all__ = [
    "ANOMALY_COLOUR",
    "BAND_COLOUR",
    "CURVE_COLOUR",
    "HISTOGRAM_COLOUR",
    "INSIDE_COLOUR",
    "OBSERVED_COLOUR",
    "OUTSIDE_COLOUR",
    "PWS_COLOUR",
    "USEFUL_COLOUR",
    "accuracy_plot",
    "efficiency_plot",
    "esc",
    "histogram_plot",
    "nice_ticks",
    "speedup_plot",
]

CURVE_COLOUR = "#0066cc"
BAND_COLOUR = "#0066cc"
BAND_OPACITY = 0.16
OBSERVED_COLOUR = "#e66100"
ANOMALY_COLOUR = "#c0003c"
PWS_COLOUR = "#7b3294"
USEFUL_COLOUR = "#1b7837"
NEXT_COLOUR = "#555555"
IDEAL_COLOUR = "#9a9a9a"
HISTOGRAM_COLOUR = "#2a9d8f"
GRID_COLOUR = "#e6e6e6"
AXIS_COLOUR = "#444444"
#: Live accuracy: a job inside its 90% interval, outside it, or censored inside it (unknown).
INSIDE_COLOUR = "#0066cc"
OUTSIDE_COLOUR = "#e66100"
UNKNOWN_COLOUR = "#9a9a9a"
#: Jobs up to which each gets its interval drawn as a whisker (more would be a smear).
MAX_WHISKERS = 300

WIDTH, HEIGHT = 600, 360
LEFT, RIGHT, TOP, BOTTOM = 60, 18, 44, 46
#: Distinct chosen sizes shown as their own bars; more are binned by powers of two.
MAX_BARS = 24
MAX_BAR_WIDTH = 56.0
#: Pixel coordinates are clamped to this, so that values far off the plot stay short text.
_FAR = 10_000.0


def esc(text: str) -> str:
    """Text for SVG content and attribute values: control characters shown as escapes
    (plugin.errors.printable; XML does not allow most of them), then XML-escaped."""
    return escape(printable(text), quote=True)


def _f(value: float) -> str:
    """A pixel coordinate, one decimal, clamped."""
    return f"{max(-_FAR, min(_FAR, value)):.1f}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 × 10^k apart) covering [lo, hi], about `count` of them."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1.0, 2.0, 5.0, 10.0) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    k = 0
    while first + k * step <= hi + step * 1e-9:
        ticks.append(round(first + k * step, 12))
        k += 1
    return ticks


def _tick_label(value: float) -> str:
    return f"{value:,.0f}" if abs(value - round(value)) < 1e-9 else f"{value:,.4g}"


@dataclass(frozen=True)
class Frame:
    """The plot area and its scales: x logarithmic (sizes), y linear."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    clip_id: str

    @property
    def width(self) -> float:
        return WIDTH - LEFT - RIGHT

    @property
    def height(self) -> float:
        return HEIGHT - TOP - BOTTOM

    def x(self, n: float) -> float:
        span = math.log(self.x_hi) - math.log(self.x_lo)
        return LEFT + (math.log(n) - math.log(self.x_lo)) / span * self.width

    def y(self, v: float) -> float:
        return TOP + (1.0 - (v - self.y_lo) / (self.y_hi - self.y_lo)) * self.height

    def points(self, xs: Iterable[float], ys: Iterable[float]) -> str:
        return " ".join(
            f"{_f(self.x(a))},{_f(self.y(b))}"
            for a, b in zip(xs, ys, strict=True)
            if math.isfinite(b) and a > 0
        )


def _x_ticks(lo: float, hi: float) -> list[int]:
    """Powers of two within [lo, hi], thinned to at most 11."""
    ticks = [1 << k for k in range(31) if lo <= (1 << k) <= hi]
    step = max(1, math.ceil(len(ticks) / 11))
    return ticks[::step]


def _open(title: str, description: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{esc(title)}" '
        'font-family="sans-serif" font-size="11">',
        f"<title>{esc(title)}</title><desc>{esc(description)}</desc>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
    ]


def _axes(frame: Frame, y_label: str, y_format: str = "number") -> list[str]:
    out = [
        f'<clipPath id="{esc(frame.clip_id)}"><rect x="{LEFT}" y="{TOP}" '
        f'width="{_f(frame.width)}" height="{_f(frame.height)}"/></clipPath>'
    ]
    for tick in _x_ticks(frame.x_lo, frame.x_hi):
        x = _f(frame.x(tick))
        out.append(
            f'<line x1="{x}" y1="{TOP}" x2="{x}" y2="{_f(TOP + frame.height)}" '
            f'stroke="{GRID_COLOUR}"/>'
        )
        out.append(
            f'<text x="{x}" y="{_f(TOP + frame.height + 15)}" text-anchor="middle" '
            f'fill="{AXIS_COLOUR}">{tick:,}</text>'
        )
    for value in nice_ticks(frame.y_lo, frame.y_hi):
        y = _f(frame.y(value))
        label = f"{value * 100:.0f}%" if y_format == "percent" else _tick_label(value)
        out.append(
            f'<line x1="{LEFT}" y1="{y}" x2="{_f(LEFT + frame.width)}" y2="{y}" '
            f'stroke="{GRID_COLOUR}"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{y}" text-anchor="end" dominant-baseline="middle" '
            f'fill="{AXIS_COLOUR}">{esc(label)}</text>'
        )
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{_f(frame.width)}" height="{_f(frame.height)}" '
        f'fill="none" stroke="{AXIS_COLOUR}"/>'
    )
    out.append(
        f'<text x="{_f(LEFT + frame.width / 2)}" y="{HEIGHT - 8}" text-anchor="middle" '
        f'fill="{AXIS_COLOUR}">nodes (log scale)</text>'
    )
    out.append(
        f'<text x="14" y="{_f(TOP + frame.height / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_f(TOP + frame.height / 2)})" '
        f'fill="{AXIS_COLOUR}">{esc(y_label)}</text>'
    )
    return out


def _legend(items: Sequence[tuple[str, str]], y: float = 12) -> list[str]:
    """A row of (swatch markup, label) above the plot, at height `y`."""
    out = []
    x = float(LEFT)
    for swatch, label in items:
        out.append(f'<g transform="translate({_f(x)},{_f(y)})">{swatch}')
        out.append(f'<text x="20" y="4" dominant-baseline="middle">{esc(label)}</text></g>')
        x += 28 + 6.2 * len(label)
    return out


def _line_swatch(colour: str, dash: str = "", width: float = 2.5) -> str:
    dashing = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<line x1="0" y1="4" x2="16" y2="4" stroke="{colour}" stroke-width="{width}"{dashing}/>'


def _marker(frame: Frame, n: int, value: float, anomaly: bool, tooltip: str) -> str:
    x, y = _f(frame.x(n)), _f(frame.y(value))
    tip = f"<title>{esc(tooltip)}</title>"
    if not anomaly:
        return (
            f'<circle cx="{x}" cy="{y}" r="4" fill="{OBSERVED_COLOUR}" '
            f'stroke="#ffffff" stroke-width="0.8">{tip}</circle>'
        )
    return (
        f'<g stroke="{ANOMALY_COLOUR}" stroke-width="2"><path d="M{x} {y}m-4 -4l8 8m0 -8l-8 8"/>'
        f'<circle cx="{x}" cy="{y}" r="6" fill="none">{tip}</circle></g>'
    )


def _size_lines(frame: Frame, report: AppReport) -> tuple[list[str], list[tuple[str, str]]]:
    """Vertical lines at the processor working set, the maximum useful size and the next run."""
    c = report.curve
    lines: list[tuple[int | None, str, str, str]] = []
    if c is not None:
        lines.append((c.pws_n, PWS_COLOUR, "6,4", "processor working set"))
        lines.append((c.max_useful_n, USEFUL_COLOUR, "2,3", "max useful size"))
    lines.append((report.suggest_n, NEXT_COLOUR, "1,4", "suggested next run"))
    out: list[str] = []
    legend: list[tuple[str, str]] = []
    for n, colour, dash, label in lines:
        if n is None or not frame.x_lo <= n <= frame.x_hi:
            continue
        x = _f(frame.x(n))
        out.append(
            f'<line x1="{x}" y1="{TOP}" x2="{x}" y2="{_f(TOP + frame.height)}" '
            f'stroke="{colour}" stroke-width="1.6" stroke-dasharray="{dash}">'
            f"<title>{esc(label)}: {n:,} nodes</title></line>"
        )
        legend.append((_line_swatch(colour, dash, 1.6), f"{label} {n:,}"))
    return out, legend


def _curve_plot(report: AppReport, which: str, clip_id: str) -> Markup:
    """The speedup or the efficiency plot (which = "speedup" or "efficiency")."""
    grid = report.grid
    if grid is None:
        return Markup("")
    efficiency = which == "efficiency"
    curve = grid.efficiency if efficiency else grid.speedup
    observed = [p.efficiency if efficiency else p.speedup for p in report.points]
    top = max([v for v in (*curve, *observed) if math.isfinite(v)], default=1.0)
    # Efficiency above 250% is an outlier's, not the curve's: it is drawn at the edge.
    y_hi = max(1.05, min(top * 1.08, 2.5)) if efficiency else top * 1.15
    x_hi = float(max(grid.n[-1], 2))
    frame = Frame(1.0, x_hi, 0.0, y_hi, clip_id)
    title = f"{which.capitalize()} of {report.app}"
    out = _open(title, f"{which} against nodes: the curve, the runs and the sizes that matter")
    out += _axes(
        frame,
        "efficiency" if efficiency else "speedup (T(1)/T(n))",
        "percent" if efficiency else "number",
    )
    body = [f'<g clip-path="url(#{esc(clip_id)})">']
    legend: list[tuple[str, str]] = []
    band = report.band
    if band is not None and band.n:
        lo = band.efficiency_lo if efficiency else band.speedup_lo
        hi = band.efficiency_hi if efficiency else band.speedup_hi
        polygon = frame.points(band.n, hi) + " " + frame.points(band.n[::-1], lo[::-1])
        body.append(
            f'<polygon points="{polygon}" fill="{BAND_COLOUR}" fill-opacity="{BAND_OPACITY}" '
            'stroke="none"><title>ADEPT envelope: curves explaining every run within '
            f"δ = {band.delta:.1%}</title></polygon>"
        )
        legend.append(
            (
                f'<rect x="0" y="-1" width="16" height="10" fill="{BAND_COLOUR}" '
                f'fill-opacity="{BAND_OPACITY}"/>',
                "envelope",
            )
        )
    ideal = [1.0] * len(grid.n) if efficiency else [float(k) for k in grid.n]
    body.append(
        f'<polyline points="{frame.points(grid.n, ideal)}" fill="none" stroke="{IDEAL_COLOUR}" '
        'stroke-width="1.2" stroke-dasharray="3,3"/>'
    )
    legend.append((_line_swatch(IDEAL_COLOUR, "3,3", 1.2), "ideal"))
    body.append(
        f'<polyline points="{frame.points(grid.n, curve)}" fill="none" stroke="{CURVE_COLOUR}" '
        'stroke-width="2.5" stroke-linejoin="round"/>'
    )
    legend.insert(0, (_line_swatch(CURVE_COLOUR), "curve"))
    lines, line_legend = _size_lines(frame, report)
    body += lines
    for p in report.points:
        value = p.efficiency if efficiency else p.speedup
        shown = f"{value:.1%}" if efficiency else f"{value:,.3g}"
        body.append(
            _marker(
                frame,
                p.n,
                min(value, frame.y_hi),  # an outlier above the plot sits on its edge
                p.anomaly,
                f"job {p.job_id}: {p.n:,} nodes, {p.runtime_s:,.4g} s, {which} {shown}"
                + (" (anomalous)" if p.anomaly else ""),
            )
        )
    if report.points:
        legend.append((f'<circle cx="8" cy="4" r="4" fill="{OBSERVED_COLOUR}"/>', "runs"))
    if any(p.anomaly for p in report.points):
        legend.append(
            (
                f'<path d="M4 0l8 8m0 -8l-8 8" stroke="{ANOMALY_COLOUR}" stroke-width="2"/>',
                "anomalous",
            )
        )
    body.append("</g>")
    out += body
    out += _legend(legend)
    out += _legend(line_legend, 28)
    out.append("</svg>")
    return Markup("\n".join(out))  # noqa: S704 - every text above went through esc()


def speedup_plot(report: AppReport, clip_id: str = "clip-speedup") -> Markup:
    """Speedup against nodes: envelope band, ideal line, curve, runs, key sizes."""
    return _curve_plot(report, "speedup", clip_id)


def efficiency_plot(report: AppReport, clip_id: str = "clip-efficiency") -> Markup:
    """Efficiency (speedup / n) against nodes, with the same elements."""
    return _curve_plot(report, "efficiency", clip_id)


def _bins(sizes: Sequence[tuple[int, int]]) -> list[tuple[str, int, str]]:
    """(label, count, tooltip) per bar: each size, or power-of-two bins when there are many."""
    if len(sizes) <= MAX_BARS:
        return [(f"{n:,}", count, f"{count:,} jobs on {n:,} nodes") for n, count in sizes]
    bins: dict[int, int] = {}
    for n, count in sizes:
        k = n.bit_length() - 1
        bins[k] = bins.get(k, 0) + count
    return [
        (
            f"{1 << k:,}+",
            count,
            f"{count:,} jobs on {1 << k:,}-{(1 << (k + 1)) - 1:,} nodes",
        )
        for k, count in sorted(bins.items())
    ]


def histogram_plot(report: AppReport) -> Markup:
    """How many decided jobs got each size (empty markup when there are no decisions)."""
    sizes = report.decision_summary.chosen_sizes
    if not sizes:
        return Markup("")
    bars = _bins(sizes)
    title = f"Chosen sizes of {report.app}"
    out = _open(title, "how many decided jobs ran on each number of nodes")
    width = WIDTH - LEFT - RIGHT
    height = HEIGHT - TOP - BOTTOM
    top = max(count for _, count, _ in bars)
    ticks = [t for t in nice_ticks(0.0, top * 1.1) if t == int(t)]
    y_hi = max(ticks[-1] if ticks else 1.0, top * 1.1)
    for tick in ticks:
        y = _f(TOP + (1 - tick / y_hi) * height)
        out.append(
            f'<line x1="{LEFT}" y1="{y}" x2="{_f(LEFT + width)}" y2="{y}" stroke="{GRID_COLOUR}"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{y}" text-anchor="end" dominant-baseline="middle" '
            f'fill="{AXIS_COLOUR}">{tick:,.0f}</text>'
        )
    slot = width / len(bars)
    for i, (label, count, tip) in enumerate(bars):
        h = count / y_hi * height
        bar = min(slot * 0.7, MAX_BAR_WIDTH)
        centre = LEFT + (i + 0.5) * slot
        out.append(
            f'<rect x="{_f(centre - bar / 2)}" y="{_f(TOP + height - h)}" width="{_f(bar)}" '
            f'height="{_f(h)}" fill="{HISTOGRAM_COLOUR}"><title>{esc(tip)}</title></rect>'
        )
        out.append(
            f'<text x="{_f(centre)}" y="{_f(TOP + height + 15)}" text-anchor="middle" '
            f'fill="{AXIS_COLOUR}">{esc(label)}</text>'
        )
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{_f(width)}" height="{_f(height)}" fill="none" '
        f'stroke="{AXIS_COLOUR}"/>'
    )
    out.append(
        f'<text x="{_f(LEFT + width / 2)}" y="{HEIGHT - 8}" text-anchor="middle" '
        f'fill="{AXIS_COLOUR}">chosen nodes</text>'
    )
    out.append(
        f'<text x="14" y="{_f(TOP + height / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_f(TOP + height / 2)})" fill="{AXIS_COLOUR}">jobs</text>'
    )
    out += _legend(
        [
            (
                f'<rect x="0" y="-1" width="16" height="10" fill="{HISTOGRAM_COLOUR}"/>',
                f"{report.decision_summary.count:,} decisions",
            )
        ]
    )
    out.append("</svg>")
    return Markup("\n".join(out))  # noqa: S704 - every text above went through esc()


def _log_ticks(lo: float, hi: float) -> list[float]:
    """1, 2 and 5 × 10^k within [lo, hi]; decades only when those are more than eight."""
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    every = [m * 10.0**k for k in range(first, last + 1) for m in (1.0, 2.0, 5.0)]
    ticks = [t for t in every if lo <= t <= hi]
    if len(ticks) > 8:
        ticks = [t for t in ticks if math.isclose(10.0 ** round(math.log10(t)), t)]
    return ticks or [lo]


@dataclass(frozen=True)
class LogFrame:
    """The plot area with both axes logarithmic over the same range (so y = x is the
    diagonal's direction on both)."""

    lo: float
    hi: float

    @property
    def width(self) -> float:
        return WIDTH - LEFT - RIGHT

    @property
    def height(self) -> float:
        return HEIGHT - TOP - BOTTOM

    def _share(self, v: float) -> float:
        return (math.log(v) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))

    def x(self, v: float) -> float:
        return LEFT + self._share(v) * self.width

    def y(self, v: float) -> float:
        return TOP + (1.0 - self._share(v)) * self.height


def _accuracy_axes(frame: LogFrame, clip_id: str) -> list[str]:
    out = [
        f'<clipPath id="{esc(clip_id)}"><rect x="{LEFT}" y="{TOP}" '
        f'width="{_f(frame.width)}" height="{_f(frame.height)}"/></clipPath>'
    ]
    for tick in _log_ticks(frame.lo, frame.hi):
        x, y, label = _f(frame.x(tick)), _f(frame.y(tick)), esc(_tick_label(tick))
        out.append(
            f'<line x1="{x}" y1="{TOP}" x2="{x}" y2="{_f(TOP + frame.height)}" '
            f'stroke="{GRID_COLOUR}"/><line x1="{LEFT}" y1="{y}" x2="{_f(LEFT + frame.width)}" '
            f'y2="{y}" stroke="{GRID_COLOUR}"/>'
        )
        out.append(
            f'<text x="{x}" y="{_f(TOP + frame.height + 15)}" text-anchor="middle" '
            f'fill="{AXIS_COLOUR}">{label}</text><text x="{LEFT - 6}" y="{y}" '
            f'text-anchor="end" dominant-baseline="middle" fill="{AXIS_COLOUR}">{label}</text>'
        )
    middle = _f(TOP + frame.height / 2)
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{_f(frame.width)}" height="{_f(frame.height)}" '
        f'fill="none" stroke="{AXIS_COLOUR}"/>'
        f'<text x="{_f(LEFT + frame.width / 2)}" y="{HEIGHT - 8}" text-anchor="middle" '
        f'fill="{AXIS_COLOUR}">predicted runtime, s (log scale)</text>'
        f'<text x="14" y="{middle}" text-anchor="middle" transform="rotate(-90 14 {middle})" '
        f'fill="{AXIS_COLOUR}">actual runtime, s (log scale)</text>'
    )
    return out


def _accuracy_marker(frame: LogFrame, p: AccuracyPoint) -> str:
    colour = {"inside": INSIDE_COLOUR, "unknown": UNKNOWN_COLOUR}.get(p.where, OUTSIDE_COLOUR)
    x, y = _f(frame.x(p.predicted_s)), _f(frame.y(p.actual_s))
    tip = (
        f"job {p.job_id} ({p.app}, {p.mode}) on {p.nodes:,} nodes: predicted "
        f"{p.predicted_s:,.4g} s (90%: {p.lower_s:,.4g}–{p.upper_s:,.4g}), "
        f"{'at least ' if p.censored else ''}{p.actual_s:,.4g} s: {p.where}"
    )
    if p.censored:  # a lower bound: a triangle pointing up
        return (
            f'<path d="M{x} {y}m0 -5l4.5 8h-9z" fill="none" stroke="{colour}" '
            f'stroke-width="1.5"><title>{esc(tip)}</title></path>'
        )
    return (
        f'<circle cx="{x}" cy="{y}" r="3.5" fill="{colour}" fill-opacity="0.8" stroke="#ffffff" '
        f'stroke-width="0.6"><title>{esc(tip)}</title></circle>'
    )


def accuracy_plot(
    points: Sequence[AccuracyPoint], title: str, clip_id: str = "clip-accuracy"
) -> Markup:
    """Actual against predicted runtime of scored jobs, log-log: the line y = x, the band of
    the median 90% interval (each job's own as a whisker when there are few), and each job
    coloured by where it fell (a censored run is a triangle: its runtime a lower bound).
    Empty markup without points."""
    if not points:
        return Markup("")
    values = [v for p in points for v in (p.predicted_s, p.actual_s, p.lower_s, p.upper_s)]
    positive = [v for v in values if v > 0 and math.isfinite(v)] or [1.0]
    frame = LogFrame(min(positive) / 1.3, max(positive) * 1.3)
    inside = sum(1 for p in points if p.where == "inside")
    judged = sum(1 for p in points if p.where != "unknown")
    out = _open(title, "actual against predicted runtime of finished jobs, log-log")
    out += _accuracy_axes(frame, clip_id)
    body = [f'<g clip-path="url(#{esc(clip_id)})">']
    low = sorted(p.lower_s / p.predicted_s for p in points)[len(points) // 2]
    high = sorted(p.upper_s / p.predicted_s for p in points)[len(points) // 2]
    ends = (frame.lo, frame.hi)
    band = " ".join(f"{_f(frame.x(v))},{_f(frame.y(v * high))}" for v in ends)
    band += " " + " ".join(f"{_f(frame.x(v))},{_f(frame.y(v * low))}" for v in ends[::-1])
    body.append(
        f'<polygon points="{band}" fill="{BAND_COLOUR}" fill-opacity="{BAND_OPACITY}" '
        f'stroke="none"><title>the median 90% interval: {low:.3g}x to {high:.3g}x the '
        "prediction</title></polygon>"
    )
    diagonal = " ".join(f"{_f(frame.x(v))},{_f(frame.y(v))}" for v in ends)
    body.append(
        f'<polyline points="{diagonal}" fill="none" stroke="{IDEAL_COLOUR}" '
        'stroke-width="1.2" stroke-dasharray="3,3"/>'
    )
    if len(points) <= MAX_WHISKERS:
        for p in points:
            x = _f(frame.x(p.predicted_s))
            body.append(
                f'<line x1="{x}" y1="{_f(frame.y(p.lower_s))}" x2="{x}" '
                f'y2="{_f(frame.y(p.upper_s))}" stroke="{BAND_COLOUR}" stroke-opacity="0.35"/>'
            )
    body += [_accuracy_marker(frame, p) for p in points]
    body.append("</g>")
    out += body
    out += _legend(
        [
            (_line_swatch(IDEAL_COLOUR, "3,3", 1.2), "actual = predicted"),
            (
                f'<rect x="0" y="-1" width="16" height="10" fill="{BAND_COLOUR}" '
                f'fill-opacity="{BAND_OPACITY}"/>',
                "median 90% interval",
            ),
            (f'<circle cx="8" cy="4" r="4" fill="{INSIDE_COLOUR}"/>', f"inside {inside:,}"),
            (
                f'<circle cx="8" cy="4" r="4" fill="{OUTSIDE_COLOUR}"/>',
                f"outside {judged - inside:,}",
            ),
        ]
    )
    if any(p.censored for p in points):
        out += _legend(
            [
                (
                    f'<path d="M8 -1l4.5 8h-9z" fill="none" stroke="{UNKNOWN_COLOUR}"/>',
                    "stopped at a limit (at least this long)",
                )
            ],
            28,
        )
    out.append("</svg>")
    return Markup("\n".join(out))  # noqa: S704 - every text above went through esc()
