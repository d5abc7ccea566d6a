"""plugin.errors: untrusted text in messages stays one short, inert line."""

from __future__ import annotations

import pytest

from plugin.errors import (
    AdaptallocError,
    InputError,
    ObservationsError,
    TooManyRowsError,
    printable,
    quote_value,
)


def test_hierarchy() -> None:
    assert issubclass(InputError, AdaptallocError)
    assert issubclass(ObservationsError, InputError)
    assert issubclass(TooManyRowsError, ObservationsError)
    exc = TooManyRowsError("too many", 5)
    assert exc.limit == 5
    assert str(exc) == "too many"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text", "plain text"),
        ("naïve σ ≥ 1", "naïve σ ≥ 1"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("two\nlines\r", "two\\x0alines\\x0d"),
        ("tab\there", "tab\\x09here"),
        ("bidi \u202eevil", "bidi \\u202eevil"),
        ("nul\x00", "nul\\x00"),
        ("back\\slash", "back\\slash"),
    ],
)
def test_printable_escapes_only_unprintable(text: str, expected: str) -> None:
    assert printable(text) == expected
    assert printable(expected) == expected  # escaping twice changes nothing


def test_quote_value_short() -> None:
    assert quote_value("abc") == "'abc'"
    assert quote_value("abc", quotes=False) == "abc"
    assert quote_value("\x1b[2J") == "'\\x1b[2J'"


def test_quote_value_truncates_long_values() -> None:
    shown = quote_value("x" * 5000)
    assert shown == "'" + "x" * 40 + "...' (5,000 characters)"
    assert len(quote_value("\x1b" * 5000)) < 250
