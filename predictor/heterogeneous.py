"""The curve of heterogeneous runs: ADEPT's shape on runs adjusted for their requested time.

The method is covariate.py's: β of the requested time from the profile search over the (A, σ)
grid, the runs adjusted to the reference limit, ADEPT's fit of the adjusted runs (envelope,
analysis and reliability judgement as `fitting.fit_observations` gives them), then the shape
judged against the noise of repeated sizes by the lack-of-fit test. The curve is the plain
Downey curve of ADEPT (no other model speaks: a speaker's runtimes would not scale with the
job's limit), with the covariate and, as its residual, the RMS log residual of the adjusted
runs, noise included.

Where the noise is estimated (enough repeated runs), the test replaces the two problems of
the reliability judgement that stand in for it with fixed thresholds: high_fit_error (an
error above 10%, against a noise of 0) and mixed_sizes (runs at one size differing by more
than 1.5x, which is exactly the input variation the covariate and the noise model). A shape
the test rejects gets the problem "shape_misfit" instead. Where no size has enough repeats
the curve keeps ADEPT's judgement as it is.

Where the sizes the limits were written for are known, the covariate also keeps the runs'
limit use u_q (covariate.py, "Limit use"): the policies' size check reads it instead of the
interval, which for such runs is mostly the spread of their inputs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from predictor.adept import FAST, SearchSettings
from predictor.covariate import Covariate, adjust, judge, limit_use
from predictor.curve import Curve
from predictor.diagnostics import ReliabilityProblem
from predictor.fitting import fit_observations
from predictor.observations import prepare

#: The reliability problems the lack-of-fit test replaces where the noise is estimated.
REPLACED = frozenset({"high_fit_error", "mixed_sizes"})


def fit_heterogeneous(
    n: ArrayLike,
    runtime: ArrayLike,
    limit: ArrayLike,
    written_for: ArrayLike | None = None,
    settings: SearchSettings = FAST,
) -> Curve | None:
    """The covariate curve of runs (n, runtime) that asked `limit` seconds each, written for
    `written_for` nodes each (None: the covariate is the limit itself; covariate.py);
    None when ADEPT's fit of the adjusted runs fails. ValueError for unusable input."""
    adjusted = adjust(n, runtime, limit, written_for)
    fit = fit_observations(prepare(adjusted.n, adjusted.runtime), "adept", settings)
    if fit.status != "ok":
        return None
    curve = Curve.from_fit(fit)
    covariate, residual = judge(adjusted, curve._downey_runtime(adjusted.n.astype(float)))
    if written_for is not None:
        covariate = replace(covariate, use=_use(curve, n, runtime, limit, written_for))
    diagnostics = curve.diagnostics
    if covariate.noise_known and covariate.shape_identified:
        kept = tuple(p for p in diagnostics.reliability if p.problem not in REPLACED)
        if covariate.shape_rejected:
            kept += (misfit_problem(covariate),)
        diagnostics = replace(diagnostics, reliability=kept)
    return replace(
        curve, speaker=None, residual=residual, covariate=covariate, diagnostics=diagnostics
    )


def _use(
    curve: Curve, n: ArrayLike, runtime: ArrayLike, limit: ArrayLike, written_for: ArrayLike
) -> float | None:
    """The runs' limit-use bound u_q (covariate.py, `limit_use`) on the curve's shape."""
    at = curve._downey_runtime(np.asarray(n, dtype=float))
    ratio = at / curve._downey_runtime(np.asarray(written_for, dtype=float))
    return limit_use(runtime, limit, ratio)


def misfit_problem(covariate: Covariate) -> ReliabilityProblem:
    """The reliability problem of a shape the lack-of-fit test rejects."""
    return ReliabilityProblem(
        problem="shape_misfit",
        action=(
            f"The Downey shape misses the runs' size means by {100.0 * covariate.misfit:.0f}% "
            f"(RMS, log), more than the run-to-run noise of {100.0 * covariate.noise:.0f}% "
            f"explains (lack-of-fit test p = {covariate.lof_p:.3g}); the app key may mix codes."
        ),
        detail={"misfit": covariate.misfit, "noise": covariate.noise, "lof_p": covariate.lof_p},
    )


def judged_by_noise(curve: Curve) -> bool:
    """A covariate curve whose noise is estimated and whose shape is identified apart from
    the limits (covariate.py): the gate judges its shape by the lack-of-fit test (its
    "shape_misfit" problem), not by its raw fit error."""
    cov = curve.covariate
    return cov is not None and cov.noise_known and cov.shape_identified
