"""The decider on jobs with a shape beyond a node range: a fixed task count, a
``scaling=weak`` tag, several partitions; always inside the user's request, failing open."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import policies
import predictor
from plugin.appkey import AppKey, AppKeyRule
from plugin.daemon import marks, reasons
from plugin.daemon.apply import journal_entry, outcome_from_journal
from plugin.daemon.decider import (
    DIAGNOSTICS,
    RELEASE,
    RESIZE,
    Budget,
    CurveSource,
    Decider,
    Outcome,
)
from plugin.daemon.journal import JournalEntry
from plugin.daemon.record import decision_record
from plugin.slurm import JobRecord, Resize
from plugin.store.connection import StoreUnavailable
from plugin.store.curves import CurveRecord, Observation
from policies.partition import Queue
from predictor.weak import fit_weak

NOW = 1_800_000_000


def job(**fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "job_id": 7,
        "name": "heat",
        "user": "ann",
        "account": "phys",
        "partition": "debug",
        "state": "PENDING",
        "source": "squeue",
        "comment": "",
        "admin_comment": marks.HELD,
        "nodes_min": 2,
        "nodes_max": 8,
        "time_limit_min": 60,
        "submit_time": NOW - 5,
        "priority": 0,
        "num_tasks": 2,
        "ntasks_per_node": 0,
    }
    base.update(fields)
    return JobRecord(**base)


def obs(i: int, nodes: int, runtime: float, **extra: Any) -> Observation:
    return Observation(f"{i}", AppKey("heat"), nodes, runtime, NOW - 1000 + i, **extra)


class Store:
    """The CurveStore calls the decider makes, from memory (the store itself is tested on a
    real Redis in tests/integration/test_store.py)."""

    def __init__(
        self,
        runs: list[Observation] | None = None,
        curve: CurveRecord | None = None,
        typed: dict[str, CurveRecord] | None = None,
    ) -> None:
        self.runs = runs or []
        self.curve = curve
        self.typed = typed or {}
        self.siblings: dict[AppKey, list[Observation]] = {}
        self.down = False

    def curve_record(self, app: AppKey, node_type: str | None = None) -> CurveRecord | None:
        if self.down:
            raise StoreUnavailable("Redis at redis://x: connection refused")
        return self.curve if node_type is None else self.typed.get(node_type)

    def observations(self, app: AppKey) -> list[Observation]:
        if self.down:
            raise StoreUnavailable("Redis at redis://x: connection refused")
        return self.runs

    def sibling_sizes(self, app: AppKey) -> dict[AppKey, list[Observation]]:
        return self.siblings

    def limit_safety(self, app: AppKey) -> float:
        return 1.0


def decider(store: Store) -> Decider:
    curves = CurveSource(lambda: store, retry_s=5.0, clock=lambda: 0.0)  # type: ignore[arg-type, return-value]
    made = Decider(AppKeyRule(), policies.default_config(), curves, Budget())
    made.limits_enforced = False  # as the daemon finds the testbed: no AccountingStorageEnforce
    return made


def open_state(_: JobRecord) -> policies.ClusterState:
    return policies.ClusterState(idle_nodes=16, total_nodes=16)


def memory_bound_runs() -> list[Observation]:
    """Ntagiou's outer measurements of a memory-bound code (T = 1000 / (g(c) f(p)), f nearly
    flat past 4 tasks per node): 1 node × 1..16 tasks and 2..16 nodes × 1 task."""
    f = {1: 1.0, 2: 1.6, 4: 2.0, 8: 2.2, 16: 2.3}
    g = {1: 1.0, 2: 2.0, 4: 3.9, 8: 7.7, 16: 15.0}
    runs = [obs(i, 1, 1000.0 / f[p], tasks=p, tasks_per_node=p) for i, p in enumerate(f)]
    runs += [obs(10 + i, c, 1000.0 / g[c], tasks=c, tasks_per_node=1) for i, c in enumerate(g)]
    return runs


def test_a_fixed_task_count_is_spread_from_the_observations() -> None:
    d = decider(Store(memory_bound_runs()))
    got = d.decide(job(num_tasks=64, nodes_min=4, nodes_max=16), open_state, cpus=lambda _: 16)
    assert got.action == RESIZE
    assert got.rule == "placement"
    assert got.resize == Resize(7, 16, 16, None)  # the user's limit is kept
    assert (got.tasks, got.tasks_per_node) == (64, 4)
    assert got.placement is not None
    assert [row["nodes"] for row in got.placement["table"]] == [4, 8, 16]
    record = decision_record(got, "released", 0.1)
    assert (record.tasks, record.tasks_per_node, record.nodes) == (64, 4, 16)


def test_a_fixed_task_count_without_placements_is_kept_as_submitted() -> None:
    runs = [obs(1, 4, 100.0), obs(2, 8, 60.0)]  # no tasks per node recorded
    got = decider(Store(runs)).decide(job(num_tasks=64, nodes_min=4, nodes_max=16), open_state)
    assert got.rule == "placement_kept"
    assert got.resize is None
    assert got.action == "keep"


def test_the_default_task_count_and_ntasks_per_node_leave_placement_alone() -> None:
    store = Store(memory_bound_runs())
    # tasks == nodes_min is Slurm's default; --ntasks-per-node fixes the placement itself.
    for shaped in (job(num_tasks=2), job(num_tasks=64, ntasks_per_node=8, nodes_min=4)):
        got = decider(store).decide(shaped, open_state)
        assert got.rule != "placement"
        assert got.rule != "placement_kept"


def weak_runs() -> list[Observation]:
    """Gustafson's T = a + k·s/n with a = 50 s, k = 1 s per unit per node, two work levels."""
    runs = []
    for i, (n, s) in enumerate([(1, 10), (2, 20), (4, 40), (1, 40), (2, 80), (4, 160)]):
        runs.append(obs(i, n, 50.0 + s / n, size=float(s)))
    return runs


