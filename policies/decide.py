"""One decision: from a job's range, its application's curve and the cluster's state to a size,
a time limit and the reason.

The flow (rules.py states each rule and its literature):

1. The range. [lo, hi] is the user's range cut to the partition's limit (MaxNodes and the
   partition's size; at most MAX_NODES = 2^20 in any case). If even the user's minimum
   exceeds that limit the job is left as submitted (rule "partition_limit"): adaptalloc never
   goes below what the user asked for.
2. Feasible sizes (feasible.py): the user's tag and the curve's "optimized_sizes" pattern,
   within [lo, hi].
3. No curve: the fallback (leave as submitted, or the range's min or max).
4. With a curve, its runtime is evaluated once at every size in [lo, hi] (profile.py), and
   every rule proposes a size: efficiency, pws, cap, load_adaptive and exploration. They are
   all listed in the decision, for ``--explain``. The time limit's interval reads the same
   runtimes, and so does a caller's budget count through `decide_with_runtime` (the
   simulator's; the daemon's decider calls `decide` and evaluates T at the chosen size once
   more).
5. The choice. Exploration wins when it is eligible (an unreliable curve, a suggested size that
   is feasible and inside the range, within budget) and some size from the one it proposes up
   fits the user's limit (`fits_limit`, below: a run killed at its limit teaches the curve
   nothing); the size is raised to the least that fits, and, with limit_to_idle, it can
   start now (rules.py, `exploration_waits`). Otherwise an unusable curve (fitting
   error above max_fit_error, or a problem of its reliability judgment that says it may be
   wrong: `DISTRUSTING`) gets the fallback. Otherwise the configured strategy's candidate
   (load_adaptive, efficiency or pws), capped at the maximum useful size (or, where the
   runs show no knee, the largest size they ran),
   then raised, if need be, to the least size whose pessimistic runtime fits the user's own
   limit (time_limit.py, `fits_limit`): adaptalloc never raises a limit, so a size the curve
   says overruns it would be killed. When no size fits, the job gets the fallback, except
   on a heavily loaded partition (and a fallback other than the minimum), where it is
   released from where the pessimistic runtime stops falling up to FLAT_RANGE_FACTOR times
   that (`_flat_range`; time_limit.py, `flat_from`).
6. The constraints: the size is snapped onto the feasible sizes (down to the largest not above
   it, else up to the smallest in the range); when no feasible size lies in the range the
   choice is kept and the reason says so. Every step keeps the size inside [lo, hi].
7. The release (release = "range"): a size chosen by the strategy is widened to the
   narrowed range [min(size, e), max(size, u)], e the efficient and u the larger useful size,
   its low end raised to fit the user's limit as the size is, so that Slurm picks within it
   at start time. Exploration and the fallback stay pinned, and
   so does a job whose feasible sizes are restricted (a range would admit the others).
8. The time limit for that size, or for the range's smallest size (time_limit.py).

`decide` is a pure function: the same inputs always give the same decision.
"""

from __future__ import annotations

import math

from policies.config import DEFAULTS, PolicySettings
from policies.decision import (
    CAP,
    EFFICIENCY,
    EXPLORATION,
    FALLBACK,
    LOAD_ADAPTIVE,
    PARTITION_LIMIT,
    PWS,
    Candidate,
    Decision,
)
from policies.feasible import Allowed, allowed_sizes, pattern_feasible, snap
from policies.inputs import ClusterState, ExplorationBudget, Request
from policies.profile import RuntimeProfile
from policies.rules import (
    cap_rule,
    efficiency_rule,
    exploration_rule,
    exploration_waits,
    fallback_rule,
    heavily_loaded,
    load_adaptive_rule,
    nodes,
    number,
    percent,
    pws_rule,
    refused_top,
)
from policies.time_limit import (
    FLAT_TOLERANCE,
    fits_below,
    fits_limit,
    fitting_sizes,
    flat_from,
    reference_size,
    time_limit,
    upper_runtimes,
)
from predictor import Curve
from predictor.diagnostics import ReliabilityProblem
from predictor.heterogeneous import judged_by_noise

