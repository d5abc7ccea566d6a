"""Placement: how many nodes a job with a fixed task count spreads its tasks over.

A job ``sbatch --ntasks=P --nodes=lo-hi`` runs P tasks whatever the node count c; c only
decides how many share a node, p = ⌈P/c⌉ on the busiest one. Ntagiou (the large-scale thesis,
ch. 5) finds that spreading beats packing for memory-bound kernels (Heat2D: one process per
clone is fastest) but not always (Heat3D: 4 per clone beat 1), so the choice is made from the
application's own runs through the separable model of predictor/placement.py.

The rule:

1. Candidates: every c in [lo, hi] with c ≤ P (a node without a task is wasted; Slurm refuses
   it) and ⌈P/c⌉ ≤ the node's CPUs when known (more tasks than CPUs oversubscribe).
2. Enough runs: at least MIN_PLACEMENTS distinct (nodes, tasks per node) placements measured,
   and at least two candidates predictable; otherwise the job is left as submitted.
3. Node efficiency against the smallest predictable candidate c₀, as the efficiency rule
   (rules.py) defines it for node counts: E(c) = c₀·T(c₀) / (c·T(c)). The fastest candidate
   with E(c) ≥ θ (the policy's efficiency_threshold) wins; c₀ always qualifies. Ties go to
   fewer nodes.

The time limit is left as the user wrote it: the placement model predicts runtimes only at
placements the runs connect, so it has no interval to shrink a limit safely by.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.rules import nodes, number, percent
from predictor.placement import PlacementModel, tasks_per_node

#: Distinct placements needed before the model is trusted: the separable model of two node
#: counts and two tasks-per-node values has 2 + 2 − 1 = 3 free coefficients, so three
#: placements are the fewest that predict a fourth one.
MIN_PLACEMENTS = 3
PLACEMENT = "placement"
PLACEMENT_KEPT = "placement_kept"


@dataclass(frozen=True)
class PlacementRow:
    """One candidate: nodes, tasks on the busiest node, predicted runtime (NaN: unknown),
    node efficiency against the first predictable candidate (NaN: unknown)."""

    nodes: int
    tasks_per_node: int
    runtime_s: float
    efficiency: float

    def to_dict(self) -> dict[str, float | int | None]:
        def finite(x: float) -> float | None:
            return round(x, 6) if np.isfinite(x) else None

        return {
            "nodes": self.nodes,
            "tasks_per_node": self.tasks_per_node,
            "runtime_s": finite(self.runtime_s),
            "efficiency": finite(self.efficiency),
        }


@dataclass(frozen=True)
class PlacementChoice:
    """nodes/tasks_per_node None: keep the job as submitted. rule: PLACEMENT or
    PLACEMENT_KEPT. table: the candidates whose node count and tasks per node were both run,
    in node order (runtime NaN where the runs do not link them)."""

    nodes: int | None
    tasks_per_node: int | None
    rule: str
    reason: str
    table: tuple[PlacementRow, ...] = ()


def _distinct_placements(model: PlacementModel | None) -> int:
    if model is None:
        return 0
    return model.placements


def choose_placement(
    tasks: int,
    lo: int,
    hi: int,
    model: PlacementModel | None,
    threshold: float,
    cpus_per_node: int | None = None,
) -> PlacementChoice:
    """The placement for P = `tasks` tasks on [lo, hi] nodes (module docstring)."""
    if tasks < 1 or lo < 1 or hi < lo:
        raise ValueError(f"need tasks ≥ 1 and 1 ≤ lo ≤ hi, got tasks={tasks}, {lo}-{hi}")
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    top = min(hi, tasks)
    cands = np.arange(lo, top + 1) if top >= lo else np.zeros(0, dtype=int)
    tpn = tasks_per_node(tasks, cands).astype(int) if cands.size else np.zeros(0, dtype=int)
    if cpus_per_node is not None and cands.size:
        fits = tpn <= cpus_per_node
        cands, tpn = cands[fits], tpn[fits]
    keep = f"the job is left as submitted ({tasks} tasks on {lo}-{hi} nodes)"
    if cands.size == 0:
        return PlacementChoice(
            None, None, PLACEMENT_KEPT, f"no node count in {lo}-{hi} fits {tasks} tasks; {keep}"
        )
    seen = _distinct_placements(model)
    if model is None or seen < MIN_PLACEMENTS:
        return PlacementChoice(
            None,
            None,
            PLACEMENT_KEPT,
            f"the app has runs at {seen} distinct placements (nodes × tasks per node), fewer "
            f"than the {MIN_PLACEMENTS} the placement model needs; {keep}",
        )
    # Only node counts and tasks per node that were run can be predicted: the rest are left
    # out before the model is evaluated (a range of 10^6 nodes costs nothing more).
    measurable = np.isin(cands, model.nodes) & np.isin(tpn, model.tasks_per_node)
    cands, tpn = cands[measurable], tpn[measurable]
    runtime = model.runtime(cands, tpn) if cands.size else np.zeros(0)
    known = np.isfinite(runtime)
    eff = np.full(cands.size, np.nan)
    if np.count_nonzero(known) >= 2:
        first = int(np.argmax(known))
        eff[known] = cands[first] * runtime[first] / (cands[known] * runtime[known])
    table = tuple(
        PlacementRow(int(c), int(p), float(t), float(e))
        for c, p, t, e in zip(cands, tpn, runtime, eff, strict=True)
    )
    if np.count_nonzero(known) < 2:
        return PlacementChoice(
            None,
            None,
            PLACEMENT_KEPT,
            f"the app's runs predict {np.count_nonzero(known)} of the node counts in "
            f"{lo}-{min(hi, tasks)} for {tasks} tasks (a placement is predicted when its node "
            f"count and its tasks per node were both run); {keep}",
            table,
        )
    good = known & (eff >= threshold - 1e-12)
    pick = int(np.flatnonzero(good)[np.argmin(runtime[good])])
    c, p = int(cands[pick]), int(tpn[pick])
    first = int(np.argmax(known))
    reason = (
        f"{tasks} tasks run fastest on {nodes(c)} ({p} per node): predicted "
        f"{number(float(runtime[pick]))} s against {number(float(runtime[first]))} s on "
        f"{nodes(int(cands[first]))} ({int(tpn[first])} per node), node efficiency "
        f"{percent(float(eff[pick]))} (threshold {percent(threshold)}), from {model.runs} "
        f"runs at {seen} placements"
    )
    return PlacementChoice(c, p, PLACEMENT, reason, table)