def test_a_weak_scaling_tag_sizes_by_gustafson_and_keeps_the_limit() -> None:
    tagged = job(comment="adaptalloc:v1 app=heat scaling=weak", nodes_min=1, nodes_max=64)
    got = decider(Store(weak_runs())).decide(tagged, open_state)
    assert got.rule == "weak_efficiency"
    runs = weak_runs()
    fit = fit_weak(
        [o.nodes for o in runs], [o.size or 0.0 for o in runs], [o.runtime_s for o in runs]
    )
    bound = fit.alpha / (fit.alpha - 0.5)
    assert got.resize == Resize(7, math.floor(bound), math.floor(bound), None)
    assert got.scaling == "weak"
    assert decision_record(got, "released", None).scaling == "weak"


def test_a_weak_scaling_series_split_over_sibling_size_keys_is_fitted_whole() -> None:
    # size=10 ... size=160 made one app key per size (heat@10, ...); none records a size of
    # its own, the key's number is the size.
    store = Store([])
    for i, run in enumerate(weak_runs()):
        key = AppKey("heat", f"{run.size:g}")
        bare = Observation(f"{i}", key, run.nodes, run.runtime_s, run.end_time)
        store.siblings.setdefault(key, []).append(bare)
    tagged = job(comment="adaptalloc:v1 app=heat scaling=weak", nodes_min=1, nodes_max=64)
    got = decider(store).decide(tagged, open_state)
    whole = decider(Store(weak_runs())).decide(tagged, open_state)
    assert got.rule == "weak_efficiency"
    assert got.resize == whole.resize


def test_a_weak_scaling_job_without_sized_runs_is_kept() -> None:
    tagged = job(comment="adaptalloc:v1 scaling=weak")
    got = decider(Store([obs(1, 2, 10.0)])).decide(tagged, open_state)
    assert got.rule == "weak_fallback"
    assert "problem size" in got.reason


def test_a_bad_scaling_value_fails_open() -> None:
    got = decider(Store()).decide(job(comment="adaptalloc:v1 scaling=$(reboot)"), open_state)
    assert got.action == RELEASE
    assert got.fail_open == reasons.BAD_TAG


