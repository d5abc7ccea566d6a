"""Fuzz/property suite for the Slurm output parsers a user's text reaches.

Job names, comments, commands and working directories are the user's: the strategies mix
Slurm's own syntax into them (``=``, spaces, newlines, the nonce-like ``~..~R~..~``,
``AdminComment=adaptalloc:v1:held``, ``JobId=`` lines, ``Comment=``/``StdErr=`` keys) and
huge strings. Properties, per parser:

* squeue's nonce-separated view (`parse_pending`): every field comes back exactly; any
  other text gives records or SlurmParseError, nothing else.
* sacct's nonce-separated text (`parse_sacct_text`, the fallback of ``sacct --json``):
  every field comes back exactly, each job's tasks from its own steps only; any other
  text gives records or SlurmParseError, nothing else.
* scontrol's job line (`admin_comment_of`, `from_all_records`): the held marker is
  reported only when the job's real AdminComment is exactly the marker; "no marker" only
  when the real one has none. Unsure is None (the daemon then reads the exact JSON).
* ``squeue --json`` / ``sacct --json``: hostile strings come back verbatim; any JSON
  document gives records or a SlurmError, never another exception.
* ``scontrol show partition`` / key-value lines / time strings: records or
  SlurmParseError / ValueError, never another exception.

Memory is bounded: the module runs under an address-space limit (RLIMIT_AS) of the
process's size at start plus MEMORY_HEADROOM, so a parser that blows up on a huge string
fails with MemoryError instead of taking the machine. The number of cases each parser saw
is printed at the end (``-s`` shows it).
"""

from __future__ import annotations

import json
import re
import resource
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin.slurm.errors import SlurmError, SlurmParseError
from plugin.slurm.parse import (
    parse_key_values,
    parse_sacct_json,
    parse_scontrol_partitions,
    parse_squeue_json,
    parse_time_minutes,
)
from plugin.slurm.pending import (
    PENDING_FIELDS,
    admin_comment_of,
    from_all_records,
    parse_pending,
)
from plugin.slurm.sacct_text import SACCT_TEXT_FIELDS, parse_sacct_text

MARKER = "adaptalloc:v1:held"
#: Extra address space the parsers may take over the process's size at start.
MEMORY_HEADROOM = 1 << 30
#: Cases per property (hypothesis' max_examples).
CASES = 120
CASES_SEEN: Counter[str] = Counter()

# Slurm's syntax and our markers, to be mixed into user text.
TOKENS = (
    "=",
    " ",
    "\n",
    "\t",
    "(null)",
    "AdminComment=",
    MARKER,
    "AdminComment=" + MARKER,
    " AdminComment=" + MARKER + " Comment=y",
    " Comment=",
    " StdErr=",
    " WorkDir=",
    " Command=",
    "JobId=41 JobName=",
    "\nJobId=41 JobName=x AdminComment=" + MARKER + " ",
    "~",
    "~R~",
    "adaptalloc:v1 app=lu",
    ";",
    "\x00",
    "\u202e",
    "é",
)
hostile = st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=6)), max_size=12).map(
    "".join
)
user_text = hostile
#: Huge user text (1 MB), in its own test with few cases.
HUGE = ("a" * 1_000_000, ("AdminComment=" + MARKER + " \n") * 30_000)

