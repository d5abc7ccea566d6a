"""Hand-built curves and inputs for the policy tests.

Curves are built directly from (A, σ, T(1)) rather than fitted, so each test knows the exact
model it decides on; `max_useful_n` and `pws_n` come from the predictor's formulas, as
`Curve.from_fit` would set them.
"""

from __future__ import annotations

import math

import predictor
from predictor.downey import max_useful_size, processor_working_set

LU_CSV_NAME = "lan_thesis_npb_lu_W.csv"


def make_curve(
    A: float,
    sigma: float,
    t1: float = 3600.0,
    *,
    observed: tuple[int, ...] = (4, 8, 16, 32),
    t1_known: bool = False,
    identified: bool = True,
    fit_error: float = 0.01,
    diagnostics: predictor.Diagnostics | None = None,
) -> predictor.Curve:
    """A Downey curve with T(1) = `t1` seconds, as the store would hold it."""
    useful = math.ceil(float(max_useful_size(A, sigma)) - 1e-9) if identified else None
    return predictor.Curve(
        A=A,
        sigma=sigma,
        t1=t1,
        t1_known=t1_known,
        identified=identified,
        method="adept",
        fit_error=fit_error,
        max_useful_n=useful,
        pws_n=int(processor_working_set(A, sigma)),
        observed_n=observed,
        runs=len(observed),
        diagnostics=diagnostics or predictor.Diagnostics(),
    )


def unreliable(problem: str = "runner_up", suggest_n: int | None = 32) -> predictor.Diagnostics:
    return predictor.Diagnostics(
        reliability=(predictor.ReliabilityProblem(problem, "run once there", suggest_n),)
    )


def optimized_for(rule: str) -> predictor.Diagnostics:
    return predictor.Diagnostics(
        patterns=(predictor.Pattern(kind="optimized_sizes", feasible=rule),)
    )
