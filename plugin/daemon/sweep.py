"""What one look at the queue finds: which held jobs to decide, to finish, to release.

Pure functions over `JobRecord` values (the pending jobs the loop read, see
plugin/slurm/pending.py; Slurm 22.05 cannot filter its JSON output, so the filtering is here).

* **held**: pending, priority 0, carrying job_submit.lua's marker. Decided, unless
* **to finish**: the daemon has this job's decision in its journal (it crashed or a Slurm
  command failed mid-apply): the journaled decision is applied again, never a new one;
* **stale**: held longer than ``max_hold_s`` (the watchdog): released as submitted.

A job with the daemon's record (sized/kept/released) that is held again but not in the
journal was held by its user or an admin after the daemon released it: left alone. So is
a job with the marker that is no longer held (an admin released it by hand).

Only a hold with job_submit.lua's reason is the daemon's: priority 0 set in job_submit is
a *user* hold (Reason=JobHeldUser, seen on the 22.05 testbed; root's updates of NumNodes,
TimeLimit and AdminComment keep it). An admin's ``scontrol hold`` makes it JobHeldAdmin,
and such a job is never decided, finished or released by the daemon, marker or not: a user
who released their own job, or faked the marker, cannot make the daemon undo an admin hold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from plugin.daemon import marks
from plugin.daemon.cluster import pending_demand
from plugin.slurm import JobRecord

__all__ = ["OUR_HOLD_REASONS", "Sweep", "classify", "held_by_us", "on_hold"]

#: Slurm's reason for the hold job_submit.lua puts on a job (priority 0 set at submission
#: by a non-operator's job). JobHeldAdmin is never ours.
OUR_HOLD_REASONS = frozenset({"JobHeldUser"})


def on_hold(job: JobRecord) -> bool:
    """Pending at priority 0 under the kind of hold job_submit.lua makes (not an admin's)."""
    return job.state == "PENDING" and job.priority == 0 and job.state_reason in OUR_HOLD_REASONS


def held_by_us(job: JobRecord) -> bool:
    """On our kind of hold (`on_hold`) with the held marker."""
    return on_hold(job) and marks.is_held(job.admin_comment)


@dataclass
class Sweep:
    """The queue at one moment, sorted out."""

    jobs: dict[int, JobRecord]
    to_decide: list[JobRecord] = field(default_factory=list)
    to_finish: list[JobRecord] = field(default_factory=list)
    stale: list[JobRecord] = field(default_factory=list)
    demand: Counter[str] = field(default_factory=Counter)
    held: int = 0
    deferred: int = 0

    @property
    def work(self) -> int:
        return len(self.to_decide) + len(self.to_finish) + len(self.stale)


def classify(
    jobs: Iterable[JobRecord],
    now: float,
    max_hold_s: float,
    journaled: Collection[int],
    max_batch: int,
    in_flight: Collection[int] = (),
) -> Sweep:
    """Sort the queue (module docstring); at most `max_batch` jobs to decide, oldest first.
    Jobs `in_flight` (their update sent, not returned: plugin/daemon/apply.py) are in none
    of the lists, whatever they show."""
    table = {job.job_id: job for job in jobs}
    sweep = Sweep(table, demand=pending_demand(table.values()))
    candidates = []
    for job in table.values():
        if not on_hold(job) or job.job_id in in_flight:
            continue
        if job.job_id in journaled and (
            marks.is_held(job.admin_comment) or marks.record_word(job.admin_comment)
        ):
            sweep.to_finish.append(job)
        elif marks.is_held(job.admin_comment):
            sweep.held += 1
            age = now - job.submit_time if job.submit_time else 0.0
            if age > max_hold_s:
                sweep.stale.append(job)
            else:
                candidates.append(job)
    candidates.sort(key=lambda j: (j.submit_time or 0, j.job_id))
    sweep.to_decide = candidates[:max_batch]
    sweep.deferred = len(candidates) - len(sweep.to_decide)
    return sweep
