"""``adaptalloc decide`` and ``adaptalloc policy check``, run in this process (conftest.run_cli)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import (
    LU_CSV,
    REPO_ROOT,
    RunCli,
    assert_one_error_line,
    json_document,
)

WriteFile = Callable[[str, bytes | str], Path]
EXAMPLE = REPO_ROOT / "deploy" / "policy.example.toml"
LU_JOB = ("--observations", LU_CSV, "--nodes", "4-64", "--idle", "40", "--total", "64")
CANDIDATE_RULES = ["efficiency", "pws", "cap", "load_adaptive", "exploration"]


# --- decide ---------------------------------------------------------------------------------


def test_decide_json_is_exactly_the_contract(run_cli: RunCli) -> None:
    doc = json_document(run_cli("decide", *LU_JOB, "--time-limit", "60", "--format", "json"))
    assert list(doc) == ["nodes", "time_limit_min", "rule", "reason", "max_nodes"]
    assert doc["max_nodes"] is None  # pinned by default
    # NPB LU: maximum useful size 48, limited to the 40 idle nodes under a light load.
    assert doc["nodes"] == 40
    assert doc["rule"] == "load_adaptive"
    assert isinstance(doc["time_limit_min"], int)
    assert 5 <= doc["time_limit_min"] < 60
    assert "limited to the 40 idle nodes" in doc["reason"]


def test_decide_explain_adds_every_candidate(run_cli: RunCli) -> None:
    doc = json_document(
        run_cli("decide", *LU_JOB, "--time-limit", "60", "--explain", "--format", "json")
    )
    assert list(doc) == [
        "nodes",
        "time_limit_min",
        "rule",
        "reason",
        "max_nodes",
        "time_limit_reason",
        "candidates",
        "load_rule",
    ]
    assert "user's minimum (p ≥ 8)" in doc["load_rule"]
    assert "never past the idle nodes" in doc["load_rule"]
    assert [c["rule"] for c in doc["candidates"]] == CANDIDATE_RULES
    for candidate in doc["candidates"]:
        assert list(candidate) == ["rule", "nodes", "reason"]
        assert candidate["reason"]
    by_rule = {c["rule"]: c["nodes"] for c in doc["candidates"]}
    assert (by_rule["pws"], by_rule["cap"], by_rule["load_adaptive"]) == (33, 48, 40)
    assert doc["time_limit_reason"].startswith("60 min written for 4 nodes × pessimistic runtime")


def test_decide_never_raises_a_limit_above_the_users(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    # An application that does not speed up (10 h at any size, a clean fit:
    # fit_error 0, reliable); the user asked for 60 min on 1-2 nodes and the limit was raised
    # to the curve's 720 min (root's limit skips the QOS). Failed before: 720. Since no size
    # of the range fits the 60 min, the job is left as submitted, its limit the user's.
    slow = write_file("slow.csv", "n,runtime\n1,36000\n2,36000\n4,36000\n8,36000\n")
    doc = json_document(
        run_cli(
            "decide",
            "--observations",
            str(slow),
            "--nodes",
            "1-2",
            "--time-limit",
            "60",
            "--explain",
            "--format",
            "json",
        )
    )
    assert (doc["nodes"], doc["time_limit_min"], doc["rule"]) == (None, None, "fallback")
    # the user is told why: the curve's pessimistic runtime overruns 60 min at every size
    assert "exceeds the user's 60 min at every size from 1 node to 2 nodes" in doc["reason"]
    assert "left as submitted" in doc["reason"]
    assert "time limit included" in doc["time_limit_reason"]


def test_decide_releases_a_range_when_the_policy_says_so(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    config = write_file("range.toml", '[defaults]\nrelease = "range"\n')
    args = ("decide", *LU_JOB, "--time-limit", "60", "--config", str(config))
    doc = json_document(run_cli(*args, "--format", "json"))
    # NPB LU: the efficient size 33 (pws) to the larger useful size 48 (the cap).
    assert (doc["nodes"], doc["max_nodes"], doc["rule"]) == (33, 48, "load_adaptive")
    assert "range 33-48" in doc["reason"]
    assert run_cli(*args).stdout.startswith("33-48 nodes (Slurm picks at start), time limit ")


def test_decide_does_not_cut_a_limit_on_extrapolation(run_cli: RunCli) -> None:
    # No cut past the data: NPB MG runs only up to 16 nodes; 60 min at 4 was cut to 17 at 31.
    # T(16)/T(4) in the data is 15.05/50.57, so the limit must stay at least 60 · 0.298 = 18.
    mg = str(REPO_ROOT / "tests" / "data" / "scaling" / "npb_mg_C_rpi_cluster.csv")
    doc = json_document(
        run_cli(
            "decide",
            "--observations",
            mg,
            "--nodes",
            "4-64",
            "--time-limit",
            "60",
            "--explain",
            "--format",
            "json",
        )
    )
    assert doc["time_limit_min"] is None or 18 <= doc["time_limit_min"] <= 60
    assert "never shortens a limit" in doc["time_limit_reason"]


def test_decide_text_and_explain_table(run_cli: RunCli) -> None:
    plain = run_cli("decide", *LU_JOB, "--time-limit", "60")
    assert plain.returncode == 0, plain
    lines = plain.stdout.splitlines()
    assert lines[0].startswith("40 nodes, time limit ")
    assert lines[0].endswith(" min (rule: load_adaptive).")
    assert lines[1].startswith("Why: the partition is lightly loaded")
    assert lines[2].startswith("Time limit: 60 min written for 4 nodes")
    assert "\x1b" not in plain.stdout
    explained = run_cli("decide", *LU_JOB, "--explain")
    assert explained.returncode == 0, explained
    text = explained.stdout
    assert "time limit unchanged" in text.splitlines()[0]
    assert "Every rule's candidate" in text
    assert "load_adaptive *" in text
    assert "Load rule: with pressure p = pending nodes / idle nodes" in text
    for rule in CANDIDATE_RULES:
        assert rule in text


def test_decide_with_a_policy_file_and_partition_limits(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    policy = write_file(
        "policy.toml", '[partition.debug]\nstrategy = "pws"\n[account.big]\nfallback = "max"\n'
    )
    doc = json_document(
        run_cli(
            *("decide", *LU_JOB, "--config", policy, "--partition", "debug"), "--format", "json"
        )
    )
    assert (doc["nodes"], doc["rule"]) == (33, "pws")
    capped = json_document(
        run_cli(
            *("decide", *LU_JOB, "--time-limit", "600", "--partition-max-time", "30"),
            *("--feasible", "powers_of_two", "--explain", "--format", "json"),
        )
    )
    assert capped["nodes"] == 32
    # 600 min asked where at most 30 are allowed: Slurm would not start the job, and a
    # shortened limit would let it start, so the limit is left as the user wrote it.
    assert capped["time_limit_min"] is None
    assert "exceed the job's maximum of 30 min" in capped["time_limit_reason"]
    assert "powers of two (the job's tag)" in capped["reason"]
    within = json_document(
        run_cli(
            *("decide", *LU_JOB, "--time-limit", "30", "--partition-max-time", "30"),
            *("--feasible", "powers_of_two", "--format", "json"),
        )
    )
    assert within["time_limit_min"] is not None
    assert within["time_limit_min"] <= 30
    outside = json_document(
        run_cli(
            *("decide", *LU_JOB[:2], "--nodes", "80-128", "--partition-max-nodes", "64"),
            *("--format", "json"),
        )
    )
    assert outside == {
        "nodes": None,
        "time_limit_min": None,
        "rule": "partition_limit",
        "reason": "the job asks for at least 80 nodes but the partition allows at most 64 per "
        "job, so it is left as submitted",
        "max_nodes": None,
    }


def test_decide_logs_one_event(run_cli: RunCli) -> None:
    result = run_cli("-v", "decide", *LU_JOB, "--format", "json")
    json_document(result)
    events = [json.loads(line) for line in result.stderr_lines]
    assert [e["event"] for e in events] == ["decide"]
    assert events[0]["nodes"] == 40
    assert events[0]["rule"] == "load_adaptive"
    assert events[0]["config"] == "built-in defaults"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--nodes", "64-4"), "the range's maximum must not be below its minimum, got 64-4"),
        (("--nodes", "four"), "'four' is not a node range like 4-64"),
        (("--nodes", "0-4"), "the range must start at 1 node or more"),
        (("--nodes", "4-64", "--pending", "3"), "--pending needs --idle"),
        (("--nodes", "4-64", "--feasible", "cubes"), "feasible sizes must be powers_of_two"),
        (("--nodes", "4-64", "--budget", "20,0"), "JOBS,EXPLORED,NODE_HOURS,EXPLORED_NODE"),
        (("--nodes", "4-64", "--budget", "20,0.5,1,0"), "whole job counts and node-hours"),
        (("--nodes", "4-64", "--budget", "1,2,3,0"), "jobs_explored cannot exceed jobs_decided"),
        (("--nodes", "4-64", "--budget", "2,1,nan,0"), "node_hours_decided must be finite"),
        (("--nodes", "4-64", "--idle", "80", "--total", "64"), None),
    ],
)
def test_decide_refuses_bad_options(
    run_cli: RunCli, args: tuple[str, ...], message: str | None
) -> None:
    result = run_cli("decide", "--observations", LU_CSV, *args)
    if message is None:  # a value the policies refuse: exit 1
        line = assert_one_error_line(result)
        assert line == "adaptalloc: error: idle_nodes (80) cannot exceed total_nodes (64)"
        return
    line = assert_one_error_line(result, exit_code=2)
    assert message in line


def test_decide_explores_only_with_the_daemons_budget(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    # Two sizes before any knee: the curve is not reliable (first_piece_only) and its
    # judgment suggests a run at the range's top. Without counters decide is a daemon that
    # has decided nothing, where one explored job would be all of them: no exploration.
    runs = write_file("two.csv", "n,runtime\n4,1000\n8,600\n")
    job = ("--observations", str(runs), "--nodes", "2-16", "--idle", "64", "--format", "json")
    fresh = json_document(run_cli("decide", *job, "--explain"))
    assert fresh["rule"] != "exploration"
    refused = {c["rule"]: c["reason"] for c in fresh["candidates"]}["exploration"]
    assert "exploring would make 1 of 1 jobs, above the 10% budget" in refused
    # With the daemon's counters (20 jobs decided, 400 node-hours, none explored) it fits.
    doc = json_document(run_cli("decide", *job, "--budget", "20,0,400,0"))
    assert (doc["rule"], doc["nodes"]) == ("exploration", 16)
    assert "(0 of 20 jobs and 0.0 of 400.0 node-hours explored so far)" in doc["reason"]
    # Counters at the share: the job is decided as if there were nothing to explore.
    full = json_document(run_cli("decide", *job, "--budget", "20,2,400,40"))
    assert full["rule"] != "exploration"


def test_decide_needs_exactly_one_curve_source(run_cli: RunCli) -> None:
    for args in ((), ("--app", "lu", "--observations", str(LU_CSV))):
        line = assert_one_error_line(run_cli("decide", "--nodes", "4-64", *args), exit_code=2)
        assert "give exactly one of --app KEY and --observations OBS.csv" in line


def test_decide_app_reports_an_unreachable_store_and_bad_keys(
    run_cli: RunCli, tmp_path: Path
) -> None:
    nowhere = f"unix://{tmp_path}/no-redis.sock"
    line = assert_one_error_line(
        run_cli("decide", "--app", "lu", "--redis-url", nowhere, "--nodes", "4-64")
    )
    assert "is unreachable" in line
    line = assert_one_error_line(
        run_cli("decide", "--app", "bad key", "--redis-url", nowhere, "--nodes", "4-64")
    )
    assert "app name 'bad key'" in line


def test_decide_with_a_bad_policy_file_is_one_line(run_cli: RunCli, write_file: WriteFile) -> None:
    policy = write_file("policy.toml", "[defaults]\nefficiency_threshold = 2\n")
    line = assert_one_error_line(run_cli("decide", *LU_JOB, "--config", policy))
    assert line == (
        f"adaptalloc: error: {policy}: [defaults] efficiency_threshold: must be a number in "
        "(0, 1], got 2"
    )


# --- policy check ---------------------------------------------------------------------------


def test_policy_check_accepts_the_example(run_cli: RunCli) -> None:
    doc = json_document(run_cli("policy", "check", EXAMPLE, "--format", "json"))
    assert doc["source"] == str(EXAMPLE)
    assert doc["valid"] is True
    assert doc["defaults"]["strategy"] == "load_adaptive"
    assert (doc["partition"], doc["account"]) == ({}, {})
    text = run_cli("policy", "check", EXAMPLE)
    assert text.returncode == 0, text
    assert f"{EXAMPLE} is valid: 0 override tables" in text.stdout
    assert "time_limit_safety_factor" in text.stdout


def test_policy_check_shows_the_effective_settings_per_table(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    policy = write_file(
        "policy.toml",
        "[defaults]\nefficiency_threshold = 0.6\n"
        '[partition.debug]\nstrategy = "pws"\n'
        "[account.physics]\ntime_limit_floor_min = 10\n",
    )
    doc = json_document(run_cli("policy", "check", policy, "--format", "json"))
    assert doc["partition"]["debug"]["strategy"] == "pws"
    assert doc["partition"]["debug"]["efficiency_threshold"] == 0.6
    assert doc["account"]["physics"]["time_limit_floor_min"] == 10
    assert doc["account"]["physics"]["strategy"] == "load_adaptive"
    text = run_cli("policy", "check", policy).stdout
    assert "2 override tables" in text
    assert "partition.debug" in text
    assert "account.physics" in text
    assert "pws *" in text


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "[defaults]\nefficency_threshold = 0.5\n",
            "[defaults] efficency_threshold: not a known key "
            '(did you mean "efficiency_threshold"?)',
        ),
        (
            '[partition.batch]\nefficiency_threshold = "high"\n',
            '[partition.batch] efficiency_threshold: must be a number in (0, 1], got "high"',
        ),
        (
            "[defaults\nx = 1\n",
            "not valid TOML: Expected ']' at the end of a table declaration (at line 1, column 10)",
        ),
        (b"\xff\xfe", "not UTF-8 text"),
        # Deep nesting: tomllib recurses per level and raised RecursionError (exit 70)
        (
            "[defaults]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n",
            "not valid TOML: arrays or tables nested too deeply",
        ),
        ("a = " + "{b = " * 5_000 + "1" + "}" * 5_000 + "\n", "not valid TOML: arrays or"),
        ("[defaults]\nlight_pressure = " + "9" * 5_000 + "\n", "not valid TOML: Exceeds the"),
        (
            "[defaults]\ntime_limit_safety_factor = 1e308\n",
            "[defaults] time_limit_safety_factor: must be a number in [1, 10], got 1e+308",
        ),
    ],
)
def test_policy_check_refuses_with_one_line(
    run_cli: RunCli, write_file: WriteFile, content: str | bytes, expected: str
) -> None:
    policy = write_file("policy.toml", content)
    line = assert_one_error_line(run_cli("policy", "check", policy))
    assert line.startswith(f"adaptalloc: error: {policy}: {expected}")


def test_decide_with_an_absurd_safety_factor_is_one_line(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    # It passed `policy check` and every decision died with an OverflowError (exit 70).
    policy = write_file("policy.toml", "[defaults]\ntime_limit_safety_factor = 1e308\n")
    line = assert_one_error_line(
        run_cli("decide", *LU_JOB, "--time-limit", "60", "--config", policy)
    )
    assert "[defaults] time_limit_safety_factor: must be a number in [1, 10]" in line


def test_policy_check_unreadable_file(run_cli: RunCli, tmp_path: Path) -> None:
    line = assert_one_error_line(run_cli("policy", "check", tmp_path / "missing.toml"))
    assert line == (
        f"adaptalloc: error: {tmp_path / 'missing.toml'}: cannot read: No such file or directory"
    )
