"""Node types in the simulator: pools, placement, one pool = today's simulator, routing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from plugin.formats.swf import parse_swf, read_swf
from policies.simulation import POLICIES, Experiment, Setup, TraceJob, at_load
from policies.simulation.moldable import MoldableRule
from policies.simulation.pools import (
    NO_PARTITION,
    NO_POOL,
    TOO_LARGE,
    Pool,
    from_header,
    parse_multi,
    parse_pools,
    place,
)
from policies.simulation.typed import (
    PooledExperiment,
    PoolPlan,
    TypedLearner,
    pooled_experiment,
    relative_on_pool,
)
from predictor.downey import relative_runtime

from .helpers import NASA

CURIE_HEADER = (
    "; Note: 5040 thin nodes + 360 fat nodes + 144 hybrid nodes",
    "; Note: 80640 in thin nodes + 11520 in fat nodes + 1152 in hybrid nodes",
    "; Partition:  4  large",
    "; Partition:  8  hybrid",
    "; Partition: 10  standard",
)


def test_parse_pools_reads_the_documented_form() -> None:
    pools = parse_pools("large=360x32:4,standard=5040x16:10+11@1.5")
    assert pools == (
        Pool("large", 360, 32, (4,)),
        Pool("standard", 5040, 16, (10, 11), 1.5),
    )
    assert ",".join(map(str, pools)) == "large=360x32:4,standard=5040x16:10+11@1.5"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("large", "NAME=NODESxCORES"),
        ("large=360:4", "NAME=NODESxCORES"),
        ("large=0x32:4", "must be ≥ 1"),
        ("a=1x1:4,a=2x2:5", "names must differ"),
        ("a=1x1:4,b=2x2:4", "partition 4 is in pools a and b"),
        ("a=1x1:4@0", "speed"),
        ("9a=1x1:4", "letters"),
    ],
)
def test_parse_pools_names_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_pools(text)


def test_parse_multi_keeps_the_listed_order_and_refuses_unknown_names() -> None:
    pools = parse_pools("a=1x1:1,b=2x2:2,c=3x3:3")
    assert parse_multi("c,a", pools) == (2, 0)
    with pytest.raises(ValueError, match="no pool named 'd'"):
        parse_multi("a,d", pools)
    with pytest.raises(ValueError, match="two different"):
        parse_multi("a,a", pools)


def test_from_header_derives_curies_two_pools_and_nothing_elsewhere() -> None:
    assert from_header(CURIE_HEADER) == (
        Pool("large", 360, 32, (4,)),
        Pool("standard", 5040, 16, (10,)),
    )
    assert from_header(("; MaxNodes: 128", "; Partition: 1 batch")) is None


def test_place_sizes_jobs_in_their_pools_nodes_and_counts_drops() -> None:
    def job(k: int, procs: int, part: int | None) -> TraceJob:
        return TraceJob(k, 0.0, 10.0, 1, 20.0, processors=procs, partition=part)

    pools = (Pool("fat", 4, 32, (4,)), Pool("thin", 8, 16, (10,)))
    jobs = [job(0, 33, 4), job(1, 33, 10), job(2, 16, None), job(3, 16, 5), job(4, 129, 4)]
    placed = place(jobs, pools)
    assert [j.job_id for j in placed.jobs] == [0, 1]
    assert [j.nodes for j in placed.jobs] == [2, 3]  # ⌈33/32⌉, ⌈33/16⌉
    assert placed.pool.tolist() == [0, 1]
    assert placed.processors.tolist() == [64, 48]
    assert placed.dropped == {NO_PARTITION: 1, NO_POOL: 1, TOO_LARGE: 1}


@pytest.mark.parametrize("curves", ["learned", "oracle"])
def test_one_pool_of_one_core_is_todays_simulator(curves: str) -> None:
    trace = read_swf(NASA).head(150)
    jobs = at_load(trace.jobs, trace.machine, 0.9)
    one = tuple(dataclasses.replace(j, partition=1, processors=j.nodes) for j in jobs)
    plan = PoolPlan((Pool("all", trace.machine, 1, (1,)),))
    setup = Setup(machine=trace.machine, seed=3, curves=curves)
    today = Experiment(jobs, setup)
    pooled = PooledExperiment(place(one, plan.pools), plan, setup)
    for policy in POLICIES:
        a, b = today.run(policy), pooled.run(policy)
        for name in ("start", "end", "nodes", "limit", "killed"):
            np.testing.assert_array_equal(getattr(a.schedule, name), getattr(b.schedule, name))
        assert a.schedule.rule == b.schedule.rule
        assert a.metrics == b.metrics
        assert a.refits == b.refits
        hours = pytest.approx(a.metrics.node_hours, rel=1e-12)  # summed in another order
        assert dict(b.pools) == {"all": {"jobs": 150, "node_hours": hours}}


def _two_pools(speed: float, busy_first: bool) -> PooledExperiment:
    """Pools a (listed first) and b of 8 one-core nodes; b runs at `speed`. Job 0 (pool a,
    partition 1) asks for 8 nodes; with `busy_first`, a job of pool a holds all of a for
    1000 s from time 0 (pool a only), and job 0 arrives at time 1."""
    pools = (Pool("a", 8, 1, (1,)), Pool("b", 8, 1, (2,), speed))
    rows = [TraceJob(0, 1.0, 100.0, 8, 400.0, processors=8, partition=1)]
    if busy_first:
        rows.insert(0, TraceJob(1, 0.0, 1000.0, 8, 1000.0, processors=8, partition=1))
    plan = PoolPlan(pools, (0, 1))
    setup = Setup(machine=8, curves="oracle", moldable=MoldableRule(1.0, 1.0), noise=0.0)
    experiment = pooled_experiment(rows, plan, setup)
    if busy_first:
        experiment.choices[0] = (0,)  # the busy job: pool a only
    return experiment


def test_adaptive_goes_to_the_faster_pool_slurms_rule_to_the_first_listed() -> None:
    experiment = _two_pools(speed=2.0, busy_first=False)
    oracle, rigid = experiment.run("oracle"), experiment.run("rigid")
    assert dict(oracle.pools)["b"]["jobs"] == 1  # half the runtime on b
    assert dict(rigid.pools)["a"]["jobs"] == 1  # a can start it: Slurm takes a
    assert oracle.schedule.end[0] - oracle.schedule.start[0] == pytest.approx(50.0)
    assert rigid.schedule.end[0] - rigid.schedule.start[0] == pytest.approx(100.0)


def test_a_job_goes_to_the_emptier_pool() -> None:
    experiment = _two_pools(speed=1.0, busy_first=True)
    for policy in ("oracle", "rigid", "greedy"):
        result = experiment.run(policy)
        assert result.schedule.start[1] == pytest.approx(1.0), policy  # on b at once
        assert dict(result.pools) == {
            "a": {"jobs": 1, "node_hours": pytest.approx(8 * 1000 / 3600)},
            "b": {"jobs": 1, "node_hours": pytest.approx(8 * 100 / 3600)},
        }


def test_a_pool_of_fat_nodes_runs_a_job_on_fewer_nodes() -> None:
    pools = (Pool("thin", 8, 16, (10,)), Pool("fat", 4, 32, (4,)))
    job = TraceJob(0, 0.0, 100.0, 1, 1000.0, processors=64, partition=10)
    experiment = pooled_experiment([job], PoolPlan(pools, (1, 0)), Setup(machine=8, noise=0.0))
    assert experiment.pool_jobs[0][0].nodes == 4
    assert experiment.pool_jobs[1][0].nodes == 2
    # on its own pool, at its own size, the trace's run time
    assert experiment.pool_curves[0].runtime(0, 4) == pytest.approx(100.0)


def test_the_swf_reader_keeps_processors_partition_and_the_header_notes() -> None:
    line = "1 0 0 100 64 -1 -1 64 200 -1 1 7 -1 -1 -1 {part} -1 -1"
    trace = parse_swf([*CURIE_HEADER, line.format(part=4), line.format(part=-1)], "t")
    assert [(j.processors, j.partition) for j in trace.jobs] == [(64, 4), (64, None)]
    assert from_header(trace.comments) == from_header(CURIE_HEADER)


def test_a_pool_without_runs_sees_the_curve_of_all_the_applications_runs() -> None:
    """As the daemon: the (application, pool) curve when the learner has one, else the curve
    of all the application's runs (plugin/daemon/decider.py, curve_for)."""
    learner = TypedLearner(apps=1, pools=2, growth=None, fits={})
    for n in (1, 2, 4, 8):
        learner.observe(0, n, 1000.0 / n**0.8, 0.0)  # pool 0 (slot 0·2 + 0)
    on_0, on_1 = learner.curve(0, 1000.0), learner.curve(1, 1000.0)
    assert on_0 is not None
    assert on_1 == on_0  # no run on pool 1: the curve of all runs, here pool 0's
    for n in (1, 2, 4, 8):
        learner.observe(1, n, 3000.0 / n**0.5, 2000.0)  # pool 1, slower and flatter
    typed_1 = learner.curve(1, 4000.0)
    assert typed_1 is not None
    assert typed_1.runtime([1.0])[0] == pytest.approx(3000.0, rel=0.05)
    assert learner.curve(0, 4000.0) == on_0  # pool 0's own runs did not change


