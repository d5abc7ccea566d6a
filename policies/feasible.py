"""Feasible sizes: the node counts a job may run on, and snapping a choice onto them.

Two sources restrict sizes. The user's tag may say so (``powers_of_two``, ``squares`` or a list
such as ``6,12,24``); and ADEPT's pattern detection (section VIII, "specially optimized")
may find that the application runs well only on powers of two or squares
(``Pattern(kind="optimized_sizes", feasible=...)`` in the curve's diagnostics).

Both are honoured together when some size in the range satisfies both. Otherwise the user's
tag alone, then the curve's pattern alone; when nothing in the range is feasible the choice is
kept as it is and the reason says so (`allowed_sizes`).

`snap` moves a choice down to the largest allowed size not above it (so a size chosen for its
efficiency or as a cap stays within its bound), or, when there is none, up to the smallest
allowed size in the range. Both steps keep the order of choices: a larger choice never snaps
to a smaller size, which the load-adaptive rule's monotonicity relies on.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass

from predictor import Pattern

NAMED_RULES = ("powers_of_two", "squares")
RULE_WORDS = {"powers_of_two": "powers of two", "squares": "square numbers"}
#: Listed sizes shown in full in a reason; longer lists are summarised.
_LISTED_SHOWN = 6


@dataclass(frozen=True)
class Feasible:
    """A set of allowed node counts: a named rule ("powers_of_two", "squares") or listed sizes.

    Build with `Feasible.named` or `Feasible.listed`, or parse a tag with `parse_feasible`.
    """

    rule: str
    sizes: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if self.rule == "listed":
            if not self.sizes:
                raise ValueError("listed feasible sizes must not be empty")
            if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in self.sizes):
                raise ValueError("feasible sizes must be whole numbers of at least 1")
        elif self.rule in NAMED_RULES:
            if self.sizes:
                raise ValueError(f"the rule {self.rule} takes no listed sizes")
        else:
            raise ValueError(
                f"feasible rule must be one of {', '.join(NAMED_RULES)} or listed sizes, "
                f"got {self.rule!r}"
            )

    @classmethod
    def named(cls, rule: str) -> Feasible:
        return cls(rule)

    @classmethod
    def listed(cls, sizes: Iterable[int]) -> Feasible:
        return cls("listed", frozenset(sizes))

    def allows(self, n: int) -> bool:
        if self.rule == "powers_of_two":
            return n >= 1 and n & (n - 1) == 0
        if self.rule == "squares":
            return n >= 1 and math.isqrt(n) ** 2 == n
        return n in self.sizes

    def within(self, lo: int, hi: int) -> tuple[int, ...]:
        """The allowed sizes in [lo, hi], ascending."""
        if hi < lo:
            return ()
        if self.rule == "powers_of_two":
            return tuple(1 << k for k in range((lo - 1).bit_length(), hi.bit_length()))
        if self.rule == "squares":
            first = math.isqrt(lo - 1) + 1
            return tuple(k * k for k in range(first, math.isqrt(hi) + 1))
        return tuple(sorted(n for n in self.sizes if lo <= n <= hi))

    def describe(self) -> str:
        """Words for a reason: "powers of two", "the sizes 6, 12 and 24"."""
        if self.rule in RULE_WORDS:
            return RULE_WORDS[self.rule]
        ordered = sorted(self.sizes)
        if len(ordered) == 1:
            return f"the size {ordered[0]}"
        if len(ordered) <= _LISTED_SHOWN:
            head = ", ".join(str(n) for n in ordered[:-1])
            return f"the sizes {head} and {ordered[-1]}"
        return f"{len(ordered)} listed sizes ({ordered[0]} to {ordered[-1]})"


def parse_feasible(text: str) -> Feasible:
    """A user's tag: ``powers_of_two``, ``squares`` or comma-separated sizes ``6,12,24``.

    Raises ValueError naming what is wrong.
    """
    value = text.strip()
    if value in NAMED_RULES:
        return Feasible.named(value)
    sizes = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry.isdigit() or not entry.isascii():
            raise ValueError(
                f"feasible sizes must be {' or '.join(NAMED_RULES)} or whole numbers "
                f"separated by commas, got {text[:40]!r}"
            )
        size = int(entry)
        if size < 1:
            raise ValueError(f"feasible sizes must be at least 1, got {size}")
        sizes.append(size)
    return Feasible.listed(sizes)


def pattern_feasible(patterns: Iterable[Pattern]) -> Feasible | None:
    """The feasible rule an "optimized_sizes" pattern names (the first one), if any.

    Rules this module does not know are ignored: the curve came from a newer predictor, and
    no constraint is safer than a wrong one.
    """
    for pattern in patterns:
        if pattern.kind == "optimized_sizes" and pattern.feasible in NAMED_RULES:
            return Feasible.named(pattern.feasible)
    return None


@dataclass(frozen=True)
class Allowed:
    """The sizes a choice is snapped onto (ascending; None: any size) and what they are."""

    sizes: tuple[int, ...] | None
    what: str
    note: str = ""


def allowed_sizes(lo: int, hi: int, tag: Feasible | None, pattern: Feasible | None) -> Allowed:
    """The feasible sizes in [lo, hi] from the user's tag and the curve's pattern.

    Preference: both together, then the tag alone, then the pattern alone. `note` says which
    constraint had to be dropped because nothing in the range satisfies it.
    """
    if tag is None and pattern is None:
        return Allowed(None, "")
    tag_sizes = tag.within(lo, hi) if tag is not None else ()
    pattern_sizes = pattern.within(lo, hi) if pattern is not None else ()
    tag_words = f"{tag.describe()} (the job's tag)" if tag is not None else ""
    pattern_words = (
        f"{pattern.describe()} (what this application is optimised for)"
        if pattern is not None
        else ""
    )
    if tag_sizes and pattern_sizes:
        both = tuple(sorted(set(tag_sizes) & set(pattern_sizes)))
        if both:
            return Allowed(both, f"{tag_words} and {pattern_words}")
        note = f"no size in {lo}-{hi} is both {pattern_words} and allowed by the job's tag"
        return Allowed(tag_sizes, tag_words, note)
    if tag_sizes:
        return Allowed(tag_sizes, tag_words)
    if pattern_sizes:
        note = f"no size in {lo}-{hi} is {tag_words}" if tag is not None else ""
        return Allowed(pattern_sizes, pattern_words, note)
    wanted = " or ".join(w for w in (tag_words, pattern_words) if w)
    return Allowed(None, "", f"no size in {lo}-{hi} is {wanted}, so any size is kept")


def snap(choice: int, sizes: tuple[int, ...]) -> int:
    """The largest of `sizes` (ascending, non-empty) not above `choice`, else the smallest.

    Monotone: a larger choice never gives a smaller result.
    """
    at = bisect.bisect_right(sizes, choice)
    return sizes[at - 1] if at else sizes[0]
