"""The rule that turns a trace's rigid job into a moldable one.

A job that asked for r nodes on a machine of M nodes may run on any size in

    [lo, hi] = [max(1, ⌈low · r⌉), min(M, ⌊high · r⌋)]        (lo is also at most M)

with 0 < low ≤ 1 ≤ high, so the requested size is always in the range. low = high = 1 keeps
every job rigid. The user's time limit L stays as the trace's user wrote it: one ``--time``
for the whole range, by a user who does not know the curve (sizing.py). The policies read it
as written for the range's minimum (time_limit_reference = "min"); when it was really written
for a larger size, a job run near the minimum may outrun it, and that risk is part of what
the simulator measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Slack against float noise in ⌈low·r⌉ and ⌊high·r⌋ (0.3·10 = 3.0000000000000004).
_EPS = 1e-9


@dataclass(frozen=True)
class MoldableRule:
    """The range rule: from `low` times to `high` times the requested size."""

    low: float = 0.5
    high: float = 2.0

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if not 0.0 < self.low <= 1.0:
            raise ValueError(f"low must be in (0, 1], got {self.low:g}")
        if self.high < 1.0:
            raise ValueError(f"high must be at least 1, got {self.high:g}")

    @property
    def rigid(self) -> bool:
        return self.low == 1.0 == self.high

    def range(self, requested: int, machine: int) -> tuple[int, int]:
        """[lo, hi] for a job that requested `requested` nodes on `machine` nodes."""
        if requested < 1 or machine < 1:
            raise ValueError(f"sizes must be ≥ 1, got {requested} on {machine}")
        lo = min(machine, max(1, math.ceil(self.low * requested - _EPS)))
        hi = min(machine, max(lo, math.floor(self.high * requested + _EPS)))
        return lo, hi

    def __str__(self) -> str:
        return f"{self.low:g},{self.high:g}"
