"""Runs of one application whose inputs differ, with the limits their users asked: the data
of the learner's tests of heterogeneous runs (tests/unit/plugin/test_learner_limits.py,
tests/integration/test_learner_limits.py)."""

from __future__ import annotations

import time

import numpy as np

from plugin.appkey import AppKey
from plugin.store.curves import Observation
from predictor.downey import relative_runtime

#: How many runs `runs_with_limits` makes.
RUNS = 150


def runs_with_limits(app: AppKey, limited: int = RUNS) -> list[Observation]:
    """RUNS runs (job ids unique to the app: the store counts a job once) of one Downey shape
    (A = 24, σ = 0.8) whose inputs scale run times by a log-SD of 1 (users write
    L = 2·T(r)·input for the size r they ask, and the runs ran on r or a neighbouring size);
    the first `limited` carry their limit and the size it was written for."""
    rng = np.random.default_rng(31)
    sizes = np.array([1, 2, 4, 8, 16, 32, 64])
    asked = rng.integers(0, sizes.size, RUNS)
    ran = np.clip(asked + rng.integers(-1, 2, RUNS), 0, sizes.size - 1)
    true = 1000.0 * relative_runtime(sizes.astype(float), 24.0, 0.8)
    scale = np.exp(rng.normal(0.0, 1.0, RUNS))
    limit = 2.0 * true[asked] * scale * np.exp(rng.normal(0.0, 0.3, RUNS))
    runtime = true[ran] * scale * np.exp(rng.normal(0.0, 0.05, RUNS))
    return [
        Observation(
            f"{app.name}.{i}",
            app,
            int(sizes[ran[i]]),
            float(runtime[i]),
            time.time() - 3600.0 + i,
            limit_s=float(limit[i]) if i < limited else None,
            written_for=int(sizes[asked[i]]) if i < limited else None,
        )
        for i in range(RUNS)
    ]
