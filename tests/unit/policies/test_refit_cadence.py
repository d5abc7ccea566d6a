"""The learner's refit cadence (policies/refit_cadence.py), new with the simulator's speed aim:
before it, every change was refitted."""

from __future__ import annotations

import pytest

from policies.refit_cadence import refit_due, runs_needed


@pytest.mark.parametrize(
    ("fitted_runs", "growth", "needed"),
    [(0, 0.25, 1), (3, 0.25, 1), (4, 0.25, 1), (5, 0.25, 2), (8, 0.5, 4), (100, 0.25, 25)],
)
def test_runs_needed_is_max_one_ceil_g_n(fitted_runs: int, growth: float, needed: int) -> None:
    assert runs_needed(fitted_runs, growth) == needed


def _due(**changes: object) -> bool:
    base: dict[str, object] = {
        "growth": 0.5,
        "max_age_s": 3600.0,
        "fitted_runs": 8,
        "added": 3,
        "observed": (4, 8, 16),
        "new_sizes": (4, 8, 8),
        "age_s": 600.0,
    }
    return refit_due(**{**base, **changes})  # type: ignore[arg-type]


def test_a_few_runs_at_known_sizes_on_a_young_curve_are_not_due() -> None:
    assert not _due()


@pytest.mark.parametrize(
    "changes",
    [
        {"added": 4, "new_sizes": (4, 8, 8, 16)},  # ⌈0.5 · 8⌉ runs
        {"new_sizes": (4, 8, 32)},  # a size the curve never saw
        {"observed": None},  # no curve: the last fit was refused
        {"age_s": 3600.0},  # the curve is H old
        {"growth": 0.0},  # g = 0: every change, the rule before
    ],
)
def test_growth_a_new_size_no_curve_an_old_curve_or_g_zero_is_due(
    changes: dict[str, object],
) -> None:
    assert _due(**changes)


def test_without_h_an_old_curve_waits_for_growth() -> None:
    assert not _due(max_age_s=None, age_s=1e9)
