"""Roofline priors in the simulator: an application's first jobs on a pool where it has no
curve yet are sized from its curve on another pool, converted by the roofline.

The daemon does this on a node type the adaptalloc TOML describes (``[node_types.NAME]``):
where the app has no curve of its own on the type, the roofline prior made from its curve
on another described type stands in, marked ``roofline_prior`` (no time limit is cut on it),
until the type's own runs give it a curve (plugin/daemon/decider.py ``_curve_on``;
policies/roofline.py, predictor/roofline.py). The prior comes before the fallback to the
curve of all the app's runs.

Here every pool is described by what pools.py gives it: c cores per node at per-core speed
s. As a roofline machine a pool is compute-bound at any intensity (`pool_type`: peak and
bandwidth both c·s per node, in speed-1 cores, ridge at 1 flop/byte, and the intensity read
as 1), so the conversion from pool x to pool y is the pools' own ratios:

    T_y(n) = T_x(n · c_y/c_x) · s_x/s_y

Known curves are the app's learned curves on the other pools that policies.decide would
use (`unusable_because` empty), as the daemon's `known_curves`; the closest is converted
(policies.roofline.plan_prior).

What the figures this gives assume, and say where printed: the speeds are synthetic (a
trace gives none), and the simulator's true curves (typed.py) divide all of a run's time by
the pool's speed, which is the prior's own assumption (the roofline bounds compute time, and
here all time is compute). The simulator therefore cannot show a prior wrong for a code
whose runtime is partly communication; what it shows is what the prior changes while the
model is right: the jobs it sizes and their response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from policies.config import PolicySettings
from policies.decide import unusable_because
from policies.roofline import Intensity, Known, NodeType, plan_prior, prior_curve
from policies.second_size import Run
from policies.simulation.learning import CurveLearner
from policies.simulation.pools import Pool
from predictor import Curve

__all__ = ["SPEEDS", "PriorLearner", "pool_type"]

#: The intensity a pool's roofline is read at: any value ≥ its ridge (1 flop/byte) gives
#: its peak, so the source says it is the pools' speeds that convert, not an intensity.
SPEEDS = Intensity(1.0, "the pools' speeds")


class TypedLearner(Protocol):
    """What a PriorLearner wraps (typed.TypedLearner, which builds on this module): the
    learner of every (application, pool) slot, its own curves (`typed`) apart from its
    fallback (`curve`)."""

    pools: int

    @property
    def typed(self) -> CurveLearner: ...

    @property
    def refits(self) -> int: ...

    def observe(
        self,
        app: int,
        nodes: int,
        runtime: float,
        now: float,
        limit: float | None = None,
        written_for: int | None = None,
    ) -> None: ...

    def observe_killed(
        self, app: int, nodes: int, ran: float, now: float, limit: float, written_for: int
    ) -> None: ...

    def curve(self, app: int, now: float) -> Curve | None: ...

    def runs(self, app: int, now: float) -> list[Run]: ...


def pool_type(pool: Pool) -> NodeType:
    """The pool as a roofline machine (module doc): peak = bandwidth = c·s per node."""
    per_node = pool.cores * pool.speed
    return NodeType(pool.name, per_node, per_node, pool.cores)


def _fingerprint(curve: Curve) -> tuple[object, ...]:
    """What a source curve's prior is made from (its fit; it changes at every refit)."""
    return (curve.model, curve.A, curve.sigma, curve.t1, curve.fit_error, curve.observed_n)


class PriorLearner:
    """A TypedLearner whose curve on a pool without the app's own curve is the roofline
    prior from its curve on another pool when there is one (module doc), else the
    TypedLearner's (its fallback to the curve of all the app's runs, or None).

    Slots are the TypedLearner's (application·pools + pool). `made` counts the priors fitted
    (one per target pool and source curve: each is remembered)."""

    def __init__(
        self, learner: TypedLearner, pools: Sequence[Pool], settings: PolicySettings
    ) -> None:
        if len(pools) != learner.pools:
            raise ValueError(f"pools: one per learner pool ({learner.pools}), got {len(pools)}")
        self.learner = learner
        self.types = tuple(pool_type(p) for p in pools)
        self.settings = settings
        self.made = 0
        self._priors: dict[tuple[object, ...], Curve | None] = {}

    @property
    def refits(self) -> int:
        return self.learner.refits

    def observe(
        self,
        app: int,
        nodes: int,
        runtime: float,
        now: float,
        limit: float | None = None,
        written_for: int | None = None,
    ) -> None:
        self.learner.observe(app, nodes, runtime, now, limit, written_for)

    def observe_killed(
        self, app: int, nodes: int, ran: float, now: float, limit: float, written_for: int
    ) -> None:
        self.learner.observe_killed(app, nodes, ran, now, limit, written_for)

    def runs(self, app: int, now: float) -> list[Run]:
        return self.learner.runs(app, now)

    def curve(self, app: int, now: float) -> Curve | None:
        """The (application, pool) curve when the learner has one, else the prior, else the
        TypedLearner's fallback."""
        own = self.learner.typed.curve(app, now)
        if own is not None:
            return own
        prior = self.prior(app, now)
        return prior if prior is not None else self.learner.curve(app, now)

    def prior(self, slot: int, now: float) -> Curve | None:
        """The roofline prior on slot's pool from the app's usable curves on the other
        pools at `now`; None when it has none or the prior's fit fails."""
        pools = self.learner.pools
        app, target = divmod(slot, pools)
        known = []
        for q in range(pools):  # a handful of pools, not a grid
            curve = None if q == target else self.learner.typed.curve(app * pools + q, now)
            if curve is not None and not unusable_because(curve, self.settings):
                known.append(Known(self.types[q], curve, curve.runs))
        if not known:
            return None
        plan = plan_prior(self.types[target], known, SPEEDS)
        if isinstance(plan, str):  # unreachable: known holds other pools only
            return None
        key = (
            target,
            plan.source.node_type.name,
            plan.source.runs,
            _fingerprint(plan.source.curve),
        )
        if key not in self._priors:
            try:
                self._priors[key] = prior_curve(plan)
                self.made += 1
            except (ValueError, ArithmeticError):  # no prior: the fallback decides
                self._priors[key] = None
        return self._priors[key]
