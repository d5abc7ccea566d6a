"""The allocation rules. Each proposes a size in [lo, hi] (the user's range cut to the
partition's limit) and says why in one sentence with its numbers.

efficiency
    The largest size whose predicted efficiency is at least a threshold θ. Efficiency is
    E(n) = T(1)/(n·T(n)) against the model's T(1), or n0·T(n0)/(n·T(n)) against the smallest
    observed size n0 when T(1) was not observed (as `predictor.Curve` defines them). Every
    whole size in the range is evaluated: under the Downey model E is non-increasing (every
    piece of T(n)/T(1) has the form α + β/n with α, β ≥ 0, so n·T(n) grows), but a stepwise
    curve or another selected model need not be. Efficiency-based allocation beats uninformed
    equal partitioning (Chiang and Vernon, JSSPP 1996; ADEPT [6]).
pws
    The processor working set, the smallest n maximising η(n) = S(n)²/n (Ghosal, Serazzi and
    Tripathi, IEEE TSE 1991; ADEPT section III.B): the balance between speedup and the nodes
    spent on it. Evaluated over the range (η ∝ 1/(n·T(n)²)); for the Downey model η is
    quasi-concave, so this is the curve's `pws_n` clamped to the range.
cap
    The maximum useful size, ⌈2A-1⌉ (low variance) or ⌈A + Aσ - σ⌉ (high variance), beyond
    which S(n) = A (ADEPT section III.B): nodes past it cannot speed the job. When the runs
    show no knee (`Curve.max_useful_n` is None) A is not identified, and the cap is the
    largest size the runs saw: the curve has no evidence of speedup past it. (Chosen over
    "nothing capped" on the quick fair benchmark, docs/science/heterogeneous-runs.md.)
    Except on a lightly loaded partition (pressure ≤ light_pressure, as load_adaptive reads
    it): there the cap is the range's maximum. Nobody waits for the nodes past the runs'
    largest size, the speedup was still growing there, and a job held below it on an idle
    machine keeps its nodes longer and leaves a remainder the next large job may not fit
    (LLNL Atlas: a job that could take the whole machine, held at 636 of its 1,152 nodes,
    ran 3 h longer, and its whole-machine successors waited as long). A run past the runs'
    sizes is the one that finds the knee. The user's limit stands past the data
    (time_limit.py), so such a run is killed only where the code slows down past its knee.
load_adaptive
    Under light load give a job more nodes, under heavy load fewer and more efficient ones
    (Naik, Setia and Squillante, JPDC 1997; Sodan and Huang's SCOJO, 2006; Barsanti and Sodan,
    JSSPP 2006; ADEPT [1]-[5]). The load is the pressure p = pending / max(idle, 1): nodes
    wanted by the jobs waiting in the partition per idle node. Three anchors in the user's
    range: its minimum lo (the most efficient size: E(n) does not rise with n), the efficient
    size e = min(efficiency, pws) and the larger useful size u = min(max(efficiency, pws), cap).
    The size slides down them as the pressure rises:

        p ≤ light_pressure                    u
        light_pressure < p < heavy_pressure   e + ⌊w·(u - e)⌋, w = (heavy - p)/(heavy - light)
        heavy_pressure ≤ p < crowded_pressure lo + ⌊v·(e - lo)⌋, v = (crowded - p)/(crowded - heavy)
        p ≥ crowded_pressure                  lo, the user's minimum

    An unknown load is neutral, w = 1/2. With limit_to_idle the size never goes past the idle
    nodes (nor below lo): a size above them waits for nodes to free, and with no estimate of
    that wait the predicted completion (wait + runtime) cannot be shown to be better. So more
    pressure never gives more nodes, and more idle nodes (other things equal) lower p and raise
    the idle limit, so they never give a smaller size.

    Why no growth past the idle nodes on a predicted completion: the rule would
    need the wait W(n) for n > idle nodes, and no input carries one the daemon can know.
    ClusterState holds counts only; Slurm's own estimate (the backfill scheduler's expected
    start, ``squeue --start``) exists only for jobs it has planned, and a held job (priority
    0) is not planned, so there is none for the size being decided; one derived from the
    running jobs' time limits (as EASY's shadow time, simulation/backfill.py) would be an
    upper bound from limits that adaptalloc itself shortens, and ignores the jobs ahead in
    the queue. Growing on such a guess could break "more idle never fewer" (the guess moves
    with the running set, not with the idle count), so the rule stays at the idle nodes.
exploration
    When the curve is not reliable and ADEPT's reliability judgment (section IX, Table 3)
    suggests a size to run next inside the range, run the job there, while the explored share
    of jobs and of predicted node-hours stays within its budget *after* this job:
    explored + 1 ≤ share·(decided + 1), likewise for node-hours. When no size is suggested
    inside the range and the job id is known, a size drawn log-uniformly in the range from a
    hash of the job id (`drawn_size`), under the same budget: randomised independently of what
    the job asks, the runs it gives let a curve of heterogeneous runs tell its shape apart
    from the users' limits (predictor/covariate.py; the randomisation of an experiment's
    design, which no confounder can follow). A draw of the range's minimum explores nothing.
    With limit_to_idle, a run is explored only when its size can start now (at most the idle
    nodes, or the user's minimum): an explored size is pinned, and one that waits for the
    machine to drain holds up the queue behind it (`exploration_waits`).
fallback
    Without a usable curve: leave the job as submitted, or give it the range's min or max.
    Left as submitted, a job whose curve the policy refuses to size with (unreliable, or no
    size fits its limit) keeps its minimum and its user's limit, but its range's top is cut
    to min(hi, max(lo, u, m)), u the curve's maximum useful size and m the median of the
    distinct sizes its runs ran at (`refused_top`): a curve too uncertain to pick a size can still
    show where its speedup stops (the cap's knee, ADEPT section III.B), and nodes past it,
    which Slurm's greedy choice at start would hand the job on a quiet machine, are held
    from the queue for nothing; m keeps the sizes the application's users ran at, the
    curve's shape aside. No knee (u unknown), a range within it, or listed sizes: left
    as submitted. The kept range is no decision made with the curve: the exploration
    budget counts it as a decided job without node-hours (`Decision.counted`). Measured on
    the quick fair benchmark: choice seeds 1-10 chose this form among the top at u alone,
    at u or the median run size (as good, but the daemon would read the runs), at u or the
    largest size, and a top for applications without a curve too; score seeds 101-110
    score it (docs/science/heterogeneous-runs.md).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from policies.config import PolicySettings
from policies.decision import (
    CAP,
    EFFICIENCY,
    EXPLORATION,
    FALLBACK,
    LOAD_ADAPTIVE,
    PWS,
    Candidate,
)
from policies.feasible import Allowed, snap
from policies.inputs import ClusterState, ExplorationBudget, Request
from policies.profile import RuntimeProfile
from predictor import Curve
from predictor.downey import FloatArray

#: Slack for comparisons of accumulated shares.
_TOL = 1e-9


def percent(fraction: float) -> str:
    """0.6 -> "60%", 0.615 -> "61.5%"."""
    text = f"{100.0 * fraction:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


def nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


def number(value: float) -> str:
    """Three significant digits, plainly: 24.3, 0.823, 1200."""
    return f"{value:.3g}" if abs(value) < 1e4 else f"{value:,.0f}"


# --- efficiency -----------------------------------------------------------------------------


def efficiency_baseline(curve: Curve, settings: PolicySettings) -> str:
    """ "t1" or "smallest_observed", resolving "auto" by whether T(1) was observed."""
    if settings.efficiency_baseline == "auto":
        return "t1" if curve.t1_known else "smallest_observed"
    return settings.efficiency_baseline


def _baseline_words(curve: Curve, baseline: str) -> str:
    if baseline == "smallest_observed":
        return f"relative to the smallest observed size, {nodes(curve.smallest_observed)}"
    if curve.t1_known:
        return "relative to the measured one-node runtime"
    return "relative to the model's estimate of the one-node runtime"


def _work_unit(profile: RuntimeProfile, baseline: str) -> float:
    """The numerator of E(n) = work / (n·T(n)): T(1), or n0·T(n0) for the smallest size n0."""
    if baseline == "t1":
        return profile.curve.t1
    n0 = profile.curve.smallest_observed
    return n0 * profile.at(n0)


def efficiencies(profile: RuntimeProfile, baseline: str) -> FloatArray:
    """E(n) at every size of the profile's range."""
    out: FloatArray = _work_unit(profile, baseline) / profile.node_time
    return out


