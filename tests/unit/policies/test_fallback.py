"""The all-runs curve across node types of different cores per node (policies/fallback.py)."""

from __future__ import annotations

from policies.fallback import curve_on_type, fallback_refusal


def test_runs_on_other_cores_per_node_refuse_the_fallback() -> None:
    # CEA Curie: runs on 32-core fat nodes, a decision on 16-core thin ones.
    why = fallback_refusal([32], 16)
    assert "32 cores" in why
    assert "16" in why
    assert fallback_refusal([16, 32, None], 16) != ""


def test_runs_on_the_targets_cores_per_node_keep_the_fallback() -> None:
    assert fallback_refusal([16], 16) == ""
    assert fallback_refusal([16, 16], 16) == ""


def test_an_unknown_core_count_is_no_evidence_of_a_difference() -> None:
    assert fallback_refusal([None], 16) == ""
    assert fallback_refusal([None, 16], 16) == ""
    assert fallback_refusal([32], None) == ""
    assert fallback_refusal([], 16) == ""


def test_the_runs_are_asked_for_only_when_the_all_runs_curve_would_stand_in() -> None:
    def never() -> list[int | None]:
        raise AssertionError("the runs' cores were read")

    assert curve_on_type("own", "all", 16, never) == ("own", "")
    assert curve_on_type(None, "all", None, never) == ("all", "")
    assert curve_on_type(None, None, 16, never) == (None, "")
    assert curve_on_type(None, "all", 16, lambda: [16, None]) == ("all", "")
    curve, why = curve_on_type(None, "all", 16, lambda: [32])
    assert curve is None
    assert "32 cores" in why
