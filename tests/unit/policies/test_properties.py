"""Properties every decision keeps, on random curves, jobs, clusters and settings (hypothesis).

* the size (or the released range) is inside the user's range and the partition's limits (or
  the job is left alone), and a range is released only as configured, as a refused curve's
  cut, or as a busy partition's range for a job no size fits;
* under the load-adaptive rule, more idle nodes never give a smaller size, and more pending
  demand (more pressure) never gives more nodes; leaving a job alone does not depend on the
  load, but for a job no size fits, which a heavily loaded partition sizes;
* the time limit never exceeds the user's own limit nor the partition's maximum, and below
  those it is never shorter than the floor or the pessimistic runtime (the upper end of the
  fit's prediction interval);
* less data never shortens a limit: the same curve observed over a shorter range (its
  largest sizes dropped) never gives a shorter limit for the same size;
* a wider prediction interval (a larger fit residual) never gives a shorter limit;
* the same inputs always give the same decision.

Each property runs hundreds of examples (seconds each): the module is ``slow``, run by
``--slow`` (deploy/test.sh, CI); the fast loop keeps the example-based rule tests.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import predictor
from policies import (
    DEFAULTS,
    ClusterState,
    ExplorationBudget,
    Feasible,
    PolicySettings,
    Request,
    decide,
)
from policies.config import (
    EFFICIENCY_BASELINES,
    FALLBACKS,
    RELEASES,
    STRATEGIES,
    TIME_LIMIT_REFERENCES,
)
from policies.decide import FLAT_RANGE_FACTOR
from policies.decision import EXPLORATION
from policies.profile import RuntimeProfile
from policies.rules import heavily_loaded
from policies.time_limit import pessimistic_runtime, time_limit

from .curves import make_curve

pytestmark = pytest.mark.slow

EXAMPLES = settings(max_examples=300, deadline=None)


@st.composite
def curves(draw: st.DrawFn) -> predictor.Curve | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    observed = tuple(sorted(draw(st.sets(st.integers(1, 512), min_size=2, max_size=6))))
    A = draw(st.floats(1.0, 2000.0))
    # σ near 1e-308 overflows 2A/σ in predictor.downey.processor_working_set (its own edge).
    sigma = draw(st.just(0.0) | st.floats(1e-6, 8.0))
    patterns: tuple[predictor.Pattern, ...] = ()
    rule = draw(st.sampled_from([None, "powers_of_two", "squares"]))
    if rule is not None:
        patterns = (predictor.Pattern(kind="optimized_sizes", feasible=rule),)
    problems = tuple(
        predictor.ReliabilityProblem(kind, "run there", draw(st.none() | st.integers(1, 700)))
        for kind in draw(st.lists(st.sampled_from(["runner_up", "first_piece_only"]), max_size=2))
    )
    curve = make_curve(
        A,
        sigma,
        t1=draw(st.floats(1.0, 1e7)),
        observed=observed,
        t1_known=observed[0] == 1,
        identified=draw(st.booleans()),
        fit_error=draw(st.floats(0.0, 0.5)),
        diagnostics=predictor.Diagnostics(patterns=patterns, reliability=problems),
    )
    # residual 0 with a fit error: a curve stored before residuals (fit-error margin).
    curve = replace(curve, residual=draw(st.just(0.0) | st.floats(0.0, 0.3)))
    if draw(st.booleans()) and len(observed) >= 4:  # a stepwise curve: two phases
        k = len(observed) // 2
        first = predictor.Segment(
            observed[:k],
            draw(st.floats(1.0, 500.0)),
            draw(st.just(0.0) | st.floats(1e-6, 4.0)),
            1e4,
            True,
        )
        last = predictor.Segment(observed[k:], A, sigma, curve.t1, True)
        curve = replace(curve, segments=(first, last))
    return curve


@st.composite
def requests(draw: st.DrawFn) -> Request:
    lo = draw(st.integers(1, 300))
    hi = draw(st.integers(lo, lo + 400))
    feasible = draw(
        st.none()
        | st.sampled_from([Feasible.named("powers_of_two"), Feasible.named("squares")])
        | st.frozensets(st.integers(1, 800), min_size=1, max_size=8).map(Feasible.listed)
    )
    return Request(lo, hi, draw(st.none() | st.integers(1, 20_000)), feasible=feasible)


@st.composite
def clusters(draw: st.DrawFn) -> ClusterState:
    idle = draw(st.none() | st.integers(0, 1000))
    total = draw(st.none() | st.integers(max(1, idle or 0), 2000))
    return ClusterState(
        idle_nodes=idle,
        pending_demand_nodes=draw(st.integers(0, 5000)),
        total_nodes=total,
        max_nodes_per_job=draw(st.none() | st.integers(1, 500)),
        max_time_min=draw(st.none() | st.integers(1, 20_000)),
    )


@st.composite
def policy_settings(draw: st.DrawFn) -> PolicySettings:
    light = draw(st.floats(0.0, 5.0))
    return PolicySettings(
        strategy=draw(st.sampled_from(STRATEGIES)),
        efficiency_threshold=draw(st.floats(0.01, 1.0)),
        efficiency_baseline=draw(st.sampled_from(EFFICIENCY_BASELINES)),
        light_pressure=light,
        heavy_pressure=(heavy := light + draw(st.floats(0.01, 10.0))),
        crowded_pressure=heavy + draw(st.floats(0.01, 20.0)),
        limit_to_idle=draw(st.booleans()),
        max_fit_error=draw(st.floats(0.01, 1.0)),
        fallback=draw(st.sampled_from(FALLBACKS)),
        exploration_job_share=draw(st.floats(0.0, 1.0)),
        exploration_node_hour_share=draw(st.floats(0.0, 1.0)),
        scale_time_limit=draw(st.booleans()),
        time_limit_reference=draw(st.sampled_from(TIME_LIMIT_REFERENCES)),
        time_limit_safety_factor=draw(st.floats(1.0, 3.0)),
        time_limit_floor_min=draw(st.integers(1, 60)),
        release=draw(st.sampled_from(RELEASES)),
    )


@st.composite
def budgets(draw: st.DrawFn) -> ExplorationBudget:
    decided = draw(st.integers(0, 1000))
    hours = draw(st.floats(0.0, 1e6))
    return ExplorationBudget(
        decided,
        draw(st.integers(0, decided)),
        hours,
        draw(st.floats(0.0, 1.0)) * hours,
    )


@EXAMPLES
@given(requests(), curves(), clusters(), policy_settings(), budgets())
def test_the_size_is_inside_the_range_and_the_partition_limits(
    request: Request,
    curve: predictor.Curve | None,
    cluster: ClusterState,
    config: PolicySettings,
    budget: ExplorationBudget,
) -> None:
    d = decide(request, curve, cluster, config, budget)
    if d.nodes is None:
        assert d.time_limit_min is None
        assert d.rule in ("fallback", "partition_limit")
        return
    assert request.min_nodes <= d.nodes <= request.max_nodes
    top = d.nodes if d.max_nodes is None else d.max_nodes
    assert d.nodes <= top <= request.max_nodes
    if d.max_nodes is not None:
        # A range: released as one, a refused curve's cut range left to Slurm, or a busy
        # partition's range for a job no size fits, up to FLAT_RANGE_FACTOR times its size.
        refused = d.rule == "fallback" and config.fallback == "as_submitted"
        busy = d.rule != "fallback" and heavily_loaded(cluster, config)
        assert config.release == "range" or refused or busy
        if busy and config.release != "range":
            assert d.max_nodes <= math.floor(FLAT_RANGE_FACTOR * d.nodes)
        assert d.nodes < d.max_nodes
    limit = cluster.node_limit
    if limit is not None:
        assert top <= limit
    if d.time_limit_min is not None:
        assert d.time_limit_min >= 1


@EXAMPLES
@given(
    requests(),
    curves(),
    st.integers(0, 1000),
    st.integers(0, 1000),
    st.integers(0, 5000),
    st.none() | st.integers(1, 500),
    policy_settings(),
    budgets(),
)
def test_more_idle_nodes_never_give_a_smaller_size(
    request: Request,
    curve: predictor.Curve | None,
    idle_a: int,
    idle_b: int,
    pending: int,
    max_nodes: int | None,
    config: PolicySettings,
    budget: ExplorationBudget,
) -> None:
    fewer, more = sorted((idle_a, idle_b))
    config = replace(config, strategy="load_adaptive")
    busier, quieter = (ClusterState(i, pending, max_nodes_per_job=max_nodes) for i in (fewer, more))
    _never_more_nodes_where_busier(request, curve, busier, quieter, config, budget)


@EXAMPLES
@given(
    requests(),
    curves(),
    st.none() | st.integers(0, 1000),
    st.integers(0, 5000),
    st.integers(0, 5000),
    st.none() | st.integers(1, 500),
    policy_settings(),
    budgets(),
)
def test_more_pressure_never_gives_more_nodes(
    request: Request,
    curve: predictor.Curve | None,
    idle: int | None,
    pending_a: int,
    pending_b: int,
    max_nodes: int | None,
    config: PolicySettings,
    budget: ExplorationBudget,
) -> None:
    less, more = sorted((pending_a, pending_b))
    config = replace(config, strategy="load_adaptive")
    quieter, busier = (ClusterState(idle, p, max_nodes_per_job=max_nodes) for p in (less, more))
    _never_more_nodes_where_busier(request, curve, busier, quieter, config, budget)


def _never_more_nodes_where_busier(
    request: Request,
    curve: predictor.Curve | None,
    busier: ClusterState,
    quieter: ClusterState,
    config: PolicySettings,
    budget: ExplorationBudget,
) -> None:
    """The job gets no more nodes on the busier partition than on the quieter one, and
    leaving it alone does not depend on the load but for one case: a job no size fits is
    sized on a heavily loaded partition and gets the fallback on a quieter one (decide.py,
    `_flat_range`), there left as submitted or given the range's top.

    A run explored is not the load rule's size: it is taken only where it can start now
    (rules.py, `exploration_waits`), so more idle nodes can turn a fallback into a run at
    the size the curve's judgment suggests. Such pairs are not compared."""
    on_busier, on_quieter = (decide(request, curve, c, config, budget) for c in (busier, quieter))
    if EXPLORATION in (on_busier.rule, on_quieter.rule):
        return
    if on_busier.nodes is not None and on_quieter.nodes is not None:
        assert on_busier.nodes <= on_quieter.nodes
    elif on_busier.nodes != on_quieter.nodes:
        assert on_quieter.nodes is None
        assert heavily_loaded(busier, config)
        assert not heavily_loaded(quieter, config)


