"""The daemon's decider with the seed papers' models: a ``pattern=master-worker`` tag caps the
size at the nodes N_opt workers need (Costa et al.), and on a described node type the app
never ran on, a roofline prior stands in for its curve (the large-scale thesis, 4.6.3), until
its own runs give it one. The testbed runs are in tests/integration/test_seed_models.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import policies
import predictor
from plugin.appkey import AppKey, AppKeyRule
from plugin.config import NodeTypeConfig
from plugin.daemon import marks, reasons
from plugin.daemon.decider import RELEASE, RESIZE, Budget, CurveSource, Decider
from plugin.daemon.record import decision_record
from plugin.slurm import JobRecord
from plugin.store.curves import CurveRecord, Observation
from policies.master_worker import MASTER_WORKER
from policies.partition import Queue
from predictor.downey import FloatArray

NOW = 1_800_000_000
#: std: 1000 GFLOP/s and 100 GB/s (ridge 10); big: 4000 and 200 (ridge 20), a 10 Gbit/s link.
TYPES = {
    "std": NodeTypeConfig(1000.0, 100.0, 1.25),
    "big": NodeTypeConfig(4000.0, 200.0, 1.25),
}
N = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])


def job(**fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "job_id": 7,
        "name": "farm",
        "user": "ann",
        "account": "phys",
        "partition": "std",
        "state": "PENDING",
        "source": "squeue",
        "comment": "",
        "admin_comment": marks.HELD,
        "nodes_min": 2,
        "nodes_max": 64,
        "time_limit_min": 600,
        "submit_time": NOW - 5,
        "priority": 0,
        "num_tasks": 2,
        "ntasks_per_node": 0,
    }
    base.update(fields)
    return JobRecord(**base)


def record(n: FloatArray, runtime: FloatArray) -> CurveRecord:
    curve = predictor.Curve.from_fit(predictor.fit(n, runtime))
    return CurveRecord(curve, 3, 3, None, int(n.size), "adept", curve.reliable)


#: Sizes up to 128: runs that show no knee cap a curve at the largest size they ran, so a
#: code meant to scale far has been run far.
WIDE = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0])


def amdahl(t1: float) -> CurveRecord:
    """A code with a 1% serial part, run up to 128 nodes: the efficiency rule takes it far."""
    return record(WIDE, t1 * (0.01 + 0.99 / WIDE))


def lu(t1: float) -> CurveRecord:
    """NAS LU class W's speedups (the Downey thesis' Table 5.1): a knee the runs show, so the
    curve is identified and shortens time limits."""
    return record(N, t1 / np.array([1.0, 1.97, 3.83, 7.24, 13.07, 20.77]))


def master_worker(knee: float, n: FloatArray = N, task_s: float = 100.0) -> CurveRecord:
    """Runs of a master-worker code whose master saturates at `knee` nodes (one task a
    node): throughput min(n / knee, 1) · knee/task_s."""
    return record(n, task_s * 64.0 / np.minimum(n, knee))


def runs_on(node_type: str, count: int = 6) -> list[Observation]:
    return [
        Observation(f"{i}", AppKey("farm", owner="ann"), 2**i, 100.0, NOW - 1000 + i,
                    node_type=node_type)
        for i in range(count)
    ]  # fmt: skip


class Store:
    """The CurveStore calls the decider makes, from memory (the store itself is tested on a
    real Redis): the curve of all runs, the curve per node type, the runs."""

    def __init__(
        self,
        curve: CurveRecord | None,
        runs: list[Observation] | None = None,
        typed: dict[str, CurveRecord] | None = None,
    ) -> None:
        self.curve, self.runs, self.typed = curve, runs or [], typed or {}
        self.reads: list[str] = []

    def curve_record(self, app: AppKey, node_type: str | None = None) -> CurveRecord | None:
        return self.curve if node_type is None else self.typed.get(node_type)

    def node_types(self, app: AppKey) -> list[str]:
        self.reads.append("node_types")
        return sorted(self.typed)

    def observations(self, app: AppKey) -> list[Observation]:
        self.reads.append("observations")
        return self.runs

    def sibling_sizes(self, app: AppKey) -> dict[AppKey, list[Observation]]:
        return {}

    def limit_safety(self, app: AppKey) -> float:
        return 1.0


def decider(store: Store, types: dict[str, NodeTypeConfig] | None = None) -> Decider:
    curves = CurveSource(lambda: store, retry_s=5.0, clock=lambda: 0.0)  # type: ignore[arg-type, return-value]
    made = Decider(AppKeyRule(), policies.default_config(), curves, Budget(), types)
    made.limits_enforced = False
    curves.begin_batch()
    return made


def open_state(_: JobRecord) -> policies.ClusterState:
    return policies.ClusterState(idle_nodes=64, total_nodes=64)


# --- master-worker ----------------------------------------------------------------------------

FIGURES = "adaptalloc:v1 app=farm pattern=master-worker tc=2 vi=5e7 vo=1e7"


def test_the_task_figures_cap_the_size_at_the_nodes_fifty_workers_need() -> None:
    """N_opt = 2 s / (50 MB at 1.25 GB/s) = 50 workers; with the master, 51 tasks at 16 a
    node fill 4 nodes. The curve alone would take the job much further."""
    store = Store(amdahl(36000.0))
    uncapped = decider(store, TYPES).decide(job(), open_state)
    assert uncapped.resize is not None
    assert uncapped.resize.min_nodes > 4
    got = decider(store, TYPES).decide(job(comment=FIGURES, ntasks_per_node=16), open_state)
    assert got.action == RESIZE
    assert got.rule == MASTER_WORKER
    assert got.resize is not None
    assert (got.resize.min_nodes, got.resize.max_nodes) == (4, 4)
    assert "N_opt" in got.reason
    assert "50 workers busy on std" in got.reason
    assert "capped at 4 nodes" in got.reason
    # A master-worker decision made within a curve is scored against it, as the curve's own.
    assert got.curve_doc is not None
    assert decision_record(got, "released", None).rule == MASTER_WORKER


def test_without_figures_n_opt_is_learned_from_where_the_runs_level_off() -> None:
    store = Store(master_worker(knee=13.0))
    got = decider(store).decide(
        job(comment="adaptalloc:v1 app=farm pattern=master-worker"), open_state
    )
    plain = decider(store).decide(job(), open_state)
    assert plain.resize is not None
    assert plain.resize.min_nodes > 13  # the curve's own rules go past the knee
    assert got.rule == MASTER_WORKER
    assert got.resize is not None
    assert (got.resize.min_nodes, got.resize.max_nodes) == (13, 13)
    assert "levels off at 13" in got.reason


def test_figures_without_the_partitions_link_are_learned_instead_and_say_why() -> None:
    store = Store(master_worker(knee=13.0))
    got = decider(store, {"big": TYPES["big"]}).decide(job(comment=FIGURES), open_state)
    assert got.resize is not None
    assert (got.rule, got.resize.max_nodes) == (MASTER_WORKER, 13)
    assert "[node_types.std] link_gbs" in got.reason
    assert "learned" in got.reason


def test_a_master_worker_job_with_no_cap_says_why_and_is_otherwise_unchanged() -> None:
    store = Store(None)
    plain = decider(store).decide(job(), open_state)
    got = decider(store).decide(
        job(comment="adaptalloc:v1 app=farm pattern=master-worker"), open_state
    )
    assert (got.action, got.resize) == (plain.action, plain.resize)
    assert "master-worker: not capped" in got.reason


def test_a_job_left_as_submitted_has_its_range_cut_at_the_cap() -> None:
    got = decider(Store(None), TYPES).decide(job(comment=FIGURES, ntasks_per_node=16), open_state)
    assert got.action == RESIZE
    assert got.resize is not None
    assert (got.resize.min_nodes, got.resize.max_nodes, got.resize.time_limit_min) == (2, 4, None)
    assert got.curve_doc is None  # no curve decided anything


def test_each_listed_partition_gets_its_own_cap() -> None:
    """The heterogeneous case: big's cores compute the task twice as fast at intensity 5
    (memory-bound on both: the bandwidth ratio 200/100), so its master saturates at half
    std's workers: 25 against 50, each tuned on its own type."""
    store = Store(amdahl(36000.0), runs_on("std"))
    free = Queue(idle_nodes=64)
    got = decider(store, TYPES).decide(
        job(partition="std,big", comment=FIGURES + " intensity=5", ntasks_per_node=1),
        open_state,
        queue={"std": free, "big": free}.get,
        known_partitions=lambda: ["std", "big"],
    )
    assert got.resize is not None
    assert got.placement is not None
    options = {o["partition"]: o for o in got.placement["options"]}
    assert options["std"]["nodes"] == 51
    assert options["big"]["nodes"] == 26  # 25 workers and the master
    assert got.resize.partition == "big"  # faster (the roofline prior) and free
    assert "Tc on big: the tag's 2 s on std × 0.5" in got.reason
    assert "roofline prior" in got.reason