FUZZ = settings(
    max_examples=CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def _vm_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.fixture(scope="module", autouse=True)
def bounded_memory() -> Iterator[None]:
    """RLIMIT_AS (soft) at the current size plus MEMORY_HEADROOM, restored afterwards;
    prints the cases per parser."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _vm_bytes() + MEMORY_HEADROOM
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    start = time.perf_counter()
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        print(f"\nfuzz cases per parser (memory limit +{MEMORY_HEADROOM >> 20} MiB):")
        for name, count in sorted(CASES_SEEN.items()):
            print(f"  {name:28s} {count:6d}")
        print(
            f"  {'total':28s} {sum(CASES_SEEN.values()):6d} in {time.perf_counter() - start:.1f} s"
        )


# --- squeue's nonce-separated view ------------------------------------------------------------

FREE_TEXT = ("Name", "Comment", "Command", "WorkDir", "Account", "UserName", "WCKey")


def squeue_output(sep: str, records: list[dict[str, str]]) -> str:
    out = []
    for record in records:
        values = [record[name] for name in PENDING_FIELDS] + [record["JobID"]]
        out.append(sep.join(values) + f"{sep}R{sep}\n")
    return "".join(out)


@st.composite
def pending_records(draw: st.DrawFn) -> list[dict[str, str]]:
    count = draw(st.integers(1, 4))
    out = []
    for k in range(count):
        record = dict.fromkeys(PENDING_FIELDS, "(null)")
        record.update(
            JobID=str(100 + k),
            PriorityLong=str(draw(st.integers(0, 2**32))),
            State="PENDING",
            NumNodes=str(draw(st.integers(1, 64))),
            MaxNodes=str(draw(st.integers(0, 64))),
            TimeLimit=draw(st.sampled_from(["UNLIMITED", "1:00:00", "2-00:00:00", "30"])),
            SubmitTime="2026-01-02T03:04:05",
            Partition="debug",
            Reason=draw(st.sampled_from(["JobHeldUser", "JobHeldAdmin", "Priority", "None"])),
        )
        for name in FREE_TEXT:
            record[name] = draw(user_text)
        out.append(record)
    return out


@pytest.mark.slow
@FUZZ
@given(pending_records())
def test_pending_fields_come_back_exactly(records: list[dict[str, str]]) -> None:
    CASES_SEEN["squeue --Format (pending)"] += 1
    sep = "~3f9a0c21be77~"  # a nonce: a user cannot know it, so it is not in their text
    if any(sep in r[name] for r in records for name in FREE_TEXT):
        return
    jobs = parse_pending(squeue_output(sep, records), sep)
    assert [j.job_id for j in jobs] == [int(r["JobID"]) for r in records]
    for job, record in zip(jobs, records, strict=True):

        def text(value: str) -> str:
            return "" if value == "(null)" else value

        assert job.name == text(record["Name"])
        assert job.comment == text(record["Comment"])
        assert job.user == text(record["UserName"])
        assert job.workdir == (text(record["WorkDir"]) or None)
        assert job.script == (text(record["Command"]) or None)
        assert job.state_reason == record["Reason"]
        assert job.admin_comment is None  # never from squeue's text


@pytest.mark.slow
@FUZZ
@given(st.one_of(hostile, st.text()), st.sampled_from(["~ab~", "|", "~3f9a0c21be77~"]))
def test_pending_garbage_is_records_or_a_parse_error(text: str, sep: str) -> None:
    CASES_SEEN["squeue --Format (garbage)"] += 1
    try:
        jobs = parse_pending(text, sep)
    except SlurmParseError:
        return
    assert all(job.job_id >= 0 for job in jobs)


# --- sacct's nonce-separated text (the fallback of sacct --json) ----------------------------

SACCT_FREE_TEXT = ("JobName", "Comment", "AdminComment", "WCKey", "WorkDir", "Reason")


def sacct_output(sep: str, lines: list[dict[str, str]]) -> str:
    """What ``sacct --parsable2 --delimiter=SEP`` prints for `lines`: fields, closing id."""
    return "".join(
        sep.join([*(line[name] for name in SACCT_TEXT_FIELDS), line["JobIDRaw"]]) + "\n"
        for line in lines
    )


@st.composite
def sacct_lines(draw: st.DrawFn) -> list[dict[str, str]]:
    """1-3 jobs, each followed by its batch step and 0-2 srun steps with hostile names."""
    out = []
    for k in range(draw(st.integers(1, 3))):
        job = dict.fromkeys(SACCT_TEXT_FIELDS, "")
        job.update(
            JobIDRaw=str(200 + k),
            User="aatest",
            State=draw(st.sampled_from(["COMPLETED", "FAILED", "CANCELLED by 0"])),
            ExitCode=f"{draw(st.integers(0, 255))}:{draw(st.integers(0, 64))}",
            ReqTRES=f"billing=1,node={draw(st.integers(1, 64))}",
            AllocNodes=str(draw(st.integers(0, 64))),
            TimelimitRaw=draw(st.sampled_from(["UNLIMITED", "Partition_Limit", "30"])),
            Submit="2026-01-02T03:04:05",
            Start="Unknown",
            End="2026-01-02T03:05:05",
            ElapsedRaw=str(draw(st.integers(0, 10**6))),
            Priority=str(draw(st.integers(0, 2**32))),
        )
        for name in SACCT_FREE_TEXT:
            job[name] = draw(user_text)
        out.append(job)
        steps = [("batch", "batch", "1")]
        steps += [
            (str(n), draw(user_text), str(draw(st.integers(1, 512))))
            for n in range(draw(st.integers(0, 2)))
        ]
        for step_id, name, tasks in steps:
            line = dict.fromkeys(SACCT_TEXT_FIELDS, "")
            line.update(JobIDRaw=f"{200 + k}.{step_id}", JobName=name, ExitCode="0:0")
            line.update(NTasks=tasks, State="COMPLETED")
            out.append(line)
    return out


@pytest.mark.slow
@FUZZ
@given(sacct_lines())
def test_sacct_text_fields_come_back_exactly(lines: list[dict[str, str]]) -> None:
    CASES_SEEN["sacct text (fallback)"] += 1
    sep = "~3f9a0c21be77~"  # a nonce: a user cannot know it, so it is not in their text
    if any(sep in line[name] for line in lines for name in SACCT_FREE_TEXT):
        return
    read = parse_sacct_text(sacct_output(sep, lines), sep)
    jobs = [line for line in lines if "." not in line["JobIDRaw"]]
    assert read.skipped == 0
    assert [j.job_id for j in read.jobs] == [int(line["JobIDRaw"]) for line in jobs]
    for job, line in zip(read.jobs, jobs, strict=True):
        assert (job.name, job.wckey, job.workdir) == (
            line["JobName"],
            line["WCKey"],
            line["WorkDir"],
        )
        assert job.comment == (line["Comment"] or None)
        assert job.admin_comment == (line["AdminComment"] or None)
        assert job.state_reason == line["Reason"]
        steps = [
            int(s["NTasks"])
            for s in lines
            if s["JobIDRaw"].startswith(line["JobIDRaw"] + ".")
            and s["JobName"] not in ("batch", "extern", "interactive")
        ]
        assert job.tasks == (max(steps) if steps else None)
        assert job.exit_code == int(line["ExitCode"].split(":")[0])


@pytest.mark.slow
@FUZZ
@given(sacct_lines(), st.integers(0, 10**6), hostile)
def test_sacct_text_cut_into_anywhere_gives_no_job_another_jobs_fields(
    lines: list[dict[str, str]], where: int, inserted: str
) -> None:
    """Text put anywhere into good output (not the nonce): the same jobs, each with its own
    id, or skipped, or SlurmParseError; never a job with another job's id."""
    CASES_SEEN["sacct text (cut into)"] += 1
    sep = "~3f9a0c21be77~"
    if sep in inserted or any(sep in line[n] for line in lines for n in SACCT_FREE_TEXT):
        return
    text = sacct_output(sep, lines)
    at = where % (len(text) + 1)
    try:
        read = parse_sacct_text(text[:at] + inserted + text[at:], sep)
    except SlurmParseError:
        return
    jobs = {int(line["JobIDRaw"]): line for line in lines if "." not in line["JobIDRaw"]}
    assert len(read.jobs) + read.skipped >= len(jobs)
    for job in read.jobs:
        original = jobs[job.job_id]
        same = [
            job.name == original["JobName"],
            job.wckey == original["WCKey"],
            job.workdir == original["WorkDir"],
            job.state_reason == original["Reason"],
        ]
        assert sum(same) >= len(same) - 1  # only the field written into may differ


@pytest.mark.slow
@FUZZ
@given(st.one_of(hostile, st.text()), st.sampled_from(["~ab~", "|", "~3f9a0c21be77~"]))
def test_sacct_text_garbage_is_records_or_a_parse_error(text: str, sep: str) -> None:
    CASES_SEEN["sacct text (garbage)"] += 1
    try:
        read = parse_sacct_text(text, sep)
    except SlurmParseError:
        return
    assert all(job.job_id >= 0 for job in read.jobs)
    assert read.skipped >= 0


# --- scontrol show job -o: the held marker --------------------------------------------------


def scontrol_line(job_id: int, fields: dict[str, str], admin: str | None) -> str:
    """One job as ``scontrol show job -o`` of 22.05 prints it (field order as on the testbed;
    AdminComment only when set)."""
    parts = [
        f"JobId={job_id} JobName={fields['name']} UserId=aatest(1001) GroupId=aatest(1001)",
        "Priority=0 Nice=0 Account=(null) QOS=normal JobState=PENDING Reason=JobHeldUser",
        f"Partition=debug NumNodes=1-3 Features=(null) Command={fields['command']}",
        f"WorkDir={fields['workdir']}",
    ]
    if admin is not None:
        parts.append(f"AdminComment={admin} ")
    if fields["comment"]:
        parts.append(f"Comment={fields['comment']} ")
    parts.append(f"StdErr={fields['stdout']} StdIn=/dev/null StdOut={fields['stdout']} Power=")
    return " ".join(parts)


#: A field scontrol prints after AdminComment. An admin comment that is the marker followed by
#: such a field's name (``adaptalloc:v1:held Comment=``) prints exactly as the marker followed
#: by that field, so no reader of the line can tell them apart; only an admin (or adaptalloc)
#: writes an admin comment, so such texts are left out here (pending.py's docstring says so).
FIELD_AFTER_ADMIN_COMMENT = re.compile(r"\s*(?:Comment|StdErr|StdIn|StdOut|Power)=")


def _field_look_alike(admin: str) -> bool:
    """The marker followed by a field's name: prints exactly as the marker then that field."""
    return admin.startswith(MARKER) and bool(FIELD_AFTER_ADMIN_COMMENT.match(admin[len(MARKER) :]))


admin_texts = st.one_of(
    st.none(),
    st.just(MARKER),
    st.builds(lambda t: f"{MARKER} {t}", hostile.filter(lambda t: t.strip() != "")),
    hostile.filter(lambda t: t != ""),
).filter(lambda admin: admin is None or not _field_look_alike(admin))
job_text = st.fixed_dictionaries(
    dict.fromkeys(("name", "command", "workdir", "comment", "stdout"), user_text)
)


def check_verdict(verdict: str | None, admin: str | None) -> None:
    """Sound: the marker only for a real marker standing alone (trailing blanks aside: the
    line cannot show them apart from the blank that separates the next field, and the
    daemon's word read, marks.is_held, reads such a comment as held too); "" only when the
    real comment has no marker word. (No real admin comment at all: job_submit.lua never
    holds such a job, and Reason=JobHeldUser keeps any harm to the user's own hold; not
    checked.)"""
    if admin is None:
        return
    if verdict == MARKER:
        assert admin.rstrip() == MARKER
    elif verdict == "":
        assert MARKER not in admin.split()
    else:
        assert verdict is None


@pytest.mark.parametrize(
    ("admin", "verdict"),
    [
        (MARKER, MARKER),
        ("adaptalloc:v1:sized nodes=4", ""),
        (f" {MARKER}", None),  # the marker as a later word still marks the job: read exactly
        (f"note {MARKER}", None),
        (f"{MARKER} extra", None),
        (f"{MARKER} ", MARKER),  # found by the fuzzer: a trailing blank prints as the separator
    ],
)
def test_found_cases_of_the_marker_read(admin: str, verdict: str | None) -> None:
    fields = dict.fromkeys(("name", "command", "workdir", "comment", "stdout"), "")
    assert admin_comment_of(scontrol_line(41, fields, admin)) == verdict


@pytest.mark.slow
@FUZZ
@given(job_text, admin_texts)
def test_the_marker_is_never_read_from_user_text(fields: dict[str, str], admin: str | None) -> None:
    CASES_SEEN["scontrol -o ID (marker)"] += 1
    check_verdict(admin_comment_of(scontrol_line(41, fields, admin)), admin)


@pytest.mark.slow
@FUZZ
@given(st.lists(st.tuples(job_text, admin_texts), min_size=1, max_size=4))
def test_one_listing_of_all_jobs_is_as_sound(jobs: list[tuple[dict[str, str], str | None]]) -> None:
    CASES_SEEN["scontrol -o (all jobs)"] += 1
    text = "\n".join(scontrol_line(41 + k, f, a) for k, (f, a) in enumerate(jobs))
    found = from_all_records(text, [41 + k for k in range(len(jobs))])
    for k, (_, admin) in enumerate(jobs):
        if 41 + k in found:
            check_verdict(found[41 + k], admin)


# --- squeue --json and sacct --json ---------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | hostile,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile, inner, max_size=4),
    max_leaves=12,
)
JOB_KEYS = (
    "job_id", "name", "user_name", "account", "partition", "job_state", "comment",
    "admin_comment", "node_count", "max_nodes", "time_limit", "submit_time", "start_time",
    "end_time", "exit_code", "priority", "state_reason", "job_resources", "nodes", "command",
    "current_working_directory", "state", "time", "tres", "wckey", "allocation_nodes",
)  # fmt: skip
json_jobs = st.lists(
    st.dictionaries(st.sampled_from(JOB_KEYS), json_values, max_size=12), max_size=4
)
json_docs = st.one_of(
    st.builds(lambda jobs, errors: {"jobs": jobs, "errors": errors}, json_jobs, json_values),
    st.builds(lambda jobs: {"jobs": jobs}, json_values),
    json_values,
)


