"""Finished jobs from ``sacct``'s text output: the fallback when ``sacct --json`` fails.

Slurm 22.05's ``sacct --json`` can abort inside Slurm (exit -6, an assertion in
json_object.c) after long runs; its text output goes through other code. The query is the
same, printed as ``sacct --noheader --parsable2 --delimiter=SEP --format=F1,...,Fk,JobIDRaw``
(`sacct_text_args`), where SEP is a nonce drawn per call (pending.new_separator): job names,
comments, admin comments, wckeys and work directories are user text and may hold ``|``,
quotes and newlines, but not a nonce nobody knew before the call.

Reading it (`parse_sacct_text`): the text is cut at SEP only, so every field boundary is
exact. Each line is one record of len(SACCT_TEXT_FIELDS) fields that opens and closes with
the job or step id (``JobIDRaw``: digits, or ``digits.step``); the piece between two
records is therefore ``<closing id>\\n<next opening id>``, whatever newlines the fields hold.
A whole number of records is required, else the output is not trusted at all
(SlurmParseError); a record whose values do not read (its two ids differ, a time that is
no time) is skipped and counted, never given to another job.

What the records hold, field for field as parse._sacct_job reads the JSON:

* ``tasks``: the most ``NTasks`` of the job's step lines (``JOBID.STEP``) whose name is
  not batch, extern or interactive, the JSON path's rule (parse._sacct_tasks).
* ``exit_code``/``exit_signal``: ``ExitCode`` ``code:signal``. Unlike 22.05's JSON (which
  says 0 for every job, see parse.py) the text output's exit codes are the real ones, so
  they are reported here; the JSON path reports None.
* ``comment``/``admin_comment``: the text cannot tell an empty field from one slurmdbd did
  not store (the JSON's null), so "" reads as None (unknown): the learner then fills the
  comment in from squeue while slurmctld remembers the job, as it does for the JSON's null.
* times: ``Submit``/``Start``/``End`` in local time (``SLURM_TIME_FORMAT=standard`` is
  pinned by cli_backend), read back with the local zone; ``Unknown`` is None. In the hour
  a daylight-saving change repeats, a time reads as its first occurrence.
* ``nodes_alloc`` is ``AllocNodes`` (0 for a job cancelled while pending; ``NNodes`` is
  then its request), ``nodes_min`` the ``node=`` of ``ReqTRES``, ``time_limit_min``
  ``TimelimitRaw`` (minutes; ``UNLIMITED``/``Partition_Limit`` are None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from plugin.slurm.errors import SlurmParseError
from plugin.slurm.parse import HELPER_STEPS, field_int, field_state, local_epoch, tres_nodes
from plugin.slurm.records import JobRecord

__all__ = [
    "SACCT_TEXT_FIELDS",
    "SacctText",
    "parse_sacct_text",
    "parse_sacct_users",
    "sacct_text_args",
    "sacct_user_args",
]

#: sacct --format fields, in the order parse_sacct_text reads them; a record closes with
#: JobIDRaw again (`sacct_text_args`).
SACCT_TEXT_FIELDS = (
    "JobIDRaw",
    "JobName",
    "User",
    "Account",
    "Partition",
    "State",
    "WCKey",
    "Comment",
    "AdminComment",
    "ExitCode",
    "ReqTRES",
    "AllocNodes",
    "TimelimitRaw",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "WorkDir",
    "Priority",
    "Reason",
    "Cluster",
    "NTasks",
)
#: The job's own line ("123"), or one of its steps' ("123.batch", "123.0", "123.0+1").
_ID = re.compile(r"([0-9]+)(?:\.([A-Za-z0-9_+]+))?")


@dataclass(frozen=True)
class SacctText:
    """What `parse_sacct_text` read: the jobs, and how many records it skipped."""

    jobs: list[JobRecord]
    skipped: int


class _BadRecordError(ValueError):
    """One record's values do not read; the record is skipped."""


def sacct_text_args(sep: str) -> list[str]:
    """The output options of the text query, each field followed by `sep`, then JobIDRaw."""
    fields = ",".join((*SACCT_TEXT_FIELDS, "JobIDRaw"))
    return ["--noheader", "--parsable2", f"--delimiter={sep}", f"--format={fields}"]


def sacct_user_args(sep: str) -> list[str]:
    """The output options of the users query (`parse_sacct_users`): each job's allocation
    line as JobIDRaw SEP User SEP JobIDRaw."""
    return [
        "--noheader",
        "--parsable2",
        "--allocations",
        f"--delimiter={sep}",
        "--format=JobIDRaw,User,JobIDRaw",
    ]