def test_a_store_failure_while_reading_observations_fails_open() -> None:
    store = Store(memory_bound_runs())
    store.down = True
    got = decider(store).decide(job(num_tasks=64, nodes_min=4, nodes_max=16), open_state)
    assert got.action == RELEASE
    assert got.fail_open == reasons.STORE_UNAVAILABLE


def curve_record(t1: float) -> CurveRecord:
    n = np.array([1, 2, 4, 8, 16, 32])
    t = t1 / np.array([1.0, 1.97, 3.83, 7.24, 13.07, 20.77])
    fit = predictor.fit(n, t)
    return CurveRecord(predictor.Curve.from_fit(fit), 3, 3, None, 6, "adept", True)


def queues(waits: dict[str, Queue]) -> Any:
    return waits.get


def test_several_partitions_go_to_the_earliest_predicted_completion() -> None:
    store = Store([], curve_record(1000.0), {"big": curve_record(400.0)})
    d = decider(store)
    listed = job(partition="debug,big", nodes_min=2, nodes_max=8)
    free = Queue(idle_nodes=8)
    busy = Queue(idle_nodes=0, running=((8, 3600.0),))
    # big is faster per node type but an hour away; debug is free now.
    got = d.decide(
        listed,
        open_state,
        queue=queues({"debug": free, "big": busy}),
        known_partitions=lambda: ["debug", "big", "batch"],
    )
    assert got.action == RESIZE
    assert got.resize is not None
    # Pinned to debug: its size and limit were decided for debug, not for the list.
    assert got.resize.partition == "debug"
    assert got.placement is not None
    options = {o["partition"]: o for o in got.placement["options"]}
    assert options["big"]["wait_s"] == 3600.0
    assert options["debug"]["wait_s"] == 0.0
    # With both free, big's faster curve wins and the job moves there.
    got = d.decide(
        listed,
        open_state,
        queue=queues({"debug": free, "big": free}),
        known_partitions=lambda: ["debug", "big"],
    )
    assert got.resize is not None
    assert got.resize.partition == "big"
    assert 2 <= got.resize.min_nodes <= got.resize.max_nodes <= 8
    assert decision_record(got, "released", None).new_partition == "big"


def test_a_listed_partition_slurm_does_not_know_is_never_chosen() -> None:
    store = Store([], curve_record(1000.0), {"ghost": curve_record(1.0)})
    got = decider(store).decide(
        job(partition="debug,ghost"),
        open_state,
        queue=queues({"debug": Queue(8), "ghost": Queue(8)}),
        known_partitions=lambda: ["debug"],
    )
    assert got.resize is None or got.resize.partition is None


def test_a_partition_move_survives_the_journal() -> None:
    store = Store([], curve_record(1000.0), {"big": curve_record(400.0)})
    listed = job(partition="debug,big")
    got = decider(store).decide(
        listed,
        open_state,
        queue=queues({"debug": Queue(8), "big": Queue(8)}),
        known_partitions=lambda: ["debug", "big"],
    )
    entry = JournalEntry.from_dict(journal_entry(got).to_dict())
    assert entry.partition == "big"
    back = outcome_from_journal(listed, entry)
    assert back is not None
    assert back.resize == got.resize


@pytest.mark.parametrize("name", ["big job", "big\nupdate JobId=1 NumNodes=1", "a=b", "", "é"])
def test_a_partition_that_is_not_a_plain_name_never_reaches_scontrol(name: str) -> None:
    with pytest.raises(ValueError, match="partition"):
        Resize(7, 2, 2, None, partition=name)
    assert Resize(7, 2, 2, None, partition="debug,big").line().endswith(" Partition=debug,big")


CURIE_CPUS = {"large": 32, "standard": 16, "thin": 16}


def fat_runs() -> list[Observation]:
    """The app's runs, all on 32-core `large` nodes."""
    return [obs(i, n, 1000.0 / n**0.8, node_type="large") for i, n in enumerate((1, 2, 4, 8))]


