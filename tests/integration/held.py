"""A held job as the daemon's Decider reads it from squeue, and the curve its learner stored,
for the tests that give the Decider its cluster state and need no Slurm job of their own."""

from __future__ import annotations

from collections.abc import Sequence

from plugin.appkey import AppKey
from plugin.daemon import marks
from plugin.daemon.decider import CurveSource
from plugin.learning.learner import refit_app
from plugin.slurm import JobRecord
from plugin.store.curves import CurveRecord, CurveStore, Observation


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


def learned_curve(
    store: CurveStore, key: AppKey, runs: Sequence[Observation]
) -> tuple[CurveSource, CurveRecord]:
    """`runs` stored and refitted by the learner into a curve; the daemon's curve source on
    `store` (its batch begun) and the record it reads for `key`."""
    store.add_observations(key, list(runs))
    assert refit_app(store, key).status == "written"
    curves = CurveSource(lambda: store)
    curves.begin_batch()
    stored = curves.get(key)
    assert stored is not None
    assert stored.curve is not None
    return curves, stored
