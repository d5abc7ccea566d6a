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

And what the seed papers' models read (docs/science/seed-models.md), with whichever rule
decides: ``pattern=master-worker`` in the tag caps the size at the nodes the workers one
master keeps busy need (`job_seeds`, `worker_cap`, `sized`; policies/master_worker.py), each
partition with its own cap; on a configured node type the app has no curve of its own, its
curve on another type converted by the roofline stands in (`roofline_prior`;
policies/roofline.py), with the tag's ``intensity=`` or the runs' estimate.

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
from plugin.learning.priors import Prior, prior_on
from plugin.slurm import JobRecord
from policies import ClusterState, Decision, ExplorationBudget, PolicySettings
from policies.decide import NO_BUDGET, unusable_because
from policies.decision import Candidate
from policies.master_worker import (
    Figures,
    WorkerCap,
    capped,
    figures_cap,
    scaled_figures,
    speedup_cap,
)
from policies.partition import Option, choose_partition
from policies.placement import choose_placement
from policies.roofline import Known, NodeType, choose_intensity, time_ratio
from policies.weak import decide_weak
from predictor import Curve
from predictor.placement import PlacementModel, fit_placement
from predictor.weak import WeakFit, fit_weak

__all__ = [
    "CapFor",
    "PartitionPick",
    "Placed",
    "Seeds",
    "TypeView",
    "fixed_tasks",
    "job_scaling",
    "job_seeds",
    "known_curves",
    "partition_decision",
    "placement_decision",
    "placement_model",
    "roofline_prior",
    "sized",
    "tag_in",
    "tc_ratio",
    "weak_decision",
    "weak_fit",
    "worker_cap",
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


@dataclass(frozen=True)
class Seeds:
    """What the job's tag says for the seed papers' models: whether it is a master-worker
    application, the task figures it reports (None: none), its operational intensity."""

    master_worker: bool = False
    figures: Figures | None = None
    intensity: float | None = None


def job_seeds(job: JobRecord) -> Seeds:
    """The job's `Seeds`: the first of its tags (comment, then the admin comment's earlier
    text) that names a pattern gives the pattern and its figures, the first that gives an
    intensity the intensity; nothing from an unreadable tag (the decider refuses a bad tag
    before it gets here)."""
    prior = marks.prior_text(job.admin_comment)
    pattern: Tag | None = None
    intensity: float | None = None
    for text, where in ((job.comment, "comment"), (prior, "admin_comment")):
        try:
            tag = tag_in(text, where)
        except AppKeyError:
            return Seeds()
        if tag is None:
            continue
        if pattern is None and tag.pattern is not None:
            pattern = tag
        if intensity is None and tag.intensity is not None:
            intensity = tag.intensity
    figures = None
    if pattern is not None and pattern.tc is not None:
        figures = Figures(pattern.tc, pattern.vi or 0.0, pattern.vo or 0.0)
    return Seeds(pattern is not None, figures, intensity)


#: (partition, the curve decided on there) -> the master-worker cap there, why there is
#: none (str), or None for a job that is not master-worker.
CapFor = Callable[[str, Curve | None], WorkerCap | str | None]


def worker_cap(
    seeds: Seeds,
    partition: str,
    curve: Curve | None,
    settings: PolicySettings,
    link_gbs: float,
    tasks_per_node: int,
    time_ratio: float | None = None,
    reference: str = "",
) -> WorkerCap | str | None:
    """The master-worker cap on `partition` (policies/master_worker.py): from the tag's
    figures when `partition`'s link bandwidth is known, else learned from `curve`; why
    there is none; None for a job that is not master-worker.

    The tag's Tc is the task time on `reference` (the job's first listed partition); on
    another partition it is scaled by `time_ratio` (the roofline's per-core speed ratio,
    policies/roofline.py) or, without one, taken as is, and the reason says which.
    """
    if not seeds.master_worker:
        return None
    why = ""
    if seeds.figures is not None:
        if link_gbs > 0:
            figures, note = seeds.figures, ""
            if partition != reference and reference:
                if time_ratio is not None:
                    figures = scaled_figures(figures, time_ratio)
                    note = (
                        f" (Tc on {partition}: the tag's {seeds.figures.tc:g} s on {reference} "
                        f"× {time_ratio:.3g}, the two types' roofline speed ratio)"
                    )
                else:
                    note = (
                        f" (the tag's Tc, on {reference}, taken as is on {partition}: no "
                        "roofline relates the two)"
                    )
            cap = figures_cap(figures, link_gbs, tasks_per_node, partition)
            return replace(cap, reason=cap.reason + note)
        why = (
            f"the tag's task figures need {partition}'s link bandwidth ([node_types.{partition}]"
            " link_gbs), which is not configured"
            if partition
            else "the tag's task figures need the partition's link bandwidth "
            "([node_types.NAME] link_gbs), and no partition is given"
        )
    if curve is None:
        return "; ".join(x for x in (why, "there is no curve to learn N_opt from") if x)
    learned = speedup_cap(curve, settings)
    if isinstance(learned, str):
        return "; ".join(x for x in (why, learned) if x)
    if why:
        learned = replace(learned, reason=f"{learned.reason} ({why}, so N_opt is learned)")
    return learned


def sized(
    request: policies.Request,
    curve: Curve | None,
    state: ClusterState,
    settings: PolicySettings,
    budget: ExplorationBudget,
    missing: str,
    cap: WorkerCap | str | None,
) -> Decision:
    """policies.decide under the master-worker cap when there is one (policies.master_worker
    .capped); when the job is master-worker but has no cap, the reason says why."""

    def plain(r: policies.Request) -> Decision:
        return policies.decide(r, curve, state, settings, budget, missing)

    if cap is None:
        return plain(request)
    if isinstance(cap, str):
        decision = plain(request)
        return replace(decision, reason=f"{decision.reason}; master-worker: not capped, {cap}")
    return capped(request, cap, plain)


@dataclass(frozen=True)
class TypeView:
    """How an application's curves per node type are read: the daemon's from the store
    (plugin/daemon/decider.py CurveSource), ``adaptalloc decide``'s from the store or a CSV.

    typed(t): its curve on type t when the learner fitted one (None: none); typed_types():
    the types it has such a curve on (none when it ran on one type only); run_types(): the
    types its runs ran on (None: a run without one); node_type(t): type t as the roofline
    sees it (None: not described in the adaptalloc TOML)."""

    typed: Callable[[str], Curve | None]
    typed_types: Callable[[], Sequence[str]]
    run_types: Callable[[], frozenset[str | None]]
    node_type: Callable[[str], NodeType | None]


def known_curves(
    view: TypeView, generic: Curve | None, settings: PolicySettings, skip: str = ""
) -> list[Known]:
    """The app's usable curves on described node types other than `skip`: its curve per
    type when the learner fitted several, else the curve of all its runs (`generic`) when
    they all ran on one described type."""
    pairs: list[tuple[str, Curve | None]] = []
    typed = view.typed_types()
    if typed:
        pairs = [(kind, view.typed(kind)) for kind in typed if kind != skip]
    elif generic is not None:
        types = view.run_types()
        if len(types) == 1 and None not in types:
            kind = str(next(iter(types)))
            pairs = [(kind, generic)] if kind != skip else []
    known = []
    for kind, curve in pairs:
        node_type = view.node_type(kind)
        if node_type is None or curve is None:
            continue
        if not unusable_because(curve, settings):
            known.append(Known(node_type, curve, curve.runs))
    return known


def roofline_prior(
    view: TypeView,
    name: str,
    generic: Curve | None,
    settings: PolicySettings,
    tagged: float | None,
) -> Prior | str | None:
    """The roofline prior on partition `name` where the app has no curve of its own there
    (its typed curve is absent: the caller asks only then), why there is none, or None where
    none applies: `name` is not described, there is no curve at all, or the curve of all
    the app's runs is `name`'s own (every run was there)."""
    target = view.node_type(name)
    if target is None or generic is None:
        return None
    if not view.typed_types() and view.run_types() == {name}:
        return None
    known = known_curves(view, generic, settings, skip=name)
    if not known:
        return (
            f"no roofline prior on {name}: the app has no usable curve on another described "
            "node type"
        )
    intensity = choose_intensity(tagged, known)
    if isinstance(intensity, str):
        return f"no roofline prior on {name}: {intensity}"
    return prior_on(target, known, intensity)


def tc_ratio(
    view: TypeView,
    generic: Curve | None,
    settings: PolicySettings,
    seeds: Seeds,
    reference: str,
    name: str,
) -> float | None:
    """k = s_reference/s_name, the factor from the tag's Tc on `reference` to `name`'s
    (policies.roofline.time_ratio), when both types are described and the intensity is
    known (the tag's, or the runs' estimate); else None."""
    source, target = view.node_type(reference), view.node_type(name)
    if seeds.figures is None or name == reference or source is None or target is None:
        return None
    intensity = choose_intensity(seeds.intensity, known_curves(view, generic, settings))
    if isinstance(intensity, str):
        return None
    return time_ratio(source, target, intensity.value)[0]


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
    cap_for: CapFor | None = None,
) -> PartitionPick | None:
    """Each partition's own decision, pinned (a completion needs one size to predict), and
    the earliest predicted completion among them (policies/partition.py); None with fewer
    than two partitions.

    curve_for(p): the curve on p's node type (the app's typed curve, else the curve of all
    its runs when they ran on nodes of p's core count, policies/fallback.py, or a roofline
    prior; else None); state_for(p), settings_for(p): p's cluster state and policy settings;
    wait_for(p, n): the wait in seconds for n nodes in p (inf: unknown or never); missing:
    why there is no curve, or missing(p) why there is none on p; cap_for(p, curve): p's
    master-worker cap (`worker_cap`), each partition's its own.
    """
    if len(names) < 2:
        return None
    options: list[Option] = []
    decisions: dict[str, Decision] = {}
    for name in names:
        curve = curve_for(name)
        decision = sized(
            replace(request, partition=name),
            curve,
            state_for(name),
            replace(settings_for(name), release="pinned"),
            budget,
            missing(name) if callable(missing) else missing,
            cap_for(name, curve) if cap_for is not None else None,
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
