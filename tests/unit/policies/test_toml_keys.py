"""The validator both configuration files share: what a key accepts, how it says what is
allowed, and the one error line."""

from __future__ import annotations

import math

import pytest

from policies.toml_keys import (
    ConfigFileError,
    Key,
    boolean,
    choice,
    is_finite_number,
    is_whole,
    key_hint,
    label,
    number,
    read_table,
    show,
    string_list,
    whole,
)

KEYS = {"size": whole(1, 64), "share": number(0.0, 1.0, low_open=True), "on": boolean}


@pytest.mark.parametrize(
    ("key", "accepted", "refused"),
    [
        (whole(1, 64), [1, 64], [0, 65, True, 2.0, "2"]),
        (number(0.0, 1.0, low_open=True), [1, 0.5, 1e-9], [0, 1.5, math.nan, True, 10**400]),
        (number(0.0), [0, 1e300], [-1e-300, math.inf]),
        (number(0.0, 1.0, high_open=True), [0.0, 0.99], [1.0]),
        (choice("a", "b"), ["a"], ["c", 1, ["a"]]),
        (boolean, [True, False], [1, "true"]),
        (string_list, [["x"], []], ["x", [1]]),
    ],
)
def test_keys_accept_their_type_and_range_only(
    key: Key, accepted: list[object], refused: list[object]
) -> None:
    assert [key.accepts(v) for v in refused] == [None] * len(refused)
    assert [key.accepts(v) is not None for v in accepted] == [True] * len(accepted)


def test_numbers_are_stored_as_floats_and_lists_as_tuples() -> None:
    assert isinstance(number(0.0).accepts(3), float)
    assert string_list.accepts(["a", "b"]) == ("a", "b")


def test_what_is_allowed_names_the_bounds_as_a_file_spells_them() -> None:
    assert number(0.0, 1e6).allowed == "a number in [0, 1e6]"
    assert number(0.0, low_open=True).allowed == "a number > 0"
    assert whole(1, 10080, unit="minutes").allowed == "a whole number of minutes in [1, 10080]"
    assert whole(0).allowed == "a whole number ≥ 0"
    assert choice("a", "b").allowed == 'one of "a", "b"'


def test_a_refusal_is_one_line_naming_file_table_key_and_value() -> None:
    with pytest.raises(ConfigFileError) as info:
        read_table("f.toml", "t", {"size": 0}, KEYS, "example.toml")
    assert str(info.value) == "f.toml: [t] size: must be a whole number in [1, 64], got 0"
    assert (info.value.source, info.value.key) == ("f.toml", "t.size")


def test_an_unknown_key_gets_the_closest_name_or_the_names() -> None:
    with pytest.raises(ConfigFileError, match=r'\[t\] sise: not a known key \(did you mean "size"'):
        read_table("f.toml", "t", {"sise": 1}, KEYS, "example.toml")
    assert key_hint("zzz", KEYS, "example.toml") == "allowed: size, share, on"
    assert key_hint("zzz", [f"k{i}" for i in range(9)], "example.toml") == (
        "its keys are those of example.toml"
    )


def test_hostile_names_and_values_are_shown_inert_and_short() -> None:
    with pytest.raises(ConfigFileError) as info:
        read_table("f.toml", "t", {"a\x1b[31m\n": 1}, KEYS, "example.toml")
    assert "\x1b" not in str(info.value)
    assert "\n" not in str(info.value)
    assert label("gpu a100") == '"gpu a100"'
    assert label("batch-1_x") == "batch-1_x"
    assert show("x" * 100).endswith('..." (100 characters)')
    assert show({"a": 1}) == "a table"


def test_the_json_document_checks() -> None:
    assert [is_whole(v) for v in (1, -(10**30), True, 1.0)] == [True, True, False, False]
    checks = [is_finite_number(v) for v in (1, 0.5, True, math.nan, 10**400, "1")]
    assert checks == [True, True, False, False, False, False]
