"""Learned curves: applications, the learner's own fit, kills that teach nothing, loads, seeds.

All of this is new with learned curves in the simulator; every test here failed before it (the
modules or the policies did not exist: the simulator handed every policy the true curve of each
job).
"""

from __future__ import annotations

import dataclasses
import math
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from scipy import stats

import predictor
from plugin.formats.swf import read_swf
from policies.simulation import (
    POLICIES,
    Experiment,
    Setup,
    TraceJob,
    at_load,
    offered_load,
    simulate,
)
from policies.simulation.adaptive import AdaptiveSizer
from policies.simulation.applications import group
from policies.simulation.learning import CurveLearner, MemoCurve
from policies.simulation.metrics import summarize
from policies.simulation.sizing import ClusterView
from policies.simulation.sweep import fit_families, summarize_seeds, sweep
from predictor.covariate import Censored
from predictor.downey import relative_runtime
from predictor.heterogeneous import fit_heterogeneous

from .helpers import NASA, run_rigid, trace


def _job(k: int, nodes: int, executable: int | None = None, user: int | None = None) -> TraceJob:
    return TraceJob(k, float(10 * k), 100.0, nodes, 400.0, executable, user)


def test_jobs_are_grouped_by_executable_else_user_and_size_class() -> None:
    jobs = [_job(0, 8, 3), _job(1, 64, 3), _job(2, 8, None, 5), _job(3, 15, None, 5)]
    jobs += [_job(4, 16, None, 5), _job(5, 16, None, None)]
    apps = group(jobs)
    assert apps.names == ("exe-3", "user-5-size-8", "user-5-size-16", "size-16")
    assert list(apps.index) == [0, 0, 1, 1, 2, 3]
    assert apps.grouping == {"executable": 2, "user + size class": 4}


def _runs(learner: CurveLearner, A: float, sigma: float, sizes: list[int], t0: float) -> None:
    for k, n in enumerate(sizes):
        t = 3600.0 * float(relative_runtime(np.array([float(n)]), A, sigma)[0])
        learner.observe(0, n, t, now=t0 + k)


def test_the_learner_fits_completed_runs_after_the_debounce() -> None:
    learner = CurveLearner(1, debounce_s=60.0)
    assert learner.curve(0, now=0.0) is None
    _runs(learner, 24.0, 0.5, [2, 4, 8, 16, 32, 2, 4, 8, 16, 32], t0=0.0)
    assert learner.curve(0, now=30.0) is None  # dirty for 30 s: not refitted yet
    assert learner.refits == 0
    curve = learner.curve(0, now=100.0)
    assert curve is not None
    assert learner.refits == 1
    assert curve.A == pytest.approx(24.0, rel=0.15)
    assert learner.curve(0, now=200.0) is curve  # nothing new: no refit


def test_runs_at_one_size_give_no_curve_as_the_learner_stores() -> None:
    learner = CurveLearner(1, debounce_s=0.0)
    _runs(learner, 24.0, 0.5, [8, 8, 8, 8], t0=0.0)
    assert learner.curve(0, now=10.0) is None
    assert (learner.refits, learner.refused) == (1, 1)


def _learned(jobs: list[TraceJob]) -> tuple[Experiment, AdaptiveSizer]:
    ex = Experiment(jobs, Setup(machine=64, seed=2, noise=0.0))
    sizer = ex.sizer("adaptive")
    assert isinstance(sizer, AdaptiveSizer)
    return ex, sizer


def test_before_any_completed_run_a_job_runs_as_submitted() -> None:
    ex, sizer = _learned(trace((0, 8, 600, 1200), (5, 8, 600, 1200)))
    got = sizer.allocate(0, ClusterView(0.0, 64, 0, 64))
    assert (got.min_nodes, got.max_nodes, got.limit) == (4, 16, ex.requests.limit[0])
    assert got.rule == "fallback"


def test_killed_runs_are_not_observations() -> None:
    _, sizer = _learned(trace(*[(k, 8, 600, 1200) for k in range(6)]))
    assert sizer.learner is not None
    learner = sizer.learner[0]
    for job, n in enumerate([4, 8, 16]):
        sizer.finished(job, n, 500.0, killed=True, now=1000.0)
    assert learner.curve(0, now=1e6) is None
    assert learner.refits == 0
    for job, n in enumerate([4, 8, 16]):
        sizer.finished(job, n, 900.0 / n, killed=False, now=1000.0)
    learner.curve(0, now=1e6)
    assert learner.refits == 1