@EXAMPLES
@given(requests(), curves(), clusters(), policy_settings(), budgets())
def test_the_time_limit_never_exceeds_the_users_nor_the_partition_maximum(
    request: Request,
    curve: predictor.Curve | None,
    cluster: ClusterState,
    config: PolicySettings,
    budget: ExplorationBudget,
) -> None:
    d = decide(request, curve, cluster, config, budget)
    if d.time_limit_min is None:
        return
    assert request.time_limit_min is not None
    assert d.time_limit_min <= request.time_limit_min
    if cluster.max_time_min is not None:
        assert d.time_limit_min <= cluster.max_time_min
    assert curve is not None
    assert d.nodes is not None
    ceiling = min(request.time_limit_min, cluster.max_time_min or request.time_limit_min)
    predicted = float(curve.runtime(d.nodes)) / 60.0 * config.time_limit_safety_factor
    assert d.time_limit_min >= min(ceiling, config.time_limit_floor_min)
    assert d.time_limit_min >= min(ceiling, math.ceil(predicted - 1e-9))
    # ... nor shorter than the pessimistic runtime (the interval's upper end) × safety.
    profile = RuntimeProfile.of(curve, d.nodes, d.nodes)
    upper = pessimistic_runtime(profile, d.nodes) / 60.0 * config.time_limit_safety_factor
    assert d.time_limit_min >= min(ceiling, math.ceil(upper - 1e-6))


