"""Exploration for an application whose runs all ran at one size: the run at a second size.

The predictor fits nothing on runs at fewer than two distinct sizes (predictor/observations.py,
MIN_SIZES), so an application whose every run ran at one size s has no curve, and without
adaptalloc it never gets one: left as submitted, its jobs start where Slurm's greedy choice
puts them, which on a quiet machine is the top of the range, run after run. On the fair
what-if's CEA-Curie trace at load 0.7 (downey world, score seed 101) 57 of the 104 jobs whose
application had 20 or more ended runs were of such applications.

`second_size` proposes one run at another size, pinned, with the user's limit untouched:

* down, at the least size n of the range (n < s) where the slowest of the runs at s, slowed
  down no more than linearly, still ends within its limit times time_limit_safety_factor,
  and not below half of s:

      n = max(lo, ⌈s/2⌉, ⌈s · u · safety⌉),   u = max over the runs of runtime / user's limit.

  A speedup is at most linear (no superlinear speedup: T(n) ≤ T(s)·s/n for n < s), and a
  run's share of its own limit is what the users' limits say about its input (predictor
  /covariate.py), so at n the job's run ends before its limit unless its input asks more of
  its limit than any run seen. That happens often: of k runs whose inputs come alike, the
  next one's share exceeds the largest of theirs with probability 1/(k+1), a quarter for
  the three runs the rule starts from, and then only the safety factor stands between the
  run and its limit. Half of s bounds the risk the bound cannot: at n ≥ s/2 a run slows
  down at most twice, so it overruns only if it would have used more than half its limit
  at s; it gives the fit the leverage of a doubling, as the run up does, and the job runs
  at most twice as long as at s. Fewer nodes cost the queue no more node-hours (n·T(n) ≤
  s·T(s) for any speedup at most linear);
* up, at min(hi, 2s), when no smaller size is safe and the range reaches above s: a larger
  size never runs longer under a speedup that does not fall (Downey's model), so the
  user's limit holds.

Either run gives the application its second size, and its next refit a curve. The size
depends on the application's runs and the job's range only, never on the size the job
asks, so a size that follows the input does not steer it (heterogeneous runs,
predictor/heterogeneous.py). It is exploration and counts in the existing budget
(exploration_job_share, exploration_node_hour_share), with the run's node-hours bounded by
n · t̃ · max(1, s/n) (t̃ the runs' median runtime), and like every explored size it is not
pinned past the idle nodes (rules.py, `exploration_waits`). It is not proposed for a job
without a time limit (its limit bounds nothing), for sizes the user listed (``feasible=``),
or with fewer than MIN_RUNS runs (one run says little about the inputs' spread).

Pure: no I/O, no logging, no global state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from policies.config import PolicySettings
from policies.decision import EXPLORATION, Decision
from policies.inputs import ClusterState, ExplorationBudget, Request
from policies.rules import exploration_waits, nodes, over_budget, percent

#: The runs at one size before a second size is explored: one run says nothing of the spread
#: of its application's inputs, and the bound reads the largest share of a limit seen.
MIN_RUNS = 3


@dataclass(frozen=True)
class Run:
    """One completed run of the application: its size, runtime in s, and its user's limit in
    s as written (None: unknown)."""

    nodes: int
    runtime_s: float
    limit_s: float | None


@dataclass(frozen=True)
class SecondSize:
    """The decision (pinned, limit untouched) and the runtime bound, in s, the exploration
    budget counts for it (module doc)."""

    decision: Decision
    runtime_s: float


def one_size(runs: Sequence[Run]) -> int | None:
    """The size every run ran at, when there are MIN_RUNS runs or more and they share one;
    else None."""
    sizes = {r.nodes for r in runs}
    return sizes.pop() if len(runs) >= MIN_RUNS and len(sizes) == 1 else None


def second_size(
    request: Request,
    runs: Sequence[Run],
    cluster: ClusterState,
    settings: PolicySettings,
    budget: ExplorationBudget,
) -> SecondSize | None:
    """The run at a second size for a job of an application whose runs all ran at one size
    (module doc), or None when none is proposed."""
    s = one_size(runs)
    limited = [r for r in runs if r.limit_s is not None and r.limit_s > 0]
    if s is None or not limited or request.time_limit_min is None or request.feasible:
        return None
    lo = request.min_nodes
    limit = cluster.node_limit
    hi = request.max_nodes if limit is None else min(request.max_nodes, limit)
    use = max(r.runtime_s / r.limit_s for r in limited if r.limit_s)
    bound = s * use * settings.time_limit_safety_factor
    # A limit of a denormal number of seconds makes the share infinite: no smaller size is safe.
    safe = max(lo, math.ceil(bound - 1e-9)) if math.isfinite(bound) else s
    down = max(safe, math.ceil(s / 2))
    if down < s and down <= hi:
        n = down
        slowest = (
            f"its slowest run ({percent(use)} of its limit), slowed down linearly, ends within "
            f"the limit x {settings.time_limit_safety_factor:g}"
        )
        how = (
            f"{nodes(n)}, the least size where {slowest}"
            if n == safe
            else f"{nodes(n)}, half the runs' size and no further down, though {slowest} "
            f"from {nodes(safe)} up"
        )
    elif s < hi:
        n = min(hi, max(lo, 2 * s))
        how = f"{nodes(n)}, above it, since no smaller size is sure to end within the limit"
    else:
        return None
    runtimes = sorted(r.runtime_s for r in runs)
    median = runtimes[len(runtimes) // 2]
    runtime = median * max(1.0, s / n)
    problem = f"every run at {nodes(s)}"
    refused = over_budget(n, problem, n * runtime / 3600.0, budget, settings)
    if refused or exploration_waits(n, lo, cluster, settings):
        return None
    reason = (
        f"all {len(runs)} runs of the app ran at {nodes(s)}, and no curve is fitted on one size; "
        f"explored at {how}; the time limit is kept as written, within the exploration "
        f"budget ({budget.jobs_explored} of {budget.jobs_decided} jobs explored so far)"
    )
    return SecondSize(Decision(n, None, EXPLORATION, reason), runtime)
