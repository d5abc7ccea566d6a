"""Feasible sizes: the named rules and listed sizes, tags, combining sources, snapping."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import predictor
from policies.feasible import (
    Feasible,
    allowed_sizes,
    parse_feasible,
    pattern_feasible,
    snap,
)

POW2 = Feasible.named("powers_of_two")
SQUARES = Feasible.named("squares")


@pytest.mark.parametrize(
    ("rule", "brute"),
    [
        (POW2, lambda n: n in {2**k for k in range(20)}),
        (SQUARES, lambda n: n in {k * k for k in range(1, 400)}),
        (Feasible.listed({3, 6, 12, 100}), lambda n: n in {3, 6, 12, 100}),
    ],
    ids=["powers_of_two", "squares", "listed"],
)
def test_within_and_allows_agree_with_brute_force(rule: Feasible, brute: object) -> None:
    for lo in (1, 2, 3, 5, 16, 17, 63, 64, 65):
        for hi in (lo, lo + 1, lo + 30, 200):
            expected = tuple(n for n in range(lo, hi + 1) if brute(n))  # type: ignore[operator]
            assert rule.within(lo, hi) == expected, (lo, hi)
    assert all(rule.allows(n) == brute(n) for n in range(1, 300))  # type: ignore[operator]
    assert rule.within(10, 9) == ()


def test_parse_feasible_tags() -> None:
    assert parse_feasible("powers_of_two") == POW2
    assert parse_feasible(" squares ") == SQUARES
    assert parse_feasible("6, 12,24") == Feasible.listed({6, 12, 24})
    for bad in ("", "cubes", "4,,8", "4,x", "-4", "4.5", "٣"):
        with pytest.raises(ValueError, match="feasible sizes"):
            parse_feasible(bad)
    with pytest.raises(ValueError, match="at least 1"):
        parse_feasible("0,4")


def test_feasible_refuses_inconsistent_values() -> None:
    with pytest.raises(ValueError, match="one of powers_of_two, squares"):
        Feasible("cubes")
    with pytest.raises(ValueError, match="empty"):
        Feasible.listed([])
    with pytest.raises(ValueError, match="no listed sizes"):
        Feasible("squares", frozenset({4}))


def test_describe_in_words() -> None:
    assert POW2.describe() == "powers of two"
    assert SQUARES.describe() == "square numbers"
    assert Feasible.listed({8}).describe() == "the size 8"
    assert Feasible.listed({24, 6, 12}).describe() == "the sizes 6, 12 and 24"
    assert Feasible.listed(range(1, 11)).describe() == "10 listed sizes (1 to 10)"


def test_pattern_feasible_reads_optimized_sizes_only() -> None:
    stepwise = predictor.Pattern(kind="stepwise", phases=((2, 4), (8, 16)))
    squares = predictor.Pattern(kind="optimized_sizes", feasible="squares")
    newer = predictor.Pattern(kind="optimized_sizes", feasible="cubes")
    assert pattern_feasible([]) is None
    assert pattern_feasible([stepwise]) is None
    assert pattern_feasible([stepwise, squares]) == SQUARES
    assert pattern_feasible([newer]) is None  # unknown rules are not guessed at


def test_allowed_prefers_both_then_tag_then_pattern() -> None:
    both = allowed_sizes(4, 64, Feasible.listed({8, 12, 16, 64}), POW2)
    assert both.sizes == (8, 16, 64)
    assert both.note == ""
    tag_only = allowed_sizes(4, 64, Feasible.listed({12, 24}), POW2)
    assert tag_only.sizes == (12, 24)
    assert "no size in 4-64 is both powers of two" in tag_only.note
    pattern_only = allowed_sizes(4, 64, Feasible.listed({100}), POW2)
    assert pattern_only.sizes == (4, 8, 16, 32, 64)
    assert pattern_only.note == "no size in 4-64 is the size 100 (the job's tag)"
    nothing = allowed_sizes(5, 7, POW2, None)
    assert nothing.sizes is None
    assert nothing.note == "no size in 5-7 is powers of two (the job's tag), so any size is kept"
    assert allowed_sizes(5, 7, None, None).sizes is None
    assert allowed_sizes(5, 7, None, None).note == ""


def test_snap_down_else_up() -> None:
    sizes = (4, 8, 16, 32)
    assert [snap(n, sizes) for n in (1, 4, 5, 15, 16, 31, 40)] == [4, 4, 4, 8, 16, 16, 32]


@given(
    st.lists(st.integers(1, 500), min_size=1, max_size=20, unique=True),
    st.integers(1, 600),
    st.integers(1, 600),
)
def test_snap_is_monotone_and_lands_on_an_allowed_size(sizes: list[int], a: int, b: int) -> None:
    ordered = tuple(sorted(sizes))
    low, high = min(a, b), max(a, b)
    assert snap(low, ordered) <= snap(high, ordered)
    assert snap(low, ordered) in ordered
    below = [n for n in ordered if n <= low]
    assert snap(low, ordered) == (max(below) if below else ordered[0])


def test_squares_within_large_range_is_exact() -> None:
    got = SQUARES.within(10**6 - 5000, 10**6)
    assert got == tuple(k * k for k in range(math.isqrt(10**6 - 5001) + 1, 1001))
