"""plugin.slurm: parsers on real captured output (tests/data/slurm), commands, backend choice."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Sequence
from pathlib import Path

import pytest

from plugin.slurm import CliSlurmReader, SlurmCommandError, SlurmError, SlurmParseError
from plugin.slurm.cli_backend import run_command
from plugin.slurm.factory import choose_backend, pyslurm_version, slurm_reader
from plugin.slurm.parse import (
    parse_accounting_enforce,
    parse_accounting_type,
    parse_key_values,
    parse_sacct_json,
    parse_scontrol_partitions,
    parse_sinfo_json,
    parse_slurm_version,
    parse_squeue_json,
    parse_time_minutes,
)
from plugin.slurm.pyslurm_backend import PyslurmReader, job_from_pyslurm_db

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"


def fixture(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# --- sacct ------------------------------------------------------------------------------------


def test_sacct_completed_jobs() -> None:
    jobs = {
        j.name.removeprefix("capture-"): j
        for j in parse_sacct_json(fixture("sacct_completed.json"))
    }
    assert set(jobs) == {
        "pending-moldable",
        "running-moldable",
        "completed-moldable",
        "failed",
        "cancelled-pending",
    }
    resized = jobs["pending-moldable"]  # held, resized to 3 nodes / 10 min, released
    assert (resized.state, resized.nodes_alloc, resized.nodes_min, resized.time_limit_min) == (
        "COMPLETED",
        3,
        3,
        10,
    )
    assert resized.elapsed_s == 1
    assert resized.end_time == (resized.start_time or 0) + 1
    moldable = jobs["completed-moldable"]  # --nodes=2-4, ran on 4
    assert (moldable.nodes_min, moldable.nodes_max, moldable.nodes_alloc) == (2, None, 4)
    assert moldable.source == "sacct"
    assert moldable.workdir == "/tmp"  # noqa: S108 - the captured job's working directory
    assert jobs["running-moldable"].state == "CANCELLED"
    pending = jobs["cancelled-pending"]
    assert (pending.nodes_alloc, pending.elapsed_s, pending.time_limit_min) == (0, 0, None)


def test_sacct_tasks_are_the_largest_srun_step() -> None:
    doc = json.loads(fixture("sacct_completed.json"))
    job = doc["jobs"][0]
    batch = job["steps"][0]
    assert batch["step"]["name"] == "batch"
    assert parse_sacct_json(json.dumps(doc))[0].tasks is None  # the batch step alone

    def step(name: str, tasks: object) -> dict[str, object]:
        return {**batch, "step": {**batch["step"], "name": name}, "tasks": {"count": tasks}}

    job["steps"] = [step("batch", 1), step("extern", 4), step("lulesh", 48), step("prep", 4)]
    assert parse_sacct_json(json.dumps(doc))[0].tasks == 48
    job["steps"] = [step("batch", 1), step("lulesh", "x"), step("post", 0)]
    assert parse_sacct_json(json.dumps(doc))[0].tasks is None


def test_sacct_22_05_exit_codes_are_not_trusted() -> None:
    """The FAILED job (exit 3) says SUCCESS/0 in every exit-code field of 22.05's JSON."""
    failed = next(
        j for j in parse_sacct_json(fixture("sacct_completed.json")) if j.name == "capture-failed"
    )
    assert failed.state == "FAILED"
    assert failed.exit_code is None
    assert failed.exit_signal is None
    assert "3:0" in fixture("sacct_completed.txt")  # the real one, in the text output


def test_sacct_without_job_comment_flag_reports_no_comment() -> None:
    jobs = parse_sacct_json(fixture("sacct_hostile.json"))
    assert len(jobs) == 7
    assert all(j.comment is None for j in jobs)  # AccountingStoreFlags lacks job_comment
    names = {j.name for j in jobs}
    assert "\x1b[31mred\x1b[0m" in names
    assert "two\nlines" in names
    assert "lul?sh" in names  # slurmdbd mangled the Cyrillic е


