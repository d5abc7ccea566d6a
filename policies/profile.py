"""The curve's predicted runtime at every size a decision may need, evaluated once.

A decision looks at the curve many times: efficiency and S(n)²/n at every size in the range,
the smallest observed size (the efficiency baseline), the chosen and the reference size (the
time limit), a suggested size (exploration). Each `Curve.runtime` call costs far more in
fixed overhead than per size, so `decide` evaluates all of them in one vectorised call and
the rules read the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from predictor import Curve
from predictor.downey import FloatArray

#: Sizes per vectorised call: bounds the predictor's temporaries for absurdly long ranges.
CHUNK = 65_536


@dataclass(frozen=True, eq=False)
class RuntimeProfile:
    """Predicted runtimes (the curve's unit, seconds) at every whole size in [lo, hi], and at
    a few sizes outside it (`extra`). `at` answers for any size, evaluating the curve for one
    it does not hold."""

    curve: Curve
    lo: int
    hi: int
    sizes: FloatArray = field(repr=False)
    runtime: FloatArray = field(repr=False)
    extra: Mapping[int, float] = field(repr=False)

    @classmethod
    def of(cls, curve: Curve, lo: int, hi: int, extra: Iterable[int] = ()) -> RuntimeProfile:
        outside = sorted({n for n in (curve.smallest_observed, *extra) if not lo <= n <= hi})
        every = np.concatenate(
            [np.arange(lo, hi + 1, dtype=float), np.asarray(outside, dtype=float)]
        )
        times = np.concatenate(
            [curve.runtime(every[k : k + CHUNK]) for k in range(0, every.size, CHUNK)]
        )
        inside = hi - lo + 1
        return cls(
            curve,
            lo,
            hi,
            every[:inside],
            times[:inside],
            MappingProxyType(dict(zip(outside, (float(t) for t in times[inside:]), strict=True))),
        )

    def at(self, n: int) -> float:
        if self.lo <= n <= self.hi:
            return float(self.runtime[n - self.lo])
        if n in self.extra:
            return self.extra[n]
        return float(self.curve.runtime(np.array([float(n)]))[0])
