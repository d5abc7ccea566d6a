"""The text fallback of finished_jobs (plugin/slurm/sacct_text.py) on real sacct output.

``sacct_text_hostile.txt`` is what the testbed's sacct 22.05 printed for the fallback's own
query, with the nonce in ``sacct_text_hostile.sep``; ``sacct_text_hostile.json`` is
``sacct --json`` of the same jobs (tests/data/slurm/README.md). Times are the testbed's
local time, UTC: the tests read them in UTC.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from plugin.doctor.check import OK, WARN
from plugin.doctor.services import accounting_answers
from plugin.slurm import CliSlurmReader, SlurmCommandError, SlurmError, SlurmParseError
from plugin.slurm.parse import parse_sacct_json
from plugin.slurm.records import JobRecord
from plugin.slurm.sacct_text import (
    SACCT_TEXT_FIELDS,
    parse_sacct_text,
    parse_sacct_users,
    sacct_text_args,
)

DATA = Path(__file__).resolve().parents[3] / "data" / "slurm"
TEXT = (DATA / "sacct_text_hostile.txt").read_text(encoding="utf-8")
SEP = (DATA / "sacct_text_hostile.sep").read_text(encoding="utf-8").strip()
JSON = (DATA / "sacct_text_hostile.json").read_text(encoding="utf-8")
#: What the JSON path cannot report and the text path does: 22.05's JSON says exit 0 for
#: every job, and it has no user for a job without an association (the testbed's test
#: user has none: its JSON "user" and "association" are null).
JSON_BLIND = {"exit_code", "user"}


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Read the capture's local times in the zone it was made in."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def by_name() -> dict[str, JobRecord]:
    read = parse_sacct_text(TEXT, SEP)
    assert read.skipped == 0
    return {job.name: job for job in read.jobs}


def differences(a: JobRecord, b: JobRecord) -> dict[str, tuple[object, object]]:
    return {
        f.name: (getattr(a, f.name), getattr(b, f.name))
        for f in dataclasses.fields(a)
        if getattr(a, f.name) != getattr(b, f.name)
    }


def test_text_and_json_agree_field_for_field() -> None:
    text = {job.job_id: job for job in parse_sacct_text(TEXT, SEP).jobs}
    json_ = {job.job_id: job for job in parse_sacct_json(JSON)}
    assert sorted(text) == sorted(json_)
    assert len(text) == 7
    for job_id, job in text.items():
        diff = differences(job, json_[job_id])
        assert set(diff) <= JSON_BLIND, (job_id, diff)
        assert diff["user"] == ("aatest", "")
        assert json_[job_id].exit_code is None


def test_hostile_text_stays_in_its_own_field() -> None:
    jobs = by_name()
    hostile = jobs["two\nlines|pipe ~0123456789ab~ `q`"]  # slurmdbd stores " as `
    assert hostile.comment == "c|d\n\"e\" 'f' ~0123456789ab~\n5\n6"
    assert hostile.wckey == "w|k\nx"
    assert hostile.state == "COMPLETED"
    assert hostile.tasks == 1
    forged = jobs["1\n1"]  # a name that looks like a record boundary
    assert forged.comment == "|"
    assert forged.job_id != 1
    admin = jobs["capture-admin-comment"]
    assert admin.admin_comment == "adm|in\nline ~0123456789ab~"
    workdir = jobs["capture-workdir"]
    assert workdir.workdir is not None
    assert workdir.workdir.endswith("/dir|with\nnewline ~0123456789ab~")


def test_tasks_are_the_largest_application_step() -> None:
    # Steps: "batch" (the script, 1 task), srun -J batch -n 4 (named like the script, so
    # not counted: the JSON path's rule), srun -n 3, srun -n 2 that failed.
    assert by_name()["capture-steps"].tasks == 3


def test_real_exit_codes_and_unreported_fields() -> None:
    jobs = by_name()
    assert (jobs["capture-failed"].state, jobs["capture-failed"].exit_code) == ("FAILED", 3)
    cancelled = jobs["capture-cancelled-pending"]
    assert cancelled.state == "CANCELLED"  # "CANCELLED by 0"
    assert cancelled.nodes_alloc == 0
    assert cancelled.nodes_min == 2
    assert cancelled.time_limit_min is None  # Partition_Limit
    steps = jobs["capture-steps"]
    assert (steps.nodes_alloc, steps.time_limit_min, steps.comment) == (2, 5, None)


def test_empty_output_is_no_job() -> None:
    assert parse_sacct_text("", SEP).jobs == []


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (TEXT[:-40], "not a whole number"),
        (TEXT.replace(SEP, SEP + SEP, 1), "not a whole number"),
        (TEXT + "sacct: error: something\n", "after its last record"),
        (TEXT.replace("\n3.batch" + SEP, "3.batch" + SEP, 1), "not on a line of its own"),
    ],
    ids=["cut-short", "extra-field", "trailing-text", "joined-lines"],
)
def test_output_that_is_not_whole_records_is_refused(text: str, match: str) -> None:
    with pytest.raises(SlurmParseError, match=match):
        parse_sacct_text(text, SEP)


def test_another_separator_reads_nothing_as_a_record() -> None:
    with pytest.raises(SlurmParseError):
        parse_sacct_text(TEXT, "~000000000000~")


def test_a_record_that_does_not_read_is_skipped_not_given_to_another_job() -> None:
    failed = by_name()["capture-failed"]
    line = next(ln for ln in TEXT.split("\n") if ln.startswith(f"{failed.job_id}{SEP}"))
    bad_time = line.replace(f"{SEP}2026-", f"{SEP}yesterday-", 1)
    bad_ids = line[: -len(str(failed.job_id))] + "99999"
    for broken in (bad_time, bad_ids):
        read = parse_sacct_text(TEXT.replace(line, broken), SEP)
        assert read.skipped == 1
        assert failed.job_id not in {job.job_id for job in read.jobs}
        assert len(read.jobs) == 6
        assert "capture-failed" not in {job.name for job in read.jobs}


def test_the_query_asks_for_each_field_then_the_closing_id() -> None:
    args = sacct_text_args("~ab~")
    assert args[:3] == ["--noheader", "--parsable2", "--delimiter=~ab~"]
    assert args[3] == "--format=" + ",".join((*SACCT_TEXT_FIELDS, "JobIDRaw"))


class FailingJson:
    """A runner whose ``sacct --json`` fails as `failure` says; the text query gets the
    capture, written with the separator the backend drew for that call."""

    def __init__(self, failure: str) -> None:
        self.failure = failure
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str], timeout_s: float) -> str:
        self.calls.append(list(args))
        if "--json" in args:
            if self.failure == "abort":
                raise SlurmCommandError("sacct --json --allusers --starttime ... failed (exit -6)")
            return '{"meta": {}, "jobs": [' if self.failure == "truncated" else "Aborted"
        (delimiter,) = (a for a in args if a.startswith("--delimiter="))
        return TEXT.replace(SEP, delimiter.removeprefix("--delimiter="))


@pytest.mark.parametrize("failure", ["abort", "truncated", "not-json"])
def test_fallback_when_the_json_call_fails(failure: str) -> None:
    runner = FailingJson(failure)
    reader = CliSlurmReader(runner=runner)
    with capture_logs() as logs:
        jobs = reader.finished_jobs(0, 2_000_000_000)
    assert [event["event"] for event in logs] == ["sacct_json_failed"]
    assert logs[0]["log_level"] == "warning"
    json_call, text_call = runner.calls
    assert json_call[json_call.index("--json") + 1 :] == text_call[5:]  # the same query
    expected = {job.job_id for job in parse_sacct_json(JSON)}
    assert {job.job_id for job in jobs} == expected
    assert all(job.source == "sacct" for job in jobs)


def test_each_fallback_draws_its_own_separator() -> None:
    runner = FailingJson("abort")
    reader = CliSlurmReader(runner=runner)
    with capture_logs():
        reader.finished_jobs(0, 2_000_000_000)
        reader.finished_jobs(0, 2_000_000_000)
    delimiters = [a for call in runner.calls for a in call if a.startswith("--delimiter=")]
    assert len(delimiters) == 2
    assert delimiters[0] != delimiters[1]


def test_skipped_records_are_one_warning() -> None:
    failed_line = next(ln for ln in TEXT.split("\n") if "capture-failed" in ln)
    broken = TEXT.replace(failed_line, failed_line.replace(f"{SEP}2026-", f"{SEP}x-", 1))

    def runner(args: Sequence[str], timeout_s: float) -> str:
        if "--json" in args:
            raise SlurmCommandError("sacct failed (exit -6)")
        (delimiter,) = (a for a in args if a.startswith("--delimiter="))
        return broken.replace(SEP, delimiter.removeprefix("--delimiter="))

    with capture_logs() as logs:
        jobs = CliSlurmReader(runner=runner).finished_jobs(0, 2_000_000_000)
    assert [e["event"] for e in logs] == ["sacct_json_failed", "sacct_text_records_skipped"]
    assert (logs[1]["skipped"], logs[1]["read"]) == (1, 6)
    assert len(jobs) == 6


def test_a_json_error_sacct_reports_is_not_a_crash() -> None:
    """JSON that parses and carries Slurm's error is Slurm's answer: no fallback."""

    def runner(args: Sequence[str], timeout_s: float) -> str:
        assert "--json" in args
        return '{"errors": [{"error_number": 1, "error": "db down"}], "jobs": []}'

    with pytest.raises(SlurmError, match="db down"):
        CliSlurmReader(runner=runner).finished_jobs(0, 1)


def test_doctor_warns_while_accounting_is_read_from_text() -> None:
    runner = FailingJson("abort")
    reader = CliSlurmReader(runner=runner)
    with capture_logs():
        check = accounting_answers(reader, now=2_000_000_000)
    assert check.status == WARN
    assert "from its text output" in check.detail
    assert "exit -6" in check.detail


class WorkingJson(FailingJson):
    def __call__(self, args: Sequence[str], timeout_s: float) -> str:
        return JSON if "--json" in args else super().__call__(args, timeout_s)


def test_doctor_is_ok_again_once_sacct_json_works() -> None:
    reader = CliSlurmReader(runner=FailingJson("abort"))
    with capture_logs():
        assert accounting_answers(reader, now=2_000_000_000).status == WARN
    reader._runner = WorkingJson("none")
    check = accounting_answers(reader, now=2_000_000_000)
    assert (check.status, reader.sacct_json_error) == (OK, None)


class UsersQuery:
    """sacct --json answers with the capture (its users null); the users query with each
    job's id and user as the capture's text names them, or fails."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str], timeout_s: float) -> str:
        self.calls.append(list(args))
        if "--json" in args:
            return JSON
        if self.fail:
            raise SlurmCommandError("sacct failed (exit 1): slurmdbd is down")
        assert "--format=JobIDRaw,User,JobIDRaw" in args
        (delimiter,) = (a.removeprefix("--delimiter=") for a in args if "--delimiter=" in a)
        jobs = parse_sacct_text(TEXT, SEP).jobs
        return "".join(f"{j.job_id}{delimiter}{j.user}{delimiter}{j.job_id}\n" for j in jobs)


