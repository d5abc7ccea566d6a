"""plugin.report.decisions: decision records read defensively, estimated with the curve."""

from __future__ import annotations

import numpy as np
import pytest

from plugin.report import assemble
from plugin.report.decisions import decision_row, estimate, summarise
from plugin.store.decisions import DecisionRecord, StoredDecision

from .test_report_assemble import T0, curve_of, decision, make_inputs, make_runs


def test_the_daemons_record() -> None:
    row = decision_row(decision(7, 4, 64, 32))
    assert (row.job_id, row.min_nodes, row.max_nodes, row.chosen) == ("7", 4, 64, 32)
    assert row.rule == "efficiency"
    assert row.time_limit_min == 30  # the limit the daemon set, not the job's 60
    assert row.time == T0 + 7
    assert (row.action, row.status) == ("resize", "released")


def test_released_as_submitted_and_fail_open() -> None:
    kept = decision_row(decision(1, 4, 64, None))
    assert kept.chosen is None
    assert kept.time_limit_min == 60
    failed = decision_row(
        decision(2, 2, 8, None, rule=None, fail_open="no_curve", action="release")
    )
    assert failed.rule == "fail-open: no_curve"
    assert failed.chosen is None


def test_counts_out_of_range_become_none() -> None:
    row = decision_row(decision(3, 0, 2**40, -1, new_time_limit_min=None, time_limit_min=0))
    assert (row.min_nodes, row.max_nodes, row.chosen, row.time_limit_min) == (None,) * 4


def test_time_from_the_stream_id_when_the_record_has_none() -> None:
    stored = decision(4, 2, 8, 4, decided_at=None)
    row = decision_row(StoredDecision("1769860800123-4", stored.record))
    assert row.time == pytest.approx(1769860800.123)
    assert decision_row(StoredDecision("not-an-id", stored.record)).time is None


def test_long_text_is_cut_but_kept_as_it_is() -> None:
    row = decision_row(decision(5, 2, 8, 4, reason="<script>" + "x" * 10_000, rule="\x1b[31m"))
    assert row.reason.startswith("<script>")
    assert len(row.reason) == 500
    assert row.rule == "\x1b[31m"  # the renderers escape it


def test_estimates_are_node_hours_from_the_curve() -> None:
    curve = curve_of(make_runs())
    rows = estimate([decision_row(decision(1, 4, 64, 16))], curve)
    row = rows[0]
    assert row.node_hours_chosen is not None
    assert row.node_hours_max is not None
    assert row.node_hours_saved is not None
    assert row.node_hours_chosen == pytest.approx(16 * float(curve.runtime(16)) / 3600.0)
    assert row.node_hours_max == pytest.approx(64 * float(curve.runtime(64)) / 3600.0)
    assert row.efficiency_chosen == pytest.approx(float(curve.efficiency(16)))
    assert row.efficiency_max == pytest.approx(float(curve.efficiency(64)))
    assert row.node_hours_saved == pytest.approx(row.node_hours_max - row.node_hours_chosen)
    assert row.node_hours_saved > 0  # this app scales sub-linearly


def test_summary_counts_and_sums() -> None:
    curve = curve_of(make_runs())
    docs = [
        decision(1, 4, 64, 16),
        decision(2, 4, 32, 32, rule="pws"),
        decision(3, 4, 64, None),
        decision(4, 4, 64, 8, status="gone"),  # cancelled before it ran
        StoredDecision("5-0", DecisionRecord(job_id=5)),  # no range, no rule
    ]
    rows = estimate([decision_row(d) for d in docs], curve)
    s = summarise(rows)
    assert s.count == 5
    assert s.as_submitted == 2
    assert s.estimated == 2
    assert dict(s.by_rule) == {"efficiency": 3, "pws": 1, "(none)": 1}
    assert s.chosen_sizes == ((8, 1), (16, 1), (32, 1))
    used = [r for r in rows if r.job_id in ("1", "2")]
    assert s.node_hours_saved == pytest.approx(sum(r.node_hours_saved or 0 for r in used))
    assert s.mean_efficiency_chosen == pytest.approx(
        np.mean([float(curve.efficiency(16)), float(curve.efficiency(32))])
    )
    assert s.mean_efficiency_max == pytest.approx(
        np.mean([float(curve.efficiency(64)), float(curve.efficiency(32))])
    )


def test_a_range_release_keeps_its_top_and_gets_no_chosen_size_estimate() -> None:
    # A refused curve's range top: released as 4-24 nodes, Slurm picks the size at start.
    ranged = decision_row(decision(6, 4, 64, 4, nodes_upto=24, rule="fallback"))
    assert (ranged.chosen, ranged.chosen_upto, ranged.pinned) == (4, 24, False)
    pinned = decision_row(decision(7, 4, 64, 16, nodes_upto=16))
    assert (pinned.chosen_upto, pinned.pinned) == (None, True)
    malformed = decision_row(decision(8, 4, 64, 16, nodes_upto=8))  # a top below the size
    assert malformed.chosen_upto is None
    curve = curve_of(make_runs())
    rows = estimate([ranged, pinned, decision_row(decision(9, 4, 64, None))], curve)
    assert (rows[0].efficiency_chosen, rows[0].node_hours_chosen) == (None, None)
    assert rows[0].efficiency_max == pytest.approx(float(curve.efficiency(64)))
    assert rows[0].node_hours_saved is None
    s = summarise(rows)
    assert (s.count, s.as_submitted, s.ranged, s.estimated) == (3, 1, 1, 1)
    assert s.chosen_sizes == ((16, 1),)  # the range's minimum is not a size a job got
    assert s.node_hours_saved == pytest.approx(rows[1].node_hours_saved)


def test_no_decisions_no_figures() -> None:
    s = assemble(make_inputs(), band=False).decision_summary
    assert s.count == 0
    assert s.node_hours_saved is None
    assert s.mean_efficiency_chosen is None