def largest_efficient(profile: RuntimeProfile, baseline: str, threshold: float) -> int:
    """The largest n in the range with E(n) ≥ threshold, or lo - 1 when there is none.

    Every size is looked at, so curves whose efficiency is not monotone (stepwise phases,
    other models) are handled too.
    """
    ok = (efficiencies(profile, baseline) >= threshold).nonzero()[0]
    return profile.lo + int(ok[-1]) if ok.size else profile.lo - 1


def efficiency_rule(profile: RuntimeProfile, settings: PolicySettings) -> Candidate:
    curve, lo, hi = profile.curve, profile.lo, profile.hi
    baseline = efficiency_baseline(curve, settings)
    theta = settings.efficiency_threshold
    words = _baseline_words(curve, baseline)
    n = largest_efficient(profile, baseline, theta)
    at = max(n, lo)
    there = percent(_work_unit(profile, baseline) / (at * profile.at(at)))
    if n < lo:
        return Candidate(
            EFFICIENCY,
            lo,
            f"efficiency is below {percent(theta)} ({words}) already at {nodes(lo)}, the "
            f"smallest size allowed ({there} there)",
        )
    where = "through" if n == hi else "up to"
    tail = ", the largest size allowed" if n == hi else ""
    return Candidate(
        EFFICIENCY,
        n,
        f"efficiency stays at or above {percent(theta)} ({words}) {where} {nodes(n)}{tail} "
        f"({there} there)",
    )


