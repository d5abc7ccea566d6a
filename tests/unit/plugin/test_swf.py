"""plugin.formats.swf: real traces, and every kind of bad input counted and skipped, no crash."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin.formats.swf import (
    SKIP_REASONS,
    SwfError,
    SwfTrace,
    parse_swf,
    read_swf,
    skipped_summary,
)

SWF_DIR = Path(__file__).resolve().parents[2] / "data" / "swf"
HEADER = "; Version: 2.2\n; MaxNodes: 16\n; MaxProcs: 16\n"


def job_line(
    job: int = 1,
    submit: float = 0,
    runtime: float = 100,
    allocated: int = 4,
    requested: int = -1,
    requested_time: float = -1,
    executable: int = -1,
    status: int = 1,
) -> str:
    fields = [job, submit, -1, runtime, allocated, -1, -1, requested, requested_time]
    fields += [-1, status, 1, 1, executable, -1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def parse(text: str) -> SwfTrace:
    return parse_swf(text.splitlines(), "test.swf")


def test_the_nasa_trace() -> None:
    t = read_swf(SWF_DIR / "NASA-iPSC-1993-3.1-cln.swf")
    assert (t.machine, t.machine_from) == (128, "MaxNodes")
    assert t.lines == 18_239
    assert dict(t.skipped) == {"no run time": 173}
    assert len(t.jobs) == 18_239 - 173
    assert t.limits_from_runtime == len(t.jobs)
    first = t.jobs[0]
    assert (first.job_id, first.submit, first.runtime, first.nodes) == (1, 0.0, 1451.0, 128)
    assert first.limit == math.inf  # no requested time: the simulator models it
    assert not first.limit_given
    assert t.status_unknown == len(t.jobs)  # status -1 throughout: taken as completed
    assert t.not_completed == 0
    assert all(j.completed for j in t.jobs)
    assert t.header["Computer"] == "Intel iPSC/860"
    assert t.jobs[5].executable == 2


def test_the_lublin_trace() -> None:
    t = read_swf(SWF_DIR / "lublin_256.swf")
    assert (t.machine, t.machine_from) == (256, "MaxNodes")
    assert len(t.jobs) == 10_000
    assert t.skipped_total == 0
    assert max(j.nodes for j in t.jobs) <= 256


def test_the_llnl_atlas_sample() -> None:
    t = read_swf(SWF_DIR / "LLNL-Atlas-2006-2.1-cln-sample.swf")
    assert (t.machine, t.machine_from, t.procs_per_node) == (1152, "MaxNodes", 8.0)
    assert t.lines == 10_000
    given = sum(j.limit_given for j in t.jobs)
    assert given > 0.95 * len(t.jobs)  # users' requested times, as written
    assert sum(j.executable is not None for j in t.jobs) > 0.95 * len(t.jobs)
    assert t.not_completed == sum(j.status in (0, 5) for j in t.jobs) > 0


def test_the_status_says_which_jobs_run_as_recorded() -> None:
    lines = [job_line(job=k, status=code) for k, code in enumerate((1, 0, 5, -1, 3), 1)]
    t = parse(HEADER + "\n".join(lines))
    assert [j.status for j in t.jobs] == [1, 0, 5, -1, 3]
    assert [j.completed for j in t.jobs] == [True, False, False, True, False]
    assert (t.not_completed, t.status_unknown) == (3, 1)
    head = t.head(2)
    assert (head.not_completed, head.status_unknown) == (1, 0)


def test_requested_values_win_over_allocated_and_runtime() -> None:
    t = parse(HEADER + job_line(requested=8, allocated=4, requested_time=300, executable=5))
    (j,) = t.jobs
    assert (j.nodes, j.limit, j.runtime, j.executable, j.user) == (8, 300.0, 100.0, 5, 1)
    assert j.limit_given
    assert t.limits_from_runtime == 0


def test_processors_become_nodes_by_the_header_ratio() -> None:
    header = "; MaxNodes: 16\n; MaxProcs: 64\n"
    body = "\n".join(job_line(job=k, allocated=p) for k, p in enumerate((1, 4, 5, 64, 68), 1))
    t = parse(header + body)
    assert (t.procs_per_node, t.procs_per_node_from, t.machine) == (4.0, "MaxProcs/MaxNodes", 16)
    assert [j.nodes for j in t.jobs] == [1, 1, 2, 16]
    assert dict(t.skipped) == {"larger than the machine": 1}  # 68 processors: 17 nodes


def test_procs_per_node_option_wins_and_sizes_the_machine_from_maxprocs() -> None:
    t = parse_swf(["; MaxProcs: 64", job_line(allocated=64)], "t.swf", procs_per_node=8)
    assert (t.procs_per_node_from, t.machine, t.machine_from) == ("--procs-per-node", 8, "MaxProcs")
    assert t.jobs[0].nodes == 8
    with pytest.raises(SwfError, match="procs per node"):
        parse_swf([job_line()], "t.swf", procs_per_node=0)


def test_the_curie_sample_is_counted_in_nodes() -> None:
    path = Path("/work/shared/data/swf/CEA-Curie-2011-sample.swf")  # the team's shared data
    if not path.exists():
        pytest.skip("the shared Curie sample is not on this machine")
    t = read_swf(path)
    assert (t.machine, t.machine_from) == (5544, "MaxNodes")
    assert t.procs_per_node == pytest.approx(93312 / 5544)
    assert "larger than the machine" not in t.skipped
    assert max(j.nodes for j in t.jobs) <= 5544


def test_absurd_magnitudes_are_skipped_and_counted_not_a_crash() -> None:
    lines = [HEADER, job_line(job=1)]
    lines += [job_line(job=2, submit=1e308), job_line(job=3, runtime=1e100)]
    lines += [job_line(job=4, requested_time=1e308), job_line(job=5, executable=10**100)]
    lines += [job_line(job=6).replace("100", "1e100", 1), job_line(job=7, submit=-1e308)]
    t = parse("\n".join(lines))
    assert [j.job_id for j in t.jobs] == [1]
    assert dict(t.skipped) == {"implausible value": 6}


def test_the_machine_comes_from_maxnodes_then_maxprocs_then_the_jobs() -> None:
    body = job_line(allocated=4) + "\n" + job_line(job=2, allocated=12) + "\n"
    assert parse("; MaxProcs: 64\n" + body).machine == 64
    t = parse(body)
    assert (t.machine, t.machine_from) == (12, "largest job")
    t = parse("; MaxNodes: -1\n; MaxProcs: 32\n" + body)
    assert (t.machine, t.machine_from) == (32, "MaxProcs")


def test_malformed_lines_are_counted_and_skipped() -> None:
    lines = [
        HEADER,
        job_line(job=1),
        "1 2 3",  # wrong number of fields
        job_line(job=2) + " 99",  # 19 fields
        job_line(job=3).replace("100", "abc", 1),  # not a number
        job_line(job=4).replace("100", "nan", 1),  # not a number
        job_line(job=5).replace("100", "inf", 1),  # not a number
        job_line(job=6, runtime=-1),  # no run time
        job_line(job=7, runtime=0),  # no run time
        job_line(job=8, allocated=-1),  # no size
        job_line(job=9, allocated=0, requested=-1),  # no size
        job_line(job=10, submit=-1),  # no submit time
        job_line(job=11, allocated=40),  # larger than the 16-node machine
        job_line(job=12, allocated=2),
        "",
        "   ",
        "; a comment without a key",
    ]
    t = parse("\n".join(lines))
    assert [j.job_id for j in t.jobs] == [1, 12]
    assert dict(t.skipped) == {
        "wrong number of fields": 2,
        "not a number": 3,
        "no submit time": 1,
        "no run time": 2,
        "no size": 2,
        "larger than the machine": 1,
    }
    assert t.lines == 13
    assert skipped_summary(t.skipped) == (
        "2 wrong number of fields, 3 not a number, 1 no submit time, 2 no run time, "
        "2 no size, 1 larger than the machine"
    )


def test_an_empty_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.swf"
    path.write_bytes(b"")
    with pytest.raises(SwfError, match=r"empty\.swf: no usable job in the trace \(no job lines\)"):
        read_swf(path)


def test_a_file_of_bad_lines_says_why(tmp_path: Path) -> None:
    path = tmp_path / "bad.swf"
    path.write_text(HEADER + "1 2 3\n" + job_line(runtime=-1) + "\n")
    with pytest.raises(SwfError) as info:
        read_swf(path)
    assert str(info.value) == (
        f"{path}: no usable job in the trace (2 job lines skipped: 1 wrong number of fields, "
        "1 no run time)"
    )


def test_binary_garbage_is_skipped_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "garbage.swf"
    garbage = bytes(range(256)) * 20 + b"\n\x00\xff\xfe" * 50
    path.write_bytes(garbage + b"\n" + job_line().encode() + b"\n" + garbage)
    t = read_swf(path)
    assert len(t.jobs) == 1
    assert set(t.skipped) <= {"wrong number of fields", "not a number"}
    assert t.skipped_total >= 1


def test_unreadable_paths_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SwfError, match=r"cannot read .*missing\.swf: No such file"):
        read_swf(tmp_path / "missing.swf")
    with pytest.raises(SwfError, match="is a directory"):
        read_swf(tmp_path)


def test_head_keeps_the_first_jobs() -> None:
    t = read_swf(SWF_DIR / "lublin_256.swf")
    h = t.head(10)
    assert h.jobs == t.jobs[:10]
    assert (h.usable, t.usable) == (10_000, 10_000)
    assert h.machine == t.machine
    assert t.head(10**9) is t


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=120), max_size=30))
def test_any_text_parses_or_fails_with_swf_error(lines: list[str]) -> None:
    try:
        t = parse_swf([*lines, job_line()], "fuzz.swf")
    except SwfError:
        return
    assert t.jobs
    assert set(t.skipped) <= set(SKIP_REASONS)
    assert t.lines == len(t.jobs) + t.skipped_total
