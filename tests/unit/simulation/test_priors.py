"""Roofline priors in the simulator: an application's first jobs on a pool where it has no
curve are sized from its curve on another pool, converted by the pools' speeds and cores,
marked as priors, until its runs there give it a curve (policies/simulation/priors.py)."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from policies.config import DEFAULTS
from policies.roofline import Known, plan_prior, time_ratio
from policies.simulation import Setup, TraceJob
from policies.simulation.pools import Pool
from policies.simulation.priors import SPEEDS, PriorLearner, pool_type
from policies.simulation.typed import PoolPlan, TypedLearner, pooled_experiment, relative_on_pool
from predictor.roofline import is_prior

#: Pool a: 16-core nodes at speed 1; pool b: 32-core nodes twice as fast per core.
POOLS = (Pool("a", 64, 16, (1,)), Pool("b", 32, 32, (2,), 2.0))


def test_a_pool_is_a_roofline_machine_whose_ratios_are_its_speed_and_cores() -> None:
    k, m = time_ratio(pool_type(POOLS[0]), pool_type(POOLS[1]), 1.0)
    assert k == pytest.approx(0.5)  # s_a / s_b
    assert m == pytest.approx(2.0)  # c_b / c_a


def test_a_simulated_prior_says_the_pools_speeds_convert_it() -> None:
    learner = TypedLearner(apps=1, pools=2, growth=None, fits={}, cores=(16, 32))
    _runs_on(learner, 0, 1000.0, 0.0)
    curve = learner.curve(0, 1000.0)
    assert curve is not None
    plan = plan_prior(pool_type(POOLS[1]), [Known(pool_type(POOLS[0]), curve, 4)], SPEEDS)
    assert not isinstance(plan, str)
    assert (
        "(intensity 1 flop/byte, the pools' speeds: b computes 2× as fast per core" in plan.note()
    )


def _runs_on(learner: TypedLearner | PriorLearner, slot: int, scale: float, now: float) -> None:
    for n in (1, 2, 4, 8):
        learner.observe(slot, n, scale / n**0.8, now)


def test_a_pool_without_runs_gets_the_prior_where_the_fallback_is_refused() -> None:
    typed = TypedLearner(apps=1, pools=2, growth=None, fits={}, cores=(16, 32))
    learner = PriorLearner(typed, POOLS, DEFAULTS)
    _runs_on(learner, 0, 1000.0, 0.0)  # pool a only
    source = learner.curve(0, 1000.0)
    assert source is not None
    assert not is_prior(source)
    assert typed.curve(1, 1000.0) is None  # across cores per node the fallback is refused
    prior = learner.curve(1, 1000.0)
    assert is_prior(prior)
    assert prior is not None
    # T_b(n) = T_a(2n) · 1/2: twice the cores per node, each twice as fast
    n = np.array([1.0, 2.0, 4.0])
    expected = source.runtime(2.0 * n) * 0.5
    np.testing.assert_allclose(prior.runtime(n), expected, rtol=0.05)
    assert learner.curve(1, 1000.0) is prior  # remembered, not refitted
    assert learner.made == 1


def test_the_pools_own_runs_replace_the_prior() -> None:
    learner = PriorLearner(
        TypedLearner(apps=1, pools=2, growth=None, fits={}, cores=(16, 32)), POOLS, DEFAULTS
    )
    _runs_on(learner, 0, 1000.0, 0.0)
    assert is_prior(learner.curve(1, 1000.0))
    _runs_on(learner, 1, 3000.0, 2000.0)  # pool b: slower than the prior says
    own = learner.curve(1, 4000.0)
    assert own is not None
    assert not is_prior(own)
    assert own.runtime([1.0])[0] == pytest.approx(3000.0, rel=0.05)


def test_the_prior_comes_before_the_fallback_of_the_same_core_count() -> None:
    """As the daemon on a described type: pools of one core count, b twice as fast. The
    fallback would read a's curve as b's; the prior halves its runtimes."""
    pools = (Pool("a", 8, 16, (1,)), Pool("b", 8, 16, (2,), 2.0))
    typed = TypedLearner(apps=1, pools=2, growth=None, fits={}, cores=(16, 16))
    learner = PriorLearner(typed, pools, DEFAULTS)
    _runs_on(learner, 0, 1000.0, 0.0)
    source, fallback = typed.curve(0, 1000.0), typed.curve(1, 1000.0)
    assert source is not None
    assert fallback is not None
    assert not is_prior(fallback)
    prior = learner.curve(1, 1000.0)
    assert prior is not None
    assert is_prior(prior)
    n = np.array([1.0, 4.0])
    np.testing.assert_allclose(prior.runtime(n), 0.5 * source.runtime(n), rtol=0.05)


def test_no_curve_anywhere_gives_no_prior() -> None:
    learner = PriorLearner(
        TypedLearner(apps=1, pools=2, growth=None, fits={}, cores=(16, 32)), POOLS, DEFAULTS
    )
    assert learner.curve(1, 1000.0) is None
    with pytest.raises(ValueError, match="one per learner pool"):
        PriorLearner(TypedLearner(1, 2, None, {}), POOLS[:1], DEFAULTS)


def _app_on_a_then_b() -> list[TraceJob]:
    """One application (executable 7): 12 jobs on pool a at 64-512 processors, then 12 on
    pool b, each alone on the machine; run times follow its true curve on each pool."""
    rows: list[TraceJob] = []
    t = 0.0
    for part in (1, 2):
        for k in range(12):
            procs = (64, 128, 256, 512)[k % 4]
            rows.append(
                TraceJob(len(rows), t, 1.0, 1, 40000.0, 7, processors=procs, partition=part)
            )
            t += 20000.0
    truth = pooled_experiment(rows, PoolPlan(POOLS), _setup()).truth
    A, sigma = truth.A[0], truth.sigma[0]

    def runtime(job: TraceJob) -> float:
        pool = POOLS[(job.partition or 1) - 1]
        n = np.array([(job.processors or 1) / pool.cores])
        return 3.6e5 * float(relative_on_pool(n, A, sigma, pool.cores, pool.speed)[0])

    return [dataclasses.replace(j, runtime=runtime(j)) for j in rows]


def _setup() -> Setup:
    return Setup(machine=64, noise=0.0, codes_per_key=1, shared_codes=0.0)


def test_the_first_jobs_on_a_new_pool_are_sized_from_the_prior_and_say_so() -> None:
    rows = _app_on_a_then_b()
    on_b = [j.job_id for j in rows if j.partition == 2]
    without = pooled_experiment(rows, PoolPlan(POOLS), _setup()).run("adaptive")
    assert without.priors == ()
    assert without.schedule.rule[on_b[0]] == "fallback"  # no curve on b: as submitted
    result = pooled_experiment(rows, PoolPlan(POOLS, roofline=True), _setup()).run("adaptive")
    assert result.priors  # the first jobs on b
    assert set(result.priors) <= set(on_b)
    assert result.priors == tuple(on_b[: len(result.priors)])
    assert len(result.priors) < len(on_b)  # replaced once b's runs give it a curve
    for job in result.priors:
        assert result.schedule.rule[job] != "fallback"
        assert result.schedule.limit[job] == pytest.approx(40000.0)  # a prior cuts no limit
    assert copy.copy(result).priors == result.priors  # __reduce__: a sweep's processes


def test_the_oracle_and_the_baselines_never_use_a_prior() -> None:
    experiment = pooled_experiment(_app_on_a_then_b(), PoolPlan(POOLS, roofline=True), _setup())
    for policy in ("oracle", "rigid", "greedy"):
        assert experiment.run(policy).priors == ()
