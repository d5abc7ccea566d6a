"""The experiment: every policy on the same jobs, reproducible for a seed."""

from __future__ import annotations

import numpy as np
import pytest

from plugin.formats.swf import read_swf
from policies.simulation import POLICIES, Experiment, MoldableRule, Setup, compare

from .helpers import NASA, trace


def _jobs() -> list:  # type: ignore[type-arg]
    return list(read_swf(str(NASA)).jobs[:400])


def test_the_same_seed_gives_identical_results() -> None:
    a = compare(_jobs(), Setup(machine=128, seed=5))
    b = compare(_jobs(), Setup(machine=128, seed=5))
    assert list(a) == list(POLICIES)
    for name in POLICIES:
        assert a[name].metrics == b[name].metrics
        assert np.array_equal(a[name].schedule.start, b[name].schedule.start)
        assert np.array_equal(a[name].schedule.nodes, b[name].schedule.nodes)
        assert a[name].rules == b[name].rules


def test_another_seed_gives_other_curves_and_results() -> None:
    jobs = _jobs()
    a, b = (
        Experiment(jobs, Setup(machine=128, seed=5)),
        Experiment(jobs, Setup(machine=128, seed=6)),
    )
    assert a.curves.A != b.curves.A
    assert a.curves.sigma != b.curves.sigma
    assert a.run("greedy").metrics != b.run("greedy").metrics
    # Rigid jobs run as the trace says, whatever the curves (without run noise).
    quiet_a = Experiment(jobs, Setup(machine=128, seed=5, noise=0.0))
    quiet_b = Experiment(jobs, Setup(machine=128, seed=6, noise=0.0))
    assert quiet_a.run("rigid").metrics == quiet_b.run("rigid").metrics


def test_rigid_rule_makes_greedy_the_trace() -> None:
    jobs = _jobs()
    ex = Experiment(jobs, Setup(machine=128, moldable=MoldableRule(1.0, 1.0)))
    assert ex.run("greedy").metrics == ex.run("rigid").metrics


def test_without_backfilling_fewer_jobs_pass_the_head() -> None:
    jobs = _jobs()
    easy = Experiment(jobs, Setup(machine=128)).run("rigid").metrics
    fcfs = Experiment(jobs, Setup(machine=128, backfill=False)).run("rigid").metrics
    assert fcfs.mean_wait_s >= easy.mean_wait_s


def test_max_parallelism_bounds_the_draws() -> None:
    ex = Experiment(_jobs(), Setup(machine=128, max_parallelism=4))
    assert max(ex.curves.A) <= 4.0
    assert ex.setup.parallelism == 4.0
    assert Setup(machine=128).parallelism == 128.0


def test_max_job_nodes_cuts_every_policys_sizes_and_only_those_above_it() -> None:
    # A 16-node request on 20 nodes: its range [8, 32] reaches the machine. MaxNodes 12
    # cuts the range to [8, 12] and the rigid request to 12; the 4-node job is untouched.
    jobs = trace((0, 16, 600, 3600), (0, 4, 600, 3600), (10, 2, 60, 3600))
    ex = Experiment(jobs, Setup(machine=20, seed=1, max_job_nodes=12))
    assert ex.requests.lo == (8, 2, 1)
    assert ex.requests.hi == (12, 8, 4)
    for policy in POLICIES:
        schedule = ex.run(policy).schedule
        assert schedule.nodes.max() <= 12, policy
    assert ex.run("rigid").schedule.nodes.tolist() == [12, 4, 2]
    # Greedy on an empty machine takes the top of the cut range, not the machine.
    assert ex.run("greedy").schedule.nodes[0] == 12
    whole = Experiment(jobs, Setup(machine=20, seed=1))
    assert whole.requests.hi == (20, 8, 4)
    assert whole.run("greedy").schedule.nodes[0] == 20
    # At or above the machine's size, MaxNodes changes nothing.
    assert Experiment(jobs, Setup(machine=20, seed=1, max_job_nodes=64)).requests == whole.requests


def test_bad_setups_are_refused() -> None:
    with pytest.raises(ValueError, match="machine"):
        Setup(machine=0)
    with pytest.raises(ValueError, match="at least one job"):
        Experiment([], Setup(machine=4))
    with pytest.raises(ValueError, match="curves must be one of"):
        Setup(machine=4, curves="psychic")
    with pytest.raises(ValueError, match="unknown policy"):
        Experiment(trace((0, 1, 1)), Setup(machine=4)).sizer("fastest")
    with pytest.raises(ValueError, match="more than the machine"):
        Experiment(trace((0, 8, 1)), Setup(machine=4)).run("rigid")
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_job_nodes must be a whole number"):
            Setup(machine=4, max_job_nodes=bad)  # type: ignore[arg-type]
