"""Master-worker applications: no more nodes than the workers one master keeps busy.

Costa et al. (dynamic tuning of master-worker applications on grids) model one master that
sends every task's input to a worker and takes its output back. During one task's compute
time Tc the master can serve

    N_opt = Tc / (max(vi, vo) · λ)

workers, with vi and vo the data per task in and out and λ the transfer time per byte of
the master's link (predictor.models.master_worker_optimum). With N_opt workers the master is
always busy; more only wait for it. So a job tagged ``pattern=master-worker`` is capped at
the nodes N_opt workers need (`WorkerCap`), found one of two ways:

figures   the job's tag reports the task figures (``tc=`` seconds per task on one worker,
          ``vi=`` and ``vo=`` bytes per task) and the partition's link bandwidth is
          configured (``[node_types.P] link_gbs``, λ = 1/bandwidth). ⌊N_opt⌋ workers (at
          least one) and the master, one task each, fill ⌈(⌊N_opt⌋ + 1)/w⌉ nodes of w
          tasks (the job's ``--ntasks-per-node``, else the partition's CPUs per node).
speedup   otherwise the runs' curve says where the master saturated: while every worker
          is busy the speedup grows as S = E0·n, once the master is saturated it stays at
          S_max; the knee n* = S_max/E0 (predictor.models.saturation_knee) is where N_opt
          workers were reached, in nodes. Only from a curve whose knee the runs have shown
          (identified): before it, N_opt is not known.

The heterogeneous case. Costa et al. tune the number of workers in each compute element
independently, the faster elements first, since a worker's Tc depends on its processor
and λ on its link. A Slurm job runs in one partition, so its workers are on one node type:
each partition a job lists is a compute element with its own cap, from its own λ (its
``link_gbs``) and its own Tc: the tag's ``tc`` is the task time on the job's first listed
partition, and on another type it is scaled by the two types' per-core roofline speeds
(`scaled_figures`, policies/roofline.py), or taken as is where they are not configured
(the reason says which).

`capped` applies the cap to a decision: decided over the user's range first; a size within
the cap stands (the reason says N_opt allows it); a released range reaching past it is cut
at it; a size past it is decided again over the range cut at the cap (rule
``master_worker``, the time limit fitted to the new size); a job the policy would leave as
submitted is released with its range cut at the cap. Never below the user's minimum.

What N_opt assumes: the paper's pattern, one master serving every task over one link, tasks
of similar Tc and volume, and workers that do nothing but compute tasks. A code whose
workers talk to each other, or that has several masters, is not one it describes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from policies.config import PolicySettings
from policies.decide import MAX_NODES, unusable_because
from policies.decision import PARTITION_LIMIT, Candidate, Decision
from policies.inputs import Request
from policies.rules import nodes, number
from predictor import Curve
from predictor.models import master_worker_optimum, saturation_knee

__all__ = [
    "MASTER_WORKER",
    "Figures",
    "WorkerCap",
    "capped",
    "figures_cap",
    "scaled_figures",
    "speedup_cap",
]

#: The rule of a decision the master-worker cap sized.
MASTER_WORKER = "master_worker"
#: Sizes the learned knee is searched over, on a log grid from the smallest observed size.
_GRID = 256


@dataclass(frozen=True)
class Figures:
    """A task's figures as the job reports them: tc seconds of compute on one worker, vi and
    vo bytes sent to and returned by the worker."""

    tc: float
    vi: float
    vo: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.tc) and self.tc > 0):
            raise ValueError(f"tc must be finite and > 0, got {self.tc!r}")
        for what, value in (("vi", self.vi), ("vo", self.vo)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{what} must be finite and ≥ 0, got {value!r}")
        if max(self.vi, self.vo) <= 0:
            raise ValueError("vi or vo must be > 0")


@dataclass(frozen=True)
class WorkerCap:
    """The nodes N_opt workers (and the master) need, how it was found and why, one clause."""

    nodes: int
    n_opt: float
    source: str
    reason: str
    workers: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "nodes": self.nodes,
            "n_opt": self.n_opt,
            "source": self.source,
            "workers": self.workers,
            "reason": self.reason,
        }


def scaled_figures(figures: Figures, time_ratio: float) -> Figures:
    """The figures on another node type: Tc × k (k = s_from/s_to, the per-core speed
    ratio, policies/roofline.py); the volumes do not change."""
    if not (math.isfinite(time_ratio) and time_ratio > 0):
        raise ValueError(f"time_ratio must be finite and > 0, got {time_ratio!r}")
    return replace(figures, tc=figures.tc * time_ratio)


def figures_cap(
    figures: Figures, link_gbs: float, tasks_per_node: int, where: str = ""
) -> WorkerCap:
    """The cap from the task figures (module docstring, "figures").

    Parameters
    ----------
    figures : Tc (s), vi and vo (bytes) per task
    link_gbs : the master's link bandwidth, GB/s (λ = 1 / (link_gbs · 10⁹) s per byte)
    tasks_per_node : tasks (workers, and the master) per node, ≥ 1
    where : the partition, for the reason ("" leaves it out)
    """
    if not (math.isfinite(link_gbs) and link_gbs > 0):
        raise ValueError(f"link_gbs must be finite and > 0, got {link_gbs!r}")
    if tasks_per_node < 1:
        raise ValueError(f"tasks_per_node must be ≥ 1, got {tasks_per_node}")
    volume = max(figures.vi, figures.vo)
    per_byte = 1.0 / (link_gbs * 1e9)  # λ; 0 when link_gbs is past float range: N_opt ∞
    n_opt = (
        master_worker_optimum(figures.tc, figures.vi, figures.vo, per_byte)
        if per_byte > 0
        else math.inf
    )
    # Past what MAX_NODES nodes hold (extreme figures: an overflow to inf) nothing is capped.
    most = float(MAX_NODES) * tasks_per_node
    workers = max(1, math.floor(min(n_opt * (1.0 + 1e-12), most)))
    need = min(MAX_NODES, math.ceil((workers + 1) / tasks_per_node))
    on = f" on {where}" if where else ""
    reason = (
        f"a master keeps N_opt = Tc/(max(vi, vo)·λ) = {number(figures.tc)} s / "
        f"({number(volume)} B at {number(link_gbs)} GB/s) = {number(n_opt)} workers busy{on} "
        f"(Costa et al.): {workers} workers and the master fill {nodes(need)} at "
        f"{tasks_per_node} task{'' if tasks_per_node == 1 else 's'} a node, and more workers "
        "would only wait"
    )
    return WorkerCap(need, n_opt, "figures", reason, workers)


def speedup_cap(curve: Curve, settings: PolicySettings) -> WorkerCap | str:
    """The cap from the runs' curve (module docstring, "speedup"), or why there is none."""
    unusable = unusable_because(curve, settings)
    if unusable:
        return f"N_opt is not known from the runs ({unusable})"
    if not curve.identified:
        return (
            "N_opt is not known from the runs: their speedup has not levelled off yet (no "
            "knee), so the master never saturated in them"
        )
    n0 = curve.smallest_observed
    top = max(curve.largest_observed, curve.max_useful_n or 0, n0 + 1) * 2
    grid = np.unique(
        np.concatenate([[float(n0)], np.rint(np.geomspace(n0, min(top, MAX_NODES), _GRID))])
    )
    speedup = curve.speedup(grid)
    knee = saturation_knee(grid, speedup)
    need = max(1, min(MAX_NODES, round(knee)))
    reason = (
        f"its runs' speedup levels off at {number(float(np.max(speedup)))} (the master saturated: "
        f"Costa et al.'s N_opt workers reached) at about {nodes(need)}, and more nodes would "
        "only wait"
    )
    return WorkerCap(need, knee, "speedup", reason)