def test_a_bad_figure_fails_open() -> None:
    got = decider(Store(amdahl(100.0)), TYPES).decide(
        job(comment="adaptalloc:v1 app=farm pattern=master-worker tc=2 vi=5e7"), open_state
    )
    assert (got.action, got.fail_open) == (RELEASE, reasons.BAD_TAG)


# --- the roofline prior -----------------------------------------------------------------------


def test_a_type_the_app_never_ran_on_gets_a_roofline_prior_from_its_curve() -> None:
    """Every run on std; big computes the app (3 flop/byte, memory-bound on both) twice as
    fast. The job on big is sized on std's curve with half its runtimes, marked a prior, and
    its time limit is left as written."""
    store = Store(lu(36000.0), runs_on("std"))
    tagged = job(partition="big", nodes_max=16, comment="adaptalloc:v1 app=farm intensity=3")
    got = decider(store, TYPES).decide(tagged, open_state, cpus=lambda _: 16)
    plain = decider(store).decide(tagged, open_state, cpus=lambda _: 16)
    assert got.action == RESIZE
    assert "roofline prior from the app's curve on std" in got.reason
    assert "2× as fast per core" in got.reason
    assert got.resize is not None
    assert plain.resize is not None
    assert got.resize.time_limit_min is None  # never shortened on a prior
    assert plain.resize.time_limit_min is not None  # as the all-runs curve would have
    assert got.curve_doc is not None
    assert got.curve_doc["t1"] == pytest.approx(0.5 * store.curve.curve.t1, rel=0.02)  # type: ignore[union-attr]


