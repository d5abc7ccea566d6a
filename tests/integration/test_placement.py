"""Placement and partition choice on the real testbed, as the unprivileged user: a job
listing two partitions goes where its predicted completion is earliest, a fixed task count is
spread as the app's runs say, a ``scaling=weak`` job is sized by Gustafson's law; each stays
inside its request.

The testbed has two node types (deploy/local/slurm.conf.in): node1-4 (Feature std) and
node5-8 (Feature big, partition ``big``); ``debug`` spans all eight. Every run history below
is exact synthetic data from the papers' equations, stored through the real Redis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.config import DaemonConfig
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore, Observation

from .daemon_harness import DaemonProcess
from .testbed import SlurmCLI, SubmitJob, adaptalloc, scratch_url

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
#: NAS LU class W's relative speedups (the thesis' Table 5.1 shape) at 1..8 nodes.
LU_SPEEDUP = {1: 1.0, 2: 1.97, 4: 3.83, 8: 7.24, 3: 2.92, 6: 5.6}
BIG_NODES = {"node5", "node6", "node7", "node8"}
#: The daemon's cluster_cache_s (the harness keeps the default, plugin/config.py).
CLUSTER_CACHE_S = DaemonConfig().cluster_cache_s


def store_runs(
    app: str, runs: Iterable[dict[str, Any]], refit: bool = False, first_id: int = 0
) -> None:
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse(app)
    now = time.time()  # recent runs: the store's retention ages out old ones
    batch = [
        Observation(f"{first_id + i + 1}", key, end_time=now - 3600.0 + i, source="csv", **run)
        for i, run in enumerate(runs)
    ]
    store.add_observations(key, batch)
    if refit:
        assert refit_app(store, key).status == "written"


def two_type_runs() -> list[dict[str, Any]]:
    """LU's runs on both node types: the same code 2.5x faster on the big nodes."""
    return [
        {"nodes": n, "runtime_s": base / s, "node_type": kind}
        for kind, base in (("debug", 1000.0), ("big", 400.0))
        for n, s in LU_SPEEDUP.items()
    ]


def hostnames(slurm: SlurmCLI, job_id: int) -> set[str]:
    fields = slurm.show_job(job_id)
    listed = slurm.run("scontrol", "show", "hostnames", fields["NodeList"]).stdout.split()
    return set(listed)


