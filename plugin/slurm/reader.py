"""The read side of the Slurm adapter: what adaptalloc asks Slurm, independent of how.

`SlurmReader` is the interface the learner, the importers and the daemon use. Two
implementations: `plugin.slurm.cli_backend.CliSlurmReader` (the default: Slurm's commands
with ``--json``) and `plugin.slurm.pyslurm_backend.PyslurmReader` (used only when pyslurm
matches the installed Slurm). `plugin.slurm.factory.slurm_reader` picks one.

The write side (release, update NumNodes/TimeLimit, set admin_comment) is `SlurmWriter` in
writer.py. Every method raises `plugin.slurm.errors.SlurmError` subclasses only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection

from plugin.slurm.records import AssocRecord, JobRecord, NodeRecord, PartitionRecord, QosRecord

__all__ = ["SlurmReader"]


class SlurmReader(ABC):
    """Read jobs, nodes and partitions from Slurm."""

    #: Short backend name for logs ("cli", "pyslurm").
    backend: str = ""
    #: Why the last finished_jobs call could not use ``sacct --json`` and read sacct's text
    #: output instead (cli_backend); None when it did not have to.
    sacct_json_error: str | None = None

    @abstractmethod
    def finished_jobs(
        self, since: float, until: float, states: Collection[str] | None = None
    ) -> list[JobRecord]:
        """Jobs from accounting that ended in [since, until], oldest first.

        Times are Unix seconds, rounded down to whole seconds as Slurm keeps them, and both
        ends are included.

        `states` restricts the base states asked for (e.g. ``("COMPLETED",)``), which keeps
        the query small for slurmdbd; None asks for every final state.
        """

    @abstractmethod
    def jobs(self) -> list[JobRecord]:
        """Every job slurmctld knows: pending, running, and finished ones within MinJobAge."""

    @abstractmethod
    def nodes(self) -> list[NodeRecord]:
        """Every node."""

    @abstractmethod
    def partitions(self) -> list[PartitionRecord]:
        """Every partition."""

    def qos_limits(self) -> list[QosRecord]:
        """Every QOS with its per-job node and wall-time limits ([] when unknown)."""
        return []

    def assoc_limits(self, user: str, account: str, partition: str) -> AssocRecord | None:
        """The effective per-job limits of the job's association (None when unknown)."""
        return None

    @abstractmethod
    def accounting_enabled(self) -> bool:
        """Whether slurmctld stores jobs in accounting (so `finished_jobs` can work)."""

    @abstractmethod
    def version(self) -> tuple[int, int, int]:
        """The installed Slurm's (major, minor, micro)."""

    def pending_jobs(self) -> list[JobRecord]:
        """The pending jobs; admin_comment may be None (unknown: see held_admin_comments)."""
        return [job for job in self.jobs() if job.state == "PENDING"]

    def known_jobs(self) -> list[JobRecord]:
        """Every job slurmctld knows, cheaply where the backend can (advise mode's read,
        plugin/daemon/advise.py): `jobs` by default. A started job's nodes_min is then its
        allocated count where the source gives no other (the cheap squeue read)."""
        return self.jobs()

    def held_admin_comments(self, job_ids: Collection[int]) -> dict[int, str | None]:
        """Job id -> admin comment, for the daemon's held jobs ("" when there is none).

        The CLI backend reads only the held marker cheaply and gives None when more text
        follows it; `jobs` is the slow, exact way, used here by default.
        """
        wanted = set(job_ids)
        return {j.job_id: j.admin_comment or "" for j in self.jobs() if j.job_id in wanted}

    def jobs_of(self, job_ids: Collection[int]) -> list[JobRecord]:
        """The jobs of `job_ids` slurmctld still knows (the kill guard's read); `jobs`
        filtered by default, one cheap read where the backend has one (libslurm)."""
        wanted = set(job_ids)
        return [job for job in self.jobs() if job.job_id in wanted]

    def job(self, job_id: int) -> JobRecord | None:
        """One job slurmctld still knows, or None."""
        for record in self.jobs():
            if record.job_id == job_id:
                return record
        return None

    def recently_finished(self, since: float, until: float) -> list[JobRecord]:
        """Finished jobs slurmctld still remembers (MinJobAge) that ended in [since, until].

        For clusters without accounting; slurmctld forgets jobs after MinJobAge.
        """
        out = [
            job
            for job in self.jobs()
            if job.finished and job.end_time is not None and since <= job.end_time <= until
        ]
        return sorted(out, key=lambda job: (job.end_time or 0, job.job_id))
