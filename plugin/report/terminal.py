"""The report in a terminal (rich): one app in detail, or the fleet as one table.

Every string that came from outside (app names, job ids, decision rules and reasons, notes)
goes through `plugin.errors.printable` and into a `rich.text.Text`, so that neither ANSI
escapes nor rich's own ``[markup]`` in a job name can change what the terminal shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from plugin.errors import printable
from plugin.report.accuracy import section_sentences
from plugin.report.model import (
    AccuracySection,
    AppReport,
    DecisionRow,
    FleetRow,
    JobGroup,
    SizeRow,
)
from plugin.report.numbers import format_number, format_percent, format_runtime

__all__ = ["render_accuracy", "render_app", "render_fleet", "render_fleet_accuracy", "stamp"]

_PROBLEM_WORDS = {
    "first_piece_only": "no knee",
    "high_fit_error": "fit error",
    "runner_up": "ambiguous",
    "mixed_sizes": "mixed sizes",
    "shape_misfit": "misfit beyond noise",
}
_ANOMALY_WORDS = {
    "point": "anomaly",
    "decline": "past the peak, not used",
    "ambiguous_final": "decline or one-off, not used",
}


def _t(text: str) -> Text:
    """Untrusted text as an inert rich Text."""
    return Text(printable(text))


def stamp(when: float | None, short: bool = False) -> str:
    """Local date and time (short: without the year), or an em dash."""
    if when is None or not math.isfinite(when) or when <= 0:
        return "—"
    return datetime.fromtimestamp(when).strftime("%m-%d %H:%M" if short else "%Y-%m-%d %H:%M")


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else format_number(value, digits)


def _pct(value: float | None) -> str:
    return "—" if value is None else format_percent(value, 3)


def _secs(value: float | None) -> str:
    return "—" if value is None else format_runtime(value)


def _nodes(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _say(console: Console, text: str | Text) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _efficiency_at(report: AppReport, n: int | None) -> str:
    grid = report.grid
    if n is None or grid is None or n not in grid.n:
        return ""
    return f" (efficiency {_pct(grid.efficiency[grid.n.index(n)])})"


def _heading(report: AppReport, console: Console) -> None:
    line = Text()
    line.append(_t(report.app))
    line.stylize("bold")
    line.append(
        f": {report.runs:,} runs, {format_number(report.node_hours)} node-hours, "
        f"last run {stamp(report.last_end)}"
    )
    _say(console, line)
    c = report.curve
    if report.cold_start is not None:
        _say(console, Text("Cold start: ").append(_t(report.cold_start.text())))
    if c is None:
        _say(console, Text("No curve: ").append(_t(report.curve_note)))
        return
    method = "ADEPT" if c.method == "adept" else c.method
    model = "Downey" if c.model == "downey" else c.model
    t1 = format_runtime(c.t1) + ("" if c.t1_known else " (estimated)")
    version = "" if c.version is None else f", version {c.version} fitted {stamp(c.fitted_at)}"
    _say(
        console,
        f"Curve: {model} ({method}), A = {format_number(c.A)}, σ = {format_number(c.sigma)}, "
        f"T(1) {t1}, fit error {format_percent(c.fit_error)}{version}; "
        + ("reliable." if c.reliable else "not reliable (see below)."),
    )
    if report.curve_note:
        _say(console, _t(report.curve_note))
    useful = (
        "unknown (the runs show no knee yet)"
        if c.max_useful_n is None
        else f"{c.max_useful_n:,} nodes{_efficiency_at(report, c.max_useful_n)}"
    )
    _say(
        console,
        f"Maximum useful size: {useful}. Processor working set: "
        f"{c.pws_n:,} nodes{_efficiency_at(report, c.pws_n)}.",
    )


def _note(row: SizeRow) -> str:
    if not row.anomaly:
        return ""
    words = _ANOMALY_WORDS.get(row.anomaly, row.anomaly)
    if row.anomaly == "point" and row.anomaly_weight is not None:
        return f"{words}, weight {row.anomaly_weight:.0%}"
    return words


def _sizes_table(report: AppReport, wide: bool) -> Table:
    """Per observed size; the min–max column only on a wide terminal (JSON and HTML have it)."""
    table = Table(box=box.SIMPLE_HEAD, title="runs per size against the curve", pad_edge=False)
    names = ["n", "runs", "observed", *(["min–max"] if wide else []), "predicted", "speedup"]
    for name in (*names, "eff.", "obs. eff."):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("note", overflow="fold")
    for row in report.sizes:
        spread = (
            ""
            if row.runs == 1
            else f"{format_number(row.runtime_min)}–{format_number(row.runtime_max)}"
        )
        table.add_row(
            f"{row.n:,}",
            f"{row.runs:,}",
            format_runtime(row.runtime_mean),
            *([spread] if wide else []),
            _secs(row.predicted_runtime),
            _num(row.speedup),
            _pct(row.efficiency),
            _pct(row.observed_efficiency),
            _note(row),
        )
    return table


def _diagnostics(report: AppReport, console: Console) -> None:
    for p in report.patterns:
        if p.kind == "stepwise":
            spans = "; ".join(f"{ph[0]:,}-{ph[-1]:,}" for ph in p.phases if ph)
            _say(console, f"Stepwise speedup: each phase has its own curve ({spans} nodes).")
        elif p.kind == "optimized_sizes":
            rule = (p.feasible or "special sizes").replace("_", " ")
            _say(console, f"Runs markedly better on {rule}: those are the sizes to use.")
    for w in report.warnings:
        nxt = "" if w.suggest_n is None else f" Suggested next run: {w.suggest_n:,} nodes."
        _say(console, Text("Warning: ").append(_t(w.action)).append(nxt))


def _resize_text(d: DecisionRow) -> str:
    """``4-64 → 32``: the requested range and the chosen size, or ``4-64 → 4-24`` for a
    narrowed range ("as is": released as submitted)."""
    requested = (
        "?"
        if d.min_nodes is None and d.max_nodes is None
        else f"{_nodes(d.min_nodes)}-{_nodes(d.max_nodes)}"
    )
    if d.chosen is None:
        return f"{requested} → as is"
    upto = "" if d.chosen_upto is None else f"-{d.chosen_upto:,}"
    return f"{requested} → {d.chosen:,}{upto}"


def _short_pct(value: float | None) -> str:
    return "—" if value is None else format_percent(value, 2)


def _decisions_table(rows: Sequence[DecisionRow]) -> Table:
    """The newest decisions in 80 columns: when, job, range → size, rule, limit, efficiency."""
    table = Table(box=box.SIMPLE_HEAD, title=f"newest {len(rows):,} decisions", pad_edge=False)
    table.add_column("when", no_wrap=True)
    table.add_column("job", no_wrap=True, overflow="ellipsis", max_width=12)
    table.add_column("nodes", justify="right", no_wrap=True)
    table.add_column("rule", no_wrap=True, overflow="ellipsis", max_width=14)
    table.add_column("limit", justify="right", no_wrap=True)
    table.add_column("eff. chosen/max", justify="right", no_wrap=True)
    for d in rows:
        eff = (
            f"{_short_pct(d.efficiency_chosen)}/{_short_pct(d.efficiency_max)}"
            if d.efficiency_chosen is not None or d.efficiency_max is not None
            else "—"
        )
        table.add_row(
            stamp(d.time, short=True),
            _t(d.job_id),
            _resize_text(d),
            _t(d.rule),
            "—" if d.time_limit_min is None else f"{d.time_limit_min:,}m",
            eff,
        )
    return table


def decision_sentence(report: AppReport) -> str:
    """The decision summary in one or two sentences (model estimates named as such)."""
    s = report.decision_summary
    if not s.count:
        return "No decisions recorded for this app."
    rules = ", ".join(f"{printable(rule)} {count:,}" for rule, count in s.by_rule)
    ranged = f", {s.ranged:,} with a narrowed range" if s.ranged else ""
    text = (
        f"{s.count:,} decisions ({s.as_submitted:,} released as submitted{ranged}); rules: {rules}."
    )
    if s.estimated and s.node_hours_saved is not None and s.node_hours_max:
        share = s.node_hours_saved / s.node_hours_max
        text += (
            f" Model estimates from the current curve, over {s.estimated:,} jobs: mean "
            f"efficiency {_pct(s.mean_efficiency_chosen)} at the chosen sizes against "
            f"{_pct(s.mean_efficiency_max)} at the requested maximum; "
            f"{format_number(s.node_hours_saved)} node-hours ({format_percent(share)}) saved "
            "against running each job at its requested maximum."
        )
    return text


def guard_sentence(report: AppReport) -> str:
    """The kill guard's and the learner's counts in one sentence."""
    g = report.guard
    text = (
        f"Jobs killed at a time limit adaptalloc set: {g.killed_at_our_limit:,}"
        f"{' (should be 0)' if g.killed_at_our_limit else ''}; limits raised back to the "
        f"user's by the kill guard: {g.limits_raised:,}"
    )
    if g.limit_safety > 1.0:
        text += f" (this app's shortened limits are now x{g.limit_safety:.3g} longer)"
    text += (
        f". Censored runs (stopped at a limit or preempted; lower bounds, not fitted): "
        f"{g.censored_runs:,}."
    )
    return text


def _groups_table(groups: Sequence[JobGroup]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="job arrays and groups", pad_edge=False)
    table.add_column("group", no_wrap=True, overflow="ellipsis", max_width=16)
    table.add_column("kind", no_wrap=True)
    for name in ("tasks", "nodes", "runtime min/mean/max", "eff. min/mean/max"):
        table.add_column(name, justify="right", overflow="fold")
    for g in groups:
        eff = (
            "—"
            if g.efficiency_mean is None
            else f"{_short_pct(g.efficiency_min)}/{_short_pct(g.efficiency_mean)}/"
            f"{_short_pct(g.efficiency_max)}"
        )
        table.add_row(
            _t(g.group_id),
            g.kind,
            f"{g.tasks:,}",
            ",".join(f"{k:,}" for k in g.nodes),
            f"{format_number(g.runtime_min)}/{format_number(g.runtime_mean)}/"
            f"{format_number(g.runtime_max)} s",
            eff,
        )
    return table


def render_app(report: AppReport, console: Console, decisions: int = 10) -> None:
    """One app: heading and curve, runs per size, diagnostics, groups, decisions."""
    _heading(report, console)
    if report.sizes:
        console.print(_sizes_table(report, wide=console.width >= 110))
    _diagnostics(report, console)
    grouped = [g for g in report.groups if g.tasks > 1]
    if grouped:
        console.print(_groups_table(grouped))
    if report.decisions and decisions:
        console.print(_decisions_table(report.decisions[:decisions]))
    _say(console, decision_sentence(report))
    _say(console, guard_sentence(report))
    render_accuracy(report.accuracy, console, "this app")


def _accuracy_table(section: AccuracySection) -> Table:
    """Each app's rolling window, most jobs first."""
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"live accuracy by app (rolling window, last {section.window_days:g} days)",
        pad_edge=False,
    )
    table.add_column("app", overflow="ellipsis", max_width=24)
    for name in ("jobs", "in 90%", "median err.", "p90 err.", "bias"):
        table.add_column(name, justify="right", no_wrap=True)
    for app, s in section.apps:
        table.add_row(
            _t(app),
            f"{s.judged:,}",
            _short_pct(s.coverage),
            _short_pct(s.error_median),
            _short_pct(s.error_p90),
            "—" if s.bias is None else format_percent(s.bias, 2, signed=True),
        )
    return table


