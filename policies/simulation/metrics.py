"""What a schedule is worth: the figures the simulator reports per policy.

For job i with submit s_i, start b_i, end e_i on n_i nodes (run time r_i = e_i − b_i):

    response            e_i − s_i                     (turnaround)
    wait                b_i − s_i
    bounded slowdown    max(1, (e_i − s_i) / max(T_i, 10 s))   (Feitelson et al. 1997)
    node-hours          Σ n_i r_i / 3600
    killed node-hours   Σ over killed jobs of n_i r_i / 3600   (work lost at the limit)
    raised              jobs whose limit the kill guard raised (each a kill it saved or,
                        if the job still outran the raised limit, put off to the user's limit)
    makespan            max e_i − min s_i
    utilization         Σ n_i r_i / (machine · makespan)

T_i is the job's run time at its *requested* size (the same for every policy, so slowdowns are
comparable across policies; its own run time r_i when no reference is given). Means are over
all jobs. `usage_over_time` gives the busy share of the machine per time bin,
for the utilization plots of the HTML report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from policies.simulation.engine import Schedule
from predictor.downey import FloatArray

#: The bound of the bounded slowdown, seconds: short jobs do not dominate the mean.
SLOWDOWN_BOUND_S = 10.0


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

    @property
    def mean_bsld(self) -> float:
        return self.mean_bounded_slowdown

    def to_dict(self) -> dict[str, float | int]:
        """The figures by name; mean_bsld is mean_bounded_slowdown under its contract name."""
        out: dict[str, float | int] = asdict(self)
        out["mean_bsld"] = self.mean_bounded_slowdown
        return out


def bounded_slowdown(
    schedule: Schedule, bound: float = SLOWDOWN_BOUND_S, reference: FloatArray | None = None
) -> FloatArray:
    """max(1, response / max(T, bound)) per job; T the reference run time, else its own."""
    response = schedule.end - schedule.submit
    base = schedule.runtime if reference is None else reference
    out: FloatArray = np.maximum(1.0, response / np.maximum(base, bound))
    return out


def summarize(schedule: Schedule, reference: FloatArray | None = None) -> Metrics:
    """The figures of the module doc; ValueError for an empty schedule."""
    if len(schedule) == 0:
        raise ValueError("an empty schedule has no figures")
    work = schedule.nodes * schedule.runtime
    area = float(np.sum(work))
    makespan = float(np.max(schedule.end) - np.min(schedule.submit))
    return Metrics(
        jobs=len(schedule),
        mean_response_s=float(np.mean(schedule.end - schedule.submit)),
        mean_wait_s=float(np.mean(schedule.start - schedule.submit)),
        mean_bounded_slowdown=float(np.mean(bounded_slowdown(schedule, reference=reference))),
        utilization=area / (schedule.machine * makespan) if makespan > 0.0 else 0.0,
        makespan_s=makespan,
        node_hours=area / 3600.0,
        killed=int(np.sum(schedule.killed)),
        killed_node_hours=float(np.sum(work[schedule.killed])) / 3600.0,
        raised=schedule.raised_limits,
    )


def busy_nodes(schedule: Schedule) -> tuple[FloatArray, FloatArray]:
    """The busy node count as a step function: (times, nodes busy from each time on).

    At equal times ends come before starts, so the count never shows a transient overlap.
    """
    times = np.concatenate([schedule.end, schedule.start])
    deltas = np.concatenate([-schedule.nodes, schedule.nodes]).astype(float)
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