@pytest.mark.slow
@FUZZ
@given(json_docs, st.sampled_from([parse_squeue_json, parse_sacct_json]))
def test_any_json_document_is_records_or_a_slurm_error(doc: Any, parser: Any) -> None:
    CASES_SEEN[f"{parser.__name__}"] += 1
    try:
        text = json.dumps(doc)
    except ValueError:
        return
    try:
        records = parser(text)
    except SlurmError:
        return
    assert isinstance(records, list)


@pytest.mark.slow
@FUZZ
@given(user_text, user_text, user_text)
def test_hostile_strings_come_back_verbatim_from_json(name: str, comment: str, admin: str) -> None:
    CASES_SEEN["squeue/sacct --json (round trip)"] += 1
    squeue = {"jobs": [{"job_id": 7, "name": name, "comment": comment, "admin_comment": admin}]}
    (job,) = parse_squeue_json(json.dumps(squeue))
    assert (job.name, job.comment, job.admin_comment) == (name, comment, admin)
    sacct = {
        "jobs": [{"job_id": 7, "name": name, "comment": {"job": comment, "administrator": admin}}]
    }
    (job,) = parse_sacct_json(json.dumps(sacct))
    assert (job.name, job.comment, job.admin_comment) == (name, comment, admin)


# --- scontrol key=value text ----------------------------------------------------------------