def render_accuracy(section: AccuracySection | None, console: Console, what: str) -> None:
    """Live accuracy: finished jobs against the prediction that decided them (per app in a
    table for the fleet), and what sizing would have bought, labelled as model estimates."""
    _say(console, Text("Live accuracy", style="bold"))
    if section is None:
        _say(
            console,
            f"No finished job of {what} is scored yet: the learner scores the jobs the daemon "
            "sized with a curve once they finish.",
        )
        return
    if section.apps:
        console.print(_accuracy_table(section))
    for line in section_sentences(section, what):
        _say(console, _t(line))


def _reliable_short(row: FleetRow) -> Text:
    """yes, or no with the problems in a word or two, or why there is no curve."""
    if row.model is None:
        return _t("no curve")
    if row.reliable:
        return Text("yes")
    problems = row.reliability.removeprefix("unreliable: ").split(", ")
    return _t("no: " + ", ".join(_PROBLEM_WORDS.get(p, p) for p in problems if p))


def render_fleet(rows: Sequence[FleetRow], console: Console) -> None:
    """One line per app: runs, node-hours, sizes, efficiencies, savings, reliability."""
    if not rows:
        _say(console, "The store knows no apps yet (adaptalloc learn, adaptalloc import).")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    longest = max(len(printable(r.app)) for r in rows)
    table.add_column("app", overflow="ellipsis", min_width=min(longest, 18), max_width=24)
    for name in ("runs", "node-h", "max/pws", "eff. n/max", "saved"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("reliable", overflow="fold", min_width=9)
    for r in rows:
        useful = "?" if r.max_useful_n is None else f"{r.max_useful_n:,}"
        table.add_row(
            _t(r.app),
            f"{r.runs:,}",
            format_number(r.node_hours, 3),
            "—" if r.pws_n is None else f"{useful}/{r.pws_n:,}",
            "—"
            if r.efficiency_chosen is None
            else f"{_short_pct(r.efficiency_chosen)}/{_short_pct(r.efficiency_max)}",
            _num(r.node_hours_saved, 3),
            _reliable_short(r),
        )
    console.print(table)
    total = sum(r.node_hours_saved or 0.0 for r in rows)
    _say(
        console,
        f"{len(rows):,} apps, {sum(r.runs for r in rows):,} runs, "
        f"{format_number(sum(r.node_hours for r in rows))} node-hours; "
        f"estimated {format_number(total)} node-hours saved by the decisions. Model estimates: "
        "eff. n/max is the mean efficiency at the chosen sizes and at the requested maximum, "
        "saved the node-hours saved against running each job at its requested maximum.",
    )
    cold = [(r.app, r.cold_start) for r in rows if r.cold_start is not None]
    if cold:
        _say(console, "Without a usable curve (jobs left as submitted), what each app needs:")
    for app, advice in cold:
        _say(console, _t(app).append(": ").append(_t(advice.text())))


def render_fleet_accuracy(section: AccuracySection | None, console: Console) -> None:
    """The fleet's live accuracy, after the fleet table."""
    render_accuracy(section, console, "the fleet")