NO_BUDGET = ExplorationBudget()
#: The top of the range a job no size fits is released with on a heavily loaded partition,
#: as a multiple of its least size m (`_flat_range`): [m, min(hi, ⌊1.5·m⌋)]. Chosen on the
#: quick fair benchmark's choice seeds 1-10 as the least of 1 (a pin at m), 1.25, 1.5, 2 and
#: the range's top whose kills, summed over the 24 cells, are at most greedy's; scored on
#: seeds 101-110 (docs/science/heterogeneous-runs.md, "The targets, honestly").
FLAT_RANGE_FACTOR = 1.5
#: The most nodes adaptalloc ever considers (2^20). No cluster has more; without a partition
#: limit it keeps a mistyped range from making a decision evaluate the curve at 10^9 sizes.
MAX_NODES = 1 << 20


#: The problems of the reliability judgment that say the curve may be wrong, so it sizes no
#: job: high_fit_error (its runs deviate from it), runner_up (another curve fits them as
#: well), mixed_sizes (its key mixes problem sizes), user_influence (one user's runs moved a
#: shared curve, plugin/learning/sharing.py). The others leave it usable: first_piece_only
#: says only that every run lies before the knee, so A and σ are not known apart (within the
#: runs' sizes every instance that fits them agrees, and exploration suggests the run that
#: finds the knee); a curve borrowed from sibling problem sizes (predictor/sizes.py) is the
#: best guess until the size has runs. The time limit refuses them all (time_limit.py).
DISTRUSTING = frozenset(
    {"high_fit_error", "runner_up", "mixed_sizes", "user_influence", "shape_misfit"}
)


def _distrusts(problem: ReliabilityProblem, settings: PolicySettings) -> bool:
    """Whether `problem` says the curve may be wrong (`DISTRUSTING`). high_fit_error is judged
    at the policy's own max_fit_error, as the curve's fit error is: it flags the Downey fit's
    error where another model of the zoo was chosen (whose error fit_error then holds)."""
    if problem.problem == "high_fit_error":
        return not problem.detail.get("fit_error", math.inf) <= settings.max_fit_error
    return problem.problem in DISTRUSTING


def unusable_because(curve: Curve, settings: PolicySettings) -> str:
    """Why the curve cannot be used for sizing, or "" when it can.

    A curve of heterogeneous runs whose noise is estimated (predictor/heterogeneous.py) is
    judged by its shape's misfit against that noise (its "shape_misfit" problem), not by its
    raw fit error, which holds the runs' input variation."""
    if not all(math.isfinite(x) for x in (curve.A, curve.sigma, curve.t1)):
        return "the curve's parameters are not finite"
    if not judged_by_noise(curve) and not curve.fit_error <= settings.max_fit_error:
        return (
            f"the curve is unusable: its fitting error {percent(curve.fit_error)} exceeds "
            f"max_fit_error {percent(settings.max_fit_error)}"
        )
    distrusted = sorted(
        {p.problem for p in curve.diagnostics.reliability if _distrusts(p, settings)}
    )
    if distrusted:
        return (
            f"the curve is unusable: its reliability judgment distrusts it "
            f"({', '.join(distrusted)})"
        )
    return ""


def _strategy_choice(
    by_rule: dict[str, Candidate], settings: PolicySettings
) -> tuple[int, str, str]:
    """(size, rule, reason) of the configured strategy, capped at the maximum useful size."""
    chosen = by_rule[settings.strategy]
    cap = by_rule[CAP]
    if cap.nodes is not None and chosen.size > cap.nodes:
        return (
            cap.nodes,
            CAP,
            f"{cap.reason}; the {settings.strategy} rule's {chosen.size} are capped to {cap.nodes}",
        )
    return chosen.size, chosen.rule, chosen.reason


