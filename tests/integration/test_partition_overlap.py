"""Partition choice on the real testbed: the wait of a partition counts the jobs of the partitions
that overlap it. ``debug`` spans node1-8 and ``big`` node5-8 (deploy/local/slurm.conf.in), so
a job running in debug on node5-8 holds big's nodes and frees them at its limit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from plugin.appkey import AppKey
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore, Observation

from .daemon_harness import DaemonProcess
from .testbed import SlurmCLI, SubmitJob, adaptalloc, scratch_url

pytestmark = pytest.mark.integration

#: NAS LU class W's relative speedups (the thesis' Table 5.1 shape) at 1..8 nodes.
LU_SPEEDUP = {1: 1.0, 2: 1.97, 3: 2.92, 4: 3.83, 6: 5.6, 8: 7.24}


def test_a_debug_job_on_the_big_nodes_delays_big_until_its_limit(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Callable[..., DaemonProcess],
    redis_client: object,
    tmp_path: Path,
) -> None:
    # The app runs 2.5 times faster on big's nodes: one curve per node type.
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse("it-overlap")
    now = time.time()
    runs = [
        Observation(f"{900 + i}", key, n, base / s, now - 3600.0 + i, node_type=kind, source="csv")
        for i, (kind, base, n, s) in enumerate(
            (kind, base, n, s)
            for kind, base in (("debug", 1000.0), ("big", 400.0))
            for n, s in LU_SPEEDUP.items()
        )
    ]
    store.add_observations(key, runs)
    assert refit_app(store, key).status == "written"
    # Every node busy, all in debug: node5-8 (big's) for an hour, node1-4 for two.
    user = slurm.test_user
    on_big = submit_job(
        "-p", "debug", "--nodelist=node[5-8]", "--nodes=4", "--time=60", as_user=user,
        wrap="sleep 600",
    )  # fmt: skip
    on_std = submit_job(
        "-p", "debug", "--nodelist=node[1-4]", "--nodes=4", "--time=120", as_user=user,
        wrap="sleep 600",
    )  # fmt: skip
    for blocker in (on_big, on_std):
        slurm.wait_job_state(blocker, {"RUNNING"})
    daemon = daemon_factory().start()

    job = submit_job(
        "-p", "debug,big", "--nodes=1-4", "--time=60",
        "--comment=adaptalloc:v1 app=it-overlap", as_user=user, wrap="sleep 1",
    )  # fmt: skip
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize", decision["reason"]
    options = {o["partition"]: o for o in decision["placement"]["options"]}
    # Both free nodes when the debug job on node5-8 ends, within the hour. Before, big saw
    # no job of its own holding its nodes and waited for ever: the job went to debug.
    assert options["big"]["wait_s"] is not None
    assert 3000 < options["big"]["wait_s"] <= 3600
    assert 3000 < options["debug"]["wait_s"] <= 3600
    assert decision["new_partition"] == "big"
    assert slurm.show_job(job)["Partition"] == "big"

    # `adaptalloc decide --queue` reads the same queue and gives the daemon's answer.
    asked = adaptalloc(
        "decide", "--app", "it-overlap", "--nodes", "1-4", "--partition", "debug,big",
        "--queue", "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    doc = json.loads(asked.stdout)
    assert (doc["partition"], doc["nodes"]) == ("big", decision["nodes"])
    waits = {o["partition"]: o["wait_s"] for o in doc["partitions"]}
    assert 3000 < waits["big"] <= 3600
    unknown = adaptalloc(
        "decide", "--app", "it-overlap", "--nodes", "1-4", "--partition", "debug,nosuch",
        "--queue", cwd=tmp_path,
    )  # fmt: skip
    assert unknown.returncode == 1
    assert (
        unknown.stderr.strip()
        .splitlines()[-1]
        .startswith("adaptalloc: error: Slurm knows no partition nosuch (it knows: ")
    )
