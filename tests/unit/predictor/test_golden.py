"""The ADEPT fit and its Curve give what they gave before the fit was made faster (golden.py).

Recorded before the first speed-up (253 data sets: 240 seeded simulator-like draws, 2-8 sizes,
1-12 runs per size, both modes, 0-5% noise; the 13 real curves of tests/data/scaling/); every
float must agree to 1e-9 relative, everything else exactly.
"""

from __future__ import annotations

import pytest

from . import golden

RTOL = 1e-9
GOLDEN = golden.load()
CASES = golden.cases()


def test_the_golden_data_are_the_cases_generated_here() -> None:
    assert sorted(GOLDEN["cases"]) == sorted(CASES)
    assert GOLDEN["sizes"] == golden.SIZES.tolist()
    assert sum("error" in out for out in GOLDEN["cases"].values()) < len(CASES) // 10


@pytest.mark.parametrize("name", sorted(CASES))
def test_fit_and_curve_match_the_golden_outputs(name: str) -> None:
    n, t = CASES[name]
    got = golden.plain(golden.outputs(n, t))
    assert golden.mismatches(GOLDEN["cases"][name], got, RTOL) == []


def test_a_changed_result_is_caught() -> None:
    name = "sim000"
    n, t = CASES[name]
    got = golden.plain(golden.outputs(n, [x * (1 + 1e-6) for x in t]))
    assert golden.mismatches(GOLDEN["cases"][name], got, RTOL) != []