def _constrained(n: int, allowed: Allowed) -> tuple[int, str]:
    """Snap `n` onto the allowed sizes; return the size and what to add to the reason."""
    notes = [allowed.note] if allowed.note else []
    if allowed.sizes is not None:
        snapped = snap(n, allowed.sizes)
        if snapped < n:
            notes.append(
                f"snapped down to {nodes(snapped)}, the largest size not above {n} among "
                f"{allowed.what}"
            )
        elif snapped > n:
            notes.append(
                f"snapped up to {nodes(snapped)}, the smallest size in the range among "
                f"{allowed.what}"
            )
        n = snapped
    return n, "".join(f"; {note}" for note in notes)


def _feasible_fit(
    profile: RuntimeProfile,
    fitting: int,
    allowed: Allowed,
    request: Request,
    settings: PolicySettings,
) -> int | None:
    """`fitting` (a size that fits the user's limit) as the constraints will snap it (step
    6), unless the snapped size overruns the limit (a smaller one, or a larger one where the
    pessimistic runtime rises with the size): then the least allowed size above it that
    fits, None when there is none."""
    if allowed.sizes is None or request.time_limit_min is None:
        return fitting
    snapped = snap(fitting, allowed.sizes)
    if not profile.lo <= snapped <= profile.hi:
        return fitting
    written_for = reference_size(request, settings)
    fits = fitting_sizes(profile, request.time_limit_min, settings, written_for)
    if fits[snapped - profile.lo]:
        return fitting
    above = [a for a in allowed.sizes if fitting < a <= profile.hi and fits[a - profile.lo]]
    return above[0] if above else None


def _fitting(
    profile: RuntimeProfile,
    size: int,
    reason: str,
    request: Request,
    settings: PolicySettings,
    allowed: Allowed,
) -> tuple[int | None, str]:
    """The size raised to the least one whose predicted runtime fits the user's limit
    (time_limit.py, fits_limit), and among `allowed` sizes, if some are, to the least that
    the constraints keep; lowered to the largest smaller (allowed) size that fits when none
    from it up does (`fits_below`); the reason with why; (None, why) when no size fits, and
    the job is to be left as submitted."""
    written_for = reference_size(request, settings)
    limit = request.time_limit_min
    fitting = fits_limit(profile, size, limit, settings, written_for)
    least = fitting
    if fitting is not None:
        fitting = _feasible_fit(profile, fitting, allowed, request, settings)
    safety = settings.time_limit_safety_factor
    below = None
    if fitting is None and limit is not None:
        below = fits_below(profile, size, limit, settings, written_for, allowed.sizes)
    if below is not None:
        return below, (
            f"{reason}, but its pessimistic runtime × safety {safety:g} exceeds the user's "
            f"{limit} min at every size from {nodes(size)} to {nodes(profile.hi)}"
            f"{'' if least is None else f' among {allowed.what}'}; lowered to "
            f"{nodes(below)}, the largest smaller size where it fits (the curve's runtime "
            "or its uncertainty grows past that size)"
        )
    if fitting is None:
        return None, (
            f"{reason}, but its pessimistic runtime × safety {safety:g} exceeds the user's "
            f"{request.time_limit_min} min at every size from {nodes(size)} to "
            f"{nodes(profile.hi)}{'' if least is None else f' among {allowed.what}'}, so the "
            "curve cannot tell at which size the job finishes within its limit"
        )
    if fitting == size or request.time_limit_min is None:
        return size, reason
    upper = upper_runtimes(profile, request.time_limit_min, written_for)[size - profile.lo]
    return fitting, reason + (
        f"; raised to {nodes(fitting)}, the least size whose pessimistic runtime × safety "
        f"{safety:g} fits the user's {request.time_limit_min} min (at {size} it would be "
        f"{number(upper * safety / 60.0)} min, and adaptalloc never raises a "
        "limit, so the job would be killed)"
        + (f", among {allowed.what}" if fitting != least else "")
    )


