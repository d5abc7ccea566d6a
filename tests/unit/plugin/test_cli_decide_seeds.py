"""``adaptalloc decide`` with the seed papers' models, from observation CSVs: the master-worker
cap (--pattern master-worker, the task figures) and the roofline prior on a partition the
runs never ran on (the adaptalloc TOML's [node_types.NAME], --intensity). The daemon's
decider makes the same decisions (tests/unit/plugin/test_daemon_seeds.py); the store's and
the testbed's are in tests/integration/test_seed_models.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import RunCli, assert_one_error_line, json_document

WriteFile = Callable[[str, bytes | str], Path]
BASE_KEYS = ["nodes", "time_limit_min", "rule", "reason", "max_nodes"]
TYPES = """\
[node_types.std]
peak_gflops = 1000
bandwidth_gbs = 100
link_gbs = 1.25
[node_types.big]
peak_gflops = 4000
bandwidth_gbs = 200
link_gbs = 1.25
"""
#: A master-worker code saturating at 13 nodes: 6400 s of tasks, min(n, 13) nodes' worth busy.
MASTER_WORKER_CSV = "n,runtime\n" + "".join(
    f"{n},{6400.0 / min(n, 13)!r}\n" for n in (1, 2, 4, 8, 16, 32, 64)
)
#: NAS LU class W's speedups (the Downey thesis' Table 5.1), every run on std.
LU = {1: 1.0, 2: 1.97, 4: 3.83, 8: 7.24, 16: 13.07, 32: 20.77}
STD_CSV = "n,runtime,node_type\n" + "".join(f"{n},{36000.0 / s!r},std\n" for n, s in LU.items())


@pytest.fixture
def types(write_file: WriteFile, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = write_file("adaptalloc.toml", TYPES)
    monkeypatch.setenv("ADAPTALLOC_CONFIG", str(path))
    return path


def test_the_task_figures_cap_the_size(run_cli: RunCli, write_file: WriteFile, types: Path) -> None:
    runs = write_file("farm.csv", MASTER_WORKER_CSV)
    doc = json_document(
        run_cli(
            "decide",
            *("--observations", runs, "--nodes", "2-64", "--partition", "std"),
            *("--pattern", "master-worker", "--tc", "2", "--vi", "5e7", "--vo", "1e7"),
            *("--ntasks-per-node", "16", "--format", "json"),
        )
    )
    assert list(doc) == [*BASE_KEYS, "master_worker"]
    assert (doc["nodes"], doc["rule"]) == (4, "master_worker")
    cap = doc["master_worker"]
    assert (cap["nodes"], cap["workers"], cap["source"]) == (4, 50, "figures")
    assert cap["n_opt"] == pytest.approx(50.0)
    assert "N_opt" in doc["reason"]


def test_without_figures_the_knee_is_learned(run_cli: RunCli, write_file: WriteFile) -> None:
    runs = write_file("farm.csv", MASTER_WORKER_CSV)
    doc = json_document(
        run_cli(
            "decide",
            *("--observations", runs, "--nodes", "2-64", "--pattern", "master-worker"),
            *("--format", "json"),
        )
    )
    assert (doc["nodes"], doc["rule"]) == (13, "master_worker")
    assert doc["master_worker"]["source"] == "speedup"
    plain = json_document(
        run_cli("decide", "--observations", runs, "--nodes", "2-64", "--format", "json")
    )
    assert plain["nodes"] > 13
    assert "master_worker" not in plain


def test_a_partition_the_runs_never_ran_on_gets_a_roofline_prior(
    run_cli: RunCli, write_file: WriteFile, types: Path
) -> None:
    runs = write_file("lu.csv", STD_CSV)
    args = ("decide", "--observations", runs, "--nodes", "2-16", "--time-limit", "600")
    on_std = json_document(run_cli(*args, "--partition", "std", "--format", "json"))
    doc = json_document(
        run_cli(*args, "--partition", "big", "--intensity", "3", "--format", "json")
    )
    assert list(doc) == [*BASE_KEYS, "roofline"]
    prior = doc["roofline"]
    assert (prior["node_type"], prior["from"], prior["time_ratio"]) == ("big", "std", 0.5)
    assert prior["intensity"] == {"value": 3.0, "source": "tag", "bound": "exact", "between": []}
    assert "roofline prior" in doc["reason"]
    assert doc["nodes"] == on_std["nodes"]  # the same speedup, half the runtime
    assert on_std["time_limit_min"] is not None
    assert doc["time_limit_min"] is None  # never shortened on a prior
    # Without an intensity there is no prior: the curve of all runs stands in, as before.
    plain = json_document(run_cli(*args, "--partition", "big", "--format", "json"))
    assert "roofline" not in plain


def test_the_intensity_is_estimated_from_runs_on_two_types(
    run_cli: RunCli, write_file: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """std and big ran it, big twice as fast (the bandwidth ratio: memory-bound on both, so
    at most std's ridge of 10 flop/byte); gpu, never run on, gets a prior from that."""
    config = write_file(
        "adaptalloc.toml", TYPES + "[node_types.gpu]\npeak_gflops = 8000\nbandwidth_gbs = 800\n"
    )
    monkeypatch.setenv("ADAPTALLOC_CONFIG", str(config))
    rows = "".join(f"{n},{18000.0 / s!r},big\n" for n, s in LU.items())
    runs = write_file("lu.csv", STD_CSV + rows)
    doc = json_document(
        run_cli(
            "decide",
            *("--observations", runs, "--nodes", "2-16", "--partition", "gpu"),
            *("--format", "json"),
        )
    )
    intensity = doc["roofline"]["intensity"]
    assert (intensity["source"], intensity["bound"]) == ("runs", "at_most")
    assert intensity["value"] == pytest.approx(10.0)
    assert sorted(intensity["between"]) == ["big", "std"]
    assert "≤ 10 flop/byte" in doc["reason"]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("--tc", "2", "--vi", "1", "--vo", "1"), "--tc goes with --pattern master-worker"),
        (("--pattern", "master-worker", "--tc", "2", "--vi", "1"), "go together"),
        (("--pattern", "master-worker", "--tc", "0", "--vi", "1", "--vo", "1"), "finite"),
        (("--pattern", "master-worker", "--tc", "1", "--vi", "0", "--vo", "0"), "vi or vo"),
        (("--intensity", "nan"), "finite"),
        (("--ntasks-per-node", "4"), "goes with --pattern"),
    ],
)
def test_bad_seed_options_are_one_line(
    run_cli: RunCli, write_file: WriteFile, extra: tuple[str, ...], words: str
) -> None:
    runs = write_file("farm.csv", MASTER_WORKER_CSV)
    result = run_cli("decide", "--observations", runs, "--nodes", "2-64", *extra)
    assert words in assert_one_error_line(result, exit_code=2)
