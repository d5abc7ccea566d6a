"""The daemon's decision records as report rows, and summarised with the curve.

The daemon writes one `plugin.store.decisions.DecisionRecord` per decision to the store's
stream and `CurveStore.decisions` reads them back (records it cannot read are skipped
there). `decision_row` turns one into a `DecisionRow`: the requested range, the chosen size
(None: released as submitted) and the top of the range it was released with, if any, the
rule (``fail-open: CODE`` for a release), the time limit the daemon set (else the user's),
when (``decided_at``, else the stream entry's milliseconds), and the status (a ``gone`` job
was cancelled before it ran, so it counts in no estimate). Node counts outside 1..MAX_NODES
become None and free text is cut to MAX_TEXT characters (the renderers escape it).

Estimates (`estimate`): the *current* curve's efficiency and node-hours at the chosen size
and at the requested maximum: node-hours = n·T(n)/3600. They are model estimates of what
the job cost or would have cost, not measurements. A job released with a range has no
chosen-size estimate: Slurm picked its size at start, and the decision does not say which.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

import predictor
from plugin.report.model import DecisionRow, DecisionSummary
from plugin.store.decisions import StoredDecision

__all__ = ["MAX_NODES", "decision_row", "estimate", "summarise"]

#: Node counts above this are treated as malformed (the policies never go past 2^20).
MAX_NODES = 1 << 20
#: Reasons and other free text longer than this are cut (the renderers escape them).
MAX_TEXT = 500
#: The daemon's status of a job that was cancelled before it could run.
GONE = "gone"

_ENTRY_ID = re.compile(r"([0-9]{1,15})-[0-9]+")


def _count(value: int | None) -> int | None:
    return value if value is not None and 1 <= value <= MAX_NODES else None


def _text(value: str | None) -> str:
    return "" if value is None else value[:MAX_TEXT]


def decision_row(stored: StoredDecision) -> DecisionRow:
    """One stored decision as a `DecisionRow` (without estimates)."""
    record = stored.record
    when = record.decided_at
    if when is None:
        match = _ENTRY_ID.fullmatch(stored.entry_id)
        when = int(match.group(1)) / 1000.0 if match else None
    rule = record.rule or (f"fail-open: {record.fail_open}" if record.fail_open else "")
    limit = (
        record.new_time_limit_min
        if record.new_time_limit_min is not None
        else record.time_limit_min
    )
    return DecisionRow(
        entry_id=_text(stored.entry_id),
        job_id=str(record.job_id),
        time=when,
        min_nodes=_count(record.min_nodes),
        max_nodes=_count(record.max_nodes),
        chosen=_count(record.nodes),
        chosen_upto=_range_top(record.nodes, record.nodes_upto),
        rule=_text(rule),
        reason=_text(record.reason),
        time_limit_min=_count(limit),
        action=_text(record.action),
        status=_text(record.status),
    )


def _range_top(nodes: int | None, upto: int | None) -> int | None:
    """The top of a released range; None for a pinned size (no top, or one not above it)."""
    low, top = _count(nodes), _count(upto)
    return top if low is not None and top is not None and top > low else None


def estimate(rows: Sequence[DecisionRow], curve: predictor.Curve | None) -> list[DecisionRow]:
    """The rows with the curve's efficiency and node-hours at the chosen and maximum sizes."""
    if curve is None or not rows:
        return list(rows)
    chosen_sizes = [r.chosen for r in rows if r.pinned]
    sizes = sorted({k for k in (*chosen_sizes, *(r.max_nodes for r in rows)) if k is not None})
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
        chosen = at.get(r.chosen) if r.pinned and r.chosen is not None else None
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
    """Counts per rule, the histogram of pinned sizes, and the estimates' means and sums.

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
    chosen = Counter(r.chosen for r in rows if r.pinned and r.chosen is not None)
    nh_chosen = sum(r.node_hours_chosen or 0.0 for r in both) if both else None
    nh_max = sum(r.node_hours_max or 0.0 for r in both) if both else None
    return DecisionSummary(
        count=len(rows),
        as_submitted=sum(1 for r in rows if r.chosen is None),
        ranged=sum(1 for r in rows if r.chosen_upto is not None),
        estimated=len(both),
        by_rule=tuple(sorted(rules.items(), key=lambda kv: (-kv[1], kv[0]))),
        chosen_sizes=tuple(sorted(chosen.items())),
        mean_efficiency_chosen=_mean(r.efficiency_chosen or 0.0 for r in both),
        mean_efficiency_max=_mean(r.efficiency_max or 0.0 for r in both),
        node_hours_chosen=nh_chosen,
        node_hours_max=nh_max,
        node_hours_saved=None if nh_chosen is None or nh_max is None else nh_max - nh_chosen,
    )