def _flat_range(
    profile: RuntimeProfile,
    size: int,
    reason: str,
    request: Request,
    cluster: ClusterState,
    settings: PolicySettings,
    allowed: Allowed,
) -> tuple[int | None, int | None, str]:
    """When no size fits the user's limit (`_fitting` gave None and `reason` says so): on a
    heavily loaded partition, a pinned release with no listed sizes, (m, top, reason) with m
    the least size from `size` up whose pessimistic runtime is within FLAT_TOLERANCE of its
    least over the range (time_limit.py, `flat_from`) and top = min(hi, ⌊FLAT_RANGE_FACTOR·m⌋),
    None when that is m (a pin). No size is predicted to finish the job sooner than m, but
    the prediction is pessimistic and the limit tight: Slurm may give it up to top when those
    nodes are free at its start, and a run on more nodes is less at risk of its limit.
    (None, None, reason) otherwise, or when no size from `size` up comes that close (the
    least lies below it): the job gets the fallback. So does it where the fallback is the
    user's minimum: m would give a job more nodes on a busier partition than on a quieter
    one, against the load rule (more pressure never gives more nodes)."""
    limit = request.time_limit_min
    if (
        limit is None
        or allowed.sizes is not None
        or settings.release != "pinned"
        or settings.fallback == "min"
        or not heavily_loaded(cluster, settings)
    ):
        return None, None, reason
    m = flat_from(profile, size, limit, reference_size(request, settings))
    if m is None:
        return None, None, reason
    top = min(profile.hi, math.floor(FLAT_RANGE_FACTOR * m))
    flat = (
        f"where its pessimistic runtime comes within {FLAT_TOLERANCE:.0%} of the least the "
        "range allows (no size Slurm could give it is predicted to finish it sooner)"
    )
    if top > m:
        how = (
            f"released as {m}-{top} nodes all the same: from {nodes(m)}, {flat}, up to "
            f"{FLAT_RANGE_FACTOR:g}x that, which Slurm gives it when free at its start (the "
            "prediction is pessimistic, and more nodes are less at risk of the limit)"
        )
    else:
        how = f"pinned at {nodes(m)} all the same, {flat}"
    return (
        m,
        top if top > m else None,
        f"{reason}; on a partition this busy it is {how}; the user's limit stands",
    )


def _release_range(
    size: int,
    rule: str,
    by_rule: dict[str, Candidate],
    allowed: Allowed,
    lo: int,
    hi: int,
    fitting: RuntimeProfile | None = None,
    limit_min: int | None = None,
    settings: PolicySettings = DEFAULTS,
    written_for: int | None = None,
) -> tuple[int, int | None, str]:
    """(smallest size, largest size or None when pinned, what to add to the reason). With
    `fitting`, the range's low end is raised to the least size whose predicted runtime fits
    the user's `limit_min` (time_limit.py, fits_limit)."""
    if rule not in (LOAD_ADAPTIVE, EFFICIENCY, PWS, CAP):
        return size, None, ""
    if allowed.sizes is not None:
        return size, None, f"; pinned at {nodes(size)}, since only {allowed.what} are feasible"
    eff, pws, cap = by_rule[EFFICIENCY].size, by_rule[PWS].size, by_rule[CAP].nodes
    small, large = min(eff, pws), max(eff, pws)
    if cap is not None:
        large = max(small, min(large, cap))
    low = max(lo, min(size, small))
    if fitting is not None:
        # `size` fits already (decide raised it so), hence some size from `low` up does.
        low = min(size, fits_limit(fitting, low, limit_min, settings, written_for) or size)
    high = min(hi, max(size, large))
    if low == high:
        return size, None, ""
    return (
        low,
        high,
        f"; released as the range {low}-{high} nodes (the efficient to the larger useful "
        "size), so that Slurm picks the size when the job starts; the time limit fits "
        f"{nodes(low)}",
    )


