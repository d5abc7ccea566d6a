"""The time limit for the chosen size: never above the user's own, never cut on a guess.

The user wrote their limit L for some size r (the range's minimum by default; configurable
with time_limit_reference = "min" | "max"). For the chosen size n the new limit is

    L' = ⌈ L · T⁺(n)/T⁻(r) · safety ⌉

with the curve taken pessimistically:

* its own uncertainty: T⁺(n) and T⁻(r) are the upper and lower ends of the curve's 90%
  prediction interval (`predictor.Curve.runtime_interval`, predictor/intervals.py):
  T·exp(±q·s(n)) with s(n) = sqrt(a² + r² + (b·d(n))² + m² + D(n)²), r the RMS log residual
  of the fit over its runs, d(n) the log distance outside the observed sizes, m a misfit
  term for fits on 3 sizes or fewer, D(n) the distance to the Downey curve where another
  model speaks, and q a conformal multiplier calibrated on real applications' held-out runs
  (tests/benchmarks/test_predictor_real.py); the constants are the predictor's, this module
  chooses none of its own. A curve stored before the residual was kept
  (residual 0 with a non-zero fit_error) falls back to the fit error m, the largest relative
  error over the runs (ADEPT section IX): T⁺(n) = T(n)·(1+m), T⁻(r) = T(r)·(1-m);
* no cut past the data: for n above the largest observed size N the curve is an
  extrapolation the runs cannot confirm, and taking it flat past N is not enough either: real
  codes slow down there (tests/benchmarks/test_time_limit_holdout.py: bfs1d fitted up to 128
  nodes runs 12.1 min at 256 against 5.3 at 128, and a flat bound gave it 6 min; the
  interval's upper end past the data kills held-out sizes too, which that benchmark prints).
  So the user's L stands for any n > N, which is never shorter than the flat bound
  L·T(N)/T(r).

The size itself must let the job finish within the user's L (`fits_limit`): a size whose
pessimistic runtime, times time_limit_safety_factor, exceeds L (T⁺(n)·safety > 60·L, T in
seconds, L in minutes) is raised to the least larger size of the range that fits.
adaptalloc never raises a limit, so a job sized where T(n) > L is killed at L whatever the
limit rule says, and submitted again: its node-hours are lost and the queue pays twice
(Srinivasan et al., "Effective selection of partition sizes for moldable scheduling of
parallel jobs", HiPC 2002: a size is judged by what it costs the other jobs, and a killed
run costs them its whole allocation). decide.py applies it to the chosen size and to a
released range's low end; where the pessimistic runtime does not rise with the size it only
ever raises a size, toward the user's request and Slurm's greedy choice. A size stays when
it fits or when the job gave no limit. When no size from it up to the range's maximum fits
but a smaller one does, the chosen size is lowered to the largest that does (`fits_below`):
the pessimistic runtime then rises with the size (a later, slower phase of the curve, or its
interval widening past the largest size its runs saw), so the smaller size is one the curve
vouches for, and one a busier partition would have given the job. When no size of the range
fits, the curve cannot say at which size the user's limit holds (a curve of heterogeneous
runs whose noise dwarfs the limit's information, or a limit too short for any size): the job
is left as submitted, where Slurm's own choice and the user's limit meet as they would
without adaptalloc. Pinning it anyway, at the size the rules liked, was measured to kill
more runs than Slurm's greedy choice (docs/science/queue-cost.md). Except on a heavily
loaded partition (decide.py, `_flat_range`): there the job is released from the least size
m from the rules' up where the pessimistic runtime comes within FLAT_TOLERANCE of its least
over the range (`flat_from`), up to a multiple of m. No size is predicted to finish it
sooner than m, and the user's limit stands. On a busy partition Slurm's greedy choice gives
the job what happens to be free, often less; starting it at m at least, and on more nodes
when they are free, took the kills below greedy's (docs/science/heterogeneous-runs.md, "The
targets, honestly"). Not on a quieter one: there greedy gives the range's top, which a flat
learned curve may undersell (measured: more kills, slower).

Then bounded:

* never above L: adaptalloc sets the limit as root, which skips QOS limits, so a limit above
  the user's own request would give the job time the user never asked for;
* never below time_limit_floor_min, nor below the pessimistic runtime ⌈T⁺(n)/60 · safety⌉ (the
  curve's runtimes are in seconds), except that L stays the ceiling (the reason says when the
  curve predicts more than L).

L itself stands, untouched, where shortening it would change what Slurm decides rather than
how long the job may run:

* L above the job's maximum (the tightest of the partition's MaxTime and the QOS's and the
  association's MaxWall, `ClusterState.max_time_min`): Slurm keeps such a job pending, or
  refuses it. Any shorter limit the curve justified would make it startable, and the kill
  guard would later give the job back L, beyond the maximum. adaptalloc never makes a job
  startable that Slurm would not start, so the limit stays as the user wrote it and Slurm
  decides. Every limit the decision does set is then at most L, so at most the maximum;
* Slurm enforces association and QOS limits (`ClusterState.limits_enforced`): only an
  operator may raise a running job's limit (Slurm 22.05, job_mgr.c ``_update_job``: a
  coordinator or the user may only lower it), and an operator's raise marks the limit as set
  by an administrator, which Slurm's wall-time and TRES-minute checks then skip. The kill
  guard could give a shortened limit back only by lifting those checks, so the limit is not
  shortened at all.

An unreliable curve never shortens a limit: when the curve is not identified, has a
reliability problem (predictor/reliability.py) or a fit_error above max_fit_error, the user's
L stands. A curve of heterogeneous runs whose noise is estimated
(predictor/heterogeneous.py) is judged instead by that noise and its shape's misfit: it
shortens a limit only where both are within max_fit_error (its runs, once their limits are
taken into account, as tight as a plain curve's must be), and its interval's residual holds
the noise: a run of the job's own input may fall that far from the prediction. A noisier one
sizes jobs but leaves the user's limit as written (kills cost the user more than the
backfilling a shorter limit gains). Without a user limit the decision leaves the
limit alone (None: the partition's default applies, which a pessimistic prediction cannot know
to be safe); likewise without a usable curve, when the job is left as submitted, or when
scale_time_limit is off.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from policies.config import PolicySettings
from policies.inputs import ClusterState, Request
from policies.profile import RuntimeProfile
from policies.rules import number, percent
from predictor import Curve
from predictor.downey import BoolArray, FloatArray
from predictor.heterogeneous import judged_by_noise
from predictor.intervals import LEVEL


@dataclass(frozen=True)
class TimeLimit:
    """minutes: the limit to set, or None to leave the job's limit as it is."""

    minutes: int | None
    reason: str
    #: For the decision's own reason: set when the prediction exceeds the user's own limit,
    #: which stands.
    note: str = ""


