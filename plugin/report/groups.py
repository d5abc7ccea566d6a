"""Job arrays and groups: one summary row for runs that belong together, not one per task.

Two runs belong together when

* their job ids are tasks of the same array, ``<array>_<task>`` (Slurm's notation), or
* their job ids are consecutive numbers (each one more than the last) and they ran on the
  same number of nodes: what a loop of ``sbatch`` calls or an array's tasks under their own
  job ids look like in accounting, since Slurm numbers submissions in order.

Any other id (for example the ``csv-…`` ids of imported studies) is a job of its own. A
group's row gives the task count, the sizes, and the min/mean/max runtime and efficiency
(against the curve's T(1)); a lone job is a group of one.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from plugin.report.model import JobGroup, Run

__all__ = ["group_runs"]

_ARRAY_TASK = re.compile(r"(\d{1,18})_(\d{1,9})")
_NUMERIC = re.compile(r"\d{1,18}")


def _summary(group_id: str, kind: str, runs: Sequence[Run], t1: float | None) -> JobGroup:
    runtimes = [r.runtime_s for r in runs]
    efficiency = [t1 / (r.nodes * r.runtime_s) for r in runs] if t1 is not None else []
    return JobGroup(
        group_id=group_id,
        kind=kind if len(runs) > 1 else "job",
        tasks=len(runs),
        first_job=runs[0].job_id,
        last_job=runs[-1].job_id,
        nodes=tuple(sorted({r.nodes for r in runs})),
        runtime_min=min(runtimes),
        runtime_mean=statistics.fmean(runtimes),
        runtime_max=max(runtimes),
        efficiency_min=min(efficiency) if efficiency else None,
        efficiency_mean=statistics.fmean(efficiency) if efficiency else None,
        efficiency_max=max(efficiency) if efficiency else None,
        node_hours=sum(r.nodes * r.runtime_s for r in runs) / 3600.0,
        first_end=min(r.end_time for r in runs),
        last_end=max(r.end_time for r in runs),
    )


def group_runs(runs: Sequence[Run], t1: float | None = None) -> tuple[JobGroup, ...]:
    """Summaries of `runs` by array and by consecutive ids (see the module docstring).

    t1: the curve's T(1) for efficiencies (None: no curve, efficiencies are None).
    Returns the groups ordered by their first end time.
    """
    arrays: dict[str, list[Run]] = {}
    numeric: list[tuple[int, Run]] = []
    singles: list[Run] = []
    for run in runs:
        task = _ARRAY_TASK.fullmatch(run.job_id)
        if task:
            arrays.setdefault(task.group(1), []).append(run)
        elif _NUMERIC.fullmatch(run.job_id):
            numeric.append((int(run.job_id), run))
        else:
            singles.append(run)

    out = [
        _summary(array_id, "array", sorted(tasks, key=_task_number), t1)
        for array_id, tasks in arrays.items()
    ]
    numeric.sort(key=lambda pair: pair[0])
    start = 0
    for i in range(1, len(numeric) + 1):
        (job, run), (prev_job, prev) = numeric[min(i, len(numeric) - 1)], numeric[i - 1]
        ends_here = i == len(numeric) or not (job == prev_job + 1 and run.nodes == prev.nodes)
        if ends_here:
            members = [run for _, run in numeric[start:i]]
            group_id = (
                members[0].job_id
                if len(members) == 1
                else f"{members[0].job_id}-{members[-1].job_id}"
            )
            out.append(_summary(group_id, "group", members, t1))
            start = i
    out.extend(_summary(run.job_id, "job", [run], t1) for run in singles)
    return tuple(sorted(out, key=lambda g: (g.first_end, g.group_id)))


def _task_number(run: Run) -> int:
    match = _ARRAY_TASK.fullmatch(run.job_id)
    return int(match.group(2)) if match else 0