def test_sacct_nothing_found_is_an_empty_result() -> None:
    assert parse_sacct_json(fixture("sacct_nothing_found.json")) == []


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        ("sacct: error: Problem talking to the database", SlurmParseError, "did not print JSON"),
        ("[1, 2]", SlurmParseError, "not an object"),
        ('{"jobs": 3}', SlurmParseError, "no 'jobs' list"),
        (
            '{"errors": [{"error": "\\u001b[2Jboom", "error_number": 1}], "jobs": []}',
            SlurmError,
            "boom",
        ),
    ],
)
def test_sacct_bad_output(text: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        parse_sacct_json(text)
    assert "\x1b" not in str(info.value)


# --- squeue -----------------------------------------------------------------------------------


def test_squeue_pending_moldable_range() -> None:
    (job,) = parse_squeue_json(fixture("squeue_pending_moldable.json"))
    assert (job.state, job.nodes_min, job.nodes_max, job.nodes_alloc) == ("PENDING", 2, 4, 0)
    assert job.moldable
    assert not job.finished
    assert (job.priority, job.state_reason, job.comment) == (0, "JobHeldUser", "adaptalloc-capture")
    assert job.time_limit_min == 30
    assert job.end_time is None
    assert job.exit_code is None


def test_squeue_running_job() -> None:
    (job,) = parse_squeue_json(fixture("squeue_running_moldable.json"))
    assert (job.state, job.nodes_alloc, job.end_time, job.elapsed_s) == ("RUNNING", 4, None, None)


def test_squeue_finished_jobs_have_real_exit_codes() -> None:
    jobs = {
        j.name.removeprefix("capture-"): j
        for j in parse_squeue_json(fixture("squeue_finished.json"))
    }
    assert (jobs["failed"].state, jobs["failed"].exit_code) == ("FAILED", 3)  # status 768
    assert jobs["running-moldable"].exit_signal == 15  # SIGTERM from scancel
    done = jobs["completed-moldable"]
    assert (done.exit_code, done.exit_signal, done.nodes_alloc, done.elapsed_s) == (0, None, 4, 2)
    never_ran = jobs["cancelled-pending"]
    assert (never_ran.nodes_alloc, never_ran.start_time, never_ran.elapsed_s) == (0, None, None)
    assert all(j.finished for j in jobs.values())


def test_squeue_keeps_hostile_text_verbatim() -> None:
    jobs = {j.job_id: j for j in parse_squeue_json(fixture("squeue_hostile.json"))}
    comments = {j.comment for j in jobs.values()}
    assert "adaptalloc:v1 app=../../evil size=*" in comments
    assert any(c and c.endswith("adaptalloc:v1 app=hostile-ok size=large") for c in comments)
    assert "lul\u0435sh" in {j.name for j in jobs.values()}


# --- sinfo, scontrol, versions ------------------------------------------------------------------


def test_sinfo_nodes() -> None:
    idle = parse_sinfo_json(fixture("sinfo_idle.json"))
    assert [n.name for n in idle] == [f"node{k}" for k in range(1, 9)]
    assert all(n.idle and n.cpus == 4 and n.partitions == ("debug", "batch") for n in idle)
    busy = parse_sinfo_json(fixture("sinfo_partly_allocated.json"))
    assert {n.state for n in busy} >= {"mixed", "idle"}


def test_scontrol_partitions() -> None:
    debug, batch = parse_scontrol_partitions(fixture("scontrol_show_partition_oneline.txt"))
    assert (debug.name, debug.default, debug.total_nodes, debug.nodes) == (
        "debug",
        True,
        8,
        "node[1-8]",
    )
    assert (batch.name, batch.default, batch.max_nodes, batch.max_time_min) == (
        "batch",
        False,
        None,
        None,
    )


def test_scontrol_job_key_values() -> None:
    fields = parse_key_values(fixture("scontrol_show_job_pending_oneline.txt"))
    assert fields["NumNodes"] == "2-4"
    assert fields["Comment"] == "adaptalloc-capture"
    assert fields["JobState"] == "PENDING"
    assert fields["WorkDir"] == "/tmp"  # noqa: S108 - the captured job's working directory


def test_scontrol_text_cannot_override_earlier_fields() -> None:
    line = "JobId=1 JobName=x JobState=FAILED WorkDir=/a b Comment=evil JobState=COMPLETED Z=1"
    fields = parse_key_values(line)
    assert fields["JobState"] == "FAILED"
    assert fields["WorkDir"] == "/a b"


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("UNLIMITED", None),
        ("30", 30),
        ("00:30:00", 30),
        ("1-02:00:00", 1560),
        ("10:00", 10),
        ("00:00:30", 1),
    ],
)
def test_time_minutes(text: str, minutes: int | None) -> None:
    assert parse_time_minutes(text) == minutes