def _ceil(minutes: float) -> int:
    """Whole minutes, rounding up but forgiving float noise (12.0000000001 -> 12)."""
    return max(1, math.ceil(minutes - 1e-9))


def untrusted_because(curve: Curve, settings: PolicySettings) -> str:
    """Why the curve must not shorten a limit, or "" when it may."""
    if not curve.identified:
        return "the curve is not identified"
    if not curve.reliable:
        problems = ", ".join(sorted({p.problem for p in curve.diagnostics.reliability}))
        return f"the curve is not reliable ({problems})"
    cov = curve.covariate
    if cov is not None and judged_by_noise(curve):
        spread = max(cov.noise, cov.misfit)
        if not spread <= settings.max_fit_error:
            return (
                f"its runs scatter by {number(100.0 * spread)}% around it once their limits "
                f"are taken into account, more than max_fit_error "
                f"{number(100.0 * settings.max_fit_error)}% (a curve of heterogeneous runs)"
            )
        return ""
    if not (curve.fit_error <= settings.max_fit_error and curve.fit_error < 1.0):
        return (
            f"its fitting error {number(100.0 * curve.fit_error)}% exceeds max_fit_error "
            f"{number(100.0 * settings.max_fit_error)}%"
        )
    return ""


@dataclass(frozen=True)
class Bounds:
    """T⁺(chosen) and T⁻(ref), seconds, and how they were taken (for the reason)."""

    upper: float
    lower: float
    how: str


def legacy_margin(curve: Curve) -> bool:
    """A curve stored before its residual was kept: residual 0 although its runs miss it."""
    return curve.residual == 0.0 and curve.fit_error > 0.0


def pessimistic_bounds(profile: RuntimeProfile, chosen: int, ref: int) -> Bounds:
    """(T⁺(chosen), T⁻(ref)): the 90% prediction interval's upper end at `chosen` and lower
    end at `ref`, or T·(1±m) with the fit error m for a curve without a residual."""
    curve = profile.curve
    if legacy_margin(curve):
        m = curve.fit_error
        return Bounds(
            profile.at(chosen) * (1.0 + m),
            profile.at(ref) * (1.0 - m),
            f"T({chosen})·(1+m)/(T({ref})·(1-m)) with the fit error m = {number(100.0 * m)}% "
            "(the curve has no residual for an interval)",
        )
    low, high = curve.runtime_interval(
        np.array([float(ref), float(chosen)]),
        runtime=np.array([profile.at(ref), profile.at(chosen)]),
    )
    return Bounds(
        float(high[1]),
        float(low[0]),
        f"T⁺({chosen})/T⁻({ref}), the ends of the fit's {percent(LEVEL)} prediction interval",
    )


