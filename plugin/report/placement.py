"""The report's placement and node-type sections: query → assemble → render.

Placement table: per (nodes, tasks per node) the app ran at, or the separable model of
predictor/placement.py predicts from those runs, the measured mean runtime (geometric, as the
model averages), the predicted one and whether the placement rule (policies/placement.py, at
the policy's default efficiency threshold) chooses it for the largest task count the app ran
with, over one to that many nodes. Only runs that recorded their tasks per node count.

Node-type curves: the curve the learner fitted from the app's runs on each node type
(partition) when it ran on several; the figures are the stored curve's own (A, σ, fitting
error, processor working set, maximum useful size), so the section shows what the partition
choice uses.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from plugin.appkey import AppKey
from plugin.report.numbers import format_number
from plugin.store.curves import CurveRecord, CurveStore, Observation
from policies.config import DEFAULTS
from policies.placement import choose_placement
from predictor.placement import fit_placement

__all__ = [
    "NodeTypeCurve",
    "PlacementCell",
    "PlacementSection",
    "assemble_placement",
    "query_placement",
    "render_placement",
]


@dataclass(frozen=True)
class PlacementCell:
    """One placement: runs at it, measured and predicted runtime (None: none), chosen."""

    nodes: int
    tasks_per_node: int
    runs: int
    measured_s: float | None
    predicted_s: float | None
    chosen: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "tasks_per_node": self.tasks_per_node,
            "runs": self.runs,
            "measured_s": self.measured_s,
            "predicted_s": self.predicted_s,
            "chosen": self.chosen,
        }


@dataclass(frozen=True)
class NodeTypeCurve:
    """The stored curve of one node type (None figures: no curve fitted)."""

    node_type: str
    runs: int
    A: float | None
    sigma: float | None
    fit_error: float | None
    pws_n: int | None
    max_useful_n: int | None
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_type": self.node_type,
            "runs": self.runs,
            "A": self.A,
            "sigma": self.sigma,
            "fit_error": self.fit_error,
            "pws_n": self.pws_n,
            "max_useful_n": self.max_useful_n,
            "note": self.note,
        }


@dataclass(frozen=True)
class PlacementSection:
    """tasks: the task count the chosen placement is for (None: no placement runs)."""

    tasks: int | None
    reason: str
    cells: tuple[PlacementCell, ...]
    node_types: tuple[NodeTypeCurve, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "reason": self.reason,
            "table": [c.to_dict() for c in self.cells],
            "node_types": [t.to_dict() for t in self.node_types],
        }


def _round(x: float) -> float | None:
    return round(float(x), 3) if math.isfinite(x) else None


def _type_curve(node_type: str, record: CurveRecord | None) -> NodeTypeCurve:
    curve = record.curve if record is not None else None
    if record is None or curve is None:
        note = "no curve" if record is None else (record.note or record.error or "no curve")
        runs = 0 if record is None else record.n_observations
        return NodeTypeCurve(node_type, runs, None, None, None, None, None, note)
    return NodeTypeCurve(
        node_type,
        record.n_observations,
        _round(curve.A),
        _round(curve.sigma),
        _round(curve.fit_error),
        curve.pws_n,
        curve.max_useful_n,
        record.note,
    )


def assemble_placement(
    observations: Iterable[Observation], typed: Mapping[str, CurveRecord | None]
) -> PlacementSection:
    """The section from an app's runs and its per-node-type curves (module docstring). Pure."""
    runs = [o for o in observations if o.tasks_per_node is not None]
    types = tuple(_type_curve(name, typed[name]) for name in sorted(typed))
    if not runs:
        return PlacementSection(None, "no run recorded its tasks per node", (), types)
    c = np.array([o.nodes for o in runs], dtype=float)
    p = np.array([o.tasks_per_node for o in runs], dtype=float)
    t = np.array([o.runtime_s for o in runs], dtype=float)
    model = fit_placement(c, p, t)
    # The largest task count the app ran with: the few-task runs are typically the
    # measurements (Ntagiou's outer nodes) that predict placements of the full count.
    tasks = max(o.tasks if o.tasks is not None else o.nodes * (o.tasks_per_node or 1) for o in runs)
    choice = choose_placement(tasks, 1, tasks, model, DEFAULTS.efficiency_threshold)
    logs: dict[tuple[int, int], list[float]] = defaultdict(list)
    for o, runtime in zip(runs, t, strict=True):
        logs[(o.nodes, o.tasks_per_node or 1)].append(math.log(runtime))
    cells = {key: len(v) for key, v in logs.items()}
    for row in choice.table:
        if math.isfinite(row.runtime_s):
            cells.setdefault((row.nodes, row.tasks_per_node), 0)
    keys = sorted(cells)
    predicted = model.runtime([k[0] for k in keys], [k[1] for k in keys])
    out = tuple(
        PlacementCell(
            nodes=k[0],
            tasks_per_node=k[1],
            runs=cells[k],
            measured_s=_round(math.exp(float(np.mean(logs[k])))) if k in logs else None,
            predicted_s=_round(float(pred)),
            chosen=(k == (choice.nodes, choice.tasks_per_node)),
        )
        for k, pred in zip(keys, predicted, strict=True)
    )
    return PlacementSection(tasks, choice.reason, out, types)


def query_placement(store: CurveStore, app: AppKey) -> PlacementSection:
    """Read the app's runs and per-node-type curves from the store, then assemble."""
    typed = {name: store.curve_record(app, name) for name in store.node_types(app)}
    return assemble_placement(store.observations(app), typed)


def _num(x: float | None) -> str:
    return "-" if x is None else format_number(x)


def render_placement(section: PlacementSection, console: Console) -> None:
    """The placement table and the node-type curves, when there is anything to show."""
    if section.cells:
        table = Table(
            title=f"placement for {section.tasks} tasks (nodes x tasks per node)",
            box=box.SIMPLE,
        )
        for head in ("nodes", "tasks/node", "runs", "measured s", "predicted s", ""):
            table.add_column(head, justify="right")
        for cell in section.cells:
            table.add_row(
                str(cell.nodes),
                str(cell.tasks_per_node),
                str(cell.runs),
                _num(cell.measured_s),
                _num(cell.predicted_s),
                "chosen" if cell.chosen else "",
            )
        console.print(table)
        console.print(section.reason, markup=False, highlight=False)
    if section.node_types:
        table = Table(title="curves per node type", box=box.SIMPLE)
        for head in ("node type", "runs", "A", "sigma", "fit error", "pws", "max useful"):
            table.add_column(head, justify="right")
        for t in section.node_types:
            table.add_row(
                t.node_type,
                str(t.runs),
                _num(t.A),
                _num(t.sigma),
                _num(t.fit_error),
                "-" if t.pws_n is None else str(t.pws_n),
                "-" if t.max_useful_n is None else str(t.max_useful_n),
            )  # node types are [a-z0-9._-] (plugin.store.curves.NODE_TYPE): no markup
        console.print(table)
