"""Advise mode: the jobs job_submit.lua left as submitted, found and paired with the range
their users asked for.

For a job whose partition and account resolve to advise (policies/mode.py, the modes file:
plugin/daemon/modes.py) the hook holds nothing and changes nothing; it appends
``advise <epoch> <uid> <min> <max> <tasks> <tasks per node>`` to the spool (integers only,
0 for a count the user did not set). The daemon records the
decision it would have made, with ``mode = "advise"``, and changes nothing in Slurm: no
hold, no resize, no admin comment.

Why the spool line carries the range: on a quiet cluster slurmctld starts a job inside the
submission call, before any daemon can read it pending, and a started job no longer says what
it asked for (22.05's squeue and ``squeue --json`` show the allocated count as both NumNodes
and MaxNodes, or max 0; sacct keeps only the minimum). The line has no job id (22.05 assigns it
after the hook), so lines are paired with jobs (`pair`) by user, submit second and range: a job
whose uid is the line's, submitted in the line's second or the next two (slurmctld stamps
SubmitTime after the hook ran), whose node count as squeue shows it lies inside the line's
range (a started job's allocated count; a pending job's count, which for a job the scheduler
has looked at is already its maximum on 22.05). Among candidates the lowest job id takes the
oldest line: slurmctld runs the hook and assigns ids under one lock, so a user's lines and job
ids come in the same order. A started job of the same user and second that was never advised (a
rigid job, say) can take a line whose range its size fits; its advise record is then another
job's would-be decision, flagged ``advised_late``.

A paired job that was pending is ``advised``; one that had started is ``advised_late``.
Advise jobs are decided at the periodic sweep, after their burst has arrived, so each is
decided on the queue it would have met on arrival (`arrival_demand`: the pending jobs
submitted before it, advise jobs at their minimum); the idle nodes are those of the sweep,
plus, for a started job, the nodes it holds itself (they were idle when Slurm gave them). A line
whose job is not found within ``MATCH_S`` (a submission refused after the hook) is
dropped, counted in the log.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from plugin.daemon.cluster import first_partition
from plugin.slurm import JobRecord

__all__ = [
    "ADVISED",
    "ADVISED_LATE",
    "MATCH_S",
    "AdviceQueue",
    "AdviseLine",
    "pair",
    "parse_line",
]

ADVISED = "advised"
ADVISED_LATE = "advised_late"
#: How long a line waits for its job. Chosen, not fitted: a job exists milliseconds after
#: its hook ran, and slurmctld stalls of seconds are the worst seen on the testbed.
MATCH_S = 60.0
#: A job's SubmitTime may be this many seconds after its line's epoch.
SUBMIT_SLACK_S = 2
#: Lines kept waiting at most (a burst larger than this loses its oldest advise records).
MAX_WAITING = 20_000


@dataclass(frozen=True)
class AdviseLine:
    """One ``advise`` spool line: when the hook ran (whole seconds), whose job, its range, and
    the task count and tasks per node the user set (0: not set)."""

    at: int
    uid: int
    low: int
    high: int
    tasks: int = 0
    tasks_per_node: int = 0


def parse_line(line: bytes) -> AdviseLine | None:
    """An ``advise`` line's values, None for any other line or one that does not read."""
    words = line.split()
    if len(words) not in (5, 7) or words[0] != b"advise":
        return None
    if not all(w.isdigit() and len(w) <= 12 for w in words[1:]):
        return None
    values = [int(w) for w in words[1:]]
    if not 1 <= values[2] < values[3]:
        return None
    return AdviseLine(*values)


def _fits(line: AdviseLine, job: JobRecord, uid: int | None) -> bool:
    if uid != line.uid or job.submit_time is None:
        return False
    if not 0 <= job.submit_time - line.at <= SUBMIT_SLACK_S:
        return False
    size = job.nodes_alloc or job.nodes_min
    return size is not None and line.low <= size <= line.high