# --- processor working set and cap ------------------------------------------------------------


def best_working_set(profile: RuntimeProfile) -> int:
    """The smallest n in the range maximising η(n) = S(n)²/n ∝ 1/(n·T(n)²).

    Ties within a relative 1e-12 go to the smallest n, as in predictor.downey.
    """
    eta = 1.0 / (profile.node_time * profile.runtime)
    # The ufunc's own reduce and nonzero: ndarray.max and np.flatnonzero add Python wrappers
    # (~2 µs a decision) around the same operations on this 1-D array.
    tied = (eta >= np.maximum.reduce(eta) * (1.0 - 1e-12)).nonzero()[0]
    return profile.lo + int(tied[0])


def pws_rule(profile: RuntimeProfile) -> Candidate:
    p = best_working_set(profile)
    g = profile.curve.pws_n
    if g == p:
        return Candidate(PWS, p, f"S(n)²/n peaks at {nodes(p)} (the processor working set)")
    if g < profile.lo or g > profile.hi:
        side = "below the job's minimum" if g < profile.lo else "above the largest size allowed"
        return Candidate(
            PWS,
            p,
            f"S(n)²/n peaks at {nodes(g)} (the processor working set), {side}; within the "
            f"range it is largest at {nodes(p)}",
        )
    return Candidate(
        PWS, p, f"S(n)²/n is largest at {nodes(p)} within the range (the processor working set)"
    )


def _knee_formula(curve: Curve) -> str:
    if curve.selected is not None:
        return f"the {curve.model} model's largest useful size"
    if curve.sigma <= 1.0:
        return f"2A-1 with A = {number(curve.A)}"
    return f"A+Aσ-σ with A = {number(curve.A)}, σ = {number(curve.sigma)}"


def cap_rule(
    curve: Curve, lo: int, hi: int, cluster: ClusterState, settings: PolicySettings
) -> Candidate:
    """The maximum useful size in [lo, hi] (module doc); with no knee in the runs, the
    largest size they ran, or hi when `cluster` is lightly loaded under `settings`."""
    m = curve.max_useful_n
    if m is None:
        light = _state(cluster) if lightly_loaded(cluster, settings) else None
        return _unseen_cap(curve, lo, hi, light)
    knee = f"the speedup stops growing at {nodes(m)} ({_knee_formula(curve)})"
    if m > hi:
        return Candidate(
            CAP,
            hi,
            f"the speedup keeps growing up to {nodes(m)} ({_knee_formula(curve)}), beyond the "
            f"largest size allowed, {nodes(hi)}",
        )
    if m < lo:
        return Candidate(CAP, lo, f"{knee}, below the job's minimum, so at most {nodes(lo)}")
    return Candidate(CAP, m, f"{knee}, so more nodes cannot speed the job")


