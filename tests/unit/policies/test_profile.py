"""RuntimeProfile: one evaluation of the curve serves every size a decision looks at."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose

from policies.profile import CHUNK, RuntimeProfile

from .curves import make_curve

CURVE = make_curve(300.0, 0.7, t1=5000.0, observed=(2, 8, 32))


def test_runtimes_in_the_range_and_at_the_extra_sizes() -> None:
    profile = RuntimeProfile.of(CURVE, 4, 64, extra=(4, 128))
    assert (profile.lo, profile.hi) == (4, 64)
    assert_allclose(profile.sizes, np.arange(4, 65))
    assert_allclose(profile.runtime, CURVE.runtime(np.arange(4, 65)))
    assert set(profile.extra) == {2, 128}  # the smallest observed size comes along
    for n in (2, 4, 17, 64, 128, 1000):
        assert profile.at(n) == float(CURVE.runtime(np.array([float(n)]))[0])


def test_long_ranges_are_evaluated_in_chunks_with_the_same_result() -> None:
    hi = 2 * CHUNK + 17
    profile = RuntimeProfile.of(CURVE, 1, hi)
    assert profile.runtime.shape == (hi,)
    assert_allclose(profile.runtime, CURVE.runtime(np.arange(1, hi + 1)), rtol=1e-15)
