"""The ``adaptalloc`` command line, run in this process (conftest.run_cli); the tests whose point
is a fresh interpreter (conftest.run_cli_process) are ``slow``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from plugin.report.numbers import format_runtime

from .conftest import LU_CSV, RunCli, assert_one_error_line, json_document, log_events

WriteFile = Callable[[str, bytes | str], Path]

CONTRACT_TYPES: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "method": str,
    "A": float,
    "sigma": float,
    "mode": str,
    "t1": float,
    "t1_known": bool,
    "fit_error": float,
    "max_useful_n": int,
    "pws_n": int,
    "anomalies": list,
    "patterns": list,
    "reliability": list,
}
EXTRA_TYPES: dict[str, type | tuple[type, ...]] = {
    "status": str,
    "message": str,
    "identified": bool,
    "n_observations": int,
    "runs": int,
    "dropped": list,
    "delta": (float, type(None)),
}
AMDAHL_CSV = "n,runtime\n1,100\n2,52.5\n4,28.75\n8,16.875\n"


# --- fit ------------------------------------------------------------------------------------


# With ADEPT, the fit also cross-validates every model (model selection).
SELECTION_TYPES: dict[str, type | tuple[type, ...]] = {"selected_model": str, "models": list}


@pytest.mark.parametrize("method", ["adept", "lm"])
def test_fit_json_has_exactly_the_contract_keys(run_cli: RunCli, method: str) -> None:
    doc = json_document(run_cli("fit", LU_CSV, "--method", method, "--format", "json"))
    selection = SELECTION_TYPES if method == "adept" else {}
    assert list(doc) == list(CONTRACT_TYPES) + list(EXTRA_TYPES) + list(selection)
    for key, kind in {**CONTRACT_TYPES, **EXTRA_TYPES, **selection}.items():
        assert isinstance(doc[key], kind), (key, doc[key])
    assert not isinstance(doc["max_useful_n"], bool)
    assert doc["model"] == "downey"
    assert doc["method"] == method
    assert doc["mode"] in ("low", "high")
    assert doc["status"] == "ok"
    if method == "adept":
        assert doc["models"][0]["model"] == "adept"
        assert all(set(m) == {"model", "cv_error", "cases"} for m in doc["models"])
    assert doc["t1_known"] is False
    assert doc["identified"] is True
    assert (doc["anomalies"], doc["patterns"], doc["reliability"]) == ([], [], [])
    assert (doc["n_observations"], doc["runs"], doc["dropped"]) == (6, 6, [])
    assert (doc["delta"] is None) == (method == "lm")
    # The thesis' own LM fit of this data: A = 24.70, σ = 0.74 (Table 5.1).
    assert 20 < doc["A"] < 30
    assert 0.5 < doc["sigma"] < 1.0
    assert doc["max_useful_n"] == pytest.approx(2 * doc["A"] - 1, abs=1)
    assert 0 <= doc["fit_error"] < 0.05


def test_fit_logs_one_event_on_stderr_with_verbose(run_cli: RunCli) -> None:
    result = run_cli("-v", "fit", LU_CSV, "--format", "json")
    json_document(result)
    events = log_events(result)
    assert [event["event"] for event in events] == ["fit"]
    event = events[0]
    assert event["level"] == "info"
    assert event["method"] == "adept"
    assert event["sizes"] == 6
    assert event["status"] == "ok"
    assert isinstance(event["elapsed_ms"], float)


def test_quiet_silences_the_event(run_cli: RunCli) -> None:
    result = run_cli("--quiet", "fit", LU_CSV, "--format", "json")
    json_document(result)
    assert result.stderr == ""


def test_commands_are_quiet_by_default(run_cli: RunCli) -> None:
    # Info events (timings, counts) are for -v; a plain command's stderr stays empty.
    result = run_cli("fit", LU_CSV, "--format", "json")
    json_document(result)
    assert result.stderr == ""


def test_log_format_console_forces_the_console_renderer(run_cli: RunCli) -> None:
    result = run_cli("-v", "--log-format", "console", "fit", LU_CSV, "--format", "json")
    json_document(result)
    assert "fit" in result.stderr
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.stderr_lines[0])


def test_fit_text_has_tables_and_sentences(run_cli: RunCli) -> None:
    result = run_cli("fit", LU_CSV)
    assert result.returncode == 0, result
    text = result.stdout
    assert "\x1b" not in text  # no colour codes when stdout is not a terminal
    assert "Downey model fitted with ADEPT to 6 sizes (6 runs)" in text
    assert "Average parallelism A = 24." in text
    assert "(low-variance mode)." in text
    assert "Runs scale usefully up to " in text
    assert "; the processor working set is " in text
    assert "Largest fitting error " in text
    assert "% at the observed sizes." in text
    assert "T(1) was not observed; it is estimated at " in text
    assert "A and σ are not determined separately" not in text
    for header in ("parameter", "measured", "fitted", "error"):
        assert header in text
    assert "0.5000 s" in text
    assert "Traceback" not in result.stderr


def test_fit_text_says_when_a_and_sigma_are_not_identified(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    result = run_cli("fit", write_file("amdahl.csv", AMDAHL_CSV))
    assert result.returncode == 0, result
    assert "T(1) was observed: 100.0 s." in result.stdout
    doc = json_document(run_cli("fit", write_file("amdahl.csv", AMDAHL_CSV), "--format", "json"))
    assert doc["identified"] is False
    assert doc["t1_known"] is True
    [problem] = doc["reliability"]
    assert problem["problem"] == "first_piece_only"
    # The reliability action says it and names the run to make (Amdahl's working set, 19).
    assert "A and σ are not known separately; run once at 19 nodes" in result.stdout
    assert problem["suggest_n"] == 19


def test_fit_reads_standard_input(run_cli: RunCli) -> None:
    doc = json_document(run_cli("fit", "-", "--format", "json", stdin=LU_CSV.read_bytes()))
    assert doc["n_observations"] == 6


def test_extra_columns_and_column_order(run_cli: RunCli, write_file: WriteFile) -> None:
    path = write_file("cols.csv", "job,runtime,n\na,0.5,2\nb,0.255102,4\nc,0.137931,8\n")
    doc = json_document(run_cli("fit", path, "--format", "json"))
    assert doc["n_observations"] == 3


# --- predict --------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["adept", "lm"])
def test_predict_json_in_the_order_given(run_cli: RunCli, method: str) -> None:
    result = run_cli(
        "-v", "predict", LU_CSV, "--at", "64, 16,32,16", "--method", method, "--format", "json"
    )
    doc = json_document(result)
    assert list(doc) == ["predictions"]
    rows = doc["predictions"]
    assert [row["n"] for row in rows] == [64, 16, 32, 16]
    for row in rows:
        assert list(row) == ["n", "runtime", "speedup", "efficiency", "interval"]
        assert isinstance(row["n"], int)
        band = row["interval"]
        assert band["level"] == 0.9
        assert band["lower"] < row["runtime"] < band["upper"]
        assert all(isinstance(row[key], float) for key in ("runtime", "speedup", "efficiency"))
        assert row["efficiency"] == pytest.approx(row["speedup"] / row["n"])
    assert rows[1] == rows[3]
    # Measured runtimes at 16, 32, 64 are 0.0752, 0.0494, 0.0401.
    assert rows[1]["runtime"] == pytest.approx(0.075245, rel=0.05)
    assert rows[2]["runtime"] == pytest.approx(0.049432, rel=0.05)
    assert rows[0]["runtime"] == pytest.approx(0.040080, rel=0.05)
    # Observed sizes are inside their intervals; 64 is the largest observed, so 16 and 32
    # (interpolation) have narrower intervals than an extrapolation would.
    for row, measured in ((rows[1], 0.075245), (rows[2], 0.049432), (rows[0], 0.040080)):
        assert row["interval"]["lower"] <= measured <= row["interval"]["upper"]
    assert [event["event"] for event in log_events(result)] == ["predict"]


def test_predict_text_table(run_cli: RunCli) -> None:
    result = run_cli("predict", LU_CSV, "--at", "16,128")
    assert result.returncode == 0, result
    text = result.stdout
    for header in ("n", "runtime", "speedup", "efficiency"):
        assert header in text
    assert " s " in text
    assert "%" in text
    assert "Sizes above 64 nodes, the largest observed, are extrapolations." in text


def test_predict_text_shows_the_json_documents_interval_per_size(run_cli: RunCli) -> None:
    """Each row of the text table carries the runtime's 90% interval, the one the JSON
    document gives for the same size."""
    text = run_cli("predict", LU_CSV, "--at", "16,128").stdout
    rows = json_document(run_cli("predict", LU_CSV, "--at", "16,128", "--format", "json"))
    assert "90% interval" in text
    lines = [line for line in text.splitlines() if line.strip().startswith(("16 ", "128 "))]
    assert len(lines) == 2
    for line, row in zip(lines, rows["predictions"], strict=True):
        band = row["interval"]
        assert f"{format_runtime(band['lower'])} - {format_runtime(band['upper'])}" in line
    assert "calibrated on the held-out runs of real applications" in " ".join(text.split())


def test_predict_many_targets_in_batches_keeps_order(run_cli: RunCli) -> None:
    targets = [600 - i for i in range(600)] + [1, 600]
    result = run_cli("predict", LU_CSV, "--at", ",".join(map(str, targets)), "--format", "json")
    rows = json_document(result)["predictions"]
    assert [row["n"] for row in rows] == targets
    assert rows[-1] == rows[0]


# --- errors ---------------------------------------------------------------------------------

BAD_FILES: list[tuple[str, bytes, str]] = [
    ("empty", b"", "is empty"),
    ("no_header", b"2,0.5\n4,0.3\n", "line 1: no header"),
    ("wrong_case", b"N,Runtime\n2,0.5\n4,0.3\n", "column names are case-sensitive"),
    ("missing_column", b"n,time\n2,0.5\n", "missing column 'runtime'"),
    ("header_only", b"n,runtime\n", "has a header but no rows"),
    ("missing_value", b"n,runtime\n2,0.5\n4,\n", "line 3: missing value for runtime"),
    ("short_row", b"n,runtime\n2,0.5\n4\n", "line 3: missing value for runtime"),
    ("not_a_number", b"n,runtime\n2,0.5\n4,fast\n", "line 3: runtime is not a number: 'fast'"),
    ("fractional_n", b"n,runtime\n2.5,0.5\n4,0.3\n", "line 2: n must be a whole number"),
    ("zero_n", b"n,runtime\n0,0.5\n4,0.3\n", "line 2: n must be at least 1, got 0"),
    (
        "negative_runtime",
        b"n,runtime\n2,0.5\n4,0.3\n8,-3\n",
        "line 4: runtime must be positive, got -3",
    ),
    ("zero_runtime", b"n,runtime\n2,0\n4,0.3\n", "line 2: runtime must be positive, got 0"),
    ("nan", b"n,runtime\n2,nan\n4,0.3\n", "line 2: runtime must be a finite number, got 'nan'"),
    ("inf", b"n,runtime\n2,0.5\n4,inf\n", "line 3: runtime must be a finite number, got 'inf'"),
    ("overflow", b"n,runtime\n2,0.5\n4,1e999\n", "runtime must be a finite number, got '1e999'"),
    ("one_size", b"n,runtime\n4,1\n4,1.1\n", "need runs at two or more distinct sizes"),
    # Bounded work: n near 1e9 once asked 7.45 GiB in the reliability judgment.
    ("huge_n", b"n,runtime\n999999937,0.5\n999999999,0.3\n", "n must be at most 16,777,216"),
    ("not_utf8", b"n,runtime\n2,0.5\n\xff\xfe\xfa\n", "line 3: not UTF-8 text (byte 0xff)"),
    ("binary", bytes(range(256)) * 8, "line "),
    ("unclosed_quote", b'n,runtime\n2,"0.5\n4,0.3\n', "not valid CSV"),
]


# predict reads files through the same code as fit: a sample of the cases is enough.
PREDICT_SAMPLE = ("empty", "nan", "one_size", "not_utf8", "huge_n")
BAD_RUNS = [
    pytest.param(["fit"], content, expected, id=f"fit-{name}")
    for name, content, expected in BAD_FILES
] + [
    pytest.param(["predict", "--at", "16"], content, expected, id=f"predict-{name}")
    for name, content, expected in BAD_FILES
    if name in PREDICT_SAMPLE
]


@pytest.mark.parametrize(("command", "content", "expected"), BAD_RUNS)
def test_bad_files_give_one_error_line(
    run_cli: RunCli, write_file: WriteFile, command: list[str], content: bytes, expected: str
) -> None:
    path = write_file("OBS.csv", content)
    line = assert_one_error_line(run_cli(command[0], path, *command[1:], "--format", "json"))
    assert line.startswith(f"adaptalloc: error: {path}")
    assert expected in line


def test_missing_file_and_directory(run_cli: RunCli, tmp_path: Path) -> None:
    line = assert_one_error_line(run_cli("fit", tmp_path / "nope.csv"))
    assert (
        line
        == f"adaptalloc: error: {tmp_path / 'nope.csv'}: cannot open: No such file or directory"
    )
    line = assert_one_error_line(run_cli("fit", tmp_path))
    assert line == f"adaptalloc: error: {tmp_path}: cannot open: Is a directory"


def test_hostile_values_reach_stderr_escaped_and_truncated(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    ansi = write_file("ansi.csv", b"n,runtime\n2,0.5\n4,\x1b[2J\x1b[31mgotcha\x1b]0;title\x07\n")
    line = assert_one_error_line(run_cli("fit", ansi))
    assert line.endswith(
        "line 3: runtime is not a number: '\\x1b[2J\\x1b[31mgotcha\\x1b]0;title\\x07'"
    )
    long_value = write_file("long.csv", b"n,runtime\n2,0.5\n4," + b"\x1b[31m" + b"Z" * 5000 + b"\n")
    line = assert_one_error_line(run_cli("fit", long_value))
    assert line.endswith(
        "runtime is not a number: '\\x1b[31m" + "Z" * 35 + "...' (5,005 characters)"
    )
    assert len(line) < 300
    header = write_file("header.csv", b"\x1b[2J,runtime\n2,0.5\n")
    line = assert_one_error_line(run_cli("fit", header))
    assert "'\\x1b[2J'" in line


def test_row_limit_names_the_option(run_cli: RunCli, write_file: WriteFile) -> None:
    path = write_file("rows.csv", "n,runtime\n" + "2,1\n4,0.5\n" * 5)
    line = assert_one_error_line(run_cli("fit", path, "--max-rows", "9"))
    assert (
        line
        == f"adaptalloc: error: {path} has more than 9 rows; pass --max-rows to raise the limit"
    )
    json_document(run_cli("fit", path, "--max-rows", "10", "--format", "json"))


@pytest.mark.slow
def test_ten_million_rows_fail_fast_on_the_default_limit(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    chunk = ("2,1.0\n4,0.5\n" * 50_000).encode()  # 100,000 rows
    with path.open("wb") as out:
        out.write(b"n,runtime\n")
        for _ in range(100):
            out.write(chunk)
    line = assert_one_error_line(run_cli("fit", path, "--format", "json"))
    assert line == (
        f"adaptalloc: error: {path} has more than 1,000,000 rows; "
        "pass --max-rows to raise the limit"
    )


USAGE_ERRORS: list[tuple[list[str], str]] = [
    (["fit", str(LU_CSV), "--method", "magic"], "Invalid value for '--method'"),
    (["fit", str(LU_CSV), "--format", "yaml"], "Invalid value for '--format'"),
    (["fit", str(LU_CSV), "--max-rows", "0"], "Invalid value for '--max-rows'"),
    (["fit"], "Missing argument 'OBS.csv'"),
    (["fit", str(LU_CSV), "--frmat", "json"], "No such option"),
    (["predict", str(LU_CSV)], "Missing option '--at'"),
    (["predict", str(LU_CSV), "--at", "16,,32"], "size 2 is empty"),
    (["predict", str(LU_CSV), "--at", "16,1.5"], "'1.5' is not a whole number of nodes"),
    (["predict", str(LU_CSV), "--at", "0"], "sizes must be at least 1, got 0"),
    (["predict", str(LU_CSV), "--at", "-4"], "'-4' is not a whole number of nodes"),
    (["predict", str(LU_CSV), "--at", "4" * 30], "sizes must be at most 1,000,000,000"),
    (["predict", str(LU_CSV), "--at", "\x1b[2Jx"], "'\\x1b[2Jx' is not a whole number"),
    (
        ["predict", str(LU_CSV), "--at", ",".join(["8"] * 10_001)],
        "at most 10,000 sizes, got 10,001",
    ),
    (["frobnicate"], "No such command 'frobnicate'"),
]


@pytest.mark.parametrize(("args", "expected"), USAGE_ERRORS, ids=[e[1][:30] for e in USAGE_ERRORS])
def test_usage_errors_are_one_line_with_a_pointer_to_help(
    run_cli: RunCli, args: list[str], expected: str
) -> None:
    line = assert_one_error_line(run_cli(*args), exit_code=2)
    assert expected in line
    assert line.endswith(" --help')")


def test_help_and_version(run_cli: RunCli) -> None:
    for args in (["--help"], ["fit", "--help"], ["predict", "-h"]):
        result = run_cli(*args)
        assert result.returncode == 0
        assert result.stdout.startswith("Usage: adaptalloc")
    assert "--at N[,N...]" in run_cli("predict", "--help").stdout
    version = run_cli("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("adaptalloc, version ")


def test_extreme_runtimes_are_refused_with_one_line(run_cli: RunCli, write_file: WriteFile) -> None:
    # Runtimes near the float limits overflowed the fit into a nonsense curve (exit 0): the
    # CSV reader refuses them (plugin/formats/observations_csv.py MAX_RUNTIME_S).
    path = write_file("extreme.csv", "n,runtime\n1,1e308\n2,6e307\n4,4e307\n4,1.7e308\n4,1.7e308\n")
    result = run_cli("fit", path, "--format", "json")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"adaptalloc: error: {path} line 2: runtime must be at most 1e+12 seconds, got 1e308"
    ]


@pytest.mark.slow
def test_shell_completion_script_and_words(
    run_cli_process: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # click's completion, as the README documents it: eval "$(_ADAPTALLOC_COMPLETE=bash_source
    # adaptalloc)". The script defines the bash function; asked for words, it completes them.
    # A fresh process: completion answers and exits before any command runs.
    monkeypatch.setenv("_ADAPTALLOC_COMPLETE", "bash_source")
    script = run_cli_process()
    assert script.returncode == 0, script
    assert "_adaptalloc_completion()" in script.stdout
    assert "complete -o nosort -F _adaptalloc_completion adaptalloc" in script.stdout
    monkeypatch.setenv("_ADAPTALLOC_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "adaptalloc doc")
    monkeypatch.setenv("COMP_CWORD", "1")
    words = run_cli_process()
    assert words.returncode == 0, words
    assert words.stdout.splitlines() == ["plain,doctor"]


@pytest.mark.slow
def test_the_module_entry_point_in_a_fresh_interpreter(
    run_cli_process: RunCli, run_cli: RunCli
) -> None:
    # The one place the process boundary is the point: `python -m plugin` (what the console
    # script runs too) gives the same document and exit codes as the in-process runs.
    args = ("fit", LU_CSV, "--format", "json")
    assert json_document(run_cli_process(*args)) == json_document(run_cli(*args))
    assert run_cli_process("fit", "--no-such-option").returncode == 2
