"""Reading the daemon's decision records defensively, and summarising them with the curve.

The daemon appends one JSON document per decision to the store's stream
(`CurveStore.record_decision`); the store adds the entry id (``"<ms>-<seq>"``). The report
reads every field it needs by several names and shapes, and anything missing or malformed
becomes None (or "" for text) instead of an error, so that records written by another
version of the daemon, or hand-made ones, still show:

* job id: ``job_id``, ``job``, ``jobid``;
* when: ``time``, ``timestamp``, ``decided_at``, ``ts`` (Unix seconds or ISO 8601), else
  the entry id's milliseconds;
* what happened: ``rule`` (a policy rule), or ``fail_open`` (the daemon released the job
  untouched, e.g. no curve or Redis down), ``action`` and ``status`` (a ``gone`` job was
  cancelled before it ran, so it counts in no estimate);
* requested range: ``min_nodes``/``max_nodes`` (also ``requested_min``, ``nodes_min``, …),
  the same inside a ``request``/``requested`` object, or a ``"4-64"`` string under
  ``range``/``requested_nodes``/``nodes_requested``/``request_nodes``;
* chosen size: ``nodes`` (null: released as submitted), ``chosen_nodes``, ``chosen``, or
  ``nodes`` inside a ``decision`` object; rule and reason likewise; time limit:
  ``new_time_limit_min`` (the one the daemon set), else ``time_limit_min``.

This is the layout plugin/daemon/record.py writes.

Estimates (`estimate`): the *current* curve's efficiency and node-hours at the chosen size
and at the requested maximum: node-hours = n·T(n)/3600. They are model estimates of what
the job cost or would have cost, not measurements.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

import predictor
from plugin.report.model import DecisionRow, DecisionSummary

__all__ = ["MAX_NODES", "estimate", "parse_decision", "summarise"]

#: Node counts above this are treated as malformed (the policies never go past 2^20).
MAX_NODES = 1 << 20
#: Reasons and other free text longer than this are cut (the renderers escape them).
MAX_TEXT = 500
#: The daemon's status of a job that was cancelled before it could run.
GONE = "gone"

# [0-9], not \d: \d and str.isdigit take "٣" and "²", and int("²") raises.
_DIGITS = re.compile(r"[0-9]{1,9}")
_RANGE = re.compile(r"\s*([0-9]{1,9})\s*(?:-\s*([0-9]{1,9})\s*)?")
_ENTRY_ID = re.compile(r"([0-9]{1,15})-[0-9]+")
_MIN_KEYS = ("min_nodes", "requested_min", "nodes_min", "request_min", "min")
_MAX_KEYS = ("max_nodes", "requested_max", "nodes_max", "request_max", "max")
_RANGE_KEYS = ("range", "requested_nodes", "nodes_requested", "request_nodes")
_NESTED_REQUEST = ("request", "requested")
_CHOSEN_KEYS = ("nodes", "chosen_nodes", "chosen", "num_nodes")
_TIME_KEYS = ("time", "timestamp", "decided_at", "ts", "at")


def _count(value: Any) -> int | None:
    """A node count (or minutes) from an int, an integral float or a numeric string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        return None
    return number if 1 <= number <= MAX_NODES else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return text[:MAX_TEXT]


