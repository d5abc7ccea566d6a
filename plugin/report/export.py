"""Exports: the report's figures as JSON documents and CSV tables.

JSON (``--format json``), one document on stdout:

* ``report APP``: `app_document`, the whole report of one app;
* ``report --all``: ``{"apps": [FleetRow, ...], "accuracy": ...}``, one object per app
  and the fleet's live accuracy (`fleet_document`);
* ``--per-job``: ``{"jobs": [...]}``, one object per job, with job arrays and groups
  summarised in one object each (`job_rows`).

Numbers that cannot be computed are null (never NaN); times are Unix seconds.

Live accuracy (``"accuracy"``, `accuracy_document`; null without scored jobs): ``kept`` and
``window`` (the rolling window, with its ``days`` and ``jobs``) each hold ``jobs``,
``censored``, ``inside``, ``above``, ``below``, ``unknown``, ``judged``, ``coverage``,
``error_median``, ``error_p90``, ``error_mean`` (fractions), ``bias`` and the first and last
end times; ``drift`` (an app's: ``latest``, ``previous``, ``p_value``, ``grew``); ``apps``
(the fleet's: each app's window); ``bought`` (per mode, model estimates: ``realized_*``
measured, ``predicted_node_hours`` at the sizes the jobs ran on, ``advised_*`` and
``saved_node_hours`` at the decided sizes, each ``{"estimate", "low", "high"}``); and
``points``, the newest jobs (predicted and actual seconds, the interval, where it fell).

Cold start (``"cold_start"``, in the app document and in each fleet row; null when the
app's curve is usable): what the app needs for a usable curve (policies/cold_start.py,
`Advice.to_dict`): ``condition``, ``runs`` (how many more), ``sizes`` and ``choose`` (at
how many distinct ones of them; 0: the runs go to ``sizes`` as listed), ``helps``
(false: more runs cannot make it usable), ``reason``, ``also``, ``observed_runs``,
``observed_sizes`` and the one-line ``text`` the terminal shows, which is the CSV cell.

CSV (``--format csv``): a header and one row per app (`FLEET_COLUMNS`) or, with
``--per-job``, per job or group (`JOB_COLUMNS`), quoted as RFC 4180 says (the csv module,
CRLF line ends). Cells are written for spreadsheets too: a text cell that starts with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``, so that a
spreadsheet shows it as text instead of running it as a formula (CSV formula injection;
job ids, rules and app names can come from users). Numbers are never altered, so a
negative saving stays a number.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any, TextIO

from plugin.learning.accuracy import Bought, Summary
from plugin.report.model import AccuracySection, AppReport, DecisionRow, FleetRow, JobGroup
from policies.cold_start import Advice

__all__ = [
    "FLEET_COLUMNS",
    "JOB_COLUMNS",
    "accuracy_document",
    "app_document",
    "fleet_document",
    "job_rows",
    "jobs_document",
    "safe_cell",
    "write_csv",
]

FLEET_COLUMNS = (
    "app",
    "runs",
    "node_hours",
    "last_end",
    "model",
    "A",
    "sigma",
    "max_useful_n",
    "pws_n",
    "fit_error",
    "reliable",
    "reliability",
    "suggest_n",
    "anomalies",
    "decisions",
    "efficiency_chosen",
    "efficiency_max",
    "node_hours_saved",
    "limits_raised",
    "killed_at_our_limit",
    "censored_runs",
    "scored_jobs",
    "coverage",
    "error_median",
    "bias",
    "cold_start",
)
JOB_COLUMNS = (
    "app",
    "group_id",
    "kind",
    "tasks",
    "first_job",
    "last_job",
    "nodes",
    "runtime_min",
    "runtime_mean",
    "runtime_max",
    "efficiency_min",
    "efficiency_mean",
    "efficiency_max",
    "node_hours",
    "first_end",
    "last_end",
    "requested_min",
    "requested_max",
    "rule",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def clean(value: Any) -> Any:
    """JSON-able: tuples become lists, non-finite floats None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def _decision(row: DecisionRow) -> dict[str, Any]:
    return {**asdict(row), "node_hours_saved": row.node_hours_saved}