def test_two_partitions_go_to_the_earliest_completion(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    # Two node types, one curve each.
    store_runs("it-types", two_type_runs(), refit=True)
    store = CurveStore(connect(scratch_url()))
    assert store.node_types(AppKey.parse("it-types")) == ["big", "debug"]
    daemon = daemon_factory().start()
    user = slurm.test_user

    # Both free: the faster node type wins and the job moves there.
    job = submit_job(
        "-p", "debug,big", "--nodes=1-4", "--time=60",
        "--comment=adaptalloc:v1 app=it-types", as_user=user, wrap="sleep 1",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize", decision["reason"]
    assert decision["new_partition"] == "big"
    options = {o["partition"]: o for o in decision["placement"]["options"]}
    assert options["big"]["completion_s"] < options["debug"]["completion_s"]
    assert 1 <= decision["nodes"] <= decision["nodes_upto"] <= 4
    slurm.wait_job_state(job, {"COMPLETED"})
    assert slurm.show_job(job)["Partition"] == "big"
    assert hostnames(slurm, job) <= BIG_NODES

    # big taken for an hour by another job: debug's idle nodes finish first.
    blocker = submit_job("-p", "big", "--nodes=4", "--time=60", as_user=user, wrap="sleep 300")
    slurm.wait_job_state(blocker, {"RUNNING"})
    # The daemon sees the nodes through its cache (cluster_cache_s, 2 s by default), which
    # its prefetch thread keeps refreshing while jobs come: wait until a read taken after
    # the blocker started is in it, or big may still look idle to the decision.
    time.sleep(CLUSTER_CACHE_S + 0.5)
    job = submit_job(
        "-p", "debug,big", "--nodes=1-4", "--time=60",
        "--comment=adaptalloc:v1 app=it-types", as_user=user, wrap="sleep 1",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize", decision["reason"]
    assert decision["new_partition"] == "debug"
    options = {o["partition"]: o for o in decision["placement"]["options"]}
    assert options["big"]["wait_s"] > 3000
    assert options["debug"]["wait_s"] == 0
    slurm.wait_job_state(job, {"COMPLETED"})
    assert slurm.show_job(job)["Partition"] == "debug"
    assert not hostnames(slurm, job) & BIG_NODES


def test_a_fixed_task_count_is_spread_by_the_observations(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    # Ntagiou's outer measurements, T(c, p) = 1000 / (g(c) f(p)): two tasks share a node
    # almost for free, four saturate it (f); nodes help up to 4 (g). For 8 tasks on 2-8
    # nodes: 2×4 → 1000/3.8 = 263 s, 4×2 → 1000/6.46 = 155 s (node efficiency 85%),
    # 8×1 → 250 s; 3, 5, 6, 7 nodes were never measured. The placement is 4 nodes × 2.
    f = {1: 1.0, 2: 1.9, 4: 2.0}
    g = {2: 1.9, 4: 3.4, 8: 4.0}
    runs = [{"nodes": 1, "runtime_s": 1000.0 / f[p], "tasks": p, "tasks_per_node": p} for p in f]
    runs += [{"nodes": c, "runtime_s": 1000.0 / g[c], "tasks": c, "tasks_per_node": 1} for c in g]
    store_runs("it-place", runs)
    daemon = daemon_factory().start()
    job = submit_job(
        "--ntasks=8", "--nodes=2-8", "--time=30", "--comment=adaptalloc:v1 app=it-place",
        as_user=slurm.test_user, wrap="srun hostname",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["rule"] == "placement", decision["reason"]
    assert (decision["nodes"], decision["nodes_upto"]) == (4, 4)
    assert (decision["tasks"], decision["tasks_per_node"]) == (8, 2)
    assert decision["new_time_limit_min"] is None  # the user's limit is kept
    fields = slurm.wait_job_state(job, {"COMPLETED"})
    assert fields["NumNodes"] == "4"
    assert fields["NumTasks"] == "8"
    assert fields["TimeLimit"] == "00:30:00"


def test_a_weak_scaling_job_is_sized_by_gustafson(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    # T(n, s) = 40 + s/n at two work levels per node (10 and 40): Gustafson's α by least
    # squares is 13/20 = 0.65 (serial runtimes 40 + s; predictor/weak.py), so the scaled
    # efficiency 1 − α(n−1)/n stays ≥ 50% up to n = 0.65/0.15 = 4.33: 4 nodes.
    # The series is stored as the learner keeps it: one app key per numeric size= (it-weak@10,
    # it-weak@20, ...), which the weak fit reads back as siblings of the job's bare key.
    sizes = [(1, 10), (2, 20), (4, 40), (1, 40), (2, 80), (4, 160)]
    for k, (n, s) in enumerate(sizes):
        run = {"nodes": n, "runtime_s": 40.0 + s / n, "size": float(s)}
        store_runs(f"it-weak@{s}", [run], first_id=k)
    daemon = daemon_factory().start()
    job = submit_job(
        "--nodes=1-8", "--time=20", "--comment=adaptalloc:v1 app=it-weak scaling=weak",
        as_user=slurm.test_user, wrap="sleep 1",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["rule"] == "weak_efficiency", decision["reason"]
    assert decision["scaling"] == "weak"
    assert (decision["nodes"], decision["nodes_upto"]) == (4, 4)
    fields = slurm.wait_job_state(job, {"COMPLETED"})
    assert fields["NumNodes"] == "4"
    assert fields["TimeLimit"] == "00:20:00"  # a weak-scaling limit does not shrink with n


def test_the_report_shows_the_placement_table_and_the_node_type_curves(
    redis_client: Any, tmp_path: Path
) -> None:
    f = {1: 1.0, 2: 1.9, 4: 2.0}
    g = {2: 1.9, 4: 3.4, 8: 4.0}
    runs: list[dict[str, Any]] = [
        {"nodes": 1, "runtime_s": 1000.0 / f[p], "tasks": p, "tasks_per_node": p} for p in f
    ]
    runs += [
        {"nodes": c, "runtime_s": 1000.0 / g[c], "tasks": c, "tasks_per_node": 1, "node_type": t}
        for c in g
        for t in ("debug", "big")
    ]
    runs += [
        {"nodes": n, "runtime_s": 400.0 / s, "node_type": "big"} for n, s in LU_SPEEDUP.items()
    ]
    store_runs("it-report", runs, refit=True)
    proc = adaptalloc("report", "it-report", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    section = doc["placement"]
    assert section["tasks"] == 8
    chosen = [(r["nodes"], r["tasks_per_node"]) for r in section["table"] if r["chosen"]]
    assert chosen == [(4, 2)]
    assert {t["node_type"] for t in section["node_types"]} == {"big", "debug"}
    assert "runs" in doc  # the existing document is unchanged around the new key
    text = adaptalloc("report", "it-report", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "placement for 8 tasks" in text.stdout
    assert "curves per node type" in text.stdout


def test_a_listed_partition_the_user_may_not_use_is_never_chosen(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    # Slurm 22.05 takes `-p debug,restricted` from a user restricted's AllowGroups leaves out;
    # moved there alone by root, the job would pend for ever (Reason=PartitionConfig).
    runs = [
        {"nodes": n, "runtime_s": base / s, "node_type": kind}
        for kind, base in (("debug", 1000.0), ("restricted", 100.0))
        for n, s in LU_SPEEDUP.items()
    ]
    store_runs("it-restricted", runs, refit=True, first_id=500)
    slurm.run(
        "scontrol", "create", "PartitionName=restricted", "Nodes=node[5-8]",
        "AllowGroups=root", "State=UP",
    )  # fmt: skip
    try:
        daemon = daemon_factory().start()
        job = submit_job(
            "-p", "debug,restricted", "--nodes=1-4", "--time=60",
            "--comment=adaptalloc:v1 app=it-restricted", as_user=slurm.test_user,
            wrap="sleep 1",
        )  # fmt: skip
        decision = daemon.wait_decision(job)
        assert decision.get("new_partition") != "restricted", decision
        assert decision["action"] in {"resize", "release"}, decision["reason"]
        slurm.wait_job_state(job, {"COMPLETED"})
        assert slurm.show_job(job)["Partition"] == "debug"
    finally:
        slurm.run("scancel", "--partition=restricted", check=False)  # a stranded job (bug)
        slurm.run("scontrol", "delete", "PartitionName=restricted", check=False)


def test_decide_asks_the_store_what_the_daemon_would_do(redis_client: Any, tmp_path: Path) -> None:
    # The runs of the three daemon tests above, stored in the real Redis; `adaptalloc decide
    # --app` reads them as the daemon does and gives the daemon's answers.
    f = {1: 1.0, 2: 1.9, 4: 2.0}
    g = {2: 1.9, 4: 3.4, 8: 4.0}
    placed = [{"nodes": 1, "runtime_s": 1000.0 / f[p], "tasks": p, "tasks_per_node": p} for p in f]
    placed += [{"nodes": c, "runtime_s": 1000.0 / g[c], "tasks": c, "tasks_per_node": 1} for c in g]
    store_runs("cli-place", placed)
    typed = [
        {"nodes": n, "runtime_s": base / s, "node_type": kind}
        for kind, base in (("debug", 1000.0), ("big", 400.0))
        for n, s in LU_SPEEDUP.items()
    ]
    # Job ids are unique across apps (the store records a job once): each app its own.
    store_runs("cli-types", typed, refit=True, first_id=100)
    for k, (n, s) in enumerate([(1, 10), (2, 20), (4, 40), (1, 40), (2, 80), (4, 160)]):
        run = {"nodes": n, "runtime_s": 40.0 + s / n, "size": float(s)}
        store_runs(f"cli-weak@{s}", [run], first_id=200 + k)

    def decide(*args: str) -> dict[str, Any]:
        proc = adaptalloc("decide", *args, "--format", "json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        doc: dict[str, Any] = json.loads(proc.stdout)
        return doc

    doc = decide("--app", "cli-place", "--nodes", "2-8", "--ntasks", "8", "--time-limit", "30")
    assert (doc["rule"], doc["nodes"], doc["tasks_per_node"]) == ("placement", 4, 2)
    assert doc["time_limit_min"] is None
    assert doc["placement"]["runs_with_tasks_per_node"] == 6

    doc = decide("--app", "cli-types", "--nodes", "1-4", "--partition", "debug,big",
                 "--wait", "debug=0,big=0")  # fmt: skip
    assert doc["partition"] == "big"
    doc = decide("--app", "cli-types", "--nodes", "1-4", "--partition", "debug,big",
                 "--wait", "debug=0,big=3600")  # fmt: skip
    assert doc["partition"] == "debug"
    options = {o["partition"]: o for o in doc["partitions"]}
    # Each partition on its own node type's curve: big's runs are 2.5 times faster.
    assert options["big"]["runtime_s"] < options["debug"]["runtime_s"]

    doc = decide("--app", "cli-weak", "--nodes", "1-8", "--scaling", "weak")
    assert (doc["rule"], doc["nodes"], doc["scaling"]) == ("weak_efficiency", 4, "weak")


def test_a_moved_job_records_its_limit_as_the_partition_it_went_to_reads_it(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    # The learner reads a run's limit as written for the size the record names; the record
    # must name the size the settings of the partition the job was decided for read it at.
    store_runs("it-types-ref", two_type_runs(), refit=True)
    policy = '[partition.big]\ntime_limit_reference = "max"\n'
    daemon = daemon_factory(policy=policy).start()
    job = submit_job(
        "-p", "debug,big", "--nodes=1-4", "--time=60",
        "--comment=adaptalloc:v1 app=it-types-ref", as_user=slurm.test_user, wrap="sleep 1",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize", decision["reason"]
    assert decision["new_partition"] == "big"
    line = slurm.run("scontrol", "show", "job", "-o", str(job)).stdout
    assert " limit=60 for=4" in line  # the maximum, as big reads it; debug would say for=1
