"""Roofline priors on the decision path (the model is predictor/roofline.py, the choice of
source and intensity policies/roofline.py), kept in a small in-process cache.

Making one is a Downey fit of a few points (a few ms); the daemon's decisions and
``adaptalloc decide`` ask for the same prior job after job, so it is remembered by what it is
made from: the target type's numbers and cores, the intensity, and each known type's numbers
and curve (its fitted parameters, model and run count, which change whenever the learner
refits it). A burst of jobs of one app on a new type pays once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from plugin.errors import printable
from policies.roofline import Intensity, Known, NodeType, Plan, plan_prior, prior_curve
from predictor import Curve

__all__ = ["Prior", "prior_on"]

log = structlog.get_logger("adaptalloc.learner")

#: Priors kept in the cache.
_CACHE_SIZE = 256
_cache: OrderedDict[tuple[Any, ...], Prior | str] = OrderedDict()


@dataclass(frozen=True)
class Prior:
    """A roofline prior curve and how it was made."""

    curve: Curve
    plan: Plan

    @property
    def note(self) -> str:
        """One clause for the decision's reason (policies.roofline.Plan.note)."""
        return self.plan.note()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "roofline_prior", **self.plan.to_dict()}


def _fingerprint(known: Known) -> tuple[Any, ...]:
    """What a known type's contribution to a prior is made from (plain, orderable values)."""
    t, c = known.node_type, known.curve
    return (
        t.name, t.peak_gflops, t.bandwidth_gbs, t.cores or 0, known.runs,
        c.model, c.A, c.sigma, c.t1, c.fit_error, c.observed_n,
    )  # fmt: skip


def prior_on(target: NodeType, known: Sequence[Known], intensity: Intensity) -> Prior | str:
    """The prior on `target` from the closest of `known` (policies.roofline.plan_prior), or
    why there is none (no other type, or the fit failed: logged, never raised)."""
    key = (
        target,
        intensity,
        tuple(sorted(_fingerprint(k) for k in known)),
    )
    if key in _cache:
        _cache.move_to_end(key)
        return _cache[key]
    plan = plan_prior(target, known, intensity)
    result: Prior | str
    if isinstance(plan, str):
        result = plan
    else:
        try:
            result = Prior(prior_curve(plan), plan)
        except (ValueError, ArithmeticError) as exc:  # no prior: the decision goes on without
            why = printable(str(exc))[:200]
            log.info("roofline_prior_refused", node_type=target.name, reason=why)
            result = f"the roofline prior on {target.name} could not be fitted ({why})"
    _cache[key] = result
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return result
