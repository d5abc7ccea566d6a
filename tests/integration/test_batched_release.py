"""Batched writes on the real testbed (plugin/daemon/apply.py, plugin/slurm/writer.py): many
held jobs resized, commented and released in a few ``scontrol`` calls, and a job that
vanishes in the middle of the batch blocks none of the others, each job's outcome known.

The applier runs in this process with the daemon's own Slurm client (scontrol, squeue) on
the testbed's slurmctld; the jobs are root's, held with ``sbatch --hold`` (priority 0, as
job_submit.lua's hold).
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from plugin.daemon.apply import GONE, RELEASED, Applier
from plugin.daemon.decider import RESIZE, Outcome
from plugin.daemon.journal import Journal
from plugin.slurm import CliSlurm, JobRecord, Resize

from .daemon_harness import job_fields
from .testbed import LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

JOBS = 12
RELEASE_LINE = re.compile(r"_release_job_rec: release hold on JobId=(\d+) ")


class VanishingSlurm(CliSlurm):
    """The daemon's Slurm client; `victim` is cancelled (real scancel) just before the
    release, as a user's scancel racing the daemon would."""

    def __init__(self, slurm: SlurmCLI, victim: int) -> None:
        super().__init__(timeout_s=60.0)
        self.cli = slurm
        self.victim = victim
        self.release_calls: list[list[int]] = []

    def release(self, job_ids: Sequence[int]) -> None:
        if not self.release_calls:
            self.cli.run("scancel", str(self.victim))
        self.release_calls.append(list(job_ids))
        super().release(job_ids)


def nothing(_: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


@contextlib.contextmanager
def slurmctld_log(cluster: LocalCluster) -> Iterator[list[str]]:
    path = cluster.log_dir / "slurmctld.log"
    offset = path.stat().st_size
    lines: list[str] = []
    yield lines
    lines.extend(path.read_bytes()[offset:].decode("utf-8", "replace").splitlines())


def sized(job: JobRecord, nodes: int) -> Outcome:
    return Outcome(
        job=job,
        action=RESIZE,
        admin_comment=f"adaptalloc:v1:sized n={nodes} range=1-2 rule=batch_test",
        reason="batch test",
        rule="batch_test",
        resize=Resize(job.job_id, nodes, nodes, 5),
    )


def held_jobs(client: CliSlurm, ids: list[int]) -> list[JobRecord]:
    found = {j.job_id: j for j in client.pending_jobs()}
    assert all(found[j].priority == 0 for j in ids)
    return [found[j] for j in ids]


def test_a_batch_goes_on_past_a_job_that_vanished(
    local_cluster: LocalCluster, slurm: SlurmCLI, submit_job: SubmitJob, tmp_path: Path
) -> None:
    ids = [submit_job("--hold", "--nodes=1-2", "--time=30", wrap="true") for _ in range(JOBS)]
    victim = ids[JOBS // 2]
    client = VanishingSlurm(slurm, victim)
    # Two sizes, so two distinct comments: the writes of both groups go side by side.
    batch = [sized(job, 1 + k % 2) for k, job in enumerate(held_jobs(client, ids))]
    applier = Applier(client, Journal(tmp_path / "inflight.json"), nothing)
    with slurmctld_log(local_cluster) as log:
        applied = applier.apply(batch)
    status = {a.outcome.job_id: a.status for a in applied}
    assert status == {j: GONE if j == victim else RELEASED for j in ids}
    assert applier.writes_failed_at is None  # a vanished job is not Slurm refusing writes
    assert not applier.unreleased
    # One release for the batch, then each still-held job once more on its own (none: the
    # batch went on past the vanished job), never the vanished one.
    assert client.release_calls[0] == ids
    assert all(victim not in call for call in client.release_calls[1:])
    released = Counter(int(m.group(1)) for m in RELEASE_LINE.finditer("\n".join(log)))
    assert released == Counter({j: 1 for j in ids if j != victim})
    for k, job_id in enumerate(ids):
        if job_id == victim:
            continue
        fields = slurm.show_job(job_id)  # finished jobs too (MinJobAge)
        nodes = 1 + k % 2
        assert fields["NumNodes"].split("-")[0] == str(nodes), fields["NumNodes"]
        assert fields["TimeLimit"] == "00:05:00"
        assert job_fields(slurm, job_id)["admin_comment"] == batch[k].admin_comment
