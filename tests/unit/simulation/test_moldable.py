"""The moldable range rule, and the user's limit kept as written."""

from __future__ import annotations

import pytest

from policies.simulation import MoldableRule
from policies.simulation.sizing import MoldableRequests, minutes

from .helpers import trace


@pytest.mark.parametrize(
    ("low", "high", "requested", "machine", "expected"),
    [
        (0.5, 2.0, 16, 128, (8, 32)),
        (0.5, 2.0, 1, 128, (1, 2)),
        (0.5, 2.0, 3, 128, (2, 6)),  # ⌈1.5⌉ = 2
        (0.5, 2.0, 100, 128, (50, 128)),  # cut to the machine
        (0.5, 2.0, 128, 128, (64, 128)),
        (0.3, 1.0, 10, 64, (3, 10)),  # 0.3·10 is 3.0000000000000004: still 3
        (1.0, 1.0, 7, 64, (7, 7)),
        (0.25, 4.0, 3, 8, (1, 8)),
    ],
)
def test_ranges(
    low: float, high: float, requested: int, machine: int, expected: tuple[int, int]
) -> None:
    assert MoldableRule(low, high).range(requested, machine) == expected


def test_the_rule_refuses_ranges_without_the_requested_size() -> None:
    for low, high in [(0.0, 2.0), (1.5, 2.0), (0.5, 0.9), (float("nan"), 2.0)]:
        with pytest.raises(ValueError, match=r"^(low|high) must be"):
            MoldableRule(low, high)
    assert MoldableRule(1.0, 1.0).rigid
    assert str(MoldableRule(0.5, 2.0)) == "0.5,2"


def test_the_users_limit_stays_as_written() -> None:
    """One --time for the whole range, written by a user who does not know the curve: the
    request keeps the trace's requested time (it was moved along the true curve to the
    range's minimum, a limit no user could write)."""
    jobs = trace((0, 16, 1000, 1200), (0, 1, 10, 60))
    r = MoldableRequests.build(jobs, MoldableRule(0.5, 2.0), machine=64)
    assert (r.lo, r.hi) == ((8, 1), (32, 2))
    assert r.limit == (1200.0, 60.0)
    assert len(r) == 2


def test_minutes_round_up() -> None:
    assert minutes(1) == 1
    assert minutes(60) == 1
    assert minutes(60.0000000001) == 1
    assert minutes(61) == 2
