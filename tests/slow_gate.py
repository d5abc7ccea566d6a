"""The unit tests are the fast feedback loop: a unit test marked ``slow`` (a long property or
fuzz run, or a test whose point is a process boundary, a fresh interpreter per case) is
skipped unless ``--slow`` is given or the marker expression names ``slow``.

``deploy/test.sh`` (the README's test command, and CI through ``.ci/run``) always passes
``--slow``, so every slow test still runs before a change lands. A unit test is one under a
directory named ``unit``. Integration tests and benchmarks are not gated: they are not the
fast loop, and ``-m "not slow"`` deselects their slow ones as before.
"""

from __future__ import annotations

import pytest

SLOW_UNIT_SKIP = pytest.mark.skip(
    reason="slow unit test (long property run or process boundary): run with --slow "
    "(deploy/test.sh and CI do)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        default=False,
        help="also run the unit tests marked slow (deploy/test.sh always does)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow") or "slow" in (config.getoption("markexpr") or ""):
        return
    for item in items:
        if item.get_closest_marker("slow") and "unit" in item.path.parent.parts:
            item.add_marker(SLOW_UNIT_SKIP)
