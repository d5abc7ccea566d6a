"""The JSON document of ``adaptalloc simulate``, from its parts.

A local run (plugin/cli/simulate.py) and a Slurm array's cells (sim_array.py) build the same
document: `document_parts` says what was simulated (from the first load's first seed),
`assemble_document` puts the figures of every load beside it, in the contract's order
(DESIGN.md: {"trace", "curves", "dropped", "loads": [{"load", "policies"}], "policies"},
with the older keys kept).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from plugin.formats.swf import SwfTrace
from policies.simulation import PolicyResult, Setup, offered_load
from policies.simulation.assumptions import assumptions
from policies.simulation.experiment import ORACLE_LABELS, Experiment
from policies.simulation.typed import PooledExperiment, PoolPlan

__all__ = [
    "ASSUMPTIONS",
    "POOL_ASSUMPTIONS",
    "assemble_document",
    "document_parts",
    "load_value",
    "pool_sentences",
    "pools_part",
]

#: What every simulation assumes, with the defaults' numbers: the text, JSON and HTML
#: outputs print `assumptions(setup)` (policies/simulation/assumptions.py) for the run's own.
ASSUMPTIONS = tuple(a.line() for a in assumptions(Setup(machine=1)))


#: What a simulation over node pools assumes besides ASSUMPTIONS (policies/simulation/typed.py).
POOL_ASSUMPTIONS = (
    "Node pools: one partition per pool (FCFS + EASY each); a job of P processors asks for "
    "⌈P/c⌉ nodes of its pool's c cores; jobs of a partition no pool runs are dropped.",
    "True curves per node type: Downey's in processors (A = median request in processors × "
    "U[factor]); on c-core nodes Downey's in nodes with A/c (at least 1), one node running as "
    "c processors, divided by the pool's speed (an assumption, default 1: the trace gives "
    "no per-type speed).",
    "Learned curves are keyed by (application, pool), as the daemon keys them by node type.",
    "Multi-partition what-if: the job's processors on each listed pool, one time limit for "
    "all; rigid, rigid_limits and greedy take the first listed pool that can start it now, "
    "else the one whose queue implies the earliest start (running jobs ending at their "
    "limits); the other policies choose by predicted completion (policies/partition.py). "
    "Slurm keeps such a job pending in every partition; here it is routed at submit.",
)


def pools_part(
    parts: Mapping[str, Any],
    plan: PoolPlan,
    source: str,
    experiment: Experiment | PooledExperiment,
    offered: float,
) -> dict[str, Any]:
    """`parts` (document_parts) with node pools: "pools" (the pools, where they came from,
    the multi-partition listing), the jobs dropped for want of a pool added to "dropped",
    the offered load in processors and the pool assumptions."""
    out = dict(parts)
    dropped = dict(parts["dropped"])
    if isinstance(experiment, PooledExperiment):
        dropped.update(experiment.dropped)
        out["settings"] = dict(parts["settings"], max_parallelism=experiment.parallelism)
    out["dropped"] = dropped
    out["trace"] = dict(parts["trace"], offered_load=load_value(None, offered))
    out["pools"] = {
        "source": source,
        "pools": [
            {
                "name": p.name,
                "nodes": p.nodes,
                "cores": p.cores,
                "partitions": list(p.partitions),
                "speed": p.speed,
            }
            for p in plan.pools
        ],
        "multi_partition": [plan.pools[q].name for q in plan.multi] or None,
    }
    out["assumptions"] = [*parts["assumptions"], *POOL_ASSUMPTIONS]
    return out


def pool_sentences(
    plan: PoolPlan, source: str, experiment: Experiment | PooledExperiment
) -> list[str]:
    """The pools in sentences (the text output's head)."""
    pools = ", ".join(str(p) for p in plan.pools)
    out = [f"Node pools from {source}: {pools}."]
    if isinstance(experiment, PooledExperiment) and experiment.dropped:
        drops = ", ".join(f"{n:,} {why}" for why, n in experiment.dropped.items())
        out.append(f"Dropped jobs: {drops}.")
    if plan.multi:
        listed = ",".join(plan.pools[q].name for q in plan.multi)
        out.append(
            f"Multi-partition what-if: every job of {listed} submitted with -p {listed} "
            "(rigid, greedy: Slurm's first that can start it; adaptalloc: earliest predicted "
            "completion)."
        )
    out.extend(POOL_ASSUMPTIONS)
    return out


def load_value(load: float | None, offered: float) -> float | None:
    """A load as the JSON says it: the trace's own offered load for None (null when it is
    infinite: JSON has no infinity, and a trace submitted all at once offers none)."""
    if load is not None:
        return load
    return offered if math.isfinite(offered) else None


def document_parts(
    trace: SwfTrace,
    setup: Setup,
    experiment: Experiment | PooledExperiment,
    first: Mapping[str, PolicyResult],
    config_source: str,
    seeds: int,
) -> dict[str, Any]:
    """Everything of the JSON document but its figures ("loads", "policies"): what was
    simulated, from the first load's first seed. A Slurm array's cell writes these beside
    its figures, so that the gathered document is the one a local run prints."""
    offered = load_value(None, offered_load(trace.jobs, trace.machine))
    adaptive = first.get("adaptive")
    return {
        "trace": {
            "path": trace.source,
            "machine": trace.machine,
            "machine_from": trace.machine_from,
            "procs_per_node": trace.procs_per_node,
            "procs_per_node_from": trace.procs_per_node_from,
            "jobs": len(experiment.jobs),
            "usable_jobs": trace.usable,
            "lines": trace.lines,
            "limits_from_runtime": trace.limits_from_runtime,
            "limits_modelled": trace.limits_from_runtime,
            "offered_load": offered,
        },
        "curves": setup.curves,
        "curves_note": (
            "oracle: the adaptalloc policies were handed the true curves with each job's own "
            "run time (an upper bound)"
            if setup.curves == "oracle"
            else "learned: the adaptalloc policies saw only curves fitted from earlier runs, "
            "filed under the learner's keys; the oracles alone saw true curves: oracle (true "
            "curve + own run time, and oracle_range among the variants: upper bounds) and "
            "oracle_curve (the curve's shape only: the ceiling of a learner)"
            + (
                "; refitted at the sparse cadence (an approximation: staler than the daemon's)"
                if setup.refits == "sparse"
                else ""
            )
        ),
        "dropped": dict(trace.skipped),
        "skipped": dict(trace.skipped),
        "applications": {"count": len(experiment.apps), "grouping": experiment.apps.grouping},
        "settings": {
            "seed": setup.seed,
            "seeds": seeds,
            "backfill": "easy" if setup.backfill else "none",
            "moldable": {"low": setup.moldable.low, "high": setup.moldable.high},
            "max_parallelism": setup.parallelism,
            "parallelism_factor": None if setup.factor is None else list(setup.factor),
            "noise": setup.noise,
            "world": setup.world,
            "codes_per_key": setup.codes_per_key,
            "shared_codes": setup.shared_codes,
            "max_time_s": experiment.max_time,
            "max_job_nodes": setup.job_nodes,
            "refit_cadence": setup.refits,
            "config": config_source,
            "stored_curves": experiment.jobs_with_stored_curves,
        },
        "world": setup.world,
        "assumptions": [a.line() for a in assumptions(setup)],
        "oracles": dict(ORACLE_LABELS),
        "limits": {
            "as_written": len(experiment.jobs) - experiment.limits.modelled,
            "modelled": experiment.limits.modelled,
            "model": "Tsafrir, Etsion and Feitelson 2005" if experiment.limits.modelled else None,
            "max_estimate_s": experiment.limits.max_estimate or None,
            "raised_to_max": experiment.limits.raised,
        },
        "hidden_applications": {
            "count": len(experiment.truth),
            "per_key": experiment.truth.applications_per_key(experiment.apps),
            "keys_per_application": experiment.truth.keys_per_application(experiment.apps),
        },
        "recorded_jobs": sum(not j.completed for j in experiment.jobs),
        "status_unknown": sum(j.status == -1 for j in experiment.jobs),
        "adaptive_rules": dict(adaptive.rules) if adaptive else {},
        "refits": {name: r.refits for name, r in first.items() if r.refits},
    }


def assemble_document(parts: Mapping[str, Any], loads: list[dict[str, Any]]) -> dict[str, Any]:
    """The document from its parts (document_parts) and its loads, in the contract's order."""
    head = ("trace", "curves", "curves_note", "dropped")
    doc = {key: parts[key] for key in head}
    doc["loads"] = loads
    doc["policies"] = loads[0]["policies"]
    doc.update((key, value) for key, value in parts.items() if key not in head)
    return doc