def test_a_job_the_json_gives_no_user_gets_the_user_sacct_names() -> None:
    from_json = {job.job_id: job for job in parse_sacct_json(JSON)}
    assert any(not job.user for job in from_json.values())  # the premise: 22.05's JSON
    runner = UsersQuery()
    jobs = CliSlurmReader(runner=runner).finished_jobs(0, 2_000_000_000)
    named = {job.job_id: job.user for job in parse_sacct_text(TEXT, SEP).jobs}
    assert {job.job_id: job.user for job in jobs} == {j: named[j] for j in from_json}
    assert all(job.user for job in jobs)
    json_call, users_call = runner.calls
    assert json_call[json_call.index("--json") + 1 :] == users_call[6:]  # the same query
    for job in jobs:  # nothing else changes
        assert dataclasses.replace(job, user=from_json[job.job_id].user) == from_json[job.job_id]


def test_without_the_users_query_the_jobs_stay_as_the_json_says() -> None:
    with capture_logs() as logs:
        jobs = CliSlurmReader(runner=UsersQuery(fail=True)).finished_jobs(0, 2_000_000_000)
    assert [e["event"] for e in logs] == ["sacct_users_unknown"]
    assert {j.job_id: j for j in jobs} == {j.job_id: j for j in parse_sacct_json(JSON)}


def test_a_users_record_that_does_not_read_is_left_out() -> None:
    sep = "~x~"
    text = f"12{sep}ann{sep}12\n13{sep}bob{sep}14\n14.0{sep}eve{sep}14.0\n15{sep}{sep}15\n"
    assert parse_sacct_users(text, sep) == {12: "ann"}
    with pytest.raises(SlurmParseError):
        parse_sacct_users(f"12{sep}ann\n", sep)