def _unseen_cap(curve: Curve, lo: int, hi: int, light: str | None) -> Candidate:
    """The cap of a curve whose runs show no knee: its A is then a representative of the
    values the runs cannot tell apart (fitting.py, `max_useful_n`), and nothing says the
    speedup goes on past the largest size the runs saw, so no size past it is useful by the
    curve's word (at least lo). `light` (the load's words) lifts it to hi (module doc)."""
    seen = curve.largest_observed
    if seen >= hi:
        return Candidate(
            CAP,
            hi,
            f"the runs show no knee up to {nodes(seen)}, at or beyond the largest size allowed, "
            f"{nodes(hi)}",
        )
    if light is not None:
        return Candidate(
            CAP,
            hi,
            f"the runs show no knee yet and ran up to {nodes(seen)}, and the partition is "
            f"lightly loaded ({light}), so nobody waits for the nodes past that: at most "
            f"{nodes(hi)}, where a run may find the knee",
        )
    top = max(lo, seen)
    return Candidate(
        CAP,
        top,
        f"the runs show no knee yet and ran up to {nodes(seen)}, so the curve knows no speedup "
        f"past that: at most {nodes(top)}",
    )


# --- load -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """How far toward the larger useful size the load lets a job lean: w in [0, 1]."""

    weight: float
    words: str


def load_rule_words(settings: PolicySettings) -> str:
    """The load-adaptive rule with this policy's thresholds, for ``--explain``."""
    idle = (
        "never past the idle nodes (a larger size's wait is unknown, so its completion "
        "cannot be shown to be sooner)"
        if settings.limit_to_idle
        else "not limited to the idle nodes (limit_to_idle is off)"
    )
    return (
        f"with pressure p = pending nodes / idle nodes, the size slides from the larger "
        f"useful size (p ≤ {settings.light_pressure:g}) to the efficient size (p = "
        f"{settings.heavy_pressure:g}) down to the user's minimum (p ≥ "
        f"{settings.crowded_pressure:g}), linearly in between; more pressure never gives more "
        f"nodes; {idle}"
    )


def load_weight(cluster: ClusterState, settings: PolicySettings) -> Load:
    """w in [0, 1] between e (0) and u (1); 0 from heavy_pressure up (module doc)."""
    if cluster.idle_nodes is None:
        return Load(0.5, "the load is unknown (taken as neutral)")
    pressure = _pressure(cluster)
    light, heavy = settings.light_pressure, settings.heavy_pressure
    state = _state(cluster)
    if lightly_loaded(cluster, settings):
        return Load(1.0, f"the partition is lightly loaded ({state} ≤ {light:g})")
    if heavily_loaded(cluster, settings):
        return Load(0.0, f"the partition is heavily loaded ({state} ≥ {heavy:g})")
    return Load(
        (heavy - pressure) / (heavy - light),
        f"the partition is moderately loaded ({state}, between {light:g} and {heavy:g})",
    )


def lightly_loaded(cluster: ClusterState, settings: PolicySettings) -> bool:
    """Whether the load is known and its pressure at most light_pressure: `load_weight`'s
    w = 1 and the no-knee cap's exception (module doc) read the load alike."""
    return cluster.idle_nodes is not None and _pressure(cluster) <= settings.light_pressure


def heavily_loaded(cluster: ClusterState, settings: PolicySettings) -> bool:
    """Whether the load is known and its pressure at least heavy_pressure: `load_weight`'s
    w = 0, where the load rule gives up the larger useful size, and decide.py's pin of a job
    no size fits read the load alike."""
    return cluster.idle_nodes is not None and _pressure(cluster) >= settings.heavy_pressure


def _pressure(cluster: ClusterState) -> float:
    return cluster.pending_demand_nodes / max(cluster.idle_nodes or 0, 1)


def _state(cluster: ClusterState) -> str:
    idle, pending = cluster.idle_nodes, cluster.pending_demand_nodes
    return f"{nodes(pending)} pending for {idle} idle, pressure {_pressure(cluster):.2f}"


