"""The time limit for the chosen size.

The user wrote their limit L for some size r (the range's minimum by default; configurable
with time_limit_reference = "min" | "max"). For the chosen size n the new limit is

    L' = ⌈ L · T(n)/T(r) · safety ⌉

then bounded:

* when n ≥ r (the job gets at least the nodes the limit was written for) L' is at most L: the
  curve says the job is no slower, so it never needs more time than its user asked for;
* never below time_limit_floor_min, nor below the predicted runtime ⌈T(n)/60 · safety⌉ (the
  curve's runtimes are in seconds);
* never above the partition's MaxTime, even when the prediction says more (the reason says
  so).

Without a user limit the decision leaves the limit alone (None: the partition's default
applies); likewise without a usable curve, when the job is left as submitted, or when
scale_time_limit is off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from policies.config import PolicySettings
from policies.inputs import ClusterState, Request
from policies.profile import RuntimeProfile
from policies.rules import number


@dataclass(frozen=True)
class TimeLimit:
    """minutes: the limit to set, or None to leave the job's limit as it is."""

    minutes: int | None
    reason: str
    #: For the decision's own reason: set when MaxTime cut the limit below the prediction.
    note: str = ""


def _ceil(minutes: float) -> int:
    """Whole minutes, rounding up but forgiving float noise (12.0000000001 -> 12)."""
    return max(1, math.ceil(minutes - 1e-9))


def time_limit(
    request: Request,
    profile: RuntimeProfile | None,
    chosen: int | None,
    cluster: ClusterState,
    settings: PolicySettings,
) -> TimeLimit:
    """The time limit for `chosen` nodes (None: the job is left as submitted); `profile` is the
    usable curve's runtimes (it must hold the range's min and max), None without one."""
    user = request.time_limit_min
    if chosen is None:
        return TimeLimit(None, "the job is left as submitted, time limit included")
    if user is None:
        return TimeLimit(None, "the job gave no time limit, so the partition's default applies")
    if not settings.scale_time_limit:
        return TimeLimit(None, f"scale_time_limit is off, so the user's {user} min stand")
    if profile is None:
        return TimeLimit(None, f"without a usable curve the user's {user} min stand")

    ref = request.min_nodes if settings.time_limit_reference == "min" else request.max_nodes
    t_chosen, t_ref = profile.at(chosen), profile.at(ref)
    ratio = t_chosen / t_ref
    safety = settings.time_limit_safety_factor
    scaled = user * ratio * safety
    minutes = _ceil(scaled)
    why = (
        f"{user} min written for {ref} nodes × predicted runtime ratio "
        f"T({chosen})/T({ref}) = {number(ratio)} × safety {safety:g} gives {minutes} min"
    )
    if chosen >= ref and minutes > user:
        minutes = user
        why += f", kept at the user's {user} min since the job gets no fewer nodes"
    predicted = _ceil(t_chosen / 60.0 * safety)
    if minutes < settings.time_limit_floor_min and settings.time_limit_floor_min >= predicted:
        minutes = settings.time_limit_floor_min
        why += f", raised to the floor of {minutes} min"
    if minutes < predicted:
        minutes = predicted
        why += (
            f", raised to the predicted runtime {number(t_chosen / 60.0)} min × safety "
            f"{safety:g} = {predicted} min"
        )
    limit = cluster.max_time_min
    if limit is not None and minutes > limit:
        why += f", cut to the partition's maximum of {limit} min"
        note = ""
        if predicted > limit:
            shorter = f"shorter than the {predicted} min the curve predicts with its safety factor"
            why += f", {shorter}"
            note = f"the time limit is the partition's maximum of {limit} min, {shorter}"
        return TimeLimit(limit, why, note)
    return TimeLimit(minutes, why)
