"""Speed of the allocation policies: decisions per second on one core, and one decision's time.

The mix: curves fitted once from every real strong-scaling CSV (exactly as the learner stores
them: diagnostics and model choice included) and synthetic Downey curves across both variance
modes; jobs with the ranges moldable jobs ask for (1-16 to 32-1024 nodes), some with a
feasible-size tag; clusters from idle to saturated, some with the load unknown; all three
strategies. One process, one thread: the rate is one core's.

Printed: decisions per second over the whole mix; median time of one `decide` (it evaluates
the curve at every size in the job's range) for short and long ranges; the same after reading
the curve from its stored JSON form (what the daemon does per held job: `Curve.from_dict` +
`decide`); and, for scale, fit + model choice + decide (the ``decide --observations`` path).
Times come from time.perf_counter on a shared machine, so nothing is asserted about them; only
that what was timed is right (sizes inside the range and the partition limit, the same
decision twice, and decide_with_runtime's decision and runtime as decide's and the curve's).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

import predictor
from plugin.learning.learner import curve_from_fit
from policies import (
    DEFAULTS,
    ClusterState,
    Decision,
    Feasible,
    PolicySettings,
    Request,
    decide,
    decide_with_runtime,
)
from policies.config import STRATEGIES
from predictor.covariate import Covariate
from predictor.downey import max_useful_size, processor_working_set

from .results import record

pytestmark = pytest.mark.benchmark

DATA = Path(__file__).resolve().parents[1] / "data" / "scaling"
RANGES = [(1, 16), (2, 32), (4, 64), (8, 128), (16, 256), (32, 512), (32, 1024)]
TAGS = [None, None, None, Feasible.named("powers_of_two"), Feasible.listed({6, 12, 24, 48, 96})]
Case = tuple[Request, predictor.Curve, ClusterState, PolicySettings]


def fitted_curves() -> list[predictor.Curve]:
    out = []
    for path in sorted(DATA.glob("*.csv")):
        runs = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(0, 1))
        out.append(curve_from_fit(predictor.fit(runs[:, 0], runs[:, 1])))
    return out


def synthetic_curves(count: int, rng: np.random.Generator) -> list[predictor.Curve]:
    out = []
    for _ in range(count):
        A, sigma = float(rng.uniform(4, 2000)), float(rng.uniform(0, 4))
        out.append(
            predictor.Curve(
                A=A,
                sigma=sigma,
                t1=float(rng.uniform(600, 1e6)),
                t1_known=False,
                identified=True,
                method="adept",
                fit_error=0.02,
                max_useful_n=int(np.ceil(max_useful_size(A, sigma) - 1e-9)),
                pws_n=int(processor_working_set(A, sigma)),
                observed_n=(4, 8, 16, 32),
                runs=4,
            )
        )
    return out


def mix(count: int, seed: int = 7) -> list[Case]:
    rng = np.random.default_rng(seed)
    curves = fitted_curves() + synthetic_curves(24, rng)
    cases = []
    for k in range(count):
        lo, hi = RANGES[k % len(RANGES)]
        request = Request(lo, hi, int(rng.integers(10, 2880)), feasible=TAGS[k % len(TAGS)])
        total = 2048
        idle = None if k % 10 == 0 else int(rng.integers(0, total))
        cluster = ClusterState(idle, int(rng.integers(0, 4 * total)), total, 1024, 2880)
        settings = replace(DEFAULTS, strategy=STRATEGIES[k % len(STRATEGIES)])
        cases.append((request, curves[k % len(curves)], cluster, settings))
    return cases


def with_covariate(curve: predictor.Curve) -> predictor.Curve:
    """`curve` as a curve of heterogeneous runs would be stored: a limit covariate judged by
    its noise (β 0.9, noise and misfit 5%, limits deflated by the curve's own shape) and a
    limit-use bound (runs used at most 80% of their limits)."""
    s = float(np.clip(predictor.downey.sigma_to_s(curve.sigma), 0.0, 1.99))
    covariate = Covariate(0.9, 3600.0, 0.05, 40, 0.05, 0.5, (max(curve.A, 1.0), s), 40, -0.22)
    return replace(curve, covariate=covariate, speaker=None)


def median_us(timings: list[float]) -> float:
    return 1e6 * float(np.median(timings))


def one_by_one(cases: list[Case], stored: bool) -> tuple[float, list[Decision]]:
    """Median µs of single decisions; with `stored`, the curve is read from JSON first."""
    docs = [json.dumps(curve.to_dict()) for _, curve, _, _ in cases]
    timings, out = [], []
    for (request, curve, cluster, settings), doc in zip(cases, docs, strict=True):
        start = time.perf_counter()
        used = predictor.Curve.from_dict(json.loads(doc)) if stored else curve
        out.append(decide(request, used, cluster, settings))
        timings.append(time.perf_counter() - start)
    return median_us(timings), out


def check(cases: list[Case], decisions: list[Decision]) -> None:
    for (request, _, cluster, _), d in zip(cases, decisions, strict=True):
        if d.rule == "fallback":  # a real curve the policy refuses (fitting error too large)
            # As submitted, or its minimum kept with the range's top cut at the curve's knee
            # (a top at the minimum pins the job there).
            assert d.time_limit_min is None
            if d.nodes is not None:
                assert d.nodes == request.min_nodes
                assert d.max_nodes is None or d.nodes < d.max_nodes < request.max_nodes
            continue
        assert d.nodes is not None  # only a fallback leaves a job as submitted
        assert request.min_nodes <= d.nodes <= request.max_nodes
        assert cluster.node_limit is None or d.nodes <= cluster.node_limit
        if d.time_limit_min is None:  # an untrusted curve, or a size past the data, keeps it
            why = d.time_limit_reason
            assert "never shortens a limit" in why or "beyond the largest observed size" in why
            continue
        assert request.time_limit_min is None or d.time_limit_min <= request.time_limit_min
        assert cluster.max_time_min is None or d.time_limit_min <= cluster.max_time_min


@pytest.mark.benchmark
def test_policy_speed(capsys: pytest.CaptureFixture[str]) -> None:
    cases = mix(5000)
    decide(*cases[0])  # imports and first-call caches out of the timing

    start = time.perf_counter()
    decisions = [decide(*case) for case in cases]
    elapsed = time.perf_counter() - start
    rate = len(cases) / elapsed
    check(cases, decisions)

    sample = cases[:700]
    all_us, _ = one_by_one(sample, stored=False)
    stored_us, from_store = one_by_one(sample, stored=True)
    assert from_store == decisions[:700]  # the stored form decides exactly alike
    # The same jobs on curves of heterogeneous runs (predictor/heterogeneous.py): each job's
    # runtimes scaled by its own limit, sizes checked against the runs' limit use.
    heterogeneous = [(r, with_covariate(c), cl, st) for r, c, cl, st in sample]
    covariate_us, covariate_decisions = one_by_one(heterogeneous, stored=False)
    check(heterogeneous, covariate_decisions)
    by_range = []
    for lo, hi in [(4, 64), (32, 1024)]:
        subset = [c for c in sample if (c[0].min_nodes, c[0].max_nodes) == (lo, hi)]
        by_range.append((lo, hi, one_by_one(subset, stored=False)[0]))

    runs = np.loadtxt(DATA / "lan_thesis_npb_lu_W.csv", delimiter=",", skiprows=1)
    job, cluster = Request(4, 64, 60), ClusterState(40, 0, 64)
    fit_timings = []
    for _ in range(5):
        start = time.perf_counter()
        curve = curve_from_fit(predictor.fit(runs[:, 0], runs[:, 1]))
        fitted = decide(job, curve, cluster)
        fit_timings.append(time.perf_counter() - start)
    assert (fitted.nodes, fitted.rule) == (40, "load_adaptive")

    view = Table(title="Allocation decisions, one core (this machine)")
    view.add_column("what")
    view.add_column("figure", justify="right")
    kept = sum(d.nodes is None for d in decisions)
    view.add_row(f"decisions per second ({len(cases):,}-job mix)", f"{rate:,.0f}")
    view.add_row("  of which left as submitted (unusable curve)", f"{kept:,}")
    view.add_row("one decide(), median over the mix", f"{all_us:.0f} µs")
    for lo, hi, us in by_range:
        view.add_row(
            f"  jobs asking {lo}-{hi} nodes ({hi - lo + 1} sizes evaluated)", f"{us:.0f} µs"
        )
    view.add_row("Curve.from_dict(stored JSON) + decide(), median", f"{stored_us:.0f} µs")
    view.add_row(
        "one decide() on curves of heterogeneous runs, same jobs, median",
        f"{covariate_us:.0f} µs ({covariate_us / all_us:.2f}x)",
    )
    view.add_row(
        "fit 6 runs, choose the model, decide() (decide --observations)",
        f"{median_us(fit_timings) / 1e3:.0f} ms",
    )
    with capsys.disabled():
        Console(width=110).print(view)
    record(
        "policy-speed",
        title="Speed of one allocation decision",
        source=__file__,
        full=True,
        tables=[view],
        notes=[
            "The mix: synthetic jobs and curves (this file's mix(): ranges 4-64 and 32-1024 "
            "among others, loads, time limits); the fit row uses the real NPB LU study of "
            "tests/data/scaling. One core, the machine shared with other work.",
        ],
    )

    again = [decide(*case) for case in cases[:200]]
    assert again == decisions[:200]
    # decide_with_runtime (what the daemon and the simulator call): the same decision, and the
    # curve's own runtime at its size to the bit (the budget's node-hours count with it).
    for case, decision in zip(cases[:200], decisions, strict=False):
        with_runtime, runtime = decide_with_runtime(*case)
        assert with_runtime == decision
        if decision.nodes is not None:
            assert runtime == float(case[1].runtime(np.array([float(decision.nodes)]))[0])