def parse_sacct_users(text: str, sep: str) -> dict[int, str]:
    """Job id -> user name from the users query's text. Slurm 22.05's ``sacct --json`` says
    ``"user": null`` for a job whose user has no association (a cluster that enforces
    none), while its text output names the user from the job's uid; records that do not
    read are left out (the job then stays without a user)."""
    out: dict[int, str] = {}
    for values in _records(text, sep, step=2):
        match = _ID.fullmatch(values[0])
        if match is None or match.group(2) is not None or values[-1] != values[0]:
            continue
        user = values[1]
        if user and user.isprintable() and "\n" not in user:
            out[int(match.group(1))] = user
    return out


def _count(value: str) -> int | None:
    if not value:
        return None
    if not (value.isascii() and value.isdigit()):
        raise _BadRecordError(f"not a count: {value[:20]!r}")
    return field_int(value)  # the JSON path's reading, NO_VAL and INFINITE included


def _limit(value: str) -> int | None:
    """TimelimitRaw: minutes, or a word (UNLIMITED, Partition_Limit) for none."""
    return _count(value) if value.isascii() and value.isdigit() else None


def _epoch(value: str) -> int | None:
    if value in ("", "Unknown", "None"):
        return None
    try:
        return local_epoch(value)
    except (ValueError, OverflowError) as exc:
        raise _BadRecordError(f"not a time: {value[:30]!r}") from exc


def _exit(value: str) -> tuple[int | None, int | None]:
    """``code:signal`` -> (code, signal or None)."""
    code, sep, signal = value.partition(":")
    if not sep:
        raise _BadRecordError(f"not an exit code: {value[:20]!r}")
    return _count(code), _count(signal) or None


def _job(values: dict[str, str], tasks: int | None) -> JobRecord:
    exit_code, signal = _exit(values["ExitCode"])
    return JobRecord(
        job_id=int(values["JobIDRaw"]),
        name=values["JobName"],
        user=values["User"],
        account=values["Account"],
        partition=values["Partition"],
        state=field_state(values["State"]),
        source="sacct",
        wckey=values["WCKey"],
        comment=values["Comment"] or None,
        admin_comment=values["AdminComment"] or None,
        exit_code=exit_code,
        exit_signal=signal,
        nodes_min=tres_nodes(values["ReqTRES"]),
        nodes_max=None,
        nodes_alloc=_count(values["AllocNodes"]) or 0,
        time_limit_min=_limit(values["TimelimitRaw"]),
        submit_time=_epoch(values["Submit"]),
        start_time=_epoch(values["Start"]),
        end_time=_epoch(values["End"]),
        elapsed_s=_count(values["ElapsedRaw"]),
        workdir=values["WorkDir"],
        script=None,
        priority=_count(values["Priority"]),
        state_reason=values["Reason"],
        cluster=values["Cluster"],
        tasks=tasks,
    )


def _records(text: str, sep: str, step: int = len(SACCT_TEXT_FIELDS)) -> list[list[str]]:
    """Each record's values (its closing id last), the text cut at `sep` only.

    A record has `step` separators (one per field before the closing id), so n records
    make n * step + 1 pieces; the piece shared by two records is "<closing id>\\n<next
    opening id>" and ids hold no newline, so its first newline is the boundary.
    """
    if not text.strip():
        return []
    pieces = text.split(sep)
    if (len(pieces) - 1) % step:
        raise SlurmParseError(
            f"sacct printed {len(pieces) - 1} separators, not a whole number of "
            f"{step + 1}-field records"
        )
    if pieces[-1].partition("\n")[2].strip():
        raise SlurmParseError("sacct printed text after its last record")
    records = []
    opening = pieces[0]
    for start in range(0, len(pieces) - 1, step):
        end, newline, following = pieces[start + step].partition("\n")
        if not newline:
            raise SlurmParseError("sacct printed a record not on a line of its own")
        records.append([opening, *pieces[start + 1 : start + step], end])
        opening = following
    return records


def parse_sacct_text(text: str, sep: str) -> SacctText:
    """Jobs from the text query of `sacct_text_args(sep)`, with their steps' tasks.

    Records whose values do not read are skipped and counted (`SacctText.skipped`); the
    output as a whole must be a whole number of records of the expected width (else
    SlurmParseError).
    """
    jobs: list[dict[str, str]] = []
    tasks: dict[int, list[int]] = {}
    skipped = 0
    for values in _records(text, sep):
        fields = dict(zip(SACCT_TEXT_FIELDS, values, strict=False))
        match = _ID.fullmatch(values[0])
        if match is None or values[-1] != values[0]:
            skipped += 1
            continue
        job_id, step = int(match.group(1)), match.group(2)
        if step is None:
            jobs.append(fields)
            continue
        try:
            count = _count(fields["NTasks"])
        except _BadRecordError:
            skipped += 1
            continue
        if fields["JobName"] not in HELPER_STEPS and count:
            tasks.setdefault(job_id, []).append(count)
    out = []
    for fields in jobs:
        job_id = int(fields["JobIDRaw"])
        counts = tasks.get(job_id)
        try:
            out.append(_job(fields, max(counts) if counts else None))
        except _BadRecordError:
            skipped += 1
    return SacctText(jobs=out, skipped=skipped)
