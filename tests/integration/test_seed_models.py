"""The seed papers' two models deciding on the real testbed, through the daemon and through
``adaptalloc decide --app``: a ``pattern=master-worker`` job is capped at the nodes the
workers one master keeps busy need (Costa et al.), and a job on a partition the app never
ran on is sized on a roofline prior (the large-scale thesis, 4.6.3) until its own runs give
that partition a curve. The doctor's node types check runs against the real scontrol.

The testbed (deploy/local/slurm.conf.in) has eight nodes of one hardware; partitions
``debug`` and ``batch`` span them all, ``big`` holds node5-8. The node types below are
described to the daemon as if big's nodes were twice batch's in memory bandwidth: the
decisions follow the description, which is what the doctor checks for plausibility only.
Every run history is synthetic, from the models' own equations, stored through the real
Redis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.config import parse_config
from plugin.doctor.node_types import node_types_check
from plugin.learning.learner import refit_app
from plugin.slurm.cli_backend import CliSlurmReader
from plugin.store.connection import connect
from plugin.store.curves import CurveStore, Observation

from .daemon_harness import DaemonProcess
from .testbed import SlurmCLI, SubmitJob, adaptalloc, scratch_url

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
#: batch: 1000 GFLOP/s and 100 GB/s a node (ridge 10 flop/byte); big: 4000 and 200 (ridge
#: 20). A memory-bound app (1 flop/byte) runs twice as fast on big. A 10 Gbit/s link on both.
NODE_TYPES = """\
[node_types.batch]
peak_gflops = 1000
bandwidth_gbs = 100
link_gbs = 1.25
[node_types.big]
peak_gflops = 4000
bandwidth_gbs = 200
link_gbs = 1.25
"""
#: Downey's speedup with A = 5, σ = 0.3 (low variance) at 1..8 nodes: a knee the runs show,
#: so the curve is identified and shortens time limits on its own type.
SPEEDUP = {1: 1.0, 2: 1.942, 3: 2.83, 4: 3.67, 6: 4.651, 8: 4.908}


def store_runs(app: str, runs: Iterable[dict[str, Any]], first_id: int = 0) -> None:
    """Store the runs under the site's key (every user's jobs read it) and refit."""
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse(app)
    now = time.time()
    batch = [
        Observation(f"{first_id + i + 1}", key, end_time=now - 3600.0 + i, source="csv", **run)
        for i, run in enumerate(runs)
    ]
    store.add_observations(key, batch)
    assert refit_app(store, key).status == "written"


def master_worker_runs(knee: int) -> list[dict[str, Any]]:
    """A master that saturates at `knee` nodes: 640 s of tasks, min(n, knee) nodes busy."""
    return [{"nodes": n, "runtime_s": 640.0 / min(n, knee)} for n in range(1, 9)]


def test_a_master_worker_job_is_capped_where_its_runs_level_off(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    store_runs("it-farm", master_worker_runs(knee=3))
    daemon = daemon_factory().start()
    args = ("--nodes=1-8", "--time=30", "--comment=adaptalloc:v1 app=it-farm")
    plain = submit_job(*args, as_user=slurm.test_user, wrap="sleep 1")
    decided = daemon.wait_decision(plain)
    assert decided["action"] == "resize", decided["reason"]
    assert decided["nodes"] > 3  # the curve's own rules take it past the knee
    job = submit_job(
        "--nodes=1-8", "--time=30", "--comment=adaptalloc:v1 app=it-farm pattern=master-worker",
        as_user=slurm.test_user, wrap="sleep 1",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["rule"] == "master_worker", decision["reason"]
    assert (decision["nodes"], decision["nodes_upto"]) == (3, 3)
    assert "levels off at 3" in decision["reason"]
    fields = slurm.wait_job_state(job, {"COMPLETED"})
    assert fields["NumNodes"] == "3"


def test_the_task_figures_and_the_partitions_link_give_n_opt(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    """0.08 s tasks moving 50 MB over 1.25 GB/s: each holds the master 0.04 s, so it keeps
    N_opt = 2 workers busy; with the master, 3 tasks at one a node (Slurm's default)."""
    store_runs("it-figures", [{"nodes": n, "runtime_s": 800.0 / n} for n in range(1, 9)])
    daemon = daemon_factory(config=NODE_TYPES).start()
    job = submit_job(
        "-p", "batch", "--nodes=2-8", "--time=30",
        "--comment=adaptalloc:v1 app=it-figures pattern=master-worker tc=0.08 vi=5e7 vo=1e6",
        as_user=slurm.test_user, wrap="sleep 1",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["rule"] == "master_worker", decision["reason"]
    assert (decision["nodes"], decision["nodes_upto"]) == (3, 3)
    assert "N_opt = Tc/(max(vi, vo)·λ)" in decision["reason"]
    assert "2 workers busy on batch" in decision["reason"]
    fields = slurm.wait_job_state(job, {"COMPLETED"})
    assert fields["NumNodes"] == "3"


def test_a_partition_the_app_never_ran_on_is_sized_on_a_roofline_prior(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    runs = [{"nodes": n, "runtime_s": 6000.0 / s, "node_type": "batch"} for n, s in SPEEDUP.items()]
    store_runs("it-roof", runs)
    daemon = daemon_factory(config=NODE_TYPES).start()
    comment = "--comment=adaptalloc:v1 app=it-roof intensity=1"
    on_batch = submit_job(
        "-p", "batch", "--nodes=1-4", "--time=600", comment,
        as_user=slurm.test_user, wrap="sleep 1",
    )  # fmt: skip
    batch_decision = daemon.wait_decision(on_batch)
    assert batch_decision["action"] == "resize", batch_decision["reason"]
    assert "roofline" not in batch_decision["reason"]  # its own runs' curve
    assert batch_decision["new_time_limit_min"] is not None  # which shortens the limit
    job = submit_job(
        "-p", "big", "--nodes=1-4", "--time=600", comment,
        as_user=slurm.test_user, wrap="sleep 1",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize", decision["reason"]
    assert "roofline prior from the app's curve on batch" in decision["reason"]
    assert "2× as fast" in decision["reason"]
    assert decision["new_time_limit_min"] is None  # no limit is cut on a prior
    fields = slurm.wait_job_state(job, {"COMPLETED"})
    assert fields["TimeLimit"] == "10:00:00"
    assert int(fields["NumNodes"]) == batch_decision["nodes"]  # same speedup, half the time

    # Runs on big: its own curve replaces the prior.
    big = [{"nodes": n, "runtime_s": 3000.0 / s, "node_type": "big"} for n, s in SPEEDUP.items()]
    store_runs("it-roof", big, first_id=100)
    again = submit_job(
        "-p", "big", "--nodes=1-4", "--time=600", comment,
        as_user=slurm.test_user, wrap="sleep 1",
    )  # fmt: skip
    replaced = daemon.wait_decision(again)
    assert replaced["action"] == "resize", replaced["reason"]
    assert "roofline" not in replaced["reason"]
    assert replaced["new_time_limit_min"] is not None


def test_decide_from_the_store_makes_the_daemons_decisions(
    redis_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "adaptalloc.toml"
    config.write_text(NODE_TYPES)
    monkeypatch.setenv("ADAPTALLOC_CONFIG", str(config))
    store_runs("it-farm2", master_worker_runs(knee=3))
    store_runs(
        "it-roof2",
        [{"nodes": n, "runtime_s": 6000.0 / s, "node_type": "batch"} for n, s in SPEEDUP.items()],
        first_id=200,  # job ids are the store's, over every app
    )
    proc = adaptalloc(
        "decide", "--app", "it-farm2", "--nodes", "1-8", "--pattern", "master-worker",
        "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["nodes"], doc["rule"]) == (3, "master_worker")
    assert doc["master_worker"]["source"] == "speedup"
    proc = adaptalloc(
        "decide", "--app", "it-roof2", "--nodes", "1-4", "--time-limit", "600",
        "--partition", "big", "--intensity", "1", "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["roofline"]["from"] == "batch"
    assert doc["roofline"]["time_ratio"] == pytest.approx(0.5)
    assert doc["time_limit_min"] is None


def test_the_doctor_checks_node_types_against_the_partitions_slurm_has(
    slurm: SlurmCLI,
) -> None:
    reader = CliSlurmReader()
    good = parse_config(
        {"node_types": {"big": {"peak_gflops": 4000, "bandwidth_gbs": 200}}}, "it.toml"
    )
    assert node_types_check(good, reader.partitions).status == "ok"
    typo = parse_config(
        {"node_types": {"bigg": {"peak_gflops": 4000, "bandwidth_gbs": 200}}}, "it.toml"
    )
    check = node_types_check(typo, reader.partitions)
    assert check.status == "fail"
    assert "batch, big, debug" in check.detail
