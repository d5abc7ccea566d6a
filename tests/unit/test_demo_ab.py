"""deploy/demo_ab.py: the A/B figures from sacct's rows (the demo's table and JSON)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "demo_ab.py"
_spec = importlib.util.spec_from_file_location("demo_ab", SCRIPT)
assert _spec is not None
assert _spec.loader is not None
demo_ab = importlib.util.module_from_spec(_spec)
sys.modules["demo_ab"] = demo_ab  # its dataclasses look their module up
_spec.loader.exec_module(demo_ab)


def test_sacct_rows_become_runs_and_unfinished_ones_are_left_out() -> None:
    text = (
        "11|100|100|130|8|COMPLETED\n12|100|130|150|4|COMPLETED\n13|101|Unknown|Unknown|0|PENDING\n"
    )
    runs = demo_ab.parse_sacct(text)
    assert sorted(runs) == [11, 12]
    assert runs[12].nodes == 4


def test_the_four_figures() -> None:
    runs = list(
        demo_ab.parse_sacct("1|100|100|130|8|COMPLETED\n2|100|130|150|4|COMPLETED\n").values()
    )
    assert demo_ab.summary(runs) == {
        "jobs": 2,
        "mean_turnaround_s": 40.0,  # (30 + 50) / 2
        "mean_wait_s": 15.0,  # (0 + 30) / 2
        "makespan_s": 50,  # 150 - 100
        "node_hours": round((8 * 30 + 4 * 20) / 3600, 4),
    }
    with pytest.raises(ValueError, match="no jobs"):
        demo_ab.summary([])
