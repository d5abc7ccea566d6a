"""The report's live-accuracy section: scores (plugin/store/scores.py) to figures and to the
sentences the terminal and the HTML pages print. Pure.

Every figure is plugin/learning/accuracy.py's, so that the report, the metrics and the
doctor agree: over every kept score, and over the rolling window that the metrics export
and the doctor judges. The plot shows the newest `MAX_POINTS` jobs. "What sizing would have
bought" is a model estimate wherever it is printed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from plugin.learning import accuracy
from plugin.report.model import AccuracyPoint, AccuracySection
from plugin.report.numbers import format_number, format_percent, format_runtime
from plugin.store.scores import ADVISE, Score

__all__ = [
    "MAX_POINTS",
    "accuracy_section",
    "bought_sentence",
    "drift_sentence",
    "section_sentences",
    "summary_sentence",
]

#: Jobs drawn in a predicted-against-actual plot (the newest); the figures count them all.
MAX_POINTS = 2000


def _point(s: Score) -> AccuracyPoint:
    return AccuracyPoint(
        app=s.app,
        job_id=s.job_id,
        nodes=s.nodes,
        predicted_s=s.predicted_s,
        actual_s=s.runtime_s,
        lower_s=s.lower_s,
        upper_s=s.upper_s,
        where=s.where,
        censored=s.censored,
        mode=s.mode,
    )


def accuracy_section(
    scores: Sequence[Score], now: float | None = None, fleet: bool = False
) -> AccuracySection | None:
    """The section of one app's scores, or of the fleet's (`fleet`: its window is the fleet's
    and each app's window is listed); None without scores. `now`: where the rolling window
    ends (None: at the newest job's end)."""
    if not scores:
        return None
    at = max(s.end_time for s in scores) if now is None else now
    size = accuracy.FLEET_WINDOW_JOBS if fleet else accuracy.WINDOW_JOBS
    latest, _ = accuracy.window(scores, at, size)
    newest = sorted(scores, key=lambda s: (-s.end_time, -s.job_id))[:MAX_POINTS]
    apps: tuple[tuple[str, accuracy.Summary], ...] = ()
    if fleet:
        windows = {
            app: accuracy.summarize(accuracy.window(mine, at)[0])
            for app, mine in accuracy.by_app(scores).items()
        }
        apps = tuple(sorted(windows.items(), key=lambda kv: (-kv[1].jobs, kv[0])))
    return AccuracySection(
        kept=accuracy.summarize(scores),
        window=accuracy.summarize(latest),
        points=tuple(_point(s) for s in newest),
        drift=None if fleet else accuracy.drift(scores, at),
        apps=apps,
        bought=tuple(accuracy.bought(scores).values()),
        window_days=accuracy.WINDOW_DAYS,
        window_jobs=size,
    )


# --- sentences (the terminal and the HTML pages print the same) ---------------------------


def _pct(value: float | None) -> str:
    return "—" if value is None else format_percent(value, 3)


def summary_sentence(label: str, s: accuracy.Summary) -> str:
    """One summary in a sentence: errors, bias, coverage, with the counts behind them."""
    if not s.jobs:
        return f"{label}: no scored jobs."
    text = f"{label}: {s.jobs:,} jobs scored"
    if s.censored:
        text += f" ({s.censored:,} stopped at a limit or preempted: lower bounds)"
    if s.error_median is not None and s.bias is not None:
        direction = "longer" if s.bias >= 0 else "shorter"
        text += (
            f"; median error {_pct(s.error_median)}, 90th percentile {_pct(s.error_p90)}; runs "
            f"took {format_percent(abs(s.bias), 3)} {direction} than predicted (geometric mean)"
        )
    if s.coverage is not None:
        text += (
            f"; {_pct(s.coverage)} of {s.judged:,} inside the 90% interval ({s.above:,} above, "
            f"{s.below:,} below)"
        )
    return text + "."


def drift_sentence(section: AccuracySection) -> str:
    """The app's window against the jobs before it, when its error grew ("" otherwise)."""
    d = section.drift
    if d is None or not d.grew:
        return ""
    return (
        f"The error grew: median {_pct(d.previous.error_median)} over the "
        f"{d.previous.exact:,} jobs before the window, {_pct(d.latest.error_median)} over the "
        f"{d.latest.exact:,} in it (one-sided Mann-Whitney p = {d.p_value:.2g})."
    )


def _hours(value: float) -> str:
    return f"{format_number(value)} node-hours"


def _span(value: accuracy.Interval, unit: Callable[[float], str]) -> str:
    """``3.8 node-hours (90%: 3.2 to 4.6)``."""
    low, high = (unit(v).split(" ")[0] for v in (value.low, value.high))
    return f"{unit(value.estimate)} (90%: {low} to {high})"


def _left_out(count: int) -> str:
    if not count:
        return ""
    runs = (
        "run stopped at a limit or preempted is"
        if count == 1
        else ("runs stopped at a limit or preempted are")
    )
    return f" {count:,} {runs} left out: such a runtime is only a lower bound."


def bought_sentence(b: accuracy.Bought) -> str:
    """What sizing would have bought (advise) or bought (enforce), labelled as estimates."""
    if not b.jobs:
        return f"{b.mode}: only censored runs ({b.censored:,}), nothing to estimate."
    hours = _span(b.advised_node_hours, _hours)
    runtime = _span(b.advised_runtime_s, format_runtime)
    if b.mode == ADVISE:
        return (
            f"What sizing would have bought (advise mode; model estimates from the curve that "
            f"decided): over {b.jobs:,} jobs, {b.moved:,} of which Slurm ran on another size "
            f"than advised, the advised sizes would have used {hours}, against "
            f"{_hours(b.realized_node_hours)} used at the sizes Slurm chose: "
            f"{_span(b.saved_node_hours, _hours)} saved. At the sizes Slurm chose the curve "
            f"predicted {_hours(b.predicted_node_hours.estimate)}: its bias on these jobs. "
            f"Mean runtime at the advised sizes {runtime}, measured at Slurm's "
            f"{format_runtime(b.realized_runtime_s)}.{_left_out(b.censored)}"
        )
    return (
        f"Sized by adaptalloc (enforce mode): over {b.jobs:,} jobs the curve that decided "
        f"predicted {hours} at the decided sizes (a model estimate); they used "
        f"{_hours(b.realized_node_hours)}. Mean runtime predicted {runtime}, measured "
        f"{format_runtime(b.realized_runtime_s)}.{_left_out(b.censored)}"
    )


def section_sentences(section: AccuracySection, what: str) -> list[str]:
    """The section in sentences: the kept scores, the window, drift, what sizing bought."""
    lines = [
        summary_sentence(f"All kept scores of {what}", section.kept),
        summary_sentence(
            f"Rolling window (the newest {section.window_jobs:,} jobs of the last "
            f"{section.window_days:g} days)",
            section.window,
        ),
    ]
    grew = drift_sentence(section)
    if grew:
        lines.append(grew)
    lines += [bought_sentence(b) for b in section.bought]
    return lines
