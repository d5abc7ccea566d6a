"""The Slurm adapter's write side and the daemon's cheap queue view, without Slurm: command
lines and argument lists as built, and the nonce-separated squeue output as parsed."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugin.slurm import CliSlurm, Resize, SlurmParseError
from plugin.slurm.pending import (
    PENDING_FIELDS,
    admin_comment_of,
    admin_comments,
    from_all_records,
    parse_pending,
    pending_format,
)
from plugin.slurm.writer import MAX_ADMIN_COMMENT, check_admin_comment, id_chunks, resize_lines


def test_a_resize_line_is_integers_only_and_pins_the_size() -> None:
    assert Resize(12, 4, 4, 30).line() == "update JobId=12 NumNodes=4-4 TimeLimit=30"
    assert Resize(12, 2, 6).line() == "update JobId=12 NumNodes=2-6"
    assert Resize(12, 2, 6, None, unlimited=True).line().endswith("TimeLimit=UNLIMITED")


@pytest.mark.parametrize(
    "args",
    [(0, 1, 1), (True, 1, 1), (3, 0, 1), (3, 4, 2), (3, 1, 1, 0), (3, 1, 1, 10**7), (3, "2", 2)],
)
def test_a_resize_refuses_what_is_not_a_whole_positive_number(args: tuple[object, ...]) -> None:
    with pytest.raises(ValueError, match=r"must|below"):
        Resize(*args)  # type: ignore[arg-type]


def test_resize_lines_go_to_few_processes_each_line_once() -> None:
    changes = [Resize(j, 1, 1) for j in range(1, 101)]
    assert len(resize_lines(changes[:7], 4)) == 1
    assert len(resize_lines(changes[:10], 4)) == 2  # 4+ lines each: a process costs ~a line
    split = resize_lines(changes, 4)
    assert len(split) == 4
    assert sorted(line for part in split for line in part) == sorted(c.line() for c in changes)
    assert resize_lines([], 4) == []


def test_id_chunks_dedupe_and_cut() -> None:
    assert list(id_chunks([3, 1, 3, 2], size=2)) == ["3,1", "2"]
    with pytest.raises(ValueError, match="job id"):
        list(id_chunks([1, -2]))


@pytest.mark.parametrize("text", ["a\nupdate JobId=1", "a\x1b[31m", "x" * (MAX_ADMIN_COMMENT + 1)])
def test_admin_comments_with_control_characters_or_too_long_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="admin comment"):
        check_admin_comment(text)


class Recorder:
    """A runner in place of subprocess: records each argument list."""

    def __init__(self, out: str = "") -> None:
        self.calls: list[tuple[str, ...]] = []
        self.out = out

    def __call__(self, args: Sequence[str], timeout: float) -> str:
        self.calls.append(tuple(args))
        return self.out


def test_one_command_per_comment_and_one_release_for_the_batch() -> None:
    runner = Recorder()
    slurm = CliSlurm()
    slurm._runner = runner
    text = "adaptalloc:v1 app=lu; adaptalloc:v1:sized n=4 range=1-8 rule=cap"
    slurm.set_admin_comment([5, 6, 7], text)
    slurm.release([5, 6, 7, 8])
    assert runner.calls == [
        ("scontrol", "update", "JobId=5,6,7", f"AdminComment={text}"),
        ("scontrol", "release", "5,6,7,8"),
    ]


# --- the nonce-separated squeue view ------------------------------------------------------


def squeue_output(sep: str, *records: dict[str, str]) -> str:
    out = []
    for record in records:
        values = [record.get(name, "(null)") for name in PENDING_FIELDS] + [record["JobID"]]
        out.append(sep.join(values) + f"{sep}R{sep}\n")
    return "".join(out)


BASE = {
    "JobID": "41",
    "PriorityLong": "0",
    "State": "PENDING",
    "NumNodes": "2",
    "MaxNodes": "6",
    "TimeLimit": "1:30:00",
    "SubmitTime": "2026-01-02T03:04:05",
    "Partition": "debug",
    "Account": "phys",
    "UserName": "ann",
    "Name": "lulesh",
    "Reason": "JobHeldUser",
}


def test_pending_jobs_parse_with_hostile_text_inside_fields() -> None:
    sep = "~0a1b2c3d4e5f~"
    hostile = {
        **BASE,
        "JobID": "42",
        "PriorityLong": "17",
        "Name": "x~R~|y\nJobID",
        "Comment": "line\n~zz~R~zz~\n43~99",
        "MaxNodes": "0",
        "NumNodes": "3",
        "TimeLimit": "UNLIMITED",
    }
    jobs = parse_pending(squeue_output(sep, BASE, hostile), sep)
    first, second = jobs
    assert (first.job_id, first.priority, first.nodes_min, first.nodes_max) == (41, 0, 2, 6)
    assert first.time_limit_min == 90
    assert first.comment == ""
    assert first.admin_comment is None
    assert first.submit_time is not None
    assert first.state_reason == "JobHeldUser"
    assert (second.job_id, second.nodes_min, second.nodes_max) == (42, 3, 3)
    assert second.name == "x~R~|y\nJobID"
    assert second.comment == "line\n~zz~R~zz~\n43~99"
    assert second.time_limit_min is None


def test_a_job_named_r_does_not_end_its_record_early() -> None:
    # Found by test_fuzz_slurm.py: "<sep>R<sep>" was the record end, so a field whose whole
    # text is R cut the record and the whole sweep failed (any user could stop the daemon).
    sep = "~0a1b2c3d4e5f~"
    jobs = parse_pending(squeue_output(sep, {**BASE, "Name": "R", "Comment": "R"}, BASE), sep)
    assert [(j.job_id, j.name, j.comment) for j in jobs] == [(41, "R", "R"), (41, "lulesh", "")]


def test_a_record_with_missing_fields_is_an_error() -> None:
    sep = "~ff~"
    with pytest.raises(SlurmParseError, match="fields"):
        parse_pending(f"41{sep}0{sep}R{sep}\n", sep)


def test_the_format_asks_for_every_field_unabridged() -> None:
    text = pending_format("~s~")
    assert text.count(":0~s~") == len(PENDING_FIELDS) + 1
    assert text.endswith("JobID:0~s~R~s~")


RECORD = (
    "JobId=41 JobName=lulesh UserId=ann(1) Priority=0 JobState=PENDING WorkDir=/tmp "
    "AdminComment=adaptalloc:v1:held {after}"
)


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (" StdErr=/dev/null", "adaptalloc:v1:held"),
        (" Comment=hello", "adaptalloc:v1:held"),
        ("", "adaptalloc:v1:held"),
        ("earlier admin text Comment=x", None),
    ],
)
def test_the_marker_from_a_job_record(after: str, expected: str | None) -> None:
    assert admin_comment_of(RECORD.format(after=after)) == expected


@pytest.mark.parametrize(
    "record",
    [
        # A forged job: a name posing as the field, an admin's real comment after it.
        "JobId=41 JobName=x AdminComment=adaptalloc:v1:held Comment=y UserId=ann(1) "
        "WorkDir=/tmp AdminComment=helpdesk 42 StdErr=/dev/null",
        # The same text in Command or WorkDir, and the real marker after it.
        "JobId=41 JobName=x Command=/a AdminComment=adaptalloc:v1:held StdErr=x "
        "WorkDir=/tmp AdminComment=adaptalloc:v1:held ",
        # A comment after the real field repeating it.
        "JobId=41 JobName=x WorkDir=/tmp AdminComment=adaptalloc:v1:held "
        "Comment=AdminComment=adaptalloc:v1:held StdErr=x",
    ],
)
def test_a_record_with_the_field_twice_is_read_the_exact_way(record: str) -> None:
    assert admin_comment_of(record) is None
    assert from_all_records(record, [41]) == {41: None}


def test_no_marker_is_an_empty_admin_comment() -> None:
    assert admin_comment_of("JobId=41 JobName=x AdminComment=something else StdErr=x") == ""
    assert admin_comment_of("JobId=41 JobName=x WorkDir=/tmp StdErr=x") == ""


def test_a_faked_record_line_sends_the_job_to_its_own_record() -> None:
    real = RECORD.format(after=" StdErr=/dev/null")
    fake = "JobId=41 JobName=y AdminComment=adaptalloc:v1:held StdErr=x"
    other = "JobId=50 JobName=z WorkDir=/ AdminComment=(null) Comment=a"
    text = "\n".join([real, other + "\n" + fake, "JobId=51 JobName=cut"])
    # Two lines claim job 41: some record is cut and forged, so no line is trusted.
    assert from_all_records(text, [41, 50, 51]) == {}
    honest = "\n".join([real, other, "JobId=51 JobName=cut"])
    found = from_all_records(honest, [41, 50, 51])
    assert found[41] == "adaptalloc:v1:held"
    assert found[50] == ""
    assert 51 not in found  # its record does not reach AdminComment


def test_a_record_cut_by_a_newline_leaves_every_job_to_its_own_record() -> None:
    # Found by test_fuzz_slurm.py: job 44's WorkDir holds "AdminComment=" and a newline, so
    # its first line shows one AdminComment= (the fake) and its real marker is on the next.
    cut = (
        "JobId=44 JobName=a Command=/x WorkDir=AdminComment=\nrest "
        "AdminComment=adaptalloc:v1:held  StdErr=/dev/null"
    )
    text = "\n".join([RECORD.format(after=" StdErr=/dev/null"), cut])
    assert from_all_records(text, [41, 44]) == {}
    assert admin_comment_of(cut) is None  # its own record, read whole


def test_many_jobs_are_read_in_one_call_and_the_unsure_ones_alone() -> None:
    calls: list[tuple[str, ...]] = []

    def run(*args: str) -> str:
        calls.append(args)
        if args == ("scontrol", "show", "job", "-o"):
            return "\n".join(RECORD.format(after="").replace("41", str(j)) for j in range(1, 40))
        return RECORD.format(after="").replace("41", args[-1])

    found = admin_comments(run, list(range(1, 41)), parallelism=2)
    assert set(found) == set(range(1, 41))
    assert calls[0] == ("scontrol", "show", "job", "-o")
    assert calls[1:] == [("scontrol", "show", "job", "-o", "40")]