def test_versions_and_accounting() -> None:
    assert parse_slurm_version(fixture("sinfo_version.txt")) == (22, 5, 8)
    assert parse_slurm_version("slurm 25.11.0") == (25, 11, 0)
    with pytest.raises(SlurmParseError):
        parse_slurm_version("nope")
    assert (
        parse_accounting_type(fixture("scontrol_show_config.txt")) == "accounting_storage/slurmdbd"
    )
    assert parse_accounting_enforce(fixture("scontrol_show_config.txt")) == frozenset()


# --- commands -------------------------------------------------------------------------------------


def test_run_command_puts_stderr_in_the_error() -> None:
    with pytest.raises(SlurmCommandError, match=r"failed \(exit 3\): boom \\x1b\[1m") as info:
        run_command(["sh", "-c", "printf 'boom \\033[1m\\n' >&2; exit 3"], timeout_s=10)
    assert "\x1b" not in str(info.value)


def test_run_command_missing_and_slow() -> None:
    with pytest.raises(SlurmCommandError, match="not found on PATH"):
        run_command(["adaptalloc-no-such-command"], timeout_s=5)
    with pytest.raises(SlurmCommandError, match=r"did not finish within 0\.2 s"):
        run_command(["sleep", "5"], timeout_s=0.2)


def test_run_command_never_uses_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    out = run_command(["echo", f"x; touch {marker}"], timeout_s=5)
    assert out.strip() == f"x; touch {marker}"
    assert not marker.exists()