def pessimistic_runtime(profile: RuntimeProfile, n: int) -> float:
    """T⁺(n): the upper end of the curve's prediction interval (module doc)."""
    return pessimistic_bounds(profile, n, n).upper


def _left_alone(
    user: int | None,
    profile: RuntimeProfile | None,
    chosen: int | None,
    cluster: ClusterState,
    settings: PolicySettings,
) -> str:
    """Why the user's limit stands as it is, or "" when it is rescaled."""
    if chosen is None:
        return "the job is left as submitted, time limit included"
    if user is None:
        return "the job gave no time limit, so the partition's default applies"
    beyond = _beyond_maximum(user, cluster)
    if beyond:
        return beyond
    if not settings.scale_time_limit:
        return f"scale_time_limit is off, so the user's {user} min stand"
    return _curve_cannot(user, profile, chosen, settings)


def _curve_cannot(
    user: int, profile: RuntimeProfile | None, chosen: int, settings: PolicySettings
) -> str:
    """Why the curve may not shorten the user's limit at `chosen` nodes, or ""."""
    if profile is None:
        return f"without a usable curve the user's {user} min stand"
    untrusted = untrusted_because(profile.curve, settings)
    if untrusted:
        return f"{untrusted}, so it never shortens a limit: the user's {user} min stand"
    return _past_the_data(profile, chosen, user)


def _beyond_maximum(user: int, cluster: ClusterState) -> str:
    """Why Slurm's limits leave the user's limit as written (module docstring), or ""."""
    maximum = cluster.max_time_min
    if maximum is not None and user > maximum:
        return (
            f"the user's {user} min exceed the job's maximum of {maximum} min (partition "
            "MaxTime, QOS or association MaxWall), so the limit is left as written and Slurm "
            "decides whether the job may start"
        )
    if cluster.limits_enforced:
        return (
            "Slurm enforces association and QOS limits, under which no shortened limit could "
            f"be given back without lifting them, so the user's {user} min stand"
        )
    return ""


def _past_the_data(profile: RuntimeProfile, chosen: int, user: int) -> str:
    """Why `chosen` is beyond what the runs show (the user's limit then stands), or ""."""
    largest = profile.curve.largest_observed
    if chosen <= largest:
        return ""
    return (
        f"{chosen} nodes lie beyond the largest observed size {largest}, where the curve is a "
        f"guess (runtimes can even grow there), so the user's {user} min stand"
    )


def reference_size(request: Request, settings: PolicySettings) -> int:
    """The size the user's limit is read as written for (time_limit_reference)."""
    return request.min_nodes if settings.time_limit_reference == "min" else request.max_nodes


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
    alone = _left_alone(user, profile, chosen, cluster, settings)
    if alone or user is None or profile is None or chosen is None:
        return TimeLimit(None, alone)

    ref = reference_size(request, settings)
    bounds = pessimistic_bounds(profile, chosen, ref)
    t_chosen = bounds.upper
    ratio = t_chosen / bounds.lower
    safety = settings.time_limit_safety_factor
    minutes = _ceil(user * ratio * safety)
    why = (
        f"{user} min written for {ref} nodes × pessimistic runtime ratio {bounds.how} = "
        f"{number(ratio)} × safety {safety:g} gives {minutes} min"
    )
    predicted = _ceil(t_chosen / 60.0 * safety)
    if minutes < settings.time_limit_floor_min and settings.time_limit_floor_min >= predicted:
        minutes = settings.time_limit_floor_min
        why += f", raised to the floor of {minutes} min"
    if minutes < predicted:
        minutes = predicted
        why += (
            f", raised to the pessimistic runtime {number(t_chosen / 60.0)} min × safety "
            f"{safety:g} = {predicted} min"
        )
    note = ""
    if minutes > user:
        minutes = user
        why += f", kept at the user's {user} min: adaptalloc never raises a limit"
        if predicted > user:
            note = (
                f"the curve predicts {predicted} min with its margins, more than the user's "
                f"{user} min limit, which stands"
            )
    return TimeLimit(minutes, why, note)