def crowding_weight(cluster: ClusterState, settings: PolicySettings) -> float:
    """v in [0, 1] between lo (0) and e (1): 1 below heavy_pressure, 0 from crowded_pressure."""
    if cluster.idle_nodes is None:
        return 1.0
    pressure = _pressure(cluster)
    heavy, crowded = settings.heavy_pressure, settings.crowded_pressure
    if pressure <= heavy:
        return 1.0
    if pressure >= crowded:
        return 0.0
    return (crowded - pressure) / (crowded - heavy)


def _lean(
    lo: int, small: int, large: int, cluster: ClusterState, settings: PolicySettings
) -> tuple[int, str]:
    """The size by load between the anchors lo ≤ small ≤ large, and how it was reached."""
    load = load_weight(cluster, settings)
    crowding = crowding_weight(cluster, settings)
    # The slack keeps w = 0.8 from landing a whole size low through rounding (0.7999...).
    if crowding < 1.0:
        n = lo + math.floor(crowding * (small - lo) + _TOL)
        crowded = settings.crowded_pressure
        if crowding == 0.0:
            words = (
                f"the partition is crowded ({_state(cluster)} ≥ {crowded:g}), so the job takes "
                f"the user's minimum, {nodes(lo)}, the most efficient size"
            )
        else:
            words = (
                f"{load.words}, so the job takes {nodes(n)}, {percent(1.0 - crowding)} of the way "
                f"from the efficient size {small} down to the user's minimum {lo} (crowded at "
                f"{crowded:g})"
            )
        return n, words
    if small == large:
        return small, (
            f"the efficient and the larger useful size are both {nodes(small)}, so the load "
            f"does not change the size ({load.words})"
        )
    n = small + math.floor(load.weight * (large - small) + _TOL)
    if load.weight == 1.0:
        how = f"so the job leans to the larger useful size, {nodes(large)}"
    elif load.weight == 0.0:
        how = f"so the job takes the efficient size, {nodes(small)}"
    else:
        how = (
            f"so the job takes {nodes(n)}, {percent(load.weight)} of the way from the "
            f"efficient size {small} to the larger useful size {large}"
        )
    return n, f"{load.words}, {how}"


def waits_for_nodes(n: int, least: int, cluster: ClusterState, settings: PolicySettings) -> bool:
    """With limit_to_idle and a known idle count, whether a size n past both the idle nodes
    and `least` (a size that would wait anyway, the user's minimum) would wait for nodes."""
    idle = cluster.idle_nodes
    return settings.limit_to_idle and idle is not None and n > max(least, idle)


def load_adaptive_rule(
    efficiency: Candidate,
    pws: Candidate,
    cap: Candidate,
    cluster: ClusterState,
    settings: PolicySettings,
    lo: int | None = None,
) -> Candidate:
    """Slide from the larger useful size through the efficient size down to the user's minimum
    `lo` as the load rises (module doc); `lo` defaults to the efficient size."""
    small = min(efficiency.size, pws.size)
    large = max(efficiency.size, pws.size)
    if cap.nodes is not None:
        large = max(small, min(large, cap.nodes))
    least = small if lo is None else min(lo, small)
    n, words = _lean(least, small, large, cluster, settings)
    idle = cluster.idle_nodes
    if idle is not None and waits_for_nodes(n, least, cluster, settings):
        if idle <= least:
            words += f", but with only {idle} idle it takes the user's minimum, {nodes(least)}"
        else:
            words += f", limited to the {idle} idle nodes so that it can start now"
        n = max(least, idle)
    return Candidate(LOAD_ADAPTIVE, n, words)


# --- exploration and fallback -----------------------------------------------------------------


@dataclass(frozen=True)
class Exploration:
    """The exploration candidate and whether it may be used for this job."""

    candidate: Candidate
    eligible: bool


def _budget_ok(used: float, this: float, total: float, share: float) -> bool:
    return used + this <= share * (total + this) + _TOL


#: The reliability problem of a shared curve one user's runs moved (plugin/learning/sharing.py).
USER_STEERED = "user_influence"