def test_the_variants_separate_size_from_limit() -> None:
    jobs = trace(*[(k, 8, 600, 1200) for k in range(3)])
    ex = Experiment(jobs, Setup(machine=64, seed=2, noise=0.0, curves="oracle"))
    view = ClusterView(0.0, 64, 0, 64)
    pinned = ex.sizer("rigid_limits").allocate(0, view)
    assert (pinned.min_nodes, pinned.max_nodes) == (8, 8)
    fixed = ex.sizer("adaptive_fixed_limits").allocate(0, view)
    free = ex.sizer("adaptive").allocate(0, view)
    assert fixed.min_nodes == fixed.max_nodes == free.min_nodes
    assert fixed.limit == ex.requests.limit[0]


def test_every_policy_runs_and_learned_adaptive_differs_from_the_oracle() -> None:
    jobs = [TraceJob(k, 300.0 * k, 1800.0, [4, 8, 16][k % 3], 7200.0, k % 4, 1) for k in range(120)]
    ex = Experiment(jobs, Setup(machine=32, seed=4))
    learned, oracle = ex.run("adaptive"), ex.run("oracle")
    assert learned.refits > 0
    assert oracle.refits == 0
    assert not np.array_equal(learned.schedule.nodes, oracle.schedule.nodes)
    assert learned.rules.get("fallback", 0) > oracle.rules.get("fallback", 0)


def test_kills_and_killed_node_hours_are_counted() -> None:
    jobs = trace((0, 2, 100, 50), (0, 1, 10, 20))
    m = summarize(run_rigid(jobs, 4, backfill=True))
    assert m.killed == 1
    assert m.killed_node_hours == pytest.approx(2 * 50 / 3600)


def test_bounded_slowdown_uses_the_reference_runtime() -> None:
    jobs = trace((0, 1, 100))
    s = run_rigid(jobs, 1, backfill=False)
    assert summarize(s).mean_bounded_slowdown == 1.0
    assert summarize(s, reference=np.array([50.0])).mean_bounded_slowdown == 2.0
    assert summarize(s, reference=np.array([1.0])).mean_bounded_slowdown == 10.0  # 100/max(1,10)


def test_a_trace_is_scaled_to_the_offered_load() -> None:
    jobs = trace((0, 2, 100), (100, 2, 100), (300, 4, 100))
    assert offered_load(jobs, 8) == pytest.approx((200 + 200 + 400) / (8 * 300))
    for load in (0.5, 1.0):
        scaled = at_load(jobs, 8, load)
        assert offered_load(scaled, 8) == pytest.approx(load)
        assert [j.runtime for j in scaled] == [j.runtime for j in jobs]
    with pytest.raises(ValueError, match="positive"):
        at_load(jobs, 8, 0.0)


def test_figures_over_seeds_get_a_t_interval() -> None:
    rows: list[dict[str, float]] = [
        dict.fromkeys(("jobs", "killed", "raised", "resubmitted", "abandoned"), 1.0)
        | dict.fromkeys(("sized", "recorded"), 0.0)
        for _ in range(3)
    ]
    figures: tuple[str, ...] = (
        "mean_response_s",
        "mean_wait_s",
        "mean_bsld",
        "mean_bounded_slowdown",
    )
    figures += ("node_hours", "killed_node_hours", "wasted_node_hours", "utilization")
    figures += ("makespan_s",)
    for value, row in zip((1.0, 2.0, 3.0), rows, strict=True):
        row.update(dict.fromkeys(figures, value))
    s = summarize_seeds(rows)
    half = stats.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)
    assert s.mean["mean_response_s"] == 2.0
    assert s.ci95["mean_response_s"] == pytest.approx((2.0 - half, 2.0 + half))
    assert s.ci95["jobs"] == (1.0, 1.0)
    assert summarize_seeds(rows[:1]).ci95["mean_response_s"] is None


