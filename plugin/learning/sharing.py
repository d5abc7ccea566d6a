"""A site key's curve from many users' runs, which no single user can move far.

Under ``[appkey] scope = "user"`` a key's runs are its owner's own (plugin/appkey.py). A
site key pools the runs of every user of an application an admin chose to share (``[appkey]
shared``, or ``scope = "site"``), and its curve sizes every user's jobs. Two rules keep one
user from steering the others' sizes and limits through it:

1. **One vote per user and size.** Each user's runs at one node count (on one node type)
   become one run whose runtime is their median (`votes`). A user who submits a hundred
   runs at a size weighs there as much as one who submitted one; the fit averages the votes
   of a size as it averages repeated runs (predictor.prepare, with its outlier rule). Runs
   without a user (an admin's import) are the admin's own and are kept as they are.
2. **Bounded influence.** The curve is fitted again without each user's votes in turn
   (`influence`); where leaving one user out moves the curve's runtime at a size it was
   fitted on by more than ``[appkey] max_user_influence`` (a fraction, default 0.25), or
   leaves too little for a curve at all, the curve carries the reliability problem
   ``user_influence`` and sizes no job (policies/decide.py, DISTRUSTING) until other users'
   runs, or an admin's, agree with that user's. This is the leave-one-group-out form of a
   regression's influence diagnostics (Cook 1977; Belsley, Kuh and Welsch 1980), with the
   user as the group. Each user is left out of the model the curve was fitted with (the
   caller's `Fit`): the covariate curve of heterogeneous runs (predictor/heterogeneous.py)
   where the curve is one, so a user is judged on the model that sizes the jobs. A
   covariate curve's runtime is that of its reference job, the runs' mean input
   (predictor/covariate.py, `reference`), which leaving any user out moves without the
   model changing; so both curves are compared for the full curve's reference job
   (`Curve.for_limit`: a job asking the reference limit for one node).

The bound is a policy choice, not fitted: 25% is about the spread between the curve's own
90% interval ends on a clean fit of a few sizes (predictor/intervals.py), so a user who
moves the curve by more than that moves it beyond what its own uncertainty admits. At most
`MAX_CHECKED_USERS` users are left out in turn (those whose votes stand with the fewest
others', who can move the curve most); every other user shares each of their sizes with
more voters than those.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

import predictor
from plugin.store.curves import Observation
from predictor.diagnostics import ReliabilityProblem

__all__ = [
    "MAX_CHECKED_USERS",
    "USER_INFLUENCE",
    "Influence",
    "flag_influence",
    "influence",
    "votes",
]

#: The reliability problem a shared curve carries when one user moves it too far.
USER_INFLUENCE = "user_influence"
#: Users left out in turn, at most, per refit (each costs one fit).
MAX_CHECKED_USERS = 32
#: The curve fitted on some runs, or None when they give none.
Fit = Callable[[Sequence[Observation]], "predictor.Curve | None"]


def votes(runs: Sequence[Observation]) -> list[Observation]:
    """Each user's runs at one size and node type as one run (the newest run of the group
    stands for it); runs without a user kept as they are.

    The vote's runtime is the group's median. When every run of the group carries its user's
    limit (the covariate of heterogeneous runs), the vote is the group's middle run by
    runtime (the lower of the two middle ones), with that run's own limit and the size it
    was written for: a runtime and a limit taken as medians apart could pair one input's
    runtime with another input's limit, a run nobody made. Otherwise the vote has no limit."""
    groups: dict[tuple[str, int, str | None], list[Observation]] = {}
    out: list[Observation] = []
    for run in runs:
        if run.user is None:
            out.append(run)
        else:
            groups.setdefault((run.user, run.nodes, run.node_type), []).append(run)
    for group in groups.values():
        newest = max(group, key=lambda r: (r.end_time, r.job_id))
        if all(r.limit_s is not None for r in group):
            ranked = sorted(group, key=lambda r: (r.runtime_s, r.end_time, r.job_id))
            middle = ranked[(len(ranked) - 1) // 2]
            out.append(
                dataclasses.replace(
                    newest,
                    runtime_s=middle.runtime_s,
                    limit_s=middle.limit_s,
                    written_for=middle.written_for,
                )
            )
            continue
        median = float(np.median([r.runtime_s for r in group]))
        out.append(dataclasses.replace(newest, runtime_s=median, limit_s=None))
    return sorted(out, key=lambda r: (r.end_time, r.job_id))


@dataclass(frozen=True)
class Influence:
    """The user whose votes move the curve most, how far (relative runtime change at a fitted
    size; inf when the rest leave no curve), and at which size (None: no curve)."""

    user: str
    change: float
    nodes: int | None


def _users_to_check(runs: Sequence[Observation]) -> list[str]:
    """The users of the votes, those whose votes have the fewest other voters at their size
    first, at most MAX_CHECKED_USERS."""
    voters: dict[tuple[int, str | None], set[str | None]] = {}
    for run in runs:
        voters.setdefault((run.nodes, run.node_type), set()).add(run.user)
    company: dict[str, int] = {}
    for run in runs:
        if run.user is not None:
            others = len(voters[(run.nodes, run.node_type)]) - 1
            company[run.user] = min(company.get(run.user, others), others)
    return sorted(company, key=lambda user: (company[user], user))[:MAX_CHECKED_USERS]


def influence(runs: Sequence[Observation], fit: Fit) -> Influence | None:
    """The largest leave-one-user-out change of the curve fitted on `runs` (the votes) by
    `fit`: the relative change of its runtime at the sizes the full curve was fitted on, for
    the full curve's reference job where it has a covariate (module doc); None when no run
    has a user or the runs give no curve."""
    users = _users_to_check(runs)
    if not users:
        return None
    full = fit(runs)
    if full is None:
        return None
    sizes = np.asarray(full.observed_n, dtype=float)
    base = np.asarray(full.runtime(sizes), dtype=float)
    # The reference job asks the reference limit for one node: τ(1) = 1 deflates nothing.
    reference = None if full.covariate is None else full.covariate.reference
    worst: Influence | None = None
    for user in users:
        rest = [run for run in runs if run.user != user]
        curve = fit(rest) if rest else None
        found = Influence(user, math.inf, None)
        if curve is not None:
            moved = np.asarray(curve.for_limit(reference, 1).runtime(sizes), dtype=float)
            change = np.abs(moved / base - 1.0)
            k = int(np.argmax(change))
            found = Influence(user, float(change[k]), int(sizes[k]))
        if worst is None or found.change > worst.change:
            worst = found
    return worst


def flag_influence(
    curve: predictor.Curve, found: Influence | None, bound: float
) -> predictor.Curve:
    """`curve` with the user_influence problem added when `found` exceeds `bound`."""
    if found is None or found.change <= bound:
        return curve
    if math.isinf(found.change):
        what = "the curve rests on their runs alone: without them no curve can be fitted"
    else:
        what = (
            f"leaving their runs out moves the curve by {found.change:.0%} at {found.nodes} "
            f"nodes, more than max_user_influence {bound:.0%}"
        )
    problem = ReliabilityProblem(
        USER_INFLUENCE,
        f"One user's runs decide this shared curve ({what}); it sizes no job until other "
        "users' runs, or an admin's import, agree with theirs.",
        None,
        {} if math.isinf(found.change) else {"influence": found.change},
    )
    diagnostics = dataclasses.replace(
        curve.diagnostics, reliability=(*curve.diagnostics.reliability, problem)
    )
    return dataclasses.replace(curve, diagnostics=diagnostics)
