"""A pending job's record from libslurm's job_info, exactly as the ``squeue`` read gives it.

The daemon's cheap queue read (plugin/slurm/pending.py) is ``squeue --states=PENDING
--Format=...``: slurmctld's REQUEST_JOB_INFO answer, printed by squeue field by field and
parsed back. `LibslurmSlurm.pending_jobs` (libslurm_backend.py) asks for the same answer
through ``slurm_load_jobs`` and skips the process and the text: `RawJob` holds the members
squeue prints (decoded as squeue's output is, UTF-8 with replacement), and `pending_record`
turns them into the `JobRecord` `parse_pending` would have made of squeue's line. Each rule
below is squeue 22.05's print function (src/squeue/print.c) followed by parse_pending's
reading of its text; tests/integration/test_libslurm_reads.py holds the two paths equal
field by field on the testbed (all but ``source``: "libslurm" here).

* strings (Name, Account, Partition, ...): printed with ``%s``; a NULL prints "(null)",
  which parse_pending reads as "" (so does a job whose text is "(null)" itself);
* NumNodes: ``num_nodes``; MaxNodes: ``max_nodes``, or ``num_nodes`` when 0, printed as a
  signed int (parse_pending: a max that is not digits is the min);
* TimeLimit: UNLIMITED (INFINITE), NOT_SET (NO_VAL), INVALID past 365 days (``_print_secs``
  of ``time_limit * 60`` in 32 bits), else whole minutes: None, None, None, the minutes;
* SubmitTime: "N/A" for 0, else the epoch (the text round-trips through local time);
* Reason: ``state_desc`` when set, else ``job_reason_string(state_reason)``; stripped;
* NumTasks and PriorityLong: ``%u``; NTPerNode: "N/A" (None) for NO_VAL16 and INFINITE16;
* UserName: the user id's name, "nobody" when it has none (Slurm's uid_to_string).
"""

from __future__ import annotations

import pwd
from dataclasses import dataclass
from functools import lru_cache

from plugin.slurm.records import JobRecord

__all__ = ["INFINITE16", "NO_VAL16", "RawJob", "pending_record", "user_name"]

NO_VAL = 0xFFFFFFFE
INFINITE = 0xFFFFFFFF
NO_VAL16 = 0xFFFE
INFINITE16 = 0xFFFF
#: squeue's ``_print_secs`` prints INVALID past a year.
_YEAR_S = 365 * 24 * 3600
_NULL = "(null)"


@dataclass(frozen=True)
class RawJob:
    """The job_info members squeue prints for the pending read; strings decoded, None for
    a NULL pointer; numbers as the C struct holds them (unsigned)."""

    job_id: int
    priority: int
    num_nodes: int
    max_nodes: int
    time_limit: int
    submit_time: int
    user_id: int
    num_tasks: int
    ntasks_per_node: int
    reason: str
    partition: str | None
    account: str | None
    wckey: str | None
    command: str | None
    work_dir: str | None
    name: str | None
    comment: str | None
    qos: str | None


def _text(value: str | None) -> str:
    return "" if value is None or value == _NULL else value


def _signed32(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


def _time_limit(minutes: int) -> int | None:
    if minutes in (INFINITE, NO_VAL):
        return None
    seconds = (minutes * 60) & 0xFFFFFFFF  # C's uint32 product
    return None if seconds > _YEAR_S else minutes


@lru_cache(maxsize=4096)
def user_name(uid: int) -> str:
    """The account name of `uid`, "nobody" when there is none (as squeue prints it)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return "nobody"


def pending_record(raw: RawJob, user: str) -> JobRecord:
    """The `JobRecord` parse_pending makes of squeue's line for this pending job (the
    module docstring gives each field's rule); `user` is `user_name(raw.user_id)`."""
    low = _signed32(raw.num_nodes)
    high = _signed32(raw.max_nodes if raw.max_nodes != 0 else raw.num_nodes)
    return JobRecord(
        job_id=raw.job_id,
        name=_text(raw.name),
        user=_text(user),
        account=_text(raw.account),
        partition=_text(raw.partition),
        state="PENDING",
        source="libslurm",
        wckey=_text(raw.wckey),
        comment=_text(raw.comment),
        admin_comment=None,
        nodes_min=low if low >= 0 else None,
        nodes_max=(high if high >= 0 else None) or (low if low >= 0 else None),
        time_limit_min=_time_limit(raw.time_limit),
        submit_time=raw.submit_time or None,
        workdir=_text(raw.work_dir) or None,
        script=_text(raw.command) or None,
        priority=raw.priority,
        state_reason=raw.reason.strip(),
        qos=_text(raw.qos),
        num_tasks=raw.num_tasks,
        ntasks_per_node=(
            None if raw.ntasks_per_node in (NO_VAL16, INFINITE16) else raw.ntasks_per_node
        ),
    )
