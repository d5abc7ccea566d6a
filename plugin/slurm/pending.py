"""The daemon's cheap view of the queue: pending jobs without ``squeue --json``.

``squeue --json`` of 22.05 serializes every job slurmctld remembers (finished ones too, for
MinJobAge) and cannot be filtered: 0.7 s of squeue's own CPU for 3,000 jobs on the
testbed, per sweep. The daemon sweeps every second or so, so it reads instead:

* ``squeue --noheader --states=PENDING --Format=F1:0<sep>,F2:0<sep>,...``: the pending jobs
  only, every field unabridged (width 0), each followed by a separator made of a random
  nonce drawn per call (``~<12 hex>~``), and each record closed by ``<sep>R<sep>`` and a
  newline. Job names and comments are free text (newlines included); a user cannot guess
  the nonce, so no text can end a field or a record early.
* ``scontrol show job -o ID``, only for pending jobs at priority 0 the daemon has not seen
  yet: 22.05's squeue cannot print admin_comment, where job_submit.lua's marker is, and
  its scontrol has no ``--json``. Only the job's own record is read, so text from another
  job can never pass for its marker; the record counts only when ``AdminComment=`` occurs
  in it once (`admin_comment_of`): a second occurrence is user text posing as the field,
  and that job, like one whose marker is followed by an admin's text, is read from
  ``squeue --json`` (rare, and slow). Whose hold it is comes from squeue's Reason
  (plugin/daemon/sweep.py): an admin's hold is never the daemon's.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from plugin.slurm.errors import SlurmError, SlurmParseError
from plugin.slurm.parse import local_epoch, parse_time_minutes
from plugin.slurm.records import JobRecord

__all__ = [
    "PENDING_FIELDS",
    "admin_comment_of",
    "admin_comments",
    "from_all_records",
    "new_separator",
    "parse_pending",
    "pending_format",
]

#: squeue --Format fields, in the order parse_pending reads them.
PENDING_FIELDS = (
    "JobID",
    "PriorityLong",
    "State",
    "NumNodes",
    "MaxNodes",
    "TimeLimit",
    "SubmitTime",
    "Partition",
    "Account",
    "UserName",
    "WCKey",
    "Command",
    "WorkDir",
    "Name",
    "Comment",
    "Reason",
    "QOS",
    "NumTasks",
    "NTPerNode",
)
_NULL = "(null)"
ADMIN_FIELD = "AdminComment="
MARKER = "adaptalloc:v1:held"
HELD_FIELD = ADMIN_FIELD + MARKER
#: More new held jobs than this: read every job's record once rather than each on its own.
MANY_JOBS = 24
_RECORD_START = re.compile(r"JobId=(\d+) JobName=")
#: What scontrol 22.05 prints after AdminComment when the comment ends there.
_NEXT_FIELD = re.compile(r"\s*(?:$|(?:Comment|StdErr|StdIn|StdOut|Power)=)")


def new_separator() -> str:
    """A field separator nobody can put into a job's text in advance."""
    return f"~{secrets.token_hex(6)}~"


def pending_format(sep: str) -> str:
    """The ``--Format`` value: every field unabridged, then `sep`; a record ends R."""
    fields = ",".join(f"{name}:0{sep}" for name in PENDING_FIELDS)
    return f"{fields},JobID:0{sep}R{sep}"


def _text(value: str) -> str:
    return "" if value == _NULL else value


def _int(value: str) -> int | None:
    return int(value) if value.isascii() and value.isdigit() else None


def _epoch(value: str) -> int | None:
    try:
        return local_epoch(value)
    except ValueError:
        return None


def _minutes(value: str) -> int | None:
    try:
        return parse_time_minutes(value)
    except ValueError:
        return None


def parse_pending(text: str, sep: str) -> list[JobRecord]:
    """Records from squeue's output for `pending_format(sep)` (admin_comment left None).

    The text is cut at every `sep` only (a user cannot put the nonce in a field): each
    record is then exactly len(PENDING_FIELDS) + 2 pieces (the fields, the closing JobID,
    "R"), the next one starting after the line's newline. Counting pieces rather than
    looking for ``<sep>R<sep>`` keeps a field whose whole text is "R" (a job named R)
    from ending its record early (found by tests/unit/plugin/test_fuzz_slurm.py).
    """
    width = len(PENDING_FIELDS) + 2
    pieces = text.split(sep)
    if pieces[-1].strip():
        raise SlurmParseError("squeue printed text after its last record")
    pieces.pop()
    if len(pieces) % width:
        raise SlurmParseError(
            f"squeue printed {len(pieces)} fields, not a whole number of {width}-field records"
        )
    out = []
    for start in range(0, len(pieces), width):
        values = pieces[start : start + width]
        if start:
            if not values[0].startswith("\n"):
                raise SlurmParseError("squeue printed a record not on a line of its own")
            values[0] = values[0][1:]
        if values.pop() != "R":
            raise SlurmParseError("squeue printed a record that does not end in R")
        f = dict(zip(PENDING_FIELDS, values, strict=False))
        job_id = _int(f["JobID"])
        if job_id is None or values[-1] != f["JobID"]:
            raise SlurmParseError("squeue printed a record without a readable job id")
        low = _int(f["NumNodes"])
        high = _int(f["MaxNodes"]) or low
        out.append(
            JobRecord(
                job_id=job_id,
                name=_text(f["Name"]),
                user=_text(f["UserName"]),
                account=_text(f["Account"]),
                partition=_text(f["Partition"]),
                state=f["State"].strip().upper(),
                source="squeue",
                wckey=_text(f["WCKey"]),
                comment=_text(f["Comment"]),
                admin_comment=None,
                nodes_min=low,
                nodes_max=high,
                time_limit_min=_minutes(f["TimeLimit"]),
                submit_time=_epoch(f["SubmitTime"]),
                workdir=_text(f["WorkDir"]) or None,
                script=_text(f["Command"]) or None,
                priority=_int(f["PriorityLong"]),
                state_reason=f["Reason"].strip(),
                qos=_text(f["QOS"]),
                num_tasks=_int(f["NumTasks"]),
                ntasks_per_node=_int(f["NTPerNode"]),
            )
        )
    return out