def pair(
    lines: Sequence[AdviseLine],
    jobs: Iterable[JobRecord],
    uid_of: Callable[[str], int | None],
    taken: Callable[[JobRecord], bool],
) -> list[tuple[AdviseLine, JobRecord]]:
    """Each line with its job (module docstring), oldest line first; `taken(job)`: the job
    was advised already (or is held: not an advise job). Lines without a job are left out."""
    candidates = sorted(
        (job for job in jobs if not taken(job) and job.submit_time is not None),
        key=lambda job: job.job_id,
    )
    uids = {job.user: uid_of(job.user) for job in candidates}
    used: set[int] = set()
    out = []
    for line in lines:
        for job in candidates:
            if job.job_id not in used and _fits(line, job, uids[job.user]):
                used.add(job.job_id)
                out.append((line, job))
                break
    return out


def as_requested(line: AdviseLine, job: JobRecord) -> JobRecord:
    """`job` with the range and task counts its user asked for (the line's), as a held job
    would read: a started job's squeue counts are its allocation's."""
    return dataclasses.replace(
        job,
        nodes_min=line.low,
        nodes_max=line.high,
        num_tasks=line.tasks or None,
        ntasks_per_node=line.tasks_per_node,
    )


def arrival_demand(
    pending: Iterable[JobRecord], batch: Sequence[tuple[AdviseLine, JobRecord]]
) -> dict[int, Counter[str]]:
    """For each batch job, the pending demand it would have met had it been held on arrival:
    the pending jobs submitted up to it (by job id, itself included), each advise job counted
    at the minimum its line asked for, as a held job is (22.05 shows a pending job the
    scheduler has looked at with its maximum). Per first partition, as
    `plugin.daemon.cluster.pending_demand`."""
    asked = {job.job_id: line.low for line, job in batch}
    queue = sorted(
        (job for job in pending if job.state == "PENDING" or job.job_id in asked),
        key=lambda job: job.job_id,
    )
    wanted = sorted(asked)
    out: dict[int, Counter[str]] = {}
    running: Counter[str] = Counter()
    at = 0
    for job_id in wanted:
        while at < len(queue) and queue[at].job_id <= job_id:
            job = queue[at]
            nodes = asked.get(job.job_id, job.nodes_min or 0)
            if nodes and (job.state == "PENDING" or job.job_id == job_id):
                running[first_partition(job.partition)] += nodes
            at += 1
        out[job_id] = running.copy()
    return out


class AdviceQueue:
    """The advise lines waiting for their jobs, and the jobs advised lately (by id and
    submit time, so that no job is recorded twice by this daemon; Redis' once-guard keeps
    it so across restarts)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.waiting: list[tuple[float, AdviseLine]] = []
        self.advised: dict[tuple[int, int | None], float] = {}
        self.dropped = 0

    def add(self, lines: Iterable[AdviseLine]) -> None:
        now = self.clock()
        self.waiting.extend((now, line) for line in lines)
        if len(self.waiting) > MAX_WAITING:
            self.dropped += len(self.waiting) - MAX_WAITING
            del self.waiting[: len(self.waiting) - MAX_WAITING]

    def __bool__(self) -> bool:
        return bool(self.waiting)

    def lines(self) -> list[AdviseLine]:
        return [line for _, line in self.waiting]

    def taken(self, job: JobRecord) -> bool:
        return (job.job_id, job.submit_time) in self.advised

    def enforced(self, jobs: Iterable[JobRecord]) -> None:
        """Jobs the daemon held and decided: never an advise job, whatever they show once
        released (the same user, second and range as an advise line can follow them)."""
        now = self.clock()
        for job in jobs:
            self.advised[(job.job_id, job.submit_time)] = now

    def done(self, paired: Iterable[tuple[AdviseLine, JobRecord]]) -> None:
        """These lines found their jobs: forget the lines, remember the jobs."""
        now = self.clock()
        lines: set[int] = set()
        for line, job in paired:
            lines.add(id(line))
            self.advised[(job.job_id, job.submit_time)] = now
        self.waiting = [(t, line) for t, line in self.waiting if id(line) not in lines]

    def expire(self) -> int:
        """Drop lines older than MATCH_S and jobs advised longer ago than that; how many
        lines were dropped (their jobs never showed)."""
        cutoff = self.clock() - MATCH_S
        before = len(self.waiting)
        self.waiting = [(t, line) for t, line in self.waiting if t >= cutoff]
        self.advised = {key: t for key, t in self.advised.items() if t >= cutoff}
        lost = before - len(self.waiting)
        self.dropped += lost
        return lost