def _first(doc: Mapping[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if name in doc and doc[name] is not None:
            return doc[name]
    return None


def _when(doc: Mapping[str, Any], entry_id: str) -> float | None:
    value = _first(doc, _TIME_KEYS)
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip()).timestamp()
        except ValueError:
            pass
    match = _ENTRY_ID.fullmatch(entry_id)
    return int(match.group(1)) / 1000.0 if match else None


def _range(doc: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The requested (min, max) from flat keys, a nested request object or a range string."""
    sources: list[Mapping[str, Any]] = [doc]
    for name in _NESTED_REQUEST:
        nested = doc.get(name)
        if isinstance(nested, Mapping):
            sources.insert(0, nested)
    low = high = None
    for source in sources:
        low = low if low is not None else _count(_first(source, _MIN_KEYS))
        high = high if high is not None else _count(_first(source, _MAX_KEYS))
    if low is None or high is None:
        for source in sources:
            value = _first(source, _RANGE_KEYS)
            match = _RANGE.fullmatch(value) if isinstance(value, str) else None
            if match:
                a, b = _count(match.group(1)), _count(match.group(2) or match.group(1))
                low = low if low is not None else a
                high = high if high is not None else b
                break
    return low, high


def parse_decision(doc: Mapping[str, Any]) -> DecisionRow:
    """One stored decision record as a `DecisionRow` (without estimates)."""
    entry_id = _text(doc.get("id"))
    inner = doc.get("decision")
    decision: Mapping[str, Any] = inner if isinstance(inner, Mapping) else doc
    chosen_raw = _first(decision, _CHOSEN_KEYS)
    if chosen_raw is None and decision is not doc:
        chosen_raw = _first(doc, _CHOSEN_KEYS[1:])
    low, high = _range(doc)
    return DecisionRow(
        entry_id=entry_id,
        job_id=_text(_first(doc, ("job_id", "job", "jobid"))),
        time=_when(doc, entry_id),
        min_nodes=low,
        max_nodes=high,
        # "nodes": "4-64" is a range, not a chosen size; _count refuses it.
        chosen=_count(chosen_raw),
        rule=_rule(decision, doc),
        reason=_text(_first(decision, ("reason",)) or doc.get("reason")),
        time_limit_min=_count(
            _first(decision, ("new_time_limit_min", "time_limit_min", "time_limit"))
        ),
        action=_text(doc.get("action")),
        status=_text(doc.get("status")),
    )


def _rule(decision: Mapping[str, Any], doc: Mapping[str, Any]) -> str:
    rule = _first(decision, ("rule",)) or doc.get("rule")
    if rule:
        return _text(rule)
    fail_open = doc.get("fail_open")
    return f"fail-open: {_text(fail_open)}" if fail_open else ""


def estimate(rows: Sequence[DecisionRow], curve: predictor.Curve | None) -> list[DecisionRow]:
    """The rows with the curve's efficiency and node-hours at the chosen and maximum sizes."""
    if curve is None or not rows:
        return list(rows)
    sizes = sorted({k for r in rows for k in (r.chosen, r.max_nodes) if k is not None})
    if not sizes:
        return list(rows)
    n = np.asarray(sizes, dtype=float)
    runtime = curve.runtime(n)
    efficiency = curve.efficiency(n)
    at = {
        k: (float(e), k * float(t) / 3600.0)
        for k, e, t in zip(sizes, efficiency, runtime, strict=True)
        if math.isfinite(float(t)) and math.isfinite(float(e))
    }
    out = []
    for r in rows:
        chosen = at.get(r.chosen) if r.chosen is not None else None
        top = at.get(r.max_nodes) if r.max_nodes is not None else None
        out.append(
            replace(
                r,
                efficiency_chosen=None if chosen is None else chosen[0],
                node_hours_chosen=None if chosen is None else chosen[1],
                efficiency_max=None if top is None else top[0],
                node_hours_max=None if top is None else top[1],
            )
        )
    return out


def _mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return sum(vals) / len(vals) if vals else None


def summarise(rows: Sequence[DecisionRow]) -> DecisionSummary:
    """Counts per rule, the histogram of chosen sizes, and the estimates' means and sums.

    Means and sums are over the decisions with both estimates (`estimated`), so that the
    chosen and the maximum figures compare the same jobs; jobs that were gone (cancelled
    before they ran) count in none.
    """
    both = [
        r
        for r in rows
        if r.status != GONE
        and r.node_hours_chosen is not None
        and r.node_hours_max is not None
        and r.efficiency_chosen is not None
        and r.efficiency_max is not None
    ]
    rules = Counter(r.rule or "(none)" for r in rows)
    chosen = Counter(r.chosen for r in rows if r.chosen is not None)
    nh_chosen = sum(r.node_hours_chosen or 0.0 for r in both) if both else None
    nh_max = sum(r.node_hours_max or 0.0 for r in both) if both else None
    return DecisionSummary(
        count=len(rows),
        as_submitted=sum(1 for r in rows if r.chosen is None),
        estimated=len(both),
        by_rule=tuple(sorted(rules.items(), key=lambda kv: (-kv[1], kv[0]))),
        chosen_sizes=tuple(sorted(chosen.items())),
        mean_efficiency_chosen=_mean(r.efficiency_chosen or 0.0 for r in both),
        mean_efficiency_max=_mean(r.efficiency_max or 0.0 for r in both),
        node_hours_chosen=nh_chosen,
        node_hours_max=nh_max,
        node_hours_saved=None if nh_chosen is None or nh_max is None else nh_max - nh_chosen,
    )
