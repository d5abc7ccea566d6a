"""The suite's shared fixtures, loaded as pytest plugins so that any directory's tests
(integration tests, benchmarks) ask for them by name instead of importing them, and the
``--slow`` gate that keeps the unit tests the fast feedback loop (slow_gate.py).

pytest only honours ``pytest_plugins`` in the top-level conftest, hence here.
"""

import unit  # noqa: F401  (pins numpy's kernels before any test imports numpy: unit/numpy_kernels.py)

pytest_plugins = [
    "pytester",
    "slow_gate",
    "integration.fixtures",
    "integration.daemon_harness",
    "integration.job_submit_harness",
]