def test_the_all_runs_curve_is_not_read_in_another_node_size() -> None:
    """Runs on 32-core nodes are not a curve in 16-core nodes (policies/fallback.py): the
    job listing large and standard gets no standard option; until this change the curve of
    the large runs was read as standard nodes."""
    store = Store(fat_runs(), curve_record(1000.0))
    free = Queue(idle_nodes=8)
    got = decider(store).decide(
        job(partition="large,standard"),
        open_state,
        queue=queues({"large": free, "standard": free}),
        cpus=CURIE_CPUS.get,
        known_partitions=lambda: ["large", "standard"],
    )
    assert got.placement is not None
    options = {o["partition"]: o for o in got.placement["options"]}
    assert options["standard"]["runtime_s"] is None
    assert options["large"]["runtime_s"] is not None
    assert got.resize is not None
    assert got.resize.partition == "large"


def test_a_job_on_another_node_size_is_decided_as_an_app_without_a_curve() -> None:
    store = Store(fat_runs(), curve_record(1000.0))
    got = decider(store).decide(job(partition="standard"), open_state, cpus=CURIE_CPUS.get)
    assert got.rule == "fallback"
    assert "32 cores" in got.reason
    assert "standard" in got.reason


def test_on_one_node_size_the_all_runs_curve_decides_as_before() -> None:
    """thin has standard's 16 cores: the curve of the runs on standard stands in, and the
    decision is the one made without knowing any core count."""
    runs = [replace(o, node_type="standard") for o in fat_runs()]
    store = Store(runs, curve_record(1000.0))
    kept = decider(store).decide(job(partition="thin"), open_state, cpus=CURIE_CPUS.get)
    plain = decider(store).decide(job(partition="thin"), open_state)
    assert kept.rule != "fallback"
    assert (kept.rule, kept.reason, kept.resize) == (plain.rule, plain.reason, plain.resize)


def test_a_job_on_one_partition_uses_the_curve_of_that_node_type() -> None:
    """The app ran on both types: a job on big is sized and limited by big's own curve
    (2.5x faster), not by the curve of all runs."""
    store = Store([], curve_record(10_000.0), {"big": curve_record(4_000.0)})
    on_big = decider(store).decide(job(partition="big"), open_state, cpus=lambda _: 16)
    on_debug = decider(store).decide(job(partition="debug"), open_state, cpus=lambda _: 16)
    assert on_big.resize is not None
    assert on_debug.resize is not None
    assert on_big.resize.min_nodes == on_debug.resize.min_nodes
    assert on_big.time_limit_min is not None
    assert on_debug.time_limit_min is not None
    assert on_big.time_limit_min < on_debug.time_limit_min


def test_on_a_cluster_of_one_core_count_the_runs_are_not_read_for_the_fallback() -> None:
    """Every node has 16 cores: no fallback can be refused, so the decision reads no runs
    (a read per app per batch on the latency path); with 16- and 32-core nodes it reads
    them, and refuses."""
    store = Store(fat_runs(), curve_record(1000.0))
    read: list[AppKey] = []
    plain_read = store.observations

    def counted(app: AppKey) -> list[Observation]:
        read.append(app)
        return plain_read(app)

    store.observations = counted  # type: ignore[method-assign]
    uniform = decider(store).decide(
        job(partition="standard"),
        open_state,
        cpus=CURIE_CPUS.get,
        core_counts=lambda: frozenset({16}),
    )
    assert read == []
    assert uniform.rule != "fallback"
    mixed = decider(store).decide(
        job(partition="standard"),
        open_state,
        cpus=CURIE_CPUS.get,
        core_counts=lambda: frozenset({16, 32}),
    )
    assert len(read) == 1
    assert mixed.rule == "fallback"


# --- the curve that decided, for live accuracy ------------------------------------------


def snapshot(curve: predictor.Curve) -> dict[str, Any]:
    """The curve's document as the decision record carries it (without diagnostics)."""
    return {k: v for k, v in curve.to_dict().items() if k not in DIAGNOSTICS}


def test_the_record_carries_the_node_types_curve_that_decided() -> None:
    """The job on big was decided on big's own curve: that curve's document is the one its
    run will be scored against (plugin/learning/scoring.py), not the curve of all runs."""
    big = curve_record(4_000.0)
    store = Store([], curve_record(10_000.0), {"big": big})
    got = decider(store).decide(job(partition="big"), open_state, cpus=lambda _: 16)
    assert got.action == RESIZE
    assert big.curve is not None
    assert got.curve_doc == snapshot(big.curve)
    assert decision_record(got, "released", None).curve_doc == snapshot(big.curve)