def decide(
    request: Request,
    curve: Curve | None,
    cluster: ClusterState,
    settings: PolicySettings = DEFAULTS,
    budget: ExplorationBudget = NO_BUDGET,
    missing: str = "no curve is known for this application",
) -> Decision:
    """Choose the node count and time limit for `request` (module docstring: the flow).

    `missing` says why `curve` is None, for the fallback's reason.
    """
    return _decide(request, curve, cluster, settings, budget, missing)[0]


def decide_with_runtime(
    request: Request,
    curve: Curve | None,
    cluster: ClusterState,
    settings: PolicySettings = DEFAULTS,
    budget: ExplorationBudget = NO_BUDGET,
    missing: str = "no curve is known for this application",
) -> tuple[Decision, float | None]:
    """`decide`, and the curve's runtime T(nodes) at the decision's size from the runtimes the
    decision evaluated (None without a curve or a size): what a caller counts the exploration
    budget's node-hours with, without evaluating the curve once more."""
    decision, profile = _decide(request, curve, cluster, settings, budget, missing)
    if profile is None or decision.nodes is None:
        return decision, None
    return decision, profile.at(decision.nodes)


def _capped(size: int, hi: int, requested: int, limit: int | None) -> str:
    """What to add to the reason when the size stops at the partition's or adaptalloc's
    largest below the user's maximum."""
    if not size == hi < requested:
        return ""
    most = (
        f"the partition allows at most {limit}"
        if limit is not None
        else f"adaptalloc considers at most {MAX_NODES:,}"
    )
    return f"; {most} nodes per job"


def _exploration(
    profile: RuntimeProfile,
    request: Request,
    cluster: ClusterState,
    allowed: Allowed,
    settings: PolicySettings,
    budget: ExplorationBudget,
) -> tuple[Candidate, bool]:
    """The exploration candidate and whether the job is explored: an eligible size raised to
    fit the user's limit (a run killed at its limit teaches nothing) that can start now."""
    explore = exploration_rule(profile, allowed, budget, settings, request.job_id)
    if not explore.eligible:
        return explore.candidate, False
    size, why = _fitting(
        profile, explore.candidate.size, explore.candidate.reason, request, settings, allowed
    )
    if size is None:
        return explore.candidate, False
    waits = exploration_waits(size, profile.lo, cluster, settings)
    if waits:
        return Candidate(EXPLORATION, None, f"{why}, but {waits}"), False
    return Candidate(EXPLORATION, size, why), True


def _with_curve(
    request: Request,
    profile: RuntimeProfile,
    cluster: ClusterState,
    allowed: Allowed,
    settings: PolicySettings,
    budget: ExplorationBudget,
) -> tuple[Candidate, list[Candidate], int | None]:
    """The winning candidate with a curve (steps 4 and 5 of the flow), every candidate the
    rules proposed for the decision's list, and the top of the range the job is released
    with: the one a job the curve may not size keeps (`refused_top`), or a busy partition's
    range for a job no size fits (`_flat_range`); None: pinned, or left as submitted."""
    lo, hi, curve = profile.lo, profile.hi, profile.curve
    efficiency = efficiency_rule(profile, settings)
    pws = pws_rule(profile)
    cap = cap_rule(curve, lo, hi, cluster, settings)
    load = load_adaptive_rule(efficiency, pws, cap, cluster, settings, lo)
    explore, explored = _exploration(profile, request, cluster, allowed, settings, budget)
    candidates = [efficiency, pws, cap, load, explore]
    if explored:
        return explore, candidates, None
    unusable = unusable_because(curve, settings)
    if not unusable:
        chosen, rule, reason = _strategy_choice({c.rule: c for c in candidates}, settings)
        fitting, reason = _fitting(profile, chosen, reason, request, settings, allowed)
        top = None
        if fitting is None:
            fitting, top, reason = _flat_range(
                profile, chosen, reason, request, cluster, settings, allowed
            )
        if fitting is not None:
            return Candidate(rule, fitting, reason), candidates, top
        unusable = reason
    cut = None
    if settings.fallback == "as_submitted" and allowed.sizes is None:
        cut = refused_top(curve, lo, hi)
    if cut is not None and cut.top is not None:
        winner = Candidate(FALLBACK, lo, f"{unusable}, so it is {cut.words}")
        # A top at the minimum is a pin there, not a range.
        return winner, [*candidates, winner], cut.top if cut.top > lo else None
    if cut is not None:  # a cut its runs' kills forbid: the range stays whole
        unusable = f"{unusable}, and {cut.words}"
    winner = fallback_rule(request, lo, hi, unusable, settings)
    return winner, [*candidates, winner], None


