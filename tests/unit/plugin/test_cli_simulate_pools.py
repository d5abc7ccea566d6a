"""``adaptalloc simulate`` with node pools (--pools, --multi-partition), run in this process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import REPO_ROOT, RunCli, assert_one_error_line, json_document

WriteFile = Callable[[str, bytes | str], Path]
NASA = REPO_ROOT / "tests" / "data" / "swf" / "NASA-iPSC-1993-3.1-cln.swf"
HEADER = (
    "; MaxNodes: 12\n"
    "; MaxProcs: 256\n"
    "; Note: 8 thin nodes + 4 fat nodes\n"
    "; Note: 128 in thin nodes + 128 in fat nodes\n"
    "; Partition:  4  large\n"
    "; Partition: 10  standard\n"
)


def _job(k: int, submit: int, procs: int, runtime: int, part: int) -> str:
    fields = (k, submit, -1, runtime, procs, -1, -1, procs, 2 * runtime, -1, 1, k % 3)
    return " ".join(map(str, (*fields, -1, -1, -1, part, -1, -1))) + "\n"


def _trace(write_file: WriteFile) -> Path:
    jobs = [
        _job(k, 60 * k, 32 * (1 + k % 3), 600 + 60 * k, (4, 10, 10, 5)[k % 4]) for k in range(40)
    ]
    return write_file("typed.swf", HEADER + "".join(jobs))


def test_the_header_gives_the_pools_and_each_policy_reports_them(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    doc = json_document(run_cli("simulate", _trace(write_file), "--format", "json"))
    assert doc["pools"]["source"] == "the trace header"
    assert [(p["name"], p["nodes"], p["cores"]) for p in doc["pools"]["pools"]] == [
        ("large", 4, 32),
        ("standard", 8, 16),
    ]
    assert doc["pools"]["multi_partition"] is None
    assert doc["dropped"] == {"partition without pool": 10}  # partition 5
    for name, figures in doc["policies"].items():
        assert figures["jobs"] == 30
        assert {k: v["jobs"] for k, v in figures["pools"].items()} == {
            "large": 10,
            "standard": 20,
        }, name
        assert sum(v["node_hours"] for v in figures["pools"].values()) == pytest.approx(
            figures["node_hours"]
        )


def test_the_multi_partition_what_if_moves_jobs_between_pools(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    args = ("--pools", "large=4x32:4,standard=8x16:10@2", "--multi-partition", "large,standard")
    doc = json_document(
        run_cli("simulate", _trace(write_file), *args, "--curves", "oracle", "--format", "json")
    )
    assert doc["pools"]["source"] == "--pools"
    assert doc["pools"]["multi_partition"] == ["large", "standard"]
    oracle = doc["policies"]["oracle"]["pools"]
    rigid = doc["policies"]["rigid"]["pools"]
    assert oracle["large"]["jobs"] + oracle["standard"]["jobs"] == 30
    # Slurm's rule takes large, listed first, whenever it can start the job; the predicted
    # completion sends more jobs to standard, twice as fast per core.
    assert rigid["large"]["jobs"] > 10
    assert oracle["standard"]["jobs"] > rigid["standard"]["jobs"]


def test_a_trace_without_partitions_runs_as_one_partition_as_before(run_cli: RunCli) -> None:
    auto = json_document(run_cli("simulate", NASA, "--jobs", "200", "--format", "json"))
    none = json_document(
        run_cli("simulate", NASA, "--jobs", "200", "--pools", "none", "--format", "json")
    )
    assert "pools" not in auto
    assert auto["loads"] == none["loads"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--pools", "large=4x32"), "is not NAME=NODESxCORES"),
        (("--pools", "a=4x32:4,a=8x16:10"), "pool names must differ"),
        (("--pools", "a=4x32:4,b=8x16:4"), "partition 4 is in pools a and b"),
        (("--multi-partition", "large,huge"), "no pool named 'huge'"),
        (("--multi-partition", "large"), "at least two different pool names"),
        (("--pools", "none", "--multi-partition", "a,b"), "--multi-partition needs node pools"),
        (("--variants",), "--variants is not supported with node pools"),
        (("--html", "out"), "--html is not supported with node pools"),
        (("--max-job-nodes", "8"), "--max-job-nodes is not supported with node pools"),
        (
            ("--slurm-array", "out", "--multi-partition", "a,b"),
            "--slurm-array simulates one partition",
        ),
        (("--slurm-array", "out"), "header gives node types (--pools auto): add --pools none"),
    ],
)
def test_bad_pool_options_are_one_error_line(
    run_cli: RunCli, write_file: WriteFile, args: tuple[str, ...], words: str
) -> None:
    line = assert_one_error_line(run_cli("simulate", _trace(write_file), *args))
    assert words in line
