"""The decision for a weak-scaling job (tag ``scaling=weak``): Gustafson's rules.

predictor/weak.py states the model and derives the rules; in short, with α the serial fraction
of the scaled runtime:

* efficiency E(n) = 1 − α(n − 1)/n, decreasing in n towards 1 − α; the rule takes the largest
  n in the range with E(n) ≥ θ (the policy's efficiency_threshold): the whole range when
  α ≤ 1 − θ, else n ≤ α/(α − (1 − θ));
* the processor working set (max S²/n) and the maximum useful size are unbounded under
  Gustafson's law, so neither caps the size: the efficiency rule alone decides;
* the time limit is left as the user wrote it: the scaled runtime a + b does not shrink with n.

Without a weak fit (fewer than two distinct problem sizes per node among the runs, or no runs
with a size) the job is left as submitted.
"""

from __future__ import annotations

from policies.decision import Decision
from policies.inputs import ClusterState, Request
from policies.rules import nodes, percent
from predictor.weak import WeakFit, largest_efficient

WEAK = "weak_efficiency"
WEAK_KEPT = "weak_fallback"


def decide_weak(
    request: Request, fit: WeakFit | None, cluster: ClusterState, threshold: float, missing: str
) -> Decision:
    """Size a weak-scaling job on [min_nodes, max_nodes] cut to the partition's limit."""
    lo, limit = request.min_nodes, cluster.node_limit
    if fit is None:
        return Decision(
            None,
            None,
            WEAK_KEPT,
            f"{missing}, so the weak-scaling job is left as submitted "
            f"({request.min_nodes}-{request.max_nodes} nodes)",
        )
    if limit is not None and lo > limit:
        return Decision(
            None,
            None,
            WEAK_KEPT,
            f"the job asks for at least {nodes(lo)} but the partition allows at most {limit} "
            "per job, so it is left as submitted",
        )
    hi = request.max_nodes if limit is None else min(request.max_nodes, limit)
    n = largest_efficient(fit.alpha, threshold, lo, hi)
    e = float(fit.efficiency(n))
    slack = 1.0 - threshold
    if fit.alpha <= slack:
        why = (
            f"its scaled efficiency 1 − α(n − 1)/n never drops below 1 − α = "
            f"{percent(1.0 - fit.alpha)}, at or above the threshold {percent(threshold)}, so it "
            f"takes the largest size allowed, {nodes(n)}"
        )
    else:
        bound = fit.alpha / (fit.alpha - slack)
        why = (
            f"its scaled efficiency 1 − α(n − 1)/n stays at or above {percent(threshold)} up "
            f"to n = α/(α − (1 − θ)) = {bound:.3g}, so it takes {nodes(n)} "
            f"(efficiency {percent(e)})"
        )
        if n == lo and bound < lo:
            why += ", the smallest size of its range"
    reason = (
        f"weak scaling (Gustafson): serial fraction α = {fit.alpha:.3g} from {fit.runs} runs; "
        f"{why}; the time limit is kept, since the scaled runtime does not shrink with n"
    )
    return Decision(n, None, WEAK, reason, time_limit_reason="kept: weak scaling")