def _too_large(lo: int, limit: int | None) -> Decision | None:
    """The job left as submitted when its minimum exceeds the partition's or adaptalloc's
    largest size, else None."""
    if limit is not None and lo > limit:
        return Decision(
            None,
            None,
            PARTITION_LIMIT,
            f"the job asks for at least {nodes(lo)} but the partition allows at most "
            f"{limit} per job, so it is left as submitted",
        )
    if lo > MAX_NODES:
        return Decision(
            None,
            None,
            PARTITION_LIMIT,
            f"the job asks for at least {nodes(lo)}, more than the {MAX_NODES:,} adaptalloc "
            "considers, so it is left as submitted",
        )
    return None


def _decide(
    request: Request,
    curve: Curve | None,
    cluster: ClusterState,
    settings: PolicySettings,
    budget: ExplorationBudget,
    missing: str,
) -> tuple[Decision, RuntimeProfile | None]:
    """The decision (module docstring: the flow) and the runtime profile it evaluated."""
    lo, limit = request.min_nodes, cluster.node_limit
    too_large = _too_large(lo, limit)
    if too_large is not None:
        return too_large, None
    hi = min(request.max_nodes, MAX_NODES if limit is None else limit)
    pattern = pattern_feasible(curve.diagnostics.patterns) if curve is not None else None
    allowed = allowed_sizes(lo, hi, request.feasible, pattern)

    candidates: list[Candidate] = []
    profile: RuntimeProfile | None = None
    usable: RuntimeProfile | None = None
    max_nodes: int | None = None
    if curve is None:
        winner = fallback_rule(request, lo, hi, missing, settings)
        candidates.append(winner)
        size, rule, reason = winner.nodes, winner.rule, winner.reason
    else:
        # A covariate curve's runtimes for this job (predictor/heterogeneous.py).
        curve = curve.for_limit(request.time_limit_s, reference_size(request, settings))
        profile = RuntimeProfile.of(curve, lo, hi, (request.min_nodes, request.max_nodes))
        winner, sized, max_nodes = _with_curve(request, profile, cluster, allowed, settings, budget)
        candidates += sized
        size, rule, reason = winner.nodes, winner.rule, winner.reason
        usable = profile if winner.rule != FALLBACK else None

    if size is not None:
        size, notes = _constrained(size, allowed)
        reason += notes + _capped(size, hi, request.max_nodes, limit)
        if settings.release == "range" and usable is not None:
            by_rule = {c.rule: c for c in candidates}
            size, max_nodes, released = _release_range(
                size,
                rule,
                by_rule,
                allowed,
                lo,
                hi,
                usable,
                request.time_limit_min,
                settings,
                reference_size(request, settings),
            )
            reason += released
    limit_for = time_limit(request, usable, size, cluster, settings)
    if limit_for.note:
        reason += f"; {limit_for.note}"
    return Decision(
        size, limit_for.minutes, rule, reason, tuple(candidates), limit_for.reason, max_nodes
    ), profile