def admin_comment_of(record: str) -> str | None:
    """What ``scontrol show job -o ID`` says of the held marker: the admin comment the daemon
    may rely on ("adaptalloc:v1:held" when the marker stands alone), "" when there is no
    marker, None when the line cannot say for sure (then read it another way).

    The line is field-exact only when ``AdminComment=`` occurs in it once: JobName,
    Command and WorkDir print before the real field and Comment and StdOut after it, so a
    second occurrence is some user's text posing as the field and the record is ambiguous
    (None). One occurrence is the real field, or a user's text in a job with no admin
    comment at all, which job_submit.lua never holds (it always writes the marker there);
    the daemon's hold check (Reason=JobHeldUser, sweep.py) then limits the harm to the
    user's own hold. Left: an admin comment written as the marker followed by a field's
    name (``adaptalloc:v1:held Comment=x``) prints as the marker then that field and reads
    as the marker, and one with trailing blanks reads as the marker (as marks.is_held reads
    it); only an admin can write an admin comment.
    """
    count = record.count(ADMIN_FIELD)
    if count == 0:
        return ""
    if count > 1:
        return None
    at = record.find(" " + HELD_FIELD)
    if at < 0:
        # The marker word later in the admin comment (or in a field after it) still marks
        # the job as held (marks.is_held reads words): let the exact read say which.
        return None if MARKER in record[record.find(ADMIN_FIELD) :] else ""
    rest = record[at + 1 + len(HELD_FIELD) :]
    return MARKER if _NEXT_FIELD.match(rest) else None


def from_all_records(text: str, job_ids: Sequence[int]) -> dict[int, str | None]:
    """admin_comment_of for the jobs whose record is unambiguous in ``scontrol show job -o``
    (every job): the line that starts ``JobId=<id> JobName=`` reaches AdminComment. A
    second line claiming any job's id (a newline and a forged start in some job's text)
    or a line that starts no record (a newline: a record cut short) leaves every job out:
    ask for their own records instead.
    Left: a newline followed by a forged ``JobId=<unknown id> JobName=`` start cuts a
    record undetected; the cut job is its own user's, and only a JobHeldUser hold is ever
    released (sweep.py), so the harm stays with that user's job."""
    wanted = set(job_ids)
    seen: set[int] = set()
    lines: dict[int, list[str]] = {}
    for line in text.split("\n"):
        match = _RECORD_START.match(line)
        if match is None:
            if line.strip():
                # Some job's text holds a newline: a record is cut somewhere, and its first
                # part could pass for a whole one (found by tests/unit/plugin/
                # test_fuzz_slurm.py). Trust nothing here; each job's own record decides.
                return {}
            continue
        job_id = int(match.group(1))
        if job_id in seen:
            return {}  # a forged record start (the line before it is cut): trust nothing
        seen.add(job_id)
        if job_id in wanted:
            lines.setdefault(job_id, []).append(line)
    return {
        job_id: admin_comment_of(found[0])
        for job_id, found in lines.items()
        if len(found) == 1 and ADMIN_FIELD in found[0]
    }


def admin_comments(
    run: Callable[..., str], job_ids: Sequence[int], parallelism: int
) -> dict[int, str | None]:
    """Job id -> admin_comment_of its record; a job scontrol no longer knows is left out.

    Many jobs (a burst): one ``scontrol show job -o`` for all, then each job's own record
    for those it leaves unsure (`from_all_records`). Few: each job's own record,
    `parallelism` at a time.
    """

    def one(job_id: int) -> tuple[int, str | None] | None:
        try:
            return job_id, admin_comment_of(run("scontrol", "show", "job", "-o", str(job_id)))
        except SlurmError:
            return None

    found: dict[int, str | None] = {}
    if len(job_ids) > MANY_JOBS:
        found = from_all_records(run("scontrol", "show", "job", "-o"), job_ids)
    rest = [job_id for job_id in job_ids if job_id not in found]
    if rest:
        with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(rest)))) as pool:
            found.update(pair for pair in pool.map(one, rest) if pair is not None)
    return found
