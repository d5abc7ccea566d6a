"""The job's shape beyond a node range: weak scaling, a fixed task count, several partitions.

What the decider reads from a held job, and how the app's observations become the inputs of
the pure rules (policies/weak.py, policies/placement.py, policies/partition.py):

* ``scaling=weak`` in the job's v1 tag (comment or a prior admin comment; plugin/appkey.py
  checks the value): Gustafson's rule sizes it from the app's runs that carry a problem size;
* a fixed task count: squeue's ``tasks`` above the job's minimum node count and no
  ``--ntasks-per-node`` (Slurm's default task count is the minimum node count, so a job without
  ``--ntasks`` never qualifies, and with ``--ntasks-per-node`` the user fixed the placement);
  the placement rule spreads the tasks from the app's runs that carry tasks per node;
* several partitions (``-p a,b``): each listed partition that Slurm knows is a candidate.

Observations come from the store (plugin.store.curves.Observation); the fields for size,
tasks per node and node type are optional there, and runs without them are left out here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import policies
from plugin.appkey import AppKeyError, Tag, parse_tag
from plugin.daemon import marks
from plugin.slurm import JobRecord
from policies import ClusterState, Decision, ExplorationBudget, PolicySettings
from policies.decide import NO_BUDGET
from policies.decision import Candidate
from policies.partition import Option, choose_partition
from policies.placement import choose_placement
from policies.weak import decide_weak
from predictor import Curve
from predictor.placement import PlacementModel, fit_placement
from predictor.weak import WeakFit, fit_weak

__all__ = [
    "PartitionPick",
    "Placed",
    "fixed_tasks",
    "job_scaling",
    "partition_decision",
    "placement_decision",
    "placement_model",
    "tag_in",
    "weak_decision",
    "weak_fit",
]


@functools.lru_cache(maxsize=4096)
def tag_in(text: str | None, where: str) -> Tag | None:
    """`plugin.appkey.parse_tag`, remembered per (text, where) (an error is not: it is raised
    again each time): the decider reads a job's tags twice (opt-out, scaling), and a burst's
    jobs share their comments."""
    return parse_tag(text, where)


def job_scaling(job: JobRecord) -> str | None:
    """ "weak" or "strong" from the job's tag, None when it says nothing (or is unreadable:
    the decider refuses a bad tag before it gets here)."""
    prior = marks.prior_text(job.admin_comment)
    for text, where in ((job.comment, "comment"), (prior, "admin_comment")):
        try:
            tag = tag_in(text, where)
        except AppKeyError:
            return None
        if tag is not None and tag.scaling is not None:
            return tag.scaling
    return None


def fixed_tasks(job: JobRecord) -> int | None:
    """The job's fixed task count when it has one (module docstring), else None."""
    tasks, low = job.num_tasks, job.nodes_min
    if tasks is None or low is None or job.ntasks_per_node:
        return None
    return tasks if tasks > low else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and math.isfinite(value) and value > 0:
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) and number > 0 else None
    return None


