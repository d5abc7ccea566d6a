"""``adaptalloc predict OBS.csv --size S``: a problem size's own curve, or one borrowed from
its sibling sizes, on exact data from Kishimoto and Ichikawa's N-T/P-T equations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .conftest import RunCli, json_document

P = (1, 2, 4, 8, 16, 32, 64)


def kishimoto(N: float, p: float) -> float:
    g = 2e-9 * N**3 + 1e-5 * N**2 + 0.01 * N + 5.0
    return 1e-4 * p * g + g / p + 0.5


@pytest.fixture
def study(tmp_path: Path) -> Path:
    path = tmp_path / "study.csv"
    rows = ["n,runtime,size"]
    rows += [f"{p},{kishimoto(N, p)!r},{N}" for N in (1000, 2000, 4000, 5000) for p in P]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_an_unseen_size_gets_a_borrowed_curve_within_10_percent(
    run_cli: RunCli, study: Path
) -> None:
    doc = json_document(
        run_cli("predict", study, "--size", "3000", "--at", "16,32,4", "--format", "json")
    )
    source = doc["source"]
    assert source["kind"] == "borrowed"
    assert source["from_sizes"] == [1000.0, 2000.0, 4000.0, 5000.0]
    assert source["method"] in ("nt_pt", "downey_interp")
    assert source["loso_error"][source["method"]] is not None
    assert "borrowed from sizes 1000, 2000, 4000, 5000" in source["note"]
    got = [row["runtime"] for row in doc["predictions"]]
    truth = [kishimoto(3000, p) for p in (16, 32, 4)]
    assert [row["n"] for row in doc["predictions"]] == [16, 32, 4]
    assert np.max(np.abs(np.asarray(got) / truth - 1.0)) < 0.10
    assert doc["predictions"][0]["interval"] == {"level": None, "lower": None, "upper": None}


def test_a_size_with_runs_uses_its_own_curve(run_cli: RunCli, study: Path) -> None:
    doc = json_document(
        run_cli("predict", study, "--size", "2e3", "--at", "16", "--format", "json")
    )
    assert doc["source"] == {"kind": "own", "size": 2000.0, "runs": len(P)}
    assert doc["predictions"][0]["interval"]["level"] == 0.9
    assert doc["predictions"][0]["runtime"] == pytest.approx(kishimoto(2000, 16), rel=0.05)


def test_text_output_says_where_the_curve_comes_from(run_cli: RunCli, study: Path) -> None:
    result = run_cli("predict", study, "--size", "3000", "--at", "16", "--format", "text")
    assert result.returncode == 0, result
    assert "curve of problem size 3000 borrowed from sizes" in " ".join(result.stdout.split())
    # A borrowed curve has no calibrated interval, in text as in JSON.
    assert "interval" not in result.stdout


@pytest.mark.parametrize(
    ("content", "size", "words"),
    [
        ("n,runtime\n1,10\n2,6\n", "3", "needs a column 'size'"),
        ("n,runtime,size\n1,10,1\n2,6,\n", "3", "data row 2 has none"),
        ("n,runtime,size\n1,10,1\n2,6,1\n", "3", "two or more problem sizes"),
        ("n,runtime,size\n1,10,1\n2,6,1\n", "0", "must be a finite number > 0"),
        ("n,runtime,size\n1,10,1\n2,6,1\n", "nan", "must be a finite number > 0"),
        ("n,runtime,size\n1,10,1\n2,6,1\n", "big", "is not a number"),
    ],
)
def test_bad_input_is_one_line(
    run_cli: RunCli, tmp_path: Path, content: str, size: str, words: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    result = run_cli("predict", path, "--size", size, "--at", "4", "--format", "json")
    assert result.returncode != 0
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("adaptalloc: error:")
    assert words in lines[0]


def test_decide_for_an_unseen_size_uses_the_borrowed_curve(run_cli: RunCli, study: Path) -> None:
    args = ("decide", "--observations", study, "--nodes", "2-64", "--idle", "64")
    doc = json_document(run_cli(*args, "--size", "3000", "--format", "json"))
    assert doc["rule"] != "fallback"
    assert "curve of problem size 3000 borrowed from sizes 1000, 2000, 4000, 5000" in doc["reason"]
    own = json_document(run_cli(*args, "--size", "2000", "--format", "json"))
    assert "borrowed" not in own["reason"]
    bad = run_cli("decide", "--app", "cg", "--size", "3", "--nodes", "2-4")
    assert bad.returncode != 0
    assert "--size goes with --observations" in bad.stderr
    plain = study.with_name("plain.csv")
    plain.write_text("n,runtime\n1,10\n2,6\n", encoding="utf-8")
    missing = run_cli("decide", "--observations", plain, "--size", "3", "--nodes", "1-2")
    assert missing.returncode == 1
    assert "needs a column 'size'" in missing.stderr