def test_without_the_fallback_a_pool_without_runs_has_no_curve() -> None:
    learner = TypedLearner(apps=1, pools=2, growth=None, fits={}, fallback=False)
    for n in (1, 2, 4, 8):
        learner.observe(0, n, 1000.0 / n**0.8, 0.0)
    assert learner.curve(0, 1000.0) is not None
    assert learner.curve(1, 1000.0) is None


def test_the_fallback_is_refused_across_cores_per_node_and_kept_within_one() -> None:
    """As the daemon (policies/fallback.py): runs on 32-core nodes are not read as 16-core
    nodes; on pools of one core count the curve of all runs stands in, as before."""
    for cores, kept in (((32, 16), False), ((16, 16), True)):
        learner = TypedLearner(apps=1, pools=2, growth=None, fits={}, cores=cores)
        for n in (1, 2, 4, 8):
            learner.observe(0, n, 1000.0 / n**0.8, 0.0)  # pool 0 only
        assert learner.curve(0, 1000.0) is not None
        assert (learner.curve(1, 1000.0) is not None) is kept


def test_a_run_on_other_cores_refuses_the_fallback_only_once_it_is_stored() -> None:
    """The daemon's cadence: a run ending at 2,015 s is in the store at the next learner
    round (2,015 s rounded up to a multiple of INTERVAL_S = 30 s: 2,040 s)."""
    learner = TypedLearner(apps=1, pools=3, growth=None, fits={}, cores=(16, 16, 32))
    for n in (1, 2, 4, 8):
        learner.observe(0, n, 1000.0 / n**0.8, 0.0)  # pool 0 (16 cores)
    assert learner.curve(1, 1000.0) is not None  # pool 1 (16 cores): the fallback
    learner.observe(2, 2, 600.0, 2015.0)  # one run on pool 2 (32 cores)
    assert learner.curve(1, 2020.0) is not None  # not in the store yet
    assert learner.curve(1, 2040.0) is None


def test_typed_learner_wants_one_core_count_per_pool() -> None:
    with pytest.raises(ValueError, match="one count per pool"):
        TypedLearner(apps=1, pools=2, growth=None, fits={}, cores=(16,))


def test_the_per_pool_curve_is_downeys_in_processors_at_one_node_and_in_nodes_beyond() -> None:
    A, sigma = np.array([64.0, 10.0]), np.array([0.5, 1.5])
    n = np.array([4.0, 4.0])
    # one-core nodes at speed 1: Downey's curve itself
    assert_allclose(relative_on_pool(n, A, sigma, 1, 1.0), relative_runtime(n, A, sigma))
    # one node of 16 cores at speed 2: the processor curve at 16, twice as fast
    one = relative_on_pool(np.ones(2), A, sigma, 16, 2.0)
    assert_allclose(one, relative_runtime(16.0, A, sigma) / 2.0)
    # beyond: Downey's in nodes with A/16 (10/16 < 1 is held at 1: no speedup past a node)
    ratio = relative_on_pool(n, A, sigma, 16, 2.0) / one
    assert_allclose(ratio, relative_runtime(n, np.array([4.0, 1.0]), sigma))
