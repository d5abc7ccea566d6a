"""Numbers on the command line and in stored decisions: ASCII digits only, bounded.

``str.isdigit`` and ``\\d`` take "²", "٣" and "１"; ``int("²")`` then raises ValueError
(exit 70), and ``int`` of 5,000 digits raises too. The properties below feed such text to
``--at`` (parse_sizes), ``--since now-Ndays`` (parse_when), ``decisions --job`` and the
report's reading of stored decision fields (DecisionRecord.from_dict, decision_row). Run with
-s to see the cases.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin.cli.common import parse_sizes
from plugin.cli.store import parse_when
from plugin.report.decisions import MAX_NODES, decision_row
from plugin.store.decisions import DecisionRecord, DecisionRecordError, StoredDecision

from .conftest import RunCli
from .fuzz_support import CASES_TRIED, assert_one_inert_line, bounded_memory

PARSER = "CLI and decision-record numbers"
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NUMBERISH = st.one_of(
    st.sampled_from(["²", "\u0663", "\uff11", "1_0", "9" * 5000, "99999999999", "-1", "0", "+4"]),
    st.integers(0, 10**30).map(str),
    st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=6),
)


@pytest.fixture(scope="module", autouse=True)
def _print_cases() -> Iterator[None]:
    yield
    print(f"\n[fuzz] {PARSER}: {CASES_TRIED[PARSER]:,} cases tried")


@pytest.mark.slow
@FUZZ
@given(st.lists(NUMBERISH, min_size=1, max_size=5))
def test_sizes_option(entries: list[str]) -> None:
    CASES_TRIED[PARSER] += 1
    with bounded_memory():
        try:
            sizes = parse_sizes(",".join(entries))
        except ValueError as exc:
            assert_one_inert_line(str(exc))
            return
    assert [str(n) for n in sizes] == [e.strip().lstrip("0") or "0" for e in entries]


@pytest.mark.slow
@FUZZ
@given(NUMBERISH, st.sampled_from(["m", "h", "days", "w"]))
def test_relative_dates(count: str, unit: str) -> None:
    CASES_TRIED[PARSER] += 1
    with bounded_memory():
        try:
            when = parse_when(f"now-{count}{unit}", now=2e9)
        except ValueError as exc:
            assert_one_inert_line(str(exc))
            return
    assert count.isascii()
    assert math.isfinite(when)


@pytest.mark.slow
@FUZZ
@given(NUMBERISH, st.integers(-(10**30), 10**30), st.integers(-(10**30), 10**30))
def test_stored_decision_fields(text: str, low: int, high: int) -> None:
    # Failed before: "²".isdigit() is True and int("²") raised inside the report. A stored
    # count is a JSON integer: text is refused as a whole record, any integer is bounded.
    CASES_TRIED[PARSER] += 1
    with bounded_memory(), pytest.raises(DecisionRecordError, match="nodes"):
        DecisionRecord.from_dict({"job_id": 1, "nodes": text})
    record = DecisionRecord.from_dict({"job_id": 1, "nodes": high, "min_nodes": low})
    row = decision_row(StoredDecision(f"{high}-0", record))
    for value in (row.chosen, row.min_nodes, row.max_nodes):
        assert value is None or 1 <= value <= MAX_NODES


@pytest.mark.parametrize("job", ["²", "\u0663", "9" * 5000, "1_0"])
def test_decisions_job_option_is_a_usage_error(run_cli: RunCli, job: str) -> None:
    # "²" and 5,000 digits ended in exit 70 before (int() raised in the option callback).
    result = run_cli("decisions", "--job", job, "--redis-url", "redis://127.0.0.1:1/0")
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert len(result.stderr_lines) == 1
    assert "is not a job id" in result.stderr