def capped(request: Request, cap: WorkerCap, decide: Callable[[Request], Decision]) -> Decision:
    """`decide` (a decision for a request: policies.decide with the job's curve, cluster and
    settings) under the master-worker cap (module docstring)."""
    lo, hi = request.min_nodes, request.max_nodes
    first = decide(request)
    candidate = Candidate(MASTER_WORKER, cap.nodes, cap.reason)
    if first.rule == PARTITION_LIMIT:
        return first
    if cap.nodes >= hi:
        return replace(
            first,
            reason=f"{first.reason}; master-worker: {cap.reason}, which the range's "
            f"{nodes(hi)} do not exceed",
            candidates=(*first.candidates, candidate),
        )
    top = max(lo, cap.nodes)
    below = _below(cap, lo)
    if first.nodes is None:  # left as submitted: release the range cut at the cap
        return _cut_range(request, cap, first, candidate)
    if first.nodes <= top:
        return _within(first, top, cap, candidate)
    second = decide(replace(request, max_nodes=top))
    if second.nodes is None:
        return _cut_range(request, cap, first, candidate)
    return Decision(
        second.nodes,
        second.time_limit_min,
        MASTER_WORKER,
        f"{cap.reason}, so the size is capped at {nodes(top)}{below} (the {first.rule} rule "
        f"chose {first.nodes} over the whole range); within it: {second.reason}",
        (*second.candidates, candidate),
        second.time_limit_reason,
        second.max_nodes,
    )


def _cut_range(request: Request, cap: WorkerCap, first: Decision, candidate: Candidate) -> Decision:
    """The job released with its range cut at the cap (a decision that left it as
    submitted, or gave it no size under the cap); its time limit is left alone."""
    lo, hi = request.min_nodes, request.max_nodes
    top = max(lo, cap.nodes)
    return Decision(
        lo,
        None,
        MASTER_WORKER,
        f"{cap.reason}, so the range {lo}-{hi} is cut to {lo}-{top}{_below(cap, lo)}; "
        f"without the cap: {first.reason}",
        (*first.candidates, candidate),
        "kept: the job was left as submitted but for the master-worker cap",
        top if top > lo else None,
    )


def _below(cap: WorkerCap, lo: int) -> str:
    return f" (the job's minimum, {nodes(lo)}, is above them)" if cap.nodes < lo else ""


def _within(first: Decision, top: int, cap: WorkerCap, candidate: Candidate) -> Decision:
    """A decision whose size is within the cap: a released range is cut at it."""
    if first.max_nodes is not None and first.nodes is not None and first.max_nodes > top:
        return replace(
            first,
            reason=f"{first.reason}; the range's top is cut to {nodes(top)}: {cap.reason}",
            candidates=(*first.candidates, candidate),
            max_nodes=top if top > first.nodes else None,
        )
    return replace(
        first,
        reason=f"{first.reason}; within the {nodes(top)} master-worker allows ({cap.reason})",
        candidates=(*first.candidates, candidate),
    )
