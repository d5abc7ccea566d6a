"""Validation, outlier dropping and averaging of raw runs."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from predictor.observations import prepare


@pytest.mark.parametrize(
    ("n", "runtime", "message"),
    [
        ([1, 2], [1.0], "differ in length"),
        ([], [], "no observations"),
        ([1.5, 2], [1.0, 2.0], "whole numbers"),
        ([0, 2], [1.0, 2.0], "at least 1"),
        ([-4, 2], [1.0, 2.0], "at least 1"),
        ([1, 2], [1.0, 0.0], "positive"),
        ([1, 2], [1.0, -3.0], "positive"),
        ([1, 2], [1.0, np.nan], "NaN or infinite"),
        ([1, 2, 4], [1e307, 6e306, 3e306], "at most 6.39e\\+293"),  # overflowed the fit
        ([1, np.inf], [1.0, 2.0], "NaN or infinite"),
        ([4, 4, 4], [1.0, 1.1, 0.9], "two or more distinct sizes"),
        ([[1, 2]], [[1.0, 2.0]], "one-dimensional"),
        (["a", "b"], [1.0, 2.0], "must be numbers"),
    ],
)
def test_bad_input_raises_value_error_naming_the_problem(
    n: list[float], runtime: list[float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        prepare(n, runtime)


def test_repeated_sizes_are_averaged_and_sorted() -> None:
    obs = prepare([8, 2, 8, 2, 4], [10.0, 40.0, 12.0, 44.0, 21.0])
    assert_array_equal(obs.n, [2, 4, 8])
    assert_allclose(obs.runtime, [42.0, 21.0, 11.0])
    assert_array_equal(obs.runs, [2, 1, 2])
    assert obs.dropped == ()
    assert not obs.t1_known
    assert len(obs) == 3


def test_obvious_outlier_among_repeats_is_dropped() -> None:
    obs = prepare([4, 4, 4, 4, 8], [100.0, 101.0, 99.0, 180.0, 55.0])
    assert obs.dropped == ((4, 180.0),)
    assert obs.runtime[0] == pytest.approx(100.0)
    assert obs.runs[0] == 3


def test_ordinary_jitter_is_not_an_outlier() -> None:
    """Identical repeats (MAD = 0) must not flag a 1% deviation: the 10% floor."""
    obs = prepare([24] * 4 + [28] * 4, [409, 409, 408, 409, 363, 363, 363, 363])
    assert obs.dropped == ()
    assert obs.runtime[0] == pytest.approx(408.75)


def test_two_runs_at_a_size_are_always_averaged() -> None:
    obs = prepare([2, 2, 4], [10.0, 30.0, 8.0])
    assert obs.dropped == ()
    assert obs.runtime[0] == pytest.approx(20.0)


def test_t1_known_when_one_node_was_observed() -> None:
    assert prepare([1, 4], [8.0, 2.0]).t1_known