def _suggestion(curve: Curve, lo: int, hi: int, allowed: Allowed) -> tuple[int, str] | str:
    """(size, problem) of the first feasible suggestion inside [lo, hi], else why there is none.

    A curve one user's runs moved (the problem USER_STEERED) suggests nothing: its
    suggestions were computed from those runs, so following them would let that user choose
    other users' sizes."""
    problems = curve.diagnostics.reliability
    named = ", ".join(sorted({p.problem for p in problems}))
    if any(p.problem == USER_STEERED for p in problems):
        return f"the curve is not reliable ({named}), and one user's runs moved it"
    suggested = [(p.suggest_n, p.problem) for p in problems if p.suggest_n is not None]
    if not suggested:
        return f"the curve is not reliable ({named}) but no size to run next is suggested"
    for n, problem in suggested:
        if lo <= n <= hi and (allowed.sizes is None or n in allowed.sizes):
            return n, problem
    sizes = ", ".join(str(n) for n, _ in suggested)
    return (
        f"the curve is not reliable ({named}) and the next run is suggested at {sizes} "
        f"nodes, not a feasible size in {lo}-{hi}"
    )


def over_budget(
    n: int, problem: str, node_hours: float, budget: ExplorationBudget, settings: PolicySettings
) -> str:
    """Why exploring at n would exceed a budget, or "" when it fits."""
    head = f"a run at {nodes(n)} is suggested ({problem}) but"
    job_share, nh_share = settings.exploration_job_share, settings.exploration_node_hour_share
    if job_share == 0.0 or nh_share == 0.0:
        return f"{head} exploration is off"
    jobs, explored = budget.jobs_decided, budget.jobs_explored
    if not _budget_ok(explored, 1, jobs, job_share):
        return (
            f"{head} exploring would make {explored + 1} of {jobs + 1} jobs, above the "
            f"{percent(job_share)} budget"
        )
    used, total = budget.node_hours_explored, budget.node_hours_decided
    if not _budget_ok(used, node_hours, total, nh_share):
        return (
            f"{head} exploring would use {used + node_hours:.1f} of {total + node_hours:.1f} "
            f"node-hours, above the {percent(nh_share)} budget"
        )
    return ""


def exploration_rule(
    profile: RuntimeProfile,
    allowed: Allowed,
    budget: ExplorationBudget,
    settings: PolicySettings,
    job_id: str = "",
) -> Exploration:
    """The reliability judgment's suggested size, else a size drawn from the job id, if
    eligible and within budget (module doc)."""
    curve, lo, hi = profile.curve, profile.lo, profile.hi
    if curve.reliable:
        reason = "the curve is reliable, so there is nothing to explore"
        return Exploration(Candidate(EXPLORATION, None, reason), False)
    found = _suggestion(curve, lo, hi, allowed)
    drawn = False
    if isinstance(found, str):
        n_drawn = drawn_size(job_id, lo, hi, allowed) if job_id else None
        if n_drawn is None or n_drawn == lo:
            return Exploration(Candidate(EXPLORATION, None, found), False)
        found, drawn = (n_drawn, "no size suggested; drawn at random"), True
    n, problem = found
    node_hours = n * profile.at(n) / 3600.0
    refused = over_budget(n, problem, node_hours, budget, settings)
    if refused:
        return Exploration(Candidate(EXPLORATION, None, refused), False)
    how = (
        f"a size drawn at random in {lo}-{hi} nodes (log-uniform, from a hash of the job id, "
        f"independent of what the job asks) is {nodes(n)}: runs off the size a limit was "
        "written for tell the curve's shape apart from the users' limits"
        if drawn
        else f"its reliability judgment suggests a run at {nodes(n)}"
    )
    return Exploration(
        Candidate(
            EXPLORATION,
            n,
            f"the curve is not reliable yet ({problem}) and {how}, within the exploration budget "
            f"({budget.jobs_explored} of {budget.jobs_decided} jobs and "
            f"{budget.node_hours_explored:.1f} of {budget.node_hours_decided:.1f} node-hours "
            "explored so far)",
        ),
        True,
    )


