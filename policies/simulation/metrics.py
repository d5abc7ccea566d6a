"""What a schedule is worth: the figures the simulator reports per policy.

For job i with first submit s_i, end of its last run e_i, and runs k (start b_k, end f_k, n_k
nodes; a job killed at its limit is submitted again and runs again, engine.py):

    response            e_i − s_i                                   (turnaround)
    wait                e_i − s_i − Σ_k (f_k − b_k)                 (all the time it queued)
    bounded slowdown    max(1, (e_i − s_i) / max(T_i, 10 s))        (Feitelson et al. 1997)
    node-hours          Σ_k n_k (f_k − b_k) / 3600                  (every run, killed ones too)
    killed              runs killed at their limit
    killed node-hours   Σ over killed runs of n_k (f_k − b_k) / 3600  (wasted_node_hours, the
                        same figure under its plain name: work thrown away at the limit)
    resubmitted         runs beyond each job's first (a user submitting a killed job again)
    abandoned           jobs killed with their user's limit at the partition's maximum
    raised              jobs whose limit the kill guard raised (each a kill it saved or,
                        if the job still outran the raised limit, put off to the user's limit)
    sized               jobs whose last allocation was decided with a curve (a rule other
                        than LEFT_AS_SUBMITTED); recorded: jobs replayed as recorded
    mature              jobs (not replayed as recorded) submitted once MATURE_RUNS jobs of
                        their application key had ended (`keys` given), and mature_sized
                        those of them sized: how often an application that has run enough
                        is sized with a curve
    by key age          the mean response split by how many jobs of the job's key had
                        ended when it was submitted: unseen_response_s (none: no learner
                        can have the application's curve), mature_response_s (MATURE_RUNS
                        or more), recorded_response_s (jobs replayed as recorded, which no
                        policy sizes: what they gain is the queue's), each Σ over its jobs
                        of e_i − s_i over all jobs, so that a difference between two
                        policies' mean responses splits into these parts and the jobs in
                        between (1 to MATURE_RUNS − 1 ended: applications still learning)
    makespan            max e_i − min s_i
    utilization         node-hours · 3600 / (machine · makespan)

T_i is the job's run time at its *requested* size (the same for every policy, so slowdowns are
comparable across policies; its own run time when no reference is given). Means are over
all jobs. `usage_over_time` gives the busy share of the machine per time bin, over every
run, for the utilization plots of the HTML report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from policies.decision import FALLBACK, PARTITION_LIMIT
from policies.simulation.engine import RECORDED, Schedule
from predictor.downey import FloatArray, IntArray

#: The bound of the bounded slowdown, seconds: short jobs do not dominate the mean.
SLOWDOWN_BOUND_S = 10.0
#: Ended jobs of its key after which a job counts as `mature` (module doc).
MATURE_RUNS = 20
#: The rules of an allocation that left the job as submitted: the baselines' (""), and the
#: adaptive policy's fallback and partition-limit rules.
LEFT_AS_SUBMITTED = frozenset({"", FALLBACK, PARTITION_LIMIT})


@dataclass(frozen=True)
class Metrics:
    """The figures of one schedule (seconds, except node_hours)."""

    jobs: int
    mean_response_s: float
    mean_wait_s: float
    mean_bounded_slowdown: float
    utilization: float
    makespan_s: float
    node_hours: float
    killed: int
    killed_node_hours: float = 0.0
    raised: int = 0
    resubmitted: int = 0
    abandoned: int = 0
    sized: int = 0
    recorded: int = 0
    mature: int = 0
    mature_sized: int = 0
    unseen_response_s: float = 0.0
    mature_response_s: float = 0.0
    recorded_response_s: float = 0.0

    @property
    def mean_bsld(self) -> float:
        return self.mean_bounded_slowdown

    @property
    def wasted_node_hours(self) -> float:
        return self.killed_node_hours

    def to_dict(self) -> dict[str, float | int]:
        """The figures by name; mean_bsld is mean_bounded_slowdown under its contract name,
        wasted_node_hours killed_node_hours under its plain one."""
        out: dict[str, float | int] = asdict(self)
        out["mean_bsld"] = self.mean_bounded_slowdown
        out["wasted_node_hours"] = self.killed_node_hours
        return out


def bounded_slowdown(
    schedule: Schedule, bound: float = SLOWDOWN_BOUND_S, reference: FloatArray | None = None
) -> FloatArray:
    """max(1, response / max(T, bound)) per job; T the reference run time, else its own."""
    response = schedule.end - schedule.submit
    base = schedule.runtime if reference is None else reference
    out: FloatArray = np.maximum(1.0, response / np.maximum(base, bound))
    return out


def ended_before_submit(schedule: Schedule, keys: IntArray) -> IntArray:
    """For each job, how many jobs of its key ended before it was submitted: one sort of
    (key, end) and one search of (key, submit) in it."""
    keys = np.asarray(keys, dtype=np.int64)
    order = np.lexsort((schedule.end, keys))
    sorted_keys, sorted_ends = keys[order], schedule.end[order]
    # Per key, the jobs before its first in the sorted order, then a search within the key.
    first = np.searchsorted(sorted_keys, keys, side="left")
    last = np.searchsorted(sorted_keys, keys, side="right")
    span = float(np.max(schedule.end) - np.min(schedule.submit)) + 1.0
    base = float(np.min(schedule.submit))
    rank = sorted_keys * span + (sorted_ends - base)
    found = np.searchsorted(rank, keys * span + (schedule.submit - base), side="left")
    out: IntArray = np.clip(found, first, last) - first
    return out


def summarize(
    schedule: Schedule, reference: FloatArray | None = None, keys: IntArray | None = None
) -> Metrics:
    """The figures of the module doc (`keys`: each job's application key, for `mature`);
    ValueError for an empty schedule."""
    if len(schedule) == 0:
        raise ValueError("an empty schedule has no figures")
    area = float(np.sum(schedule.work))
    makespan = float(np.max(schedule.end) - np.min(schedule.submit))
    response = schedule.end - schedule.submit
    recorded = np.array([rule == RECORDED for rule in schedule.rule])
    left = np.array([rule in LEFT_AS_SUBMITTED for rule in schedule.rule])
    runs = schedule.all_runs()
    mature = unseen = np.zeros(len(schedule), dtype=bool)
    if keys is not None:
        ended = ended_before_submit(schedule, keys)
        mature = (ended >= MATURE_RUNS) & ~recorded
        unseen = (ended == 0) & ~recorded
    return Metrics(
        jobs=len(schedule),
        mean_response_s=float(np.mean(response)),
        mean_wait_s=float(np.mean(response - schedule.ran)),
        mean_bounded_slowdown=float(np.mean(bounded_slowdown(schedule, reference=reference))),
        utilization=area / (schedule.machine * makespan) if makespan > 0.0 else 0.0,
        makespan_s=makespan,
        node_hours=area / 3600.0,
        killed=int(np.sum(runs.killed)),
        killed_node_hours=float(np.sum(schedule.wasted)) / 3600.0,
        raised=schedule.raised_limits,
        resubmitted=schedule.resubmitted,
        abandoned=0 if schedule.abandoned is None else int(np.sum(schedule.abandoned)),
        sized=int(np.sum(~left & ~recorded)),
        recorded=int(np.sum(recorded)),
        mature=int(np.sum(mature)),
        mature_sized=int(np.sum(mature & ~left)),
        unseen_response_s=float(np.sum(response[unseen])) / len(schedule),
        mature_response_s=float(np.sum(response[mature])) / len(schedule),
        recorded_response_s=float(np.sum(response[recorded])) / len(schedule),
    )


def busy_nodes(schedule: Schedule) -> tuple[FloatArray, FloatArray]:
    """The busy node count as a step function: (times, nodes busy from each time on).

    At equal times ends come before starts, so the count never shows a transient overlap.
    Every run counts (a killed job's runs too).
    """
    runs = schedule.all_runs()
    times = np.concatenate([runs.end, runs.start])
    deltas = np.concatenate([-runs.nodes, runs.nodes]).astype(float)
    # lexsort: by time, then ends (-n) before starts (+n).
    order = np.lexsort((deltas, times))
    return times[order], np.cumsum(deltas[order])


def usage_over_time(schedule: Schedule, bins: int) -> tuple[FloatArray, FloatArray]:
    """(bin edges, busy share of the machine in each bin) from first submit to last end."""
    if bins < 1:
        raise ValueError(f"bins must be ≥ 1, got {bins}")
    t0, t1 = float(np.min(schedule.submit)), float(np.max(schedule.end))
    edges = np.linspace(t0, t1, bins + 1)
    times, busy = busy_nodes(schedule)
    # Integral of busy(t) up to each edge: sum of completed steps plus the partial one.
    widths = np.diff(times)
    area = np.concatenate([[0.0], np.cumsum(busy[:-1] * widths)])
    k = np.clip(np.searchsorted(times, edges, side="right") - 1, 0, len(times) - 1)
    at_edges = area[k] + busy[k] * (edges - times[k])
    at_edges[edges < times[0]] = 0.0
    width = np.diff(edges)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(width > 0, np.diff(at_edges) / (schedule.machine * width), 0.0)
    out: FloatArray = share
    return edges, out