def pessimistic_runtimes(profile: RuntimeProfile) -> FloatArray:
    """T⁺(n) at every size of the profile's range (`pessimistic_bounds`, vectorised)."""
    curve = profile.curve
    if legacy_margin(curve):
        out: FloatArray = profile.runtime * (1.0 + curve.fit_error)
        return out
    return curve.runtime_interval(profile.sizes, runtime=profile.runtime)[1]


def upper_runtimes(
    profile: RuntimeProfile, limit_min: int, written_for: int | None = None
) -> FloatArray:
    """The runtime at every size of the profile's range that the size check holds against
    the user's limit L (module doc): for a curve of heterogeneous runs that knows its runs'
    limit use u_q and a limit written for r nodes in the range, 60·L·e^(u_q)·T(n)/T(r)
    (predictor/covariate.py, "Limit use"); else T⁺(n), `pessimistic_runtimes`."""
    cov = profile.curve.covariate
    if cov is None or cov.use is None or written_for is None:
        return pessimistic_runtimes(profile)
    if not profile.lo <= written_for <= profile.hi:
        return pessimistic_runtimes(profile)
    out: FloatArray = 60.0 * limit_min * math.exp(cov.use) * profile.runtime
    return out / profile.at(written_for)


def fitting_sizes(
    profile: RuntimeProfile,
    limit_min: int,
    settings: PolicySettings,
    written_for: int | None = None,
) -> BoolArray:
    """At every size of the profile's range, whether `upper_runtimes` × safety ≤ 60·L: the
    size check's one test (module doc), which `fits_limit` and `fits_below` search."""
    upper = upper_runtimes(profile, limit_min, written_for)
    out: BoolArray = upper * settings.time_limit_safety_factor <= 60.0 * limit_min
    return out


#: How close to its least over the range the pessimistic runtime must come for `flat_from`
#: (5%). Chosen on the quick fair benchmark's choice seeds 1-10 among 0, 5% and 20% (0 pins
#: near the range's top: mean ratio 0.900; 20% pins lower: 0.859, but twice the kills in
#: excess of greedy's), scored on seeds 101-110 (docs/science/heterogeneous-runs.md, "The
#: targets, honestly").
FLAT_TOLERANCE = 0.05


def flat_from(
    profile: RuntimeProfile, n: int, limit_min: int, written_for: int | None = None
) -> int | None:
    """The least size m ≥ n of the profile's range whose `upper_runtimes` is within
    FLAT_TOLERANCE of its least over the range: no larger size is predicted to finish the
    job sooner, so none carries less risk of its limit (module doc). None when no size from
    n up comes that close: the least lies below n, where the pessimistic runtime rises past
    it (a slower later phase, or the interval widening past the runs' sizes)."""
    upper = upper_runtimes(profile, limit_min, written_for)
    flat = upper[n - profile.lo :] <= float(np.min(upper)) * (1.0 + FLAT_TOLERANCE)
    return n + int(np.argmax(flat)) if flat.any() else None


def fits_limit(
    profile: RuntimeProfile,
    n: int,
    limit_min: int | None,
    settings: PolicySettings,
    written_for: int | None = None,
) -> int | None:
    """The least size m ≥ n of the profile's range whose `upper_runtimes` × safety ≤ 60·L
    (module doc), the limit written for `written_for` nodes; n itself when it fits or when
    the job gave no limit; None when no size from n up fits."""
    if limit_min is None or not profile.lo <= n <= profile.hi:
        return n
    fits = fitting_sizes(profile, limit_min, settings, written_for)[n - profile.lo :]
    if not fits.any():
        return None
    return n + int(np.argmax(fits))


def fits_below(
    profile: RuntimeProfile,
    n: int,
    limit_min: int,
    settings: PolicySettings,
    written_for: int | None = None,
    among: Collection[int] | None = None,
) -> int | None:
    """The largest size m < n of the profile's range (and `among` these sizes, when given)
    whose `upper_runtimes` × safety ≤ 60·L, None when none is: the size check's last
    resort when no size from n up fits (`fits_limit`). The pessimistic runtime can rise
    with the size, where the curve slows down past a size (a later phase) or its
    interval widens past the largest size its runs saw; a smaller size that fits is then
    still a size the curve vouches for, and the one a busier partition would have given
    the job."""
    if not profile.lo < n <= profile.hi:
        return None
    ok = fitting_sizes(profile, limit_min, settings, written_for)[: n - profile.lo]
    if among is not None:
        ok &= np.isin(profile.sizes[: n - profile.lo], list(among))
    fits = np.flatnonzero(ok)
    return profile.lo + int(fits[-1]) if fits.size else None
