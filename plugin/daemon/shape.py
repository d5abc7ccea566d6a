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

import math
from collections.abc import Iterable, Sequence
from typing import Any

from plugin.appkey import AppKeyError, parse_tag
from plugin.daemon import marks
from plugin.slurm import JobRecord
from predictor.placement import PlacementModel, fit_placement
from predictor.weak import WeakFit, fit_weak

__all__ = ["fixed_tasks", "job_scaling", "placement_model", "weak_fit"]


def job_scaling(job: JobRecord) -> str | None:
    """ "weak" or "strong" from the job's tag, None when it says nothing (or is unreadable:
    the decider refuses a bad tag before it gets here)."""
    prior = marks.prior_text(job.admin_comment)
    for text, where in ((job.comment, "comment"), (prior, "admin_comment")):
        try:
            tag = parse_tag(text, where)
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
