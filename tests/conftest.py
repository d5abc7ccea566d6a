"""The suite's shared fixtures, loaded as pytest plugins so that any directory's tests
(integration tests, benchmarks) ask for them by name instead of importing them, and the
``--slow`` gate that keeps the unit tests the fast feedback loop (slow_gate.py).

pytest only honours ``pytest_plugins`` in the top-level conftest, hence here.
"""

pytest_plugins = [
    "pytester",
    "slow_gate",
    "integration.fixtures",
    "integration.daemon_harness",
    "integration.job_submit_harness",
]
