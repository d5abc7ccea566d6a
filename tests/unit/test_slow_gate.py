"""The ``--slow`` gate (tests/slow_gate.py), on a scratch suite run by pytester."""

from __future__ import annotations

import pytest

SLOW_AND_FAST = """
import pytest

@pytest.mark.slow
def test_slow() -> None:
    pass

def test_fast() -> None:
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(**{"unit/test_u.py": SLOW_AND_FAST, "integration/test_i.py": SLOW_AND_FAST})
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\n")
    return pytester


def test_a_bare_run_skips_slow_unit_tests_only(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "slow_gate", "-rs")
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(["*unit/test_u.py*run with --slow*"])


def test_slow_runs_every_test(suite: pytest.Pytester) -> None:
    suite.runpytest("-p", "slow_gate", "--slow").assert_outcomes(passed=4)


def test_a_marker_expression_naming_slow_decides_alone(suite: pytest.Pytester) -> None:
    suite.runpytest("-p", "slow_gate", "-m", "slow").assert_outcomes(passed=2, deselected=2)