@EXAMPLES
@given(
    st.integers(1, 200),
    st.integers(0, 300),
    st.integers(1, 20_000),
    st.floats(1.0, 500.0),
    st.just(0.0) | st.floats(1e-6, 8.0),
    st.floats(0.0, 0.1),
    st.just(0.0) | st.floats(0.0, 0.3),
    st.sets(st.integers(1, 512), min_size=3, max_size=8),
    st.integers(1, 2),
    st.data(),
)
def test_less_data_never_shortens_a_limit(
    lo: int,
    width: int,
    user: int,
    A: float,
    sigma: float,
    fit_error: float,
    residual: float,
    observed: set[int],
    dropped: int,
    data: st.DataObject,
) -> None:
    """The same prediction observed over a shorter range never gives a shorter limit."""
    request = Request(lo, lo + width, user)
    chosen = data.draw(st.integers(lo, lo + width))
    full = tuple(sorted(observed))
    long = replace(make_curve(A, sigma, observed=full, fit_error=fit_error), residual=residual)
    short = replace(long, observed_n=full[:-dropped])
    limits = []
    for curve in (long, short):
        profile = RuntimeProfile.of(curve, lo, lo + width)
        got = time_limit(request, profile, chosen, ClusterState(), DEFAULTS).minutes
        limits.append(user if got is None else got)  # None: the user's own limit stands
    assert limits[1] >= limits[0]
    assert limits[0] <= user
    assert limits[1] <= user