def exploration_waits(n: int, lo: int, cluster: ClusterState, settings: PolicySettings) -> str:
    """Why a run at n would wait for nodes, or "" when it can start now: with limit_to_idle and
    a known idle count, n ≤ max(idle, lo). An explored size is pinned, while Slurm would start
    the job left as submitted on the nodes that are free; a run past them makes the job, and
    every job queued behind it, wait for the machine to drain (on NASA's iPSC/860 trace at load
    0.7, runs explored at 120 of 128 nodes held the queue for hours). The user's minimum would
    wait as well, so it never counts as waiting."""
    if not waits_for_nodes(n, lo, cluster, settings):
        return ""
    return (
        f"only {cluster.idle_nodes} nodes are idle, and a run pinned at {nodes(n)} would wait "
        "for nodes to free, so it is not explored now"
    )


def drawn_size(job_id: str, lo: int, hi: int, allowed: Allowed) -> int | None:
    """A size in [lo, hi] drawn log-uniformly from the job id: u = the first 52 bits of
    SHA-256(job id) / 2^52, n = round(lo·(hi/lo)^u), snapped onto the allowed sizes (None
    when none lies in the range). Deterministic, so the policy stays a pure function; and
    independent of the job's own request and limit, so that the sizes explored are not
    chosen by the input (the identification covariate.py needs)."""
    digest = hashlib.sha256(job_id.encode("utf-8", "replace")).digest()
    u = (int.from_bytes(digest[:8], "big") >> 12) / float(1 << 52)
    n = min(hi, max(lo, round(lo * math.pow(hi / lo, u))))
    if allowed.sizes is None:
        return n
    inside = tuple(k for k in allowed.sizes if lo <= k <= hi)
    return snap(n, inside) if inside else None


@dataclass(frozen=True)
class RangeCut:
    """What a refused curve does to the range of a job left as submitted (`refused_top`):
    `top`, the range's new top, None when the range stays whole; `words`, how or why not."""

    top: int | None
    words: str


def refused_top(curve: Curve, lo: int, hi: int) -> RangeCut | None:
    """The top of the range a job left as submitted keeps when its curve was refused (module
    doc, fallback), and how: min(hi, max(lo, u, m)) with u the curve's maximum useful size
    and m the median of the distinct sizes its runs ran at (`Curve.observed_n`). None when
    that cuts nothing, when the curve shows no knee (u unknown: no evidence the speedup
    stops), or when one user's runs moved it (the problem USER_STEERED: its knee would let
    that user cut other users' ranges). No top, and why, when one of its runs was killed
    at its limit at the top or above (`Covariate.stopped_n`): the sizes below may overrun
    a limit too, which the refused curve cannot contradict, so the range stays whole, as
    Slurm's own choice has it."""
    useful = curve.max_useful_n
    steered = any(p.problem == USER_STEERED for p in curve.diagnostics.reliability)
    if useful is None or not curve.observed_n or steered:
        return None
    sizes = sorted(curve.observed_n)
    median = sizes[len(sizes) // 2]
    top = min(hi, max(lo, useful, median))
    if top >= hi:
        return None
    stopped = None if curve.covariate is None else curve.covariate.stopped_n
    if stopped is not None and stopped >= top:
        return RangeCut(
            None,
            f"one of its runs was killed at its time limit on {nodes(stopped)}, at or above "
            f"the {nodes(top)} a cut of the range would keep",
        )
    kept = f"released as {lo}-{top} nodes" if top > lo else f"given its minimum, {nodes(lo)}"
    return RangeCut(
        top,
        f"{kept}: the curve, though not used to size the job, shows no speedup past "
        f"{nodes(useful)}, and its runs' median size is {nodes(median)}",
    )


def fallback_rule(
    request: Request, lo: int, hi: int, why: str, settings: PolicySettings
) -> Candidate:
    if settings.fallback == "min":
        return Candidate(FALLBACK, lo, f"{why}, so the job gets its smallest size, {nodes(lo)}")
    if settings.fallback == "max":
        return Candidate(
            FALLBACK, hi, f"{why}, so the job gets the largest size allowed, {nodes(hi)}"
        )
    return Candidate(
        FALLBACK,
        None,
        f"{why}, so the job is left as submitted ({request.min_nodes}-{request.max_nodes} nodes)",
    )
