"""A held job as the daemon's Decider reads it from squeue, for the tests that give the
Decider its cluster state and need no Slurm job of their own."""

from __future__ import annotations

from plugin.daemon import marks
from plugin.slurm import JobRecord


def held_job(
    job_id: int, name: str, now: float, nodes: tuple[int, int], time_limit_min: int,
    partition: str = "debug",
) -> JobRecord:  # fmt: skip
    """Job `job_id` of user ann (account phys) named `name`, submitted at `now` with the
    range `nodes` and `time_limit_min`, held by the hook and not yet decided."""
    return JobRecord(
        job_id=job_id, name=name, user="ann", account="phys", partition=partition,
        state="PENDING", source="squeue", comment="", admin_comment=marks.HELD,
        nodes_min=nodes[0], nodes_max=nodes[1], time_limit_min=time_limit_min,
        submit_time=int(now), priority=0, num_tasks=2, ntasks_per_node=0,
    )  # fmt: skip
