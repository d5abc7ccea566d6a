"""Numbers for people: significant digits, runtimes and percentages as the CLI and the
reports print them (terminal, HTML, the simulation's tables)."""

from __future__ import annotations

import math

__all__ = ["format_number", "format_percent", "format_runtime"]


def format_number(value: float, digits: int = 4) -> str:
    """`value` with `digits` significant digits, in plain notation from 0.001 to 999999.

    >>> format_number(24.250897), format_number(0.0765229), format_number(12345.6)
    ('24.25', '0.07652', '12350')
    """
    if not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    rounded = float(f"{value:.{digits - 1}e}")  # so that 0.09999 counts as 0.1000
    magnitude = math.floor(math.log10(abs(rounded)))
    if -3 <= magnitude < 6:
        return f"{rounded:.{max(0, digits - 1 - magnitude)}f}"
    return f"{value:.{digits - 1}e}"


def format_runtime(seconds: float) -> str:
    """A runtime in seconds (the observation CSV's unit), 4 significant digits."""
    return f"{format_number(seconds)} s"


def format_percent(fraction: float, digits: int = 2, signed: bool = False) -> str:
    """A fraction as a percentage with `digits` significant digits (0.0212 -> '2.1%')."""
    if not math.isfinite(fraction):
        return "n/a"
    text = format_number(100.0 * fraction, digits)
    if signed and fraction > 0:
        text = "+" + text
    return f"{text}%"