def test_a_sweep_reports_every_load_and_seed() -> None:
    jobs = [TraceJob(k, 60.0 * k, 600.0, 4, 1800.0, k % 2) for k in range(30)]
    out = sweep(jobs, Setup(machine=16), [0.5, 0.9], seeds=2, policies=("rigid", "adaptive"))
    assert [r.load for r in out] == [0.5, 0.9]
    for r in out:
        assert set(r.policies) == {"rigid", "adaptive"}
        assert r.policies["rigid"].seeds == 2
        assert r.policies["rigid"].mean["jobs"] == 30
        assert offered_load(r.experiment.jobs, 16) == pytest.approx(r.load)
    assert dataclasses.asdict(out[0].experiment.setup)["seed"] == 1


def test_the_policies_of_an_experiment_share_their_fits_without_changing_a_result() -> None:
    swf = read_swf(NASA).head(600)
    shared = Experiment(swf.jobs, Setup(machine=swf.machine))
    shared.run("adaptive_fixed_limits")
    before = len(shared.fits)
    assert before > 0
    got = shared.run("adaptive").schedule
    alone = Experiment(swf.jobs, Setup(machine=swf.machine))
    expected = alone.run("adaptive").schedule
    for field in ("start", "end", "nodes", "limit", "killed"):
        assert np.array_equal(getattr(got, field), getattr(expected, field)), field
    # some of adaptive's fits were already there: fewer new ones than on its own
    assert len(shared.fits) - before < len(alone.fits)


def test_a_memo_hands_back_the_fit_of_the_same_runs() -> None:
    fits: dict = {}  # type: ignore[type-arg]
    one, two = CurveLearner(1, fits=fits), CurveLearner(1, fits=fits)
    for learner in (one, two):
        for k, n in enumerate((4, 8, 16, 32, 4, 8, 16, 32)):
            learner.observe(0, n, 3600.0 * (0.05 + 0.95 / n) * (1.0 + 0.01 * k), 0.0)
    first = one.curve(0, 100.0)
    assert first is not None
    assert len(fits) == 1
    assert two.curve(0, 100.0) is first
    assert len(fits) == 1


def test_a_sweep_in_parallel_processes_gives_the_serial_results() -> None:
    jobs = [TraceJob(k, 60.0 * k, 600.0, 4, 1800.0, k % 3) for k in range(40)]
    args = (jobs, Setup(machine=16), [0.5, 0.9], 2, ("rigid", "greedy", "adaptive"))
    serial = sweep(*args)
    told: list[tuple[int, int, str]] = []
    with ProcessPoolExecutor(max_workers=2) as pool:
        parallel = sweep(*args, progress=lambda *cell: told.append(cell), mapper=pool.map)
    assert len(told) == 2 * 2 * 3
    for a, b in zip(serial, parallel, strict=True):
        assert a.load == b.load
        for policy in ("rigid", "greedy", "adaptive"):
            assert a.policies[policy].mean == b.policies[policy].mean
            assert np.array_equal(a.first[policy].schedule.end, b.first[policy].schedule.end)
        assert a.experiment.setup == b.experiment.setup


def _learner_fit(nodes: list[int], runtimes: list[float]) -> predictor.Curve:
    """What plugin/learning/learner.py's refit_app stores for these runs (in this order)."""
    fit = predictor.fit_observations(predictor.prepare(nodes, runtimes), method="adept")
    assert fit.status == "ok"
    return predictor.Curve.from_fit(fit)


def _same_curve(got: predictor.Curve, want: predictor.Curve) -> None:
    _same(got.to_dict(), want.to_dict(), "curve")


