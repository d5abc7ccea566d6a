"""``adaptalloc simulate``, run in this process (see conftest.run_cli)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import plugin.cli.common
from plugin.cli.simulate import _curve_label, parse_moldable, stored_curves
from plugin.formats.swf import read_swf
from plugin.policy_file import load_policy_config
from plugin.report import sim_array as sa
from plugin.report.sim_figures import duration
from policies.simulation.workload import model_curve

from .conftest import REPO_ROOT, RunCli, assert_one_error_line, json_document, log_events

WriteFile = Callable[[str, bytes | str], Path]
SWF = REPO_ROOT / "tests" / "data" / "swf"
NASA = SWF / "NASA-iPSC-1993-3.1-cln.swf"
LUBLIN = SWF / "lublin_256.swf"
#: The keys of each policy's object (the output contract), then the older ones kept beside them.
CONTRACT_KEYS = {
    "jobs",
    "mean_response_s",
    "mean_wait_s",
    "mean_bsld",
    "node_hours",
    "killed",
    "killed_node_hours",
    "ci95",
}
OLDER_KEYS = {"mean_bounded_slowdown", "utilization", "makespan_s"}
#: Keys added since: limits the kill guard raised (0 unless a guard variant runs); the cost
#: of kills (wasted node-hours, resubmissions, abandoned jobs); jobs sized and replayed as
#: recorded; the paired ratios to greedy.
ADDED_KEYS = {
    "raised",
    "wasted_node_hours",
    "resubmitted",
    "abandoned",
    "sized",
    "recorded",
    "mature",
    "mature_sized",
    "unseen_response_s",
    "mature_response_s",
    "recorded_response_s",
    "vs_greedy",
}
POLICY_NAMES = [
    "rigid",
    "rigid_limits",
    "greedy",
    "adaptive_fixed_limits",
    "adaptive",
    "oracle",
    "oracle_curve",
]
FAST = ("--jobs", "300")


def test_variants_run_beside_the_seven_policies(run_cli: RunCli) -> None:
    doc = json_document(run_cli("simulate", NASA, *FAST, "--variants", "--format", "json"))
    variants = ["adaptive_range", "adaptive_guard", "adaptive_range_guard", "adaptive_identified"]
    variants += [
        "adaptive_timeclass",
        "adaptive_scaled",
        "adaptive_scaled_checked",
        "adaptive_scaled_explore",
        "adaptive_checked",
        "adaptive_scaled_checked_range",
        "oracle_range",
        "oracle_curve_range",
    ]
    assert list(doc["policies"]) == POLICY_NAMES + variants
    for name in POLICY_NAMES:
        assert doc["policies"][name]["raised"] == 0, name
    for name in variants:
        assert doc["policies"][name]["jobs"] == 300


@pytest.mark.slow  # the point is the worker processes, each importing the simulator afresh
def test_workers_run_the_cells_in_processes_with_the_same_results(run_cli: RunCli) -> None:
    sweep = ("--jobs", "150", "--load", "0.7,1.0", "--seeds", "2", "--format", "json")
    serial = json_document(run_cli("simulate", NASA, *sweep))
    parallel = json_document(run_cli("simulate", NASA, *sweep, "--workers", "2"))
    assert parallel["loads"] == serial["loads"]


@pytest.mark.slow  # worker processes
def test_one_cell_is_split_into_fit_families_with_the_same_results(run_cli: RunCli) -> None:
    """(New: one load and one seed ran in one process whatever --workers said.)"""
    one = ("--jobs", "150", "--load", "0.7", "--format", "json")
    serial = json_document(run_cli("simulate", NASA, *one))
    parallel = json_document(run_cli("simulate", NASA, *one, "--workers", "2"))
    assert parallel["loads"] == serial["loads"]
    assert parallel["refits"] == serial["refits"]


def test_json_follows_the_contract(run_cli: RunCli) -> None:
    doc = json_document(run_cli("simulate", NASA, *FAST, "--format", "json"))
    assert doc["curves"] == "learned"
    assert doc["dropped"] == doc["skipped"] == {"no run time": 173}
    (load,) = doc["loads"]
    assert load["load"] == doc["trace"]["offered_load"] > 0
    assert doc["policies"] == load["policies"]
    assert list(doc["policies"]) == POLICY_NAMES
    for name, figures in doc["policies"].items():
        assert set(figures) == CONTRACT_KEYS | OLDER_KEYS | ADDED_KEYS, name
        assert figures["jobs"] == 300
        assert isinstance(figures["jobs"], int)
        for key in CONTRACT_KEYS - {"jobs", "ci95"}:
            assert isinstance(figures[key], float), (name, key)
        assert set(figures["vs_greedy"]) == {"mean_response_s", "mean_bsld", "node_hours"}
        assert figures["vs_greedy"]["mean_response_s"]["ci95"] is None  # one seed
        assert set(figures["ci95"]) >= CONTRACT_KEYS - {"ci95"}
        assert all(v is None for v in figures["ci95"].values())  # one seed: no interval
        assert 0.0 < figures["utilization"] <= 1.0
        assert figures["mean_bsld"] >= 1.0
        assert figures["mean_response_s"] >= figures["mean_wait_s"] >= 0.0
    assert doc["trace"] == {
        "path": str(NASA),
        "machine": 128,
        "machine_from": "MaxNodes",
        "procs_per_node": 1.0,
        "procs_per_node_from": "MaxProcs/MaxNodes",
        "jobs": 300,
        "usable_jobs": 18_066,
        "lines": 18_239,
        "limits_from_runtime": 300,
        "limits_modelled": 300,
        "offered_load": doc["trace"]["offered_load"],
    }
    assert doc["settings"] == {
        "seed": 1,
        "seeds": 1,
        "backfill": "easy",
        "moldable": {"low": 0.5, "high": 2.0},
        "max_parallelism": 128.0,
        "parallelism_factor": [1.0, 4.0],
        "noise": 0.05,
        "world": "cirne",
        "codes_per_key": 3,
        "shared_codes": 0.2,
        "max_time_s": doc["limits"]["max_estimate_s"],
        "max_job_nodes": 128,
        "refit_cadence": "daemon",
        "config": "built-in defaults",
        "stored_curves": 0,
    }
    assert doc["world"] == "cirne"
    assert doc["limits"]["modelled"] == 300
    assert doc["limits"]["model"] == "Tsafrir, Etsion and Feitelson 2005"
    assert doc["oracles"]["oracle"] == "oracle (true curve + own run time)"
    assert doc["hidden_applications"]["per_key"] > 1.0
    # One decision per job, and one more per resubmission of a killed one.
    resubmitted = doc["policies"]["adaptive"]["resubmitted"]
    assert sum(doc["adaptive_rules"].values()) == 300 + resubmitted
    assert doc["applications"]["grouping"] == {"executable": 263, "user + size class": 37}
    assert doc["assumptions"]


def test_loads_and_seeds_give_one_entry_per_load_with_intervals(run_cli: RunCli) -> None:
    args = ("simulate", LUBLIN, "--jobs", "150", "--load", "0.5,0.9", "--seeds", "2")
    doc = json_document(run_cli(*args, "--format", "json"))
    assert [entry["load"] for entry in doc["loads"]] == [0.5, 0.9]
    assert doc["policies"] == doc["loads"][0]["policies"]
    rigid = doc["loads"][1]["policies"]["rigid"]
    low, high = rigid["ci95"]["mean_response_s"]
    assert low <= rigid["mean_response_s"] <= high
    paired = rigid["vs_greedy"]["mean_response_s"]
    assert paired["ci95"][0] <= paired["ratio"] <= paired["ci95"][1]
    assert doc["settings"]["seeds"] == 2
    text = run_cli(*args).stdout
    assert "paired with greedy in each of the 2 seeds" in text
    assert re.search(r"mean response / greedy's", text)
    assert re.search(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", text)  # ratio [interval]


def test_oracle_curves_are_labelled_in_every_output(run_cli: RunCli) -> None:
    doc = json_document(
        run_cli("simulate", LUBLIN, *FAST, "--curves", "oracle", "--format", "json")
    )
    assert doc["curves"] == "oracle"
    assert "upper bound" in doc["curves_note"]
    assert "refits" not in doc or not doc["refits"]
    text = run_cli("simulate", LUBLIN, "--jobs", "100", "--curves", "oracle").stdout
    assert text.count("[true") == 6  # the three learning policies, in both tables
    assert "own run time" in text
    assert "shape only" in text
    assert "upper bound" in text


def test_the_skipped_lines_are_summarised_on_stderr(run_cli: RunCli) -> None:
    result = run_cli("-v", "simulate", NASA, *FAST, "--format", "json")
    events = {e["event"]: e for e in log_events(result)}
    assert events["swf_lines_skipped"]["reasons"] == {"no run time": 173}
    assert events["swf_lines_skipped"]["level"] == "warning"
    done = events["simulate"]
    assert done["jobs"] == 300
    assert done["runs"] == 7
    assert done["curves"] == "learned"


def test_text_shows_the_comparison(run_cli: RunCli) -> None:
    result = run_cli("simulate", LUBLIN, "--jobs", "200")
    assert result.returncode == 0, result
    out = result.stdout
    assert "200 jobs on 256 nodes (MaxNodes" in out
    assert "the first 200 of 10,000 usable jobs" in out
    assert "EASY backfilling" in out
    assert re.search(r"rigid\s+rigid_limits\s+greedy\s+adaptive_fixed_l", out)
    assert "curve + own" in out
    assert "shape only)" in out
    for label in (
        "mean response",
        "mean wait",
        "mean bounded slowdown",
        "utilization",
        "node-hours",
        "killed at their limit",
        "wasted node-hours",
        "resubmitted",
        "abandoned",
        "sized with a curve",
    ):
        assert re.search(rf"^\s*{label}\s", out, re.MULTILINE), label
    assert "Adaptive decisions by rule" in out
    assert "Curves learned" in out
    assert "Favours:" in out  # every assumption says whom it favours
    assert "World model cirne" in out
    assert "Dropped" not in out  # nothing dropped in this trace
    assert "\x1b" not in out  # no colour codes or progress bar when stdout is not a terminal


def test_the_same_seed_gives_the_same_document(run_cli: RunCli) -> None:
    a = json_document(run_cli("simulate", LUBLIN, *FAST, "--seed", "7", "--format", "json"))
    b = json_document(run_cli("simulate", LUBLIN, *FAST, "--seed", "7", "--format", "json"))
    c = json_document(run_cli("simulate", LUBLIN, *FAST, "--seed", "8", "--format", "json"))
    assert a == b
    assert a["policies"]["greedy"] != c["policies"]["greedy"]


def test_options_reach_the_simulation(run_cli: RunCli) -> None:
    rigid_rule = json_document(
        run_cli("simulate", LUBLIN, *FAST, "--moldable", "1,1", "--format", "json")
    )
    assert rigid_rule["policies"]["greedy"] == rigid_rule["policies"]["rigid"]
    quiet = json_document(run_cli("simulate", LUBLIN, *FAST, "--noise", "0", "--format", "json"))
    assert quiet["settings"]["noise"] == 0.0
    fcfs = json_document(
        run_cli("simulate", LUBLIN, *FAST, "--backfill", "none", "--format", "json")
    )
    easy = json_document(run_cli("simulate", LUBLIN, *FAST, "--format", "json"))
    assert fcfs["settings"]["backfill"] == "none"
    sparse = json_document(
        run_cli("simulate", LUBLIN, *FAST, "--refits", "sparse", "--format", "json")
    )
    assert sparse["settings"]["refit_cadence"] == "sparse"
    assert "sparse cadence" in sparse["curves_note"]
    assert "sparse" not in easy["curves_note"]
    assert sparse["refits"]["adaptive"] < easy["refits"]["adaptive"]
    assert fcfs["policies"]["rigid"]["mean_wait_s"] >= easy["policies"]["rigid"]["mean_wait_s"]
    small = json_document(
        run_cli("simulate", LUBLIN, *FAST, "--max-parallelism", "4", "--format", "json")
    )
    assert small["settings"]["max_parallelism"] == 4.0
    assert small["policies"]["oracle"] != easy["policies"]["oracle"]
    ppn = json_document(
        run_cli("simulate", LUBLIN, *FAST, "--procs-per-node", "2", "--format", "json")
    )
    assert (ppn["trace"]["machine"], ppn["trace"]["procs_per_node_from"]) == (
        256,
        "--procs-per-node",
    )
    assert ppn["policies"]["rigid"]["node_hours"] < easy["policies"]["rigid"]["node_hours"]
    capped = json_document(
        run_cli("simulate", LUBLIN, *FAST, "--max-job-nodes", "64", "--format", "json")
    )
    assert capped["settings"]["max_job_nodes"] == 64
    assert any("at most 64 of its 256 nodes" in line for line in capped["assumptions"])
    assert capped["policies"]["greedy"] != easy["policies"]["greedy"]


def test_the_policy_file_configures_the_adaptive_policy(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    config = write_file("policy.toml", '[defaults]\nstrategy = "efficiency"\n')
    # True curves (--curves oracle), so that every job reaches the configured strategy: in this
    # short a trace the learned curves are not yet usable (max_fit_error 0.10) and every job
    # would take the fallback, which would show nothing of the file's strategy.
    doc = json_document(
        run_cli(
            "simulate", LUBLIN, *FAST, "--curves", "oracle", "--config", config, "--format", "json"
        )
    )
    assert doc["settings"]["config"] == str(config)
    assert doc["curves"] == "oracle"
    assert set(doc["adaptive_rules"]) <= {"efficiency", "cap", "fallback", "exploration"}
    assert "efficiency" in doc["adaptive_rules"]
    assert "load_adaptive" not in doc["adaptive_rules"]  # the built-in strategy is not used


def test_html_report(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = run_cli("simulate", LUBLIN, *FAST, "--html", out, "--format", "json")
    json_document(result)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 5
    assert "Mean response time" in page
    assert "Busy share of the machine over time" in page
    assert "<script" not in page


def test_html_escapes_the_trace_path(run_cli: RunCli, tmp_path: Path) -> None:
    hostile = tmp_path / "<b>trace&.swf"
    hostile.write_bytes(LUBLIN.read_bytes())
    out = tmp_path / "report"
    json_document(run_cli("simulate", hostile, "--jobs", "50", "--html", out, "--format", "json"))
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<b>trace" not in page
    assert "&lt;b&gt;trace&amp;.swf" in page


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no usable job in the trace (no job lines)"),
        (b"; MaxNodes: 4\n1 2 3\nhello\n", "2 job lines skipped: 2 wrong number of fields"),
        (bytes(range(256)) * 4, "no usable job in the trace"),
    ],
    ids=["empty", "malformed", "binary"],
)
def test_unusable_traces_are_one_error_line(
    run_cli: RunCli, write_file: WriteFile, content: bytes, message: str
) -> None:
    path = write_file("bad.swf", content)
    line = assert_one_error_line(run_cli("simulate", path, "--format", "json"))
    assert message in line


def test_a_trace_with_some_bad_lines_still_runs(run_cli: RunCli, write_file: WriteFile) -> None:
    good = "1 0 -1 100 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
    path = write_file(
        "mixed.swf", "; MaxNodes: 4\n" + good + "garbage\n" + good.replace("100", "-1")
    )
    doc = json_document(run_cli("simulate", path, "--format", "json"))
    assert doc["policies"]["rigid"]["jobs"] == 1
    assert doc["dropped"] == {"wrong number of fields": 1, "no run time": 1}


def test_absurd_magnitudes_are_dropped_not_a_crash(run_cli: RunCli, write_file: WriteFile) -> None:
    good = "1 0 -1 100 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
    bad = [good.replace("1 0 -1", f"2 {x} -1", 1) for x in ("1e308", "1e100")]
    path = write_file("huge.swf", "; MaxNodes: 4\n" + good + "".join(bad))
    doc = json_document(run_cli("simulate", path, "--format", "json"))
    assert doc["policies"]["rigid"]["jobs"] == 1
    assert doc["dropped"] == {"implausible value": 2}


def test_missing_trace_and_bad_config_are_one_error_line(
    run_cli: RunCli, write_file: WriteFile, tmp_path: Path
) -> None:
    line = assert_one_error_line(run_cli("simulate", tmp_path / "nope.swf"))
    assert "cannot read" in line
    config = write_file("policy.toml", "[defaults]\nstrategy = 3\n")
    line = assert_one_error_line(run_cli("simulate", LUBLIN, "--config", config))
    assert "[defaults] strategy: must be one of" in line


@pytest.mark.parametrize(
    "args",
    [
        ("--moldable", "0.5"),
        ("--moldable", "2,4"),
        ("--moldable", "0.5,0.9"),
        ("--seed", "-1"),
        ("--jobs", "0"),
        ("--max-parallelism", "0.5"),
        ("--backfill", "conservative"),
        ("--load", "0.5,x"),
        ("--load", "0"),
        ("--load", "1_0"),
        ("--seeds", "0"),
        ("--curves", "psychic"),
        ("--procs-per-node", "0"),
        ("--parallelism-factor", "4,1"),
        ("--noise", "2"),
        ("--max-job-nodes", "0"),
        ("--redis-url", "redis://localhost:6379/0"),
    ],
)
def test_bad_options_are_usage_errors(run_cli: RunCli, args: tuple[str, ...]) -> None:
    assert_one_error_line(run_cli("simulate", LUBLIN, *args), exit_code=2)


def test_an_unreachable_store_is_one_error_line(run_cli: RunCli) -> None:
    line = assert_one_error_line(
        run_cli("simulate", LUBLIN, *FAST, "--store", "--redis-url", "redis://127.0.0.1:1/0")
    )
    assert "unreachable" in line


def test_parse_moldable_and_duration() -> None:
    rule = parse_moldable(" 0.25 , 4 ")
    assert (rule.low, rule.high) == (0.25, 4.0)
    with pytest.raises(ValueError, match="LOW,HIGH"):
        parse_moldable("a,b")
    with pytest.raises(ValueError, match="low must be"):
        parse_moldable("0,2")
    assert duration(45) == "45.0 s"
    assert duration(750) == "12.5 min"
    assert duration(3 * 3600) == "3.00 h"
    assert duration(5 * 86400) == "5.00 d"
    assert duration(float("nan")) == "n/a"


def test_stored_curves_are_looked_up_by_executable(monkeypatch: pytest.MonkeyPatch) -> None:
    """--store asks the store for app exe-<n> once per executable and keeps what it has."""
    curve = model_curve(12.0, 0.5, 100.0, (1, 2, 4))
    asked: list[str] = []

    def lookup(app: object) -> object:
        asked.append(str(app))
        return curve if str(app) == "exe-3" else None

    fake = SimpleNamespace(store=SimpleNamespace(curve=lookup))
    monkeypatch.setattr(plugin.cli.common, "open_store", lambda config, url: fake)
    trace = read_swf(NASA).head(200)
    found = stored_curves(trace, None)
    assert found == {3: curve}
    executables = {j.executable for j in trace.jobs if j.executable is not None}
    assert sorted(asked) == sorted(f"exe-{n}" for n in executables)


def _sweep_options(**given: Any) -> sa.SweepOptions:
    """A sweep's options with the command's defaults, `given` set."""
    defaults: dict[str, Any] = {
        "loads": None,
        "seeds": 1,
        "seed": 1,
        "backfill": True,
        "moldable": (0.5, 2.0),
        "max_parallelism": None,
        "curves": "learned",
        "parallelism_factor": None,
        "noise": 0.05,
        "procs_per_node": None,
        "max_jobs": None,
        "policies": ("greedy",),
    }
    return sa.SweepOptions(**{**defaults, **given})


def _plan(
    directory: Path, traces: list[str], configs: list[str | None], sweep: tuple[str, ...]
) -> sa.Plan:
    """A --slurm-array plan written as the command writes it, without submitting it."""
    options = _sweep_options(
        loads=tuple(float(x) for x in sweep[3].split(",")),
        seeds=int(sweep[5]),
        max_jobs=int(sweep[1]),
        policies=tuple(POLICY_NAMES),
    )
    plan = sa.Plan.build(traces, configs, options)
    sa.write_plan(directory, plan)
    return plan


ARRAY_SWEEP = ("--jobs", "80", "--load", "0.7,1.0", "--seeds", "2")


def test_array_cells_gather_into_the_document_a_local_run_prints(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """The cells of a --slurm-array sweep, run here one by one as the array's tasks run them
    (`simulate --plan DIR --cell I`), gather into the local run's document (new: neither
    --plan/--cell nor --gather existed)."""
    results = tmp_path / "sweep"
    plan = _plan(results, [str(NASA)], [None], ARRAY_SWEEP)
    assert len(plan.cells) == 4
    script = (results / "array.sh").read_text()
    assert script.endswith(f'--plan {results} --cell "$SLURM_ARRAY_TASK_ID"\n')
    missing = assert_one_error_line(run_cli("simulate", "--gather", results))
    assert "4 of 4 cells have no result yet" in missing
    for index in range(4):
        done = run_cli("simulate", "--plan", results, "--cell", str(index))
        assert done.returncode == 0, done
    gathered = json_document(run_cli("simulate", "--gather", results, "--format", "json"))
    local = json_document(run_cli("simulate", NASA, *ARRAY_SWEEP, "--format", "json"))
    assert list(gathered) == list(local)
    assert gathered["loads"] == local["loads"]
    assert gathered["trace"] == dict(local["trace"], path=str(NASA.resolve()))
    text = run_cli("simulate", "--gather", results)
    assert text.returncode == 0
    assert "adaptive" in text.stdout
    bad = assert_one_error_line(run_cli("simulate", "--plan", results, "--cell", "4"))
    assert "no cell 4: the plan has 4" in bad


def test_an_array_plan_keeps_max_job_nodes_and_reads_a_plan_without_it() -> None:
    options = _sweep_options(max_job_nodes=64)
    doc = json.loads(json.dumps(asdict(options)))
    assert sa.SweepOptions.from_json(doc) == options
    assert options.setup(read_swf(str(LUBLIN)), load_policy_config(None)).job_nodes == 64
    del doc["max_job_nodes"]  # a plan written before the option
    assert sa.SweepOptions.from_json(doc).max_job_nodes is None


def test_several_traces_and_policy_files_gather_into_one_document_each(
    run_cli: RunCli, tmp_path: Path, write_file: WriteFile
) -> None:
    config = write_file("policy.toml", '[defaults]\nstrategy = "pws"\n')
    results = tmp_path / "sweep"
    sweep = ("--jobs", "40", "--load", "0.9", "--seeds", "1")
    plan = _plan(results, [str(NASA), str(LUBLIN)], [None, str(config)], sweep)
    assert len(plan.cells) == 4
    for index in range(4):
        assert run_cli("simulate", "--plan", results, "--cell", str(index)).returncode == 0
    doc = json_document(run_cli("simulate", "--gather", results, "--format", "json"))
    sweeps = doc["sweeps"]
    assert [(s["trace"]["path"], s["settings"]["config"]) for s in sweeps] == [
        (str(NASA), "built-in defaults"),
        (str(NASA), str(config)),
        (str(LUBLIN), "built-in defaults"),
        (str(LUBLIN), str(config)),
    ]
    local = json_document(
        run_cli("simulate", LUBLIN, *sweep, "--config", config, "--format", "json")
    )
    assert sweeps[3]["loads"] == local["loads"]


@pytest.mark.parametrize(
    "args",
    [
        ("--slurm-array",),
        ("--partition", "debug"),
        ("--wait",),
        ("--plan", "x"),
        ("--cell", "1"),
        ("--store", "--slurm-array", "d"),
    ],
)
def test_array_options_out_of_place_are_usage_errors(
    run_cli: RunCli, args: tuple[str, ...]
) -> None:
    assert_one_error_line(run_cli("simulate", LUBLIN, *args), exit_code=2)


def test_several_traces_without_an_array_and_hostile_names_are_refused(
    run_cli: RunCli, tmp_path: Path
) -> None:
    assert_one_error_line(run_cli("simulate", LUBLIN, NASA), exit_code=2)
    for name in ("a\nb", "out-%j"):
        line = assert_one_error_line(
            run_cli("simulate", LUBLIN, *FAST, "--slurm-array", tmp_path / name)
        )
        assert "control character or a %" in line
        assert not (tmp_path / name).exists()
    line = assert_one_error_line(run_cli("simulate", "--gather", tmp_path))
    assert "cannot read the plan" in line


@pytest.mark.parametrize("curves", ["learned", "oracle"])
def test_the_oracles_say_what_they_know(curves: str) -> None:
    assert _curve_label("oracle_range", curves) == "oracle_range (true curve + own run time)"
    assert _curve_label("oracle", curves) == "oracle (true curve + own run time)"
    assert _curve_label("oracle_curve", curves) == "oracle (curve shape only)"
    learned = _curve_label("adaptive_scaled_checked_range", curves)
    assert learned.endswith("[true curves]") == (curves == "oracle")