def test_the_prior_sizes_a_job_the_fallback_refused_across_core_counts() -> None:
    """std has 16 cores a node, big 32: the all-runs curve is refused on big
    (policies/fallback.py); the prior converts it per core and sizes the job."""
    store = Store(amdahl(36000.0), runs_on("std"))
    cpus = {"std": 16, "big": 32}.get
    tagged = job(partition="big", comment="adaptalloc:v1 app=farm intensity=3")
    refused = decider(store).decide(tagged, open_state, cpus=cpus)
    assert refused.rule == "fallback"
    got = decider(store, TYPES).decide(tagged, open_state, cpus=cpus)
    assert got.rule != "fallback"
    assert "per core" in got.reason


def test_without_an_intensity_the_refusal_says_how_to_give_one() -> None:
    store = Store(amdahl(36000.0), runs_on("std"))
    got = decider(store, TYPES).decide(
        job(partition="big"), open_state, cpus={"std": 16, "big": 32}.get
    )
    assert got.rule == "fallback"
    assert "intensity=" in got.reason


def test_the_intensity_is_estimated_from_two_types_for_a_third() -> None:
    """The app ran on std and big (big 2× faster: memory-bound on both, so its intensity is
    at most std's ridge, 10); a third type gpu gets a prior without any tag."""
    typed = {"std": amdahl(36000.0), "big": amdahl(18000.0)}
    store = Store(amdahl(27000.0), runs_on("std") + runs_on("big"), typed)
    types = {**TYPES, "gpu": NodeTypeConfig(8000.0, 800.0)}
    got = decider(store, types).decide(job(partition="gpu"), open_state)
    assert "roofline prior" in got.reason
    assert "estimated from its runs on" in got.reason
    assert "≤ 10 flop/byte" in got.reason


def test_real_runs_on_the_type_replace_the_prior() -> None:
    typed = {"std": amdahl(36000.0), "big": amdahl(9000.0)}
    store = Store(amdahl(27000.0), runs_on("std") + runs_on("big"), typed)
    got = decider(store, TYPES).decide(
        job(partition="big", comment="adaptalloc:v1 app=farm intensity=3"), open_state
    )
    assert "roofline" not in got.reason
    assert got.curve_doc is not None
    assert typed["big"].curve is not None
    assert got.curve_doc["t1"] == typed["big"].curve.t1


def test_every_run_on_the_type_itself_needs_no_prior() -> None:
    store = Store(amdahl(36000.0), runs_on("big"))
    got = decider(store, TYPES).decide(
        job(partition="big", comment="adaptalloc:v1 app=farm intensity=3"), open_state
    )
    assert "roofline" not in got.reason


def test_with_no_node_type_described_nothing_more_is_read() -> None:
    store = Store(amdahl(36000.0), runs_on("std"))
    decider(store).decide(job(partition="big"), open_state, core_counts=lambda: frozenset({16}))
    assert store.reads == []


def test_the_prior_costs_one_fit_per_app_and_type() -> None:
    """The second job of a burst reuses the first's prior (plugin/learning/priors.py)."""
    store = Store(amdahl(36000.0), runs_on("std"))
    tagged = job(partition="big", comment="adaptalloc:v1 app=farm intensity=3")
    d = decider(store, TYPES)
    first = d.decide(tagged, open_state)
    again = d.decide(tagged, open_state)
    assert first.curve_doc == again.curve_doc
    assert math.isfinite(first.curve_doc["t1"])  # type: ignore[index]