@EXAMPLES
@given(requests(), curves(), clusters(), policy_settings(), budgets())
def test_the_same_inputs_give_the_same_decision(
    request: Request,
    curve: predictor.Curve | None,
    cluster: ClusterState,
    config: PolicySettings,
    budget: ExplorationBudget,
) -> None:
    first = decide(request, curve, cluster, config, budget)
    # Equal inputs rebuilt from scratch (the curve through its stored form) decide alike.
    again_curve = None if curve is None else predictor.Curve.from_dict(curve.to_dict())
    again = decide(replace(request), again_curve, replace(cluster), replace(config), budget)
    assert again == first
    assert decide(request, curve, cluster, config, budget) == first


@EXAMPLES
@given(
    st.integers(1, 200),
    st.integers(0, 300),
    st.integers(1, 20_000),
    st.floats(1.0, 500.0),
    st.just(0.0) | st.floats(1e-6, 8.0),
    st.floats(1e-6, 0.3),
    st.floats(0.0, 0.3),
    st.sets(st.integers(1, 512), min_size=3, max_size=8),
    st.data(),
)
def test_a_wider_prediction_interval_never_shortens_a_limit(
    lo: int,
    width: int,
    user: int,
    A: float,
    sigma: float,
    residual: float,
    more: float,
    observed: set[int],
    data: st.DataObject,
) -> None:
    """The same prediction with a larger fit residual (a wider interval) never gives a
    shorter limit."""
    request = Request(lo, lo + width, user)
    chosen = data.draw(st.integers(lo, lo + width))
    tight = make_curve(A, sigma, observed=tuple(sorted(observed)), fit_error=0.0)
    limits = []
    for r in (residual, residual + more):
        profile = RuntimeProfile.of(replace(tight, residual=r), lo, lo + width)
        got = time_limit(request, profile, chosen, ClusterState(), DEFAULTS).minutes
        limits.append(user if got is None else got)
    assert limits[1] >= limits[0]
