"""The curve's predicted runtime at every size a decision may need, evaluated once.

A decision looks at the curve many times: efficiency and S(n)²/n at every size in the range,
the smallest observed size (the efficiency baseline), the chosen and the reference size (the
time limit), a suggested size (exploration). Each `Curve.runtime` call costs far more in
fixed overhead than per size, so `decide` evaluates all of them in one vectorised call and
the rules read the result (the time limit hands the two it needs to
`Curve.runtime_interval`, and n·T(n) is formed once for E(n) and S(n)²/n).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
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
        sizes = np.arange(lo, hi + 1, dtype=float)
        every = np.concatenate([sizes, np.asarray(outside, dtype=float)]) if outside else sizes
        times = _runtime(curve, every)
        inside = sizes.size
        return cls(
            curve,
            lo,
            hi,
            sizes,
            times[:inside],
            MappingProxyType(dict(zip(outside, times[inside:].tolist(), strict=True))),
        )

    @cached_property
    def node_time(self) -> FloatArray:
        """n·T(n) at every size of the range: the denominator of E(n) and, times T(n), of
        η(n) = S(n)²/n (rules.py), computed once for both."""
        out: FloatArray = self.sizes * self.runtime
        return out

    def at(self, n: int) -> float:
        """T(n), from the profile when it holds n."""
        if self.lo <= n <= self.hi:
            return float(self.runtime[n - self.lo])
        if n in self.extra:
            return self.extra[n]
        return float(self.curve.runtime(np.array([float(n)]))[0])


def _runtime(curve: Curve, sizes: FloatArray) -> FloatArray:
    """The curve's runtime at `sizes`, in chunks of CHUNK sizes when there are more."""
    if sizes.size <= CHUNK:
        return curve.runtime(sizes)
    return np.concatenate(
        [curve.runtime(sizes[k : k + CHUNK]) for k in range(0, sizes.size, CHUNK)]
    )