class FixtureRunner:
    """Answers Slurm commands with captured output and records the argument lists."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, args: Sequence[str], timeout_s: float) -> str:
        self.calls.append(tuple(args))
        return fixture(self.answers[args[0]])


def test_cli_reader_asks_sacct_for_a_window_and_filters() -> None:
    runner = FixtureRunner({"sacct": "sacct_completed.json"})
    reader = CliSlurmReader(runner=runner)
    jobs = parse_sacct_json(fixture("sacct_completed.json"))
    end = max(j.end_time or 0 for j in jobs)
    done = reader.finished_jobs(end - 1, end, states=("COMPLETED",))
    assert [j.name for j in done] == ["capture-pending-moldable", "capture-completed-moldable"]
    (args,) = runner.calls
    assert args[:3] == ("sacct", "--json", "--allusers")
    assert args[args.index("--state") + 1] == "COMPLETED"


def test_recently_finished_filters_squeue_in_python() -> None:
    reader = CliSlurmReader(runner=FixtureRunner({"squeue": "squeue_finished.json"}))
    jobs = reader.recently_finished(0, 2**40)
    assert len(jobs) == 5
    assert all(j.finished for j in jobs)
    failed = reader.job(38)
    assert failed is not None
    assert failed.state == "FAILED"
    assert reader.recently_finished(0, 1) == []


# --- backend choice ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "pyslurm", "slurm", "backend"),
    [
        ("auto", None, (22, 5), "cli"),
        ("auto", (25, 11), (22, 5), "cli"),
        ("auto", (22, 5), (22, 5), "pyslurm"),
        ("auto", (22, 5), None, "cli"),
        ("cli", (22, 5), (22, 5), "cli"),
        ("pyslurm", (23, 2), (22, 5), "cli"),
        ("pyslurm", (22, 5), (22, 5), "pyslurm"),
    ],
)
def test_choose_backend(
    requested: str, pyslurm: tuple[int, int] | None, slurm: tuple[int, int] | None, backend: str
) -> None:
    assert choose_backend(requested, pyslurm, slurm).backend == backend


def test_choose_backend_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="auto, cli, pyslurm"):
        choose_backend("rest", None, None)


def test_pyslurm_versions() -> None:
    assert pyslurm_version(None) is None
    assert pyslurm_version(types.SimpleNamespace(__version__="22.5.3")) == (22, 5)  # type: ignore[arg-type]
    assert pyslurm_version(types.SimpleNamespace(__version__="garbage")) is None  # type: ignore[arg-type]


def _fake_pyslurm(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    module = types.ModuleType("pyslurm")
    module.__version__ = version  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyslurm", module)


def test_factory_without_pyslurm_gives_the_cli_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyslurm", None)  # import pyslurm raises ImportError
    runner = FixtureRunner({})
    reader = slurm_reader("auto", runner=runner)
    assert type(reader) is CliSlurmReader
    assert runner.calls == []


def test_factory_with_mismatched_pyslurm_gives_the_cli_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_pyslurm(monkeypatch, "25.11.0")  # PyPI's, against Debian's Slurm 22.05
    runner = FixtureRunner({"sinfo": "sinfo_version.txt"})
    assert type(slurm_reader("auto", runner=runner)) is CliSlurmReader
    assert type(slurm_reader("pyslurm", runner=runner)) is CliSlurmReader
    assert runner.calls[0] == ("sinfo", "--version")


def test_factory_with_matching_pyslurm_gives_the_pyslurm_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_pyslurm(monkeypatch, "22.5.3")
    runner = FixtureRunner({"sinfo": "sinfo_version.txt"})
    assert type(slurm_reader("auto", runner=runner)) is PyslurmReader
    assert type(slurm_reader("cli", runner=runner)) is CliSlurmReader


def test_pyslurm_db_mapping() -> None:
    """A dictionary shaped like pyslurm 22.5's slurmdb_jobs().get() values (written by hand
    from pyslurm's source, since pyslurm 22.5 is not installed here)."""
    job = job_from_pyslurm_db(
        {
            "jobid": 37,
            "jobname": "lulesh",
            "user": "alice",
            "account": "phys",
            "partition": "batch",
            "state_str": "COMPLETED",
            "alloc_nodes": 4,
            "elapsed": 120,
            "start": 1000,
            "end": 1120,
            "submit": 990,
            "exitcode": 768,
            "timelimit": 30,
            "wckey": "",
            "work_dir": "/home/alice",
            "cluster": "c1",
        }
    )
    assert (job.job_id, job.name, job.state, job.nodes_alloc, job.elapsed_s) == (
        37,
        "lulesh",
        "COMPLETED",
        4,
        120,
    )
    assert (job.exit_code, job.comment, job.source) == (3, None, "pyslurm")
    assert job.tasks is None  # no steps reported


def test_pyslurm_db_tasks_come_from_the_application_steps() -> None:
    """pyslurm 22.5 keys `steps` by step id (pyslurm.pyx, slurmdb_jobs.get); the batch script
    and extern steps (ids 0xfffffffb, 0xfffffffc) carry the job's whole allocation and are not
    the application's task count, as in sacct's rule."""
    steps = {
        0xFFFFFFFB: {"ntasks": 1},
        0xFFFFFFFC: {"ntasks": 8},
        0: {"ntasks": 64},
        1: {"ntasks": 32},
    }
    job = job_from_pyslurm_db({"jobid": 38, "state_str": "COMPLETED", "steps": steps})
    assert job.tasks == 64
    helpers_only = {0xFFFFFFFB: {"ntasks": 1}, 0xFFFFFFFC: {"ntasks": 8}}
    assert job_from_pyslurm_db({"jobid": 39, "steps": helpers_only}).tasks is None
    assert job_from_pyslurm_db({"jobid": 40, "steps": {0: {"ntasks": 0}}}).tasks is None