@pytest.mark.slow
@FUZZ
@given(st.lists(st.one_of(user_text, st.text()), max_size=4).map("\n".join))
def test_partition_listings_are_records_or_a_parse_error(text: str) -> None:
    CASES_SEEN["scontrol show partition"] += 1
    try:
        parts = parse_scontrol_partitions(text)
    except SlurmParseError:
        return
    assert all(p.name for p in parts) or parts == []


@pytest.mark.slow
@FUZZ
@given(user_text)
def test_fields_before_a_hostile_value_are_exact(value: str) -> None:
    CASES_SEEN["key=value line"] += 1
    fields = parse_key_values(f"JobId=41 JobState=PENDING Comment={value}")
    assert fields["JobId"] == "41"
    assert fields["JobState"] == "PENDING"


@pytest.mark.slow
@FUZZ
@given(st.one_of(hostile, st.text(max_size=20), st.from_regex(r"\d{1,3}-\d{1,2}:\d\d:\d\d")))
def test_time_strings_are_minutes_or_a_value_error(text: str) -> None:
    CASES_SEEN["[d-]h:m:s time"] += 1
    try:
        minutes = parse_time_minutes(text)
    except ValueError:
        return
    assert minutes is None or minutes >= 0


@pytest.mark.slow
@settings(max_examples=4, deadline=None, database=None)
@given(st.sampled_from(HUGE), st.sampled_from(("name", "command", "workdir", "comment")))
def test_huge_text_stays_within_memory_and_sound(text: str, field: str) -> None:
    CASES_SEEN["huge text (all parsers)"] += 1
    fields = dict.fromkeys(("name", "command", "workdir", "comment", "stdout"), "x")
    fields[field] = text
    for admin in (MARKER, "helpdesk 42"):
        line = scontrol_line(41, fields, admin)
        check_verdict(admin_comment_of(line), admin)
        found = from_all_records(line, [41])
        if 41 in found:
            check_verdict(found[41], admin)
    sep = "~3f9a0c21be77~"
    record = dict.fromkeys(PENDING_FIELDS, "(null)")
    record.update(JobID="7", PriorityLong="0", NumNodes="1", MaxNodes="4", Name=text)
    (job,) = parse_pending(squeue_output(sep, [record]), sep)
    assert job.name == text
    (job,) = parse_squeue_json(json.dumps({"jobs": [{"job_id": 7, "name": text}]}))
    assert job.name == text
    assert parse_key_values(f"JobId=7 Comment={text}")["JobId"] == "7"