def test_the_record_carries_the_chosen_partitions_curve() -> None:
    big = curve_record(400.0)
    store = Store([], curve_record(1000.0), {"big": big})
    free = Queue(idle_nodes=8)
    got = decider(store).decide(
        job(partition="debug,big"),
        open_state,
        queue=queues({"debug": free, "big": free}),
        known_partitions=lambda: ["debug", "big"],
    )
    assert got.resize is not None
    assert got.resize.partition == "big"
    assert big.curve is not None
    assert got.curve_doc == snapshot(big.curve)


def test_shapes_fitted_from_runs_and_the_fallback_carry_no_curve() -> None:
    """Placement and weak scaling fit their own models from the runs, and the fallback reads
    no curve: nothing was predicted by a stored curve, so nothing is scored."""
    placed = decider(Store(memory_bound_runs())).decide(job(num_tasks=16), open_state)
    assert placed.action == RESIZE
    assert placed.curve_doc is None
    store = Store(fat_runs(), curve_record(1000.0))
    fallback = decider(store).decide(job(partition="standard"), open_state, cpus=CURIE_CPUS.get)
    assert fallback.rule == "fallback"
    assert fallback.curve_doc is None


def assert_sized_as(got: Outcome, alone: Outcome, other: Outcome) -> None:
    """`got` is resized to `alone`'s range, which differs from `other`'s (so what tells the
    two apart decided `got`)."""
    assert alone.resize is not None
    assert other.resize is not None
    assert got.resize is not None
    assert alone.resize.min_nodes != other.resize.min_nodes
    assert (got.resize.min_nodes, got.resize.max_nodes) == (
        alone.resize.min_nodes,
        alone.resize.max_nodes,
    )


def strict_debug_decider(store: Store) -> Decider:
    """A decider whose policy sizes partition debug by the efficiency rule at 0.95, and
    every other partition by the defaults (the load rule)."""
    made = decider(store)
    doc = {"partition": {"debug": {"strategy": "efficiency", "efficiency_threshold": 0.95}}}
    made.policy = policies.parse_config(doc, "policy.toml")
    return made


@pytest.mark.parametrize(
    ("listed", "known"),
    [
        ("ghost,debug", ["debug"]),  # debug is the one listed partition that admits it
        ("debug,big", ["debug", "big"]),  # no queue read: no choice, judged by the first
    ],
)
def test_a_job_listing_several_partitions_takes_its_judged_partitions_settings(
    listed: str, known: list[str]
) -> None:
    """A job listing several partitions is sized by the [partition.NAME] table of the one it
    is decided for; before, the list itself was looked up as a table name and matched none,
    so the defaults sized it."""
    store = Store([], curve_record(1000.0))
    alone = strict_debug_decider(store).decide(job(partition="debug"), open_state)
    other = strict_debug_decider(store).decide(job(partition="big"), open_state)
    got = strict_debug_decider(store).decide(
        job(partition=listed), open_state, known_partitions=lambda: known
    )
    assert_sized_as(got, alone, other)  # the table changes the size
    assert got.rule == alone.rule


def test_a_job_listing_several_partitions_is_decided_on_its_judged_partitions_state() -> None:
    """Listing ghost (which does not admit it) before debug, the job runs in debug and is
    decided on debug's load, not on ghost's; before, the first listed partition's state was
    read with the admitting one's settings."""
    store = Store([], curve_record(1000.0))
    crowded = policies.ClusterState(idle_nodes=0, pending_demand_nodes=64, total_nodes=16)

    def state(j: JobRecord) -> policies.ClusterState:
        return crowded if j.partition.startswith("ghost") else open_state(j)

    alone = decider(store).decide(job(partition="debug"), state)
    other = decider(store).decide(job(partition="ghost"), state)
    got = decider(store).decide(
        job(partition="ghost,debug"), state, known_partitions=lambda: ["debug"]
    )
    assert_sized_as(got, alone, other)  # the load changes the size