def _same(a: object, b: object, where: str) -> None:
    """Equal documents, floats (at any depth) to 1e-9 relative: sorted runs sum in another
    order than arrived ones."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), where
    else:
        assert a == b, where


def test_learned_curves_are_the_learners_fit_of_the_same_runs_in_arrival_order() -> None:
    """The simulation fits an application's runs sorted (so that policies that saw the same
    runs in another order share one fit) and keeps the curve in a memo: each curve of a run
    of the simulator is still what the learner fits from those runs as they arrived (with
    their users' limits: the fit of heterogeneous runs, predictor/heterogeneous.py)."""
    swf = read_swf(NASA).head(800)
    ex = Experiment(swf.jobs, Setup(machine=swf.machine))
    sizer = ex.sizer("adaptive")
    assert isinstance(sizer, AdaptiveSizer)
    assert sizer.learner is not None
    Run = tuple[int, float, tuple[float, int]]
    arrived: dict[int, list[Run]] = {}
    real_observe = sizer.learner[0].observe

    def observe(
        app: int,
        nodes: int,
        runtime: float,
        now: float,
        limit: float | None = None,
        written_for: int | None = None,
    ) -> None:
        assert limit is not None
        assert written_for is not None
        arrived.setdefault(app, []).append((nodes, runtime, (limit, written_for)))
        real_observe(app, nodes, runtime, now, limit, written_for)

    sizer.learner[0].observe = observe  # type: ignore[method-assign]
    simulate(ex.jobs, swf.machine, sizer, ex.curves.runtime)
    learned = [(key, c) for key, c in ex.fits.items() if c is not None]
    assert len(learned) >= 10
    for (nodes, runtimes, limits, killed), curve in learned:
        runs = sorted(zip(nodes, runtimes, limits, strict=True))
        # the arrival order of these runs: the app whose window they are
        app = next(a for a, seen in arrived.items() if set(runs) <= set(seen))
        order = [r for r in arrived[app] if r in set(runs)][-len(runs) :]
        assert sorted(order) == runs
        want = fit_heterogeneous(
            [r[0] for r in order],
            [r[1] for r in order],
            [r[2][0] for r in order],
            [r[2][1] for r in order],
            censored=Censored.of(*zip(*killed, strict=True)) if killed else None,
        )
        assert want is not None
        _same_curve(curve, want)
        sizes = np.arange(1.0, 129.0)
        assert np.allclose(curve.runtime(sizes), want.runtime(sizes), rtol=1e-9)
        lo, hi = curve.runtime_interval(sizes)
        want_lo, want_hi = want.runtime_interval(sizes)
        assert np.allclose(lo, want_lo, rtol=1e-9)
        assert np.allclose(hi, want_hi, rtol=1e-9)


def test_a_memo_curve_answers_as_the_curve_it_copies_and_keeps_its_memo_private() -> None:
    plain = _learner_fit([4, 8, 16, 32, 4, 8], [1000.0, 560.0, 330.0, 240.0, 1010.0, 555.0])
    memo = MemoCurve.of(plain)
    assert memo.plain() == plain
    for sizes in (np.array([4.0, 8.0]), np.arange(1.0, 65.0), np.array([[2.0], [3.0]]), 5.0):
        first = memo.runtime(sizes)
        assert np.array_equal(first, plain.runtime(sizes))
        if isinstance(first, np.ndarray):  # a caller's change does not reach the next one
            first[...] = -1.0
        assert np.array_equal(memo.runtime(sizes), plain.runtime(sizes))
        pairs = zip(memo.runtime_interval(sizes), plain.runtime_interval(sizes), strict=True)
        for got, want in pairs:
            assert np.array_equal(got, want)


def test_fallbacks_say_whether_no_curve_or_an_unusable_one_left_the_job_as_submitted() -> None:
    """(New: the simulator counted fallbacks only as one rule.)"""
    ex, sizer = _learned(trace(*[(k, 8, 600, 1200) for k in range(4)]))
    assert sizer.learner is not None
    view = ClusterView(0.0, 64, 0, 64)
    assert sizer.allocate(0, view).rule == "fallback"
    assert sizer.fallbacks == {"no curve": 1}
    # one application's runs of two problem sizes: a curve whose fit error is far above 10%
    for k, n in enumerate([4, 8, 16, 32, 4, 8, 16, 32]):
        sizer.finished(0, n, 3600.0 / n * (5.0 if k % 2 else 1.0), killed=False, now=0.0)
    curve = sizer.learner[0].curve(0, now=1000.0)
    assert curve is not None
    assert curve.fit_error > 0.10
    assert sizer.allocate(1, ClusterView(1000.0, 64, 0, 64)).rule == "fallback"
    assert sizer.fallbacks == {"no curve": 1, "curve unusable": 1}
    result = ex.run("adaptive")
    assert sum(result.fallbacks.values()) == result.rules.get("fallback", 0)


def test_the_identified_variant_leaves_a_job_as_submitted_when_its_curve_is_not_identified() -> (
    None
):
    """(New: the variant did not exist.) Runs at two sizes give ADEPT a curve it cannot
    identify; adaptive sizes with it, adaptive_identified leaves the job as submitted."""
    jobs = trace(*[(k, 8, 600, 1200) for k in range(4)])
    ex = Experiment(jobs, Setup(machine=64, seed=2, noise=0.0))
    view = ClusterView(1000.0, 64, 0, 64)
    rules = {}
    for policy in ("adaptive", "adaptive_identified"):
        sizer = ex.sizer(policy)
        assert isinstance(sizer, AdaptiveSizer)
        for k, n in enumerate([4, 16, 4, 16]):
            sizer.finished(k, n, 3600.0 * (0.1 + 0.9 / n), killed=False, now=0.0)
        assert sizer.learner is not None
        curve = sizer.learner[0].curve(0, now=1000.0)
        assert curve is not None
        assert not curve.identified
        rules[policy] = sizer.allocate(0, view).rule
    assert rules["adaptive"] != "fallback"
    assert rules["adaptive_identified"] == "fallback"


def _daemon_runs(learner: CurveLearner, ends: list[float], k0: int = 0) -> list[tuple[int, float]]:
    """Runs of app 0 at 4-32 nodes ending at `ends`, a little noise each; (nodes, runtime)."""
    out = []
    for k, end in enumerate(ends, start=k0):
        n = (4, 8, 16, 32)[k % 4]
        t = 3600.0 * float(relative_runtime(np.array([float(n)]), 24.0, 0.5)[0])
        t *= 1.0 + 0.03 * ((7 * k) % 5 - 2)
        learner.observe(0, n, t, now=end)
        out.append((n, t))
    return out


def _fit_of(runs: list[tuple[int, float]]) -> predictor.Curve:
    return _learner_fit([n for n, _ in runs], [t for _, t in runs])


def test_refits_follow_the_daemons_rounds_on_every_change() -> None:
    """(New: the simulator refitted only when an application's runs had grown by half, so a
    9th run after a fit of 8 was never seen; the daemon refits on every change: this failed.)
    A run ending at e is ingested by the learner's round at the next multiple of 30 s; the
    round 60 s after the first unfitted ingest refits on every run ingested by then: g = 0,
    the rule before the refit cadence (policies/refit_cadence.py)."""
    learner = CurveLearner(1, refit_growth=0.0)
    runs = _daemon_runs(learner, [100.0 + k for k in range(8)])  # ingested at 120
    assert learner.curve(0, now=179.0) is None  # the round at 180 refits
    eight = learner.curve(0, now=180.0)
    assert eight is not None
    _same_curve(eight, _fit_of(runs))
    runs += _daemon_runs(learner, [200.0], k0=8)  # ingested at 210: the round at 270
    late = _daemon_runs(learner, [271.0], k0=9)  # ingested at 300: the round at 360
    assert learner.curve(0, now=269.0) is eight
    nine = learner.curve(0, now=275.0)
    assert nine is not None
    assert nine is not eight
    _same_curve(nine, _fit_of(runs))
    ten = learner.curve(0, now=400.0)
    assert ten is not None
    _same_curve(ten, _fit_of(runs + late))
    assert (learner.refits, learner.fitted) == (3, 3)
    sparse = CurveLearner(1, growth=1.5)  # the old cadence: no refit for one run more
    _daemon_runs(sparse, [100.0 + k for k in range(8)])
    first = sparse.curve(0, now=180.0)
    _daemon_runs(sparse, [200.0], k0=8)
    assert sparse.curve(0, now=1000.0) is first


def test_the_refit_cadence_waits_for_growth_a_new_size_or_an_old_curve() -> None:
    """(New with the refit cadence, policies/refit_cadence.py; before it, every change was
    refitted.) g = 0.5 on a fit of 8 runs: 3 more runs at known sizes leave the curve, the
    4th refits; a run at a new size refits at once; so does any run on a curve H old."""
    learner = CurveLearner(1, refit_growth=0.5, refit_max_age_s=3600.0)
    runs = _daemon_runs(learner, [100.0 + k for k in range(8)])  # the round at 180
    eight = learner.curve(0, now=200.0)
    assert eight is not None
    runs += _daemon_runs(learner, [300.0, 400.0, 500.0], k0=8)
    assert learner.curve(0, now=1000.0) is eight
    assert learner.refits == 1
    runs += _daemon_runs(learner, [1100.0], k0=11)  # 4 = ⌈0.5 · 8⌉: the round at 1,110
    twelve = learner.curve(0, now=1200.0)
    assert twelve is not None
    assert twelve is not eight
    _same_curve(twelve, _fit_of(runs))
    learner.observe(0, 4, runs[0][1], now=1300.0)  # 1 of 6
    assert learner.curve(0, now=1500.0) is twelve
    t64 = 3600.0 * float(relative_runtime(np.array([64.0]), 24.0, 0.5)[0])
    learner.observe(0, 64, t64, now=1600.0)  # a size the curve never saw
    fourteen = learner.curve(0, now=1700.0)
    assert fourteen is not twelve
    learner.observe(0, 8, runs[1][1], now=1800.0)
    assert learner.curve(0, now=4700.0) is fourteen  # refitted at 1,620: H old at 5,220
    assert learner.curve(0, now=5300.0) is not fourteen
    assert learner.refits == 4
    with pytest.raises(ValueError, match="refit_growth"):
        CurveLearner(1, refit_growth=-1.0)


def test_rounds_no_decision_saw_are_counted_not_fitted() -> None:
    learner = CurveLearner(1)
    for start in (100.0, 400.0, 700.0):  # three rounds before anyone asks
        _daemon_runs(learner, [start + k for k in range(4)], k0=int(start))
    curve = learner.curve(0, now=1000.0)
    assert curve is not None
    assert (learner.refits, learner.fitted) == (3, 1)


def test_a_fit_sees_the_kept_runs_the_newest_window_within_the_age() -> None:
    learner = CurveLearner(1, window=8)
    runs = _daemon_runs(learner, [100.0 + k for k in range(12)])
    kept = runs[-8:]
    windowed = learner.curve(0, now=1000.0)
    assert windowed is not None
    _same_curve(windowed, _fit_of(kept))
    aged = CurveLearner(1, max_age_s=1000.0)
    _daemon_runs(aged, [100.0 + k for k in range(4)])  # ingested at 120: aged out by 2,000
    recent = _daemon_runs(aged, [1500.0 + k for k in range(8)], k0=4)  # ingested at 1,500
    young = aged.curve(0, now=2000.0)
    assert young is not None
    _same_curve(young, _fit_of(recent))


def test_a_cell_split_into_fit_families_gives_the_serial_results() -> None:
    """(New: a sweep of one load and one seed was one cell, one process.)"""
    setup = Setup(machine=16)
    assert fit_families(POLICIES, setup) == [
        ("adaptive_fixed_limits", "adaptive"),
        ("rigid_limits",),
        ("rigid",),
        ("greedy",),
        ("oracle",),
        ("oracle_curve",),
    ]
    oracle_only = fit_families(POLICIES, dataclasses.replace(setup, curves="oracle"))
    assert oracle_only == [(p,) for p in POLICIES]
    jobs = [TraceJob(k, 60.0 * k, 600.0, 4, 1800.0, k % 3) for k in range(40)]
    serial = sweep(jobs, setup, [0.7], 1, POLICIES)
    with ProcessPoolExecutor(max_workers=2) as pool:
        split = sweep(jobs, setup, [0.7], 1, POLICIES, mapper=pool.map, split=True)
    assert list(split[0].first) == list(POLICIES)
    for policy in POLICIES:
        assert split[0].policies[policy].mean == serial[0].policies[policy].mean
        assert np.array_equal(
            split[0].first[policy].schedule.end, serial[0].first[policy].schedule.end
        )


def test_the_timeclass_variant_keys_curves_by_application_and_requested_time() -> None:
    """(New: the variant did not exist.) One application's jobs of two problem sizes, told
    apart by their requested times (1 h and 16 h): its learner keys them apart, so each key's
    curve fits its runs; adaptive's one curve through both explains them by their limits
    (predictor/heterogeneous.py: β near 1), where a plain fit has a large fit error."""
    jobs = [TraceJob(k, 10.0 * k, 600.0, 8, 3600.0 if k % 2 else 16 * 3600.0, 7) for k in range(8)]
    ex = Experiment(jobs, Setup(machine=64, seed=2, noise=0.0))
    assert len(ex.apps) == 1
    assert len(ex.time_apps) == 2
    assert ex.time_apps.names == ("exe-7-t9", "exe-7-t5")  # 16 h = 2^9.9 min, 1 h = 2^5.9
    plain, keyed = ex.sizer("adaptive"), ex.sizer("adaptive_timeclass")
    assert isinstance(plain, AdaptiveSizer)
    assert isinstance(keyed, AdaptiveSizer)
    for sizer in (plain, keyed):
        for k, n in enumerate([4, 8, 16, 32, 4, 8, 16, 32]):
            job = k % 2  # job 0: 16 h class, job 1: 1 h class; the big problem runs 10x longer
            t = (1.0 if job else 10.0) * 3600.0 / n**0.8
            sizer.finished(job, n, t, killed=False, now=0.0)
    assert plain.learner is not None
    assert keyed.learner is not None
    mixed = plain.learner[0].curve(0, now=1000.0)
    assert mixed is not None
    assert mixed.covariate is not None
    assert mixed.covariate.beta > 0.8
    sizes = [4, 8, 16, 32, 4, 8, 16, 32]
    runtimes = [(10.0 if k % 2 == 0 else 1.0) * 3600.0 / n**0.8 for k, n in enumerate(sizes)]
    assert predictor.fit(sizes, runtimes).fit_error > 0.10
    for key in (0, 1):
        own = keyed.learner[0].curve(key, now=1000.0)
        assert own is not None
        assert own.fit_error < 0.05
    assert "adaptive_timeclass" not in POLICIES


def test_a_memo_curve_remembers_each_jobs_curve_of_heterogeneous_runs() -> None:
    """A covariate curve's per-job curve (`for_limit`) is computed once per (limit, size),
    with the values `Curve.for_limit` gives."""
    rng = np.random.default_rng(3)
    n = rng.choice(np.array([4, 8, 16, 32]), 60)
    limit = np.exp(rng.normal(np.log(3600.0), 1.0, 60))
    t = 0.3 * limit * relative_runtime(n.astype(float), 12.0, 0.5)
    plain = fit_heterogeneous(n, t, limit, n // 2)
    assert plain is not None
    memo = MemoCurve.of(plain)
    first = memo.for_limit(7200.0, 8)
    assert memo.for_limit(7200.0, 8) is first
    sizes = np.arange(4.0, 33.0)
    want = plain.for_limit(7200.0, 8)
    assert np.array_equal(first.runtime(sizes), want.runtime(sizes))
    assert memo.for_limit(3600.0, 8) is not first


def test_a_killed_run_counts_in_the_limit_use_of_the_next_refit_only() -> None:
    """A run killed at its limit is no observation, but the next refit's limit-use bound
    counts it (learning.py, as the daemon's store keeps it apart); it brings no refit."""
    rng = np.random.default_rng(5)
    sizes = rng.choice([4, 8, 16, 32], 60)
    runtime = 3600.0 * relative_runtime(sizes.astype(float), 24.0, 0.8) * rng.lognormal(0, 0.3, 60)
    limit = 4.0 * runtime  # generous limits: the runs use a quarter of them
    with_kills, without = CurveLearner(1, refit_growth=0.0), CurveLearner(1, refit_growth=0.0)
    for learner in (with_kills, without):
        for i in range(60):
            learner.observe(0, int(sizes[i]), float(runtime[i]), 100.0 + i, float(limit[i]), 4)
    for i in range(10):  # killed at their limits on the size those were written for
        with_kills.observe_killed(0, 4, 7200.0, 170.0 + i, 7200.0, 4)
    plain, counted = without.curve(0, now=1000.0), with_kills.curve(0, now=1000.0)
    assert plain is not None
    assert counted is not None
    assert plain.covariate is not None
    assert counted.covariate is not None
    assert plain.covariate.use is not None
    assert counted.covariate.use is not None
    assert counted.covariate.use >= 0.0 > plain.covariate.use
    assert (counted.A, counted.sigma) == (plain.A, plain.sigma)
    assert with_kills.refits == without.refits
