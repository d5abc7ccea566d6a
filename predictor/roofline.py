"""A roofline prior: an application's curve on a node type it never ran on, from its curve on
one it did.

A curve learned on node type x (c_x cores per node) predicts T_x(n) for n nodes of x. On type
y (c_y cores) the same work runs on n·c_y processors instead of n·c_x, each computing at the
per-core roofline performance of its type (predictor/models/roofline.py, the large-scale
thesis' section 4.6.3):

    T_y(n) = T_x(n · c_y / c_x) · k,      k = s_x / s_y,    s = min(P_peak, B·I) / c

with I the application's operational intensity and P_peak, B the type's peak compute and
memory bandwidth per node. The parallel structure is taken to depend on the processor count
only (as Downey's model has it, in processors), and every second of the runtime is taken to
scale with the compute speed: the roofline bounds compute time only, so a code whose runtime
is partly communication gains less on a faster type than k says (and the prior is then
optimistic there). With c_x = c_y the prior is the source curve with its runtimes times k.

`roofline_prior` evaluates that at the target type's sizes matching the source's observed
ones (n_x·c_x/c_y, whole, at least 1) and fits the Downey model (ADEPT) to it, as
predictor/sizes.py does for a borrowed curve. The result carries a reliability problem
``roofline_prior``, so that no policy shortens a time limit on it, and a real curve of the
type's own runs replaces it as soon as the learner has one.
"""

from __future__ import annotations

import math

import numpy as np

from predictor.curve import Curve
from predictor.diagnostics import Diagnostics, ReliabilityProblem
from predictor.fitting import fit

__all__ = ["PRIOR_PROBLEM", "is_prior", "prior_sizes", "roofline_prior"]

#: The reliability problem a roofline prior carries.
PRIOR_PROBLEM = "roofline_prior"


def is_prior(curve: Curve | None) -> bool:
    """Whether `curve` is a roofline prior: it carries the reliability problem
    PRIOR_PROBLEM."""
    return curve is not None and any(
        p.problem == PRIOR_PROBLEM for p in curve.diagnostics.reliability
    )


def prior_sizes(observed: tuple[int, ...], processors_ratio: float) -> tuple[int, ...]:
    """The target type's node counts that hold the source's observed processor counts:
    round(n_x / m), m = c_y/c_x, at least 1, distinct; a second size (twice the largest)
    when they collapse to one (a type with many more cores per node)."""
    if not (math.isfinite(processors_ratio) and processors_ratio > 0):
        raise ValueError(f"processors_ratio must be finite and > 0, got {processors_ratio!r}")
    sizes = np.unique(np.maximum(1, np.rint(np.asarray(observed, dtype=float) / processors_ratio)))
    if sizes.size == 0:
        raise ValueError("the source curve has no observed sizes")
    if sizes.size == 1:
        sizes = np.array([sizes[0], 2.0 * sizes[0]])
    return tuple(int(n) for n in sizes)


def roofline_prior(
    curve: Curve,
    time_ratio: float,
    processors_ratio: float,
    problem: ReliabilityProblem,
) -> Curve:
    """The prior curve on the target type (module docstring).

    Parameters
    ----------
    curve : the application's curve on the source type
    time_ratio : k = s_x / s_y, the target's runtime per source runtime at equal processors
        (< 1: the target computes faster)
    processors_ratio : m = c_y / c_x, the target's cores per node over the source's (1 when
        either is unknown)
    problem : the reliability problem that marks the prior (problem ``roofline_prior``,
        its action and detail saying from where)

    Raises ValueError when the ratios are not finite and positive or the fit fails.
    """
    if not (math.isfinite(time_ratio) and time_ratio > 0):
        raise ValueError(f"time_ratio must be finite and > 0, got {time_ratio!r}")
    if problem.problem != PRIOR_PROBLEM:
        raise ValueError(f"a roofline prior is marked {PRIOR_PROBLEM!r}, not {problem.problem!r}")
    n = np.asarray(prior_sizes(curve.observed_n, processors_ratio), dtype=float)
    runtime = curve.runtime(n * processors_ratio) * time_ratio
    result = fit(n, runtime)
    if result.status != "ok":
        raise ValueError(f"the roofline prior's fit failed: {result.message}")
    plain = Curve.from_fit(result)
    diagnostics = Diagnostics(
        plain.diagnostics.anomalies,
        plain.diagnostics.patterns,
        (*plain.diagnostics.reliability, problem),
    )
    return Curve.from_fit(result, diagnostics=diagnostics)