def app_document(report: AppReport, decisions: int = 20) -> dict[str, Any]:
    """The whole report of one app; the newest `decisions` decision rows (all in the summary)."""
    doc: dict[str, Any] = {
        "app": report.app,
        "runs": report.runs,
        "node_hours": report.node_hours,
        "first_end": report.first_end,
        "last_end": report.last_end,
        "curve": None if report.curve is None else asdict(report.curve),
        "curve_note": report.curve_note,
        "sizes": [asdict(s) for s in report.sizes],
        "anomalies": [a.to_dict() for a in report.anomalies],
        "patterns": [p.to_dict() for p in report.patterns],
        "reliability": [asdict(w) for w in report.warnings],
        "suggest_n": report.suggest_n,
        "band": None
        if report.band is None
        else {
            "delta": report.band.delta,
            "instances": report.band.instances,
            "n": report.band.n,
            "speedup_lo": report.band.speedup_lo,
            "speedup_hi": report.band.speedup_hi,
        },
        "band_note": report.band_note,
        "curve_points": None if report.grid is None else asdict(report.grid),
        "groups": [asdict(g) for g in report.groups],
        "decision_summary": asdict(report.decision_summary),
        "decisions": [_decision(d) for d in report.decisions[:decisions]],
        "guard": asdict(report.guard),
        "accuracy": accuracy_document(report.accuracy),
        "cold_start": _cold_start(report.cold_start),
    }
    return dict(clean(doc))


def _cold_start(advice: Advice | None) -> dict[str, Any] | None:
    return None if advice is None else advice.to_dict()


def fleet_document(
    rows: Iterable[FleetRow], accuracy: AccuracySection | None = None
) -> dict[str, Any]:
    """``{"apps": [...], "accuracy": ...}``: one object per app with the `FLEET_COLUMNS`
    keys, and the fleet's live accuracy (null without scored jobs)."""
    return {
        "apps": [clean({**asdict(r), "cold_start": _cold_start(r.cold_start)}) for r in rows],
        "accuracy": accuracy_document(accuracy),
    }


def _summary(summary: Summary) -> dict[str, Any]:
    return {**asdict(summary), "judged": summary.judged}


def _bought(b: Bought) -> dict[str, Any]:
    return {
        **asdict(b),
        "saved_node_hours": asdict(b.saved_node_hours),
        "estimates": "model estimates: the curve that decided, at the decided sizes",
    }


def accuracy_document(section: AccuracySection | None) -> dict[str, Any] | None:
    """Live accuracy as JSON (the module docstring), None without scored jobs."""
    if section is None:
        return None
    drift = section.drift
    doc = {
        "kept": _summary(section.kept),
        "window": {
            **_summary(section.window),
            "days": section.window_days,
            "newest_jobs": section.window_jobs,
        },
        "drift": None
        if drift is None
        else {
            "latest": _summary(drift.latest),
            "previous": _summary(drift.previous),
            "p_value": drift.p_value,
            "grew": drift.grew,
        },
        "apps": [{"app": app, **_summary(s)} for app, s in section.apps],
        "bought": [_bought(b) for b in section.bought],
        "points": [asdict(p) for p in section.points],
    }
    return dict(clean(doc))


def _job_row(app: str, group: JobGroup, decision: DecisionRow | None) -> dict[str, Any]:
    row = {"app": app, **asdict(group)}
    row["nodes"] = list(group.nodes)
    row["requested_min"] = None if decision is None else decision.min_nodes
    row["requested_max"] = None if decision is None else decision.max_nodes
    row["rule"] = None if decision is None else decision.rule
    return {k: row[k] for k in JOB_COLUMNS}


def job_rows(report: AppReport) -> list[dict[str, Any]]:
    """One row per job or group (`JOB_COLUMNS`); a lone job carries its decision if any."""
    by_job = {}
    for d in reversed(report.decisions):  # the newest decision of a job wins
        if d.job_id:
            by_job[d.job_id] = d
    return [
        clean(_job_row(report.app, g, by_job.get(g.first_job) if g.tasks == 1 else None))
        for g in report.groups
    ]


def jobs_document(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"jobs": [...]}``."""
    return {"jobs": list(rows)}


def safe_cell(value: Any) -> Any:
    """A CSV cell: None empty, lists joined with ';', a mapping as its one-line "text" (the
    cold-start advice) or else compact JSON, text guarded against formulas."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        text = value.get("text")
        value = text if isinstance(text, str) else json.dumps(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        value = ";".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def write_csv(out: TextIO, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """Header and rows, RFC 4180 (CRLF, quotes doubled), every cell through `safe_cell`."""
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([safe_cell(row.get(c)) for c in columns])


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """`write_csv` into a string."""
    buffer = io.StringIO()
    write_csv(buffer, columns, rows)
    return buffer.getvalue()
