"""`adaptalloc fit` on runs that mix two problem sizes: the mixed_sizes entry in text and JSON."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import RunCli, json_document

WriteFile = Callable[[str, bytes | str], Path]
# Two runs per size, the second of a problem twice as large (runtime 100·(0.04 + 0.96/n)).
MIXED_CSV = "n,runtime\n" + "".join(
    f"{n},{100 * (0.04 + 0.96 / n) * f:.4f}\n" for n in (1, 2, 4, 8, 16, 32) for f in (1.0, 2.0)
)


def test_fit_flags_mixed_problem_sizes_in_text_and_json(
    run_cli: RunCli, write_file: WriteFile
) -> None:
    path = write_file("mixed.csv", MIXED_CSV)
    doc = json_document(run_cli("fit", path, "--format", "json"))
    [entry] = [r for r in doc["reliability"] if r["problem"] == "mixed_sizes"]
    assert entry["suggest_n"] is None
    assert entry["spread_ratio"] == pytest.approx(2.0, rel=1e-3)
    assert entry["spread_n"] in (1, 2, 4, 8, 16, 32)
    assert "size=large" in entry["action"]
    text = run_cli("fit", path)
    assert text.returncode == 0, text
    assert "differ by a factor 2 in runtime" in " ".join(text.stdout.split())
    assert "Traceback" not in text.stderr