def _whole(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


def placement_model(observations: Iterable[Any]) -> tuple[PlacementModel | None, int]:
    """The placement model from the runs that carry tasks per node, and how many did."""
    c: list[int] = []
    p: list[int] = []
    t: list[float] = []
    for obs in observations:
        tpn = _whole(getattr(obs, "tasks_per_node", None))
        nodes = _whole(getattr(obs, "nodes", None))
        runtime = _number(getattr(obs, "runtime_s", None))
        if tpn is not None and nodes is not None and runtime is not None:
            c.append(nodes)
            p.append(tpn)
            t.append(runtime)
    if not t:
        return None, 0
    return fit_placement(c, p, t), len(t)


def weak_fit(observations: Sequence[Any]) -> tuple[WeakFit | None, str]:
    """Gustafson's fit from the runs that carry a numeric problem size, or None and why."""
    n: list[float] = []
    s: list[float] = []
    t: list[float] = []
    for obs in observations:
        size = _number(getattr(obs, "size", None))
        nodes = _whole(getattr(obs, "nodes", None))
        runtime = _number(getattr(obs, "runtime_s", None))
        if size is not None and nodes is not None and runtime is not None:
            n.append(nodes)
            s.append(size)
            t.append(runtime)
    if not t:
        return None, f"none of the app's {len(observations)} runs records a problem size"
    try:
        return fit_weak(n, s, t), ""
    except ValueError as exc:
        return None, f"the app's {len(t)} sized runs give no Gustafson fit ({exc})"


def weak_decision(
    request: policies.Request,
    observations: Sequence[Any],
    state: ClusterState,
    threshold: float,
    why_none: str = "",
) -> Decision:
    """Gustafson's decision (policies/weak.py) from the runs that carry a problem size;
    `why_none`, when given, replaces the reason there is no fit (no app key, say)."""
    fit, why = weak_fit(observations)
    return decide_weak(request, fit, state, threshold, why_none or why)


@dataclass(frozen=True)
class Placed:
    """A placement decision (policies/placement.py), its tasks per node (None: kept) and the
    detail the decision record and ``decide`` show: the runs used and the placement table."""

    decision: Decision
    tasks_per_node: int | None
    detail: dict[str, Any]


def placement_decision(
    tasks: int,
    request: policies.Request,
    state: ClusterState,
    observations: Iterable[Any],
    threshold: float,
    cpus_per_node: int | None = None,
) -> Placed:
    """Spread `tasks` over the job's range, cut to the partition's node limit, from the runs
    that carry tasks per node."""
    model, sized = placement_model(observations)
    lo, top = request.min_nodes, request.max_nodes
    if state.node_limit is not None:
        top = max(lo, min(top, state.node_limit))
    choice = choose_placement(tasks, lo, top, model, threshold, cpus_per_node)
    detail = {
        "kind": "placement",
        "runs_with_tasks_per_node": sized,
        "table": [row.to_dict() for row in choice.table],
    }
    decision = Decision(
        choice.nodes,
        None,
        choice.rule,
        choice.reason,
        time_limit_reason="kept: the placement model predicts no interval to shrink it by",
    )
    return Placed(decision, choice.tasks_per_node, detail)


@dataclass(frozen=True)
class PartitionPick:
    """The partition with the earliest predicted completion, its own decision (reason
    extended by the choice) and the options compared, as ``{"kind": "partition", ...}``;
    partition and decision None when no option has a finite completion (the job keeps its
    list), and then `reason` says so."""

    decision: Decision | None
    partition: str | None
    detail: dict[str, Any]
    reason: str = ""


def partition_decision(
    request: policies.Request,
    names: Sequence[str],
    curve_for: Callable[[str], Curve | None],
    state_for: Callable[[str], ClusterState],
    settings_for: Callable[[str], PolicySettings],
    wait_for: Callable[[str, int], float],
    budget: ExplorationBudget = NO_BUDGET,
    missing: str | Callable[[str], str] = "no curve",
) -> PartitionPick | None:
    """Each partition's own decision, pinned (a completion needs one size to predict), and
    the earliest predicted completion among them (policies/partition.py); None with fewer
    than two partitions.

    curve_for(p): the curve on p's node type (the app's typed curve, else the curve of all
    its runs when they ran on nodes of p's core count, policies/fallback.py; else None);
    state_for(p), settings_for(p): p's cluster state and policy settings; wait_for(p, n): the
    wait in seconds for n nodes in p (inf: unknown or never); missing: why there is no
    curve, or missing(p) why there is none on p.
    """
    if len(names) < 2:
        return None
    options: list[Option] = []
    decisions: dict[str, Decision] = {}
    for name in names:
        curve = curve_for(name)
        decision = policies.decide(
            replace(request, partition=name),
            curve,
            state_for(name),
            replace(settings_for(name), release="pinned"),
            budget,
            missing(name) if callable(missing) else missing,
        )
        decisions[name] = decision
        n = decision.nodes
        runtime = float(curve.runtime(n)) if curve is not None and n is not None else math.nan
        wait = wait_for(name, n) if n is not None else math.inf
        options.append(Option(name, n, runtime, wait))
    choice = choose_partition(options)
    detail = {"kind": "partition", "options": [o.to_dict() for o in choice.options]}
    if choice.partition is None:
        return PartitionPick(None, None, detail, choice.reason)
    chosen = decisions[choice.partition]
    decision = replace(
        chosen,
        reason=f"{choice.reason}; on {choice.partition}: {chosen.reason}",
        candidates=(
            *chosen.candidates,
            Candidate("partition_choice", chosen.nodes, choice.reason),
        ),
    )
    return PartitionPick(decision, choice.partition, detail, choice.reason)
