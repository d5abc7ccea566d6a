"""``adaptalloc decide`` for the shapes the daemon decides by their own rule: a
fixed task count (placement), weak scaling and several partitions, from an observation CSV.

The same answers from the store (--app) are checked on a real Redis in
tests/integration/test_placement.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

import policies
from plugin.cli import policy as policy_cli
from predictor.weak import fit_weak

from .conftest import RunCli, assert_one_error_line, json_document

WriteFile = Callable[[str, bytes | str], Path]
BASE_KEYS = ["nodes", "time_limit_min", "rule", "reason", "max_nodes"]

# Ntagiou's outer measurements of a memory-bound code, T = 1000 / (g(c) f(p)): one node with
# 1..16 tasks, and 2..16 nodes with one task each (tests/unit/plugin/test_daemon_shape.py
# gives the daemon the same runs and gets 16 nodes × 4 tasks for 64 tasks on 4-16 nodes).
_F = {1: 1.0, 2: 1.6, 4: 2.0, 8: 2.2, 16: 2.3}
_G = {1: 1.0, 2: 2.0, 4: 3.9, 8: 7.7, 16: 15.0}
PLACEMENT_CSV = "n,runtime,tasks,tasks_per_node\n" + "".join(
    [f"1,{1000.0 / f!r},{p},{p}\n" for p, f in _F.items()]
    + [f"{c},{1000.0 / g!r},{c},1\n" for c, g in _G.items() if c > 1]
)
# Gustafson's T = a + k·s/n, a = 50 s, k = 1 s per unit per node, two work levels.
WEAK_RUNS = [(1, 10), (2, 20), (4, 40), (1, 40), (2, 80), (4, 160)]
WEAK_CSV = "n,runtime,size\n" + "".join(f"{n},{50.0 + s / n!r},{s}\n" for n, s in WEAK_RUNS)
# Two node types: the same code 2.5 times faster on "big" (T = t1·(0.05 + 0.95/n)).
TYPED_CSV = "n,runtime,node_type\n" + "".join(
    f"{n},{t1 * (0.05 + 0.95 / n)!r},{kind}\n"
    for kind, t1 in (("std", 1000.0), ("big", 400.0))
    for n in (1, 2, 4, 8, 16)
)


def test_ntasks_places_the_tasks_as_the_daemon_would(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    runs = write_file("heat.csv", PLACEMENT_CSV)
    doc = json_document(
        run_cli(
            "decide",
            *("--observations", str(runs), "--nodes", "4-16", "--ntasks", "64"),
            *("--cpus-per-node", "16", "--format", "json"),
        )
    )
    assert list(doc) == [*BASE_KEYS, "tasks", "tasks_per_node", "placement"]
    assert (doc["nodes"], doc["tasks_per_node"], doc["rule"]) == (16, 4, "placement")
    assert doc["time_limit_min"] is None  # the placement keeps the user's limit
    assert doc["placement"]["runs_with_tasks_per_node"] == 9
    assert [row["nodes"] for row in doc["placement"]["table"]] == [4, 8, 16]
    assert "64 tasks run fastest on 16 nodes (4 per node)" in doc["reason"]


def test_ntasks_with_too_few_cpus_per_node_keeps_the_job(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    runs = write_file("heat.csv", PLACEMENT_CSV)
    doc = json_document(
        run_cli(
            "decide",
            *("--observations", str(runs), "--nodes", "4-8", "--ntasks", "64"),
            *("--cpus-per-node", "4", "--format", "json"),
        )
    )
    # 64 tasks need 16 nodes at 4 CPUs each; the range stops at 8.
    assert (doc["nodes"], doc["rule"], doc["tasks_per_node"]) == (None, "placement_kept", None)
    assert "no node count in 4-8 fits 64 tasks" in doc["reason"]


def test_ntasks_at_the_minimum_is_slurms_default_and_the_curve_decides(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    runs = write_file("typed.csv", TYPED_CSV)
    args = ("--observations", str(runs), "--nodes", "4-16", "--format", "json")
    plain = json_document(run_cli("decide", *args))
    doc = json_document(run_cli("decide", *args, "--ntasks", "4"))
    assert {k: doc[k] for k in BASE_KEYS} == plain
    assert doc["tasks"] == 4


def test_weak_scaling_sizes_by_gustafson(run_cli: RunCli, write_file: WriteFile) -> None:
    runs = write_file("weak.csv", WEAK_CSV)
    doc = json_document(
        run_cli(
            "decide",
            *("--observations", str(runs), "--nodes", "1-64", "--time-limit", "30"),
            *("--scaling", "weak", "--format", "json"),
        )
    )
    fit = fit_weak(
        [n for n, _ in WEAK_RUNS], [s for _, s in WEAK_RUNS], [50.0 + s / n for n, s in WEAK_RUNS]
    )
    bound = fit.alpha / (fit.alpha - 0.5)  # the default threshold θ = 0.5
    assert list(doc) == [*BASE_KEYS, "scaling"]
    assert doc["scaling"] == "weak"
    assert (doc["nodes"], doc["rule"]) == (math.floor(bound), "weak_efficiency")
    assert doc["time_limit_min"] is None


def test_weak_scaling_without_sized_runs_keeps_the_job(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    runs = write_file("typed.csv", TYPED_CSV)
    doc = json_document(
        run_cli(
            "decide",
            *("--observations", str(runs), "--nodes", "1-64", "--scaling", "weak"),
            *("--format", "json"),
        )
    )
    assert (doc["nodes"], doc["rule"]) == (None, "weak_fallback")
    assert "records a problem size" in doc["reason"]


def test_several_partitions_go_to_the_earliest_completion(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    runs = write_file("typed.csv", TYPED_CSV)
    args = ("--observations", str(runs), "--nodes", "2-8", "--partition", "std,big")

    def options(doc: dict[str, object]) -> dict[str, dict[str, float]]:
        listed = doc["partitions"]
        assert isinstance(listed, list)
        return {o["partition"]: o for o in listed}

    both_free = json_document(run_cli("decide", *args, "--wait", "std=0,big=0", "--format", "json"))
    assert list(both_free) == [*BASE_KEYS, "partition", "partitions"]
    assert both_free["partition"] == "big"  # the faster node type
    big = options(both_free)["big"]
    assert big["wait_s"] == 0.0
    assert big["runtime_s"] < options(both_free)["std"]["runtime_s"]
    assert both_free["max_nodes"] is None  # pinned: a completion needs one size

    big_busy = json_document(
        run_cli("decide", *args, "--wait", "std=0,big=3600", "--format", "json")
    )
    assert big_busy["partition"] == "std"
    std = options(big_busy)["std"]
    assert std["completion_s"] == pytest.approx(std["runtime_s"], abs=1e-3)
    assert options(big_busy)["big"]["wait_s"] == 3600.0
    assert "partition std gives the earliest predicted completion" in big_busy["reason"]


def test_several_partitions_in_text_show_the_comparison(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    runs = write_file("typed.csv", TYPED_CSV)
    result = run_cli(
        "decide",
        *("--observations", str(runs), "--nodes", "2-8", "--partition", "std,big"),
        *("--wait", "std=0,big=3600"),
    )
    assert result.returncode == 0, result
    assert "Partitions compared" in result.stdout
    assert "partition std gives the earliest predicted completion" in result.stdout


def test_per_partition_total_sizes_each_partition_on_its_own(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    # big capped at 2 nodes: 400·(0.05 + 0.95/2) = 210 s; std on 8: 1000·(0.05 + 0.95/8) ≈ 168.8 s.
    runs = write_file("typed.csv", TYPED_CSV)
    args = ("--observations", str(runs), "--nodes", "2-8", "--partition", "std,big")
    waits = ("--wait", "std=0,big=0", "--format", "json")
    per = json_document(run_cli("decide", *args, *waits, "--total", "std=16,big=2"))
    listed = per["partitions"]
    assert isinstance(listed, list)
    by_name = {o["partition"]: o for o in listed}
    assert by_name["big"]["nodes"] == 2
    assert by_name["big"]["runtime_s"] == pytest.approx(210.0, rel=1e-3)
    assert by_name["std"]["nodes"] == 8
    assert per["partition"] == "std"
    bare = json_document(run_cli("decide", *args, *waits, "--total", "16"))
    assert bare["partition"] == "big"  # a bare number still means every partition


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (("--ntasks", "-3"), "'--ntasks': -3 is not in the range x>=1", 2),
        (("--ntasks", "2"), "--ntasks 2 does not fit the range 4-16: each of the at least 4", 2),
        (("--cpus-per-node", "8"), "--cpus-per-node goes with --ntasks", 2),
        (("--partition", "std,big"), "several partitions need --wait", 2),
        (("--partition", "std", "--wait", "std=0"), "--wait goes with several partitions", 2),
        (
            ("--partition", "std,big", "--wait", "std=0,big=1,gpu=0"),
            "--wait names partition gpu, which --partition does not list",
            2,
        ),
        (
            ("--partition", "std,big", "--wait", "std=0"),
            "--wait gives no wait for partition big",
            2,
        ),
        (
            ("--partition", "std,big", "--wait", "std=-1,big=0"),
            "'std=-1' is not PARTITION=SECONDS",
            2,
        ),
        (
            ("--partition", "std,big", "--wait", "std=0,std=1"),
            "partition std is given two waits",
            2,
        ),
        (("--partition", "std;rm -rf /,big"), "'std;rm -rf /' is not a partition name", 2),
        (("--partition", "std,,big"), "'' is not a partition name", 2),
        (("--scaling", "gustafson"), "'gustafson' is not one of 'strong', 'weak'", 2),
        (("--queue",), "--queue goes with several partitions", 2),
        (("--partition", "std,big", "--queue", "--wait", "std=0,big=0"), "one of --wait and", 2),
        (("--partition", "std,big", "--queue", "--idle", "3"), "drop --idle, --pending", 2),
        (
            ("--partition", "std,big", "--wait", "std=0,big=0", "--total", "std=4,big=x"),
            "'big=x' is not N or PARTITION=N",
            2,
        ),
        (
            ("--partition", "std,big", "--wait", "std=0,big=0", "--idle", "std=4"),
            "--idle must give a count for each of --partition's std, big",
            2,
        ),
        (("--total", "std=4"), "--total P=N,... goes with several partitions", 2),
        (
            (
                "--partition",
                "std,big",
                "--wait",
                "std=0,big=0",
                "--idle",
                "std=9,big=0",
                "--total",
                "8",
            ),
            "idle_nodes (9) cannot exceed total_nodes",
            1,
        ),
    ],
)
def test_bad_shapes_are_one_clear_line(
    run_cli: RunCli, write_file: WriteFile, args: tuple[str, ...], message: str, code: int
) -> None:
    runs = write_file("typed.csv", TYPED_CSV)
    result = run_cli("decide", "--observations", str(runs), "--nodes", "4-16", *args)
    line = assert_one_error_line(result, exit_code=code)
    assert message in line, line


def test_one_partition_is_decided_on_its_node_types_curve(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    """As the daemon: a job on one partition gets that node type's curve, not the curve of
    all the runs. Here big scales poorly (T = 400·(0.4 + 0.6/n): efficiency 1/(0.4n + 0.6)
    falls under 50% past 3 nodes) and std well, so they are sized apart."""
    csv = "n,runtime,node_type\n" + "".join(
        f"{n},{t!r},{kind}\n"
        for n in (1, 2, 4, 8, 16)
        for kind, t in (("std", 1000.0 * (0.05 + 0.95 / n)), ("big", 400.0 * (0.4 + 0.6 / n)))
    )
    runs = write_file("typed.csv", csv)
    args = ("--observations", str(runs), "--nodes", "2-8")
    big, std = (
        json_document(run_cli("decide", *args, "--partition", name, "--format", "json"))
        for name in ("big", "std")
    )
    assert 2 <= big["nodes"] <= 3  # the fitted Downey curve, not Amdahl's law exactly
    assert std["nodes"] == 8


class _Sized(policy_cli._WhatIf):
    """A what-if whose partitions have the cores per node sinfo would give (--queue's)."""

    def cpus(self, name: str) -> int | None:
        return {"fat": 32, "thin": 16}.get(name)


def test_the_all_runs_curve_is_not_read_in_another_node_size(write_file: WriteFile) -> None:
    """--queue's cores per node refuse the fallback as the daemon does (policies/fallback.py):
    runs all on 32-core nodes give no curve on 16-core ones."""
    # The std runs alone, on 32-core nodes (the big ones at the same sizes would mix two
    # scales under one curve, which its reliability judgment distrusts).
    csv = "".join(line for line in TYPED_CSV.splitlines(keepends=True) if ",big" not in line)
    csv = csv.replace(",std\n", ",fat\n")
    runs = policy_cli._FileRuns(
        policy_cli._raw(str(write_file("fat.csv", csv)), 1000), "adept", None
    )
    cluster = policies.ClusterState(idle_nodes=16, total_nodes=16)
    settings = policies.effective(policies.default_config(), "thin", "")

    def decide(listed: list[str]) -> policies.Decision:
        request = policies.Request(2, 8, 600, ",".join(listed))
        where = _Sized(cluster, dict.fromkeys(listed, 0.0))
        decision, _ = policy_cli._shaped_decision(
            request, cluster, settings, runs, listed, where, None, None, "strong",
            lambda name: settings,
        )  # fmt: skip
        return decision

    on_thin = decide(["thin"])
    assert on_thin.rule == "fallback"
    assert "32 cores" in on_thin.reason
    assert decide(["fat"]).rule != "fallback"
    both = decide(["thin", "fat"])
    assert both.nodes is not None
    assert "on fat" in both.reason
