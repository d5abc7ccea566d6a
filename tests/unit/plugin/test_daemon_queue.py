"""ClusterView's per-partition queue for the partition choice: idle nodes, the pending demand
ahead, running jobs and the time left of their limits; unknown when Slurm cannot say."""

from __future__ import annotations

import math
from pathlib import Path

from plugin.daemon.cluster import ClusterView, listed_partitions
from plugin.slurm import JobRecord, NodeRecord, PartitionRecord, SlurmCommandError
from plugin.slurm.cli_backend import CliSlurmReader
from plugin.slurm.parse import parse_squeue_json
from policies.partition import wait_estimate

NOW = 1_800_000_000
REPO_ROOT = Path(__file__).resolve().parents[3]


class Slurm(CliSlurmReader):
    """Two partitions: debug over n0-n7, big over n4-n7; n4 and n5 busy."""

    def __init__(self, running: list[JobRecord], fail: bool = False) -> None:
        super().__init__()
        self.running, self.fail, self.calls = running, fail, 0

    def nodes(self) -> list[NodeRecord]:
        return [
            NodeRecord(
                f"n{k}",
                "allocated" if k in (4, 5) else "idle",
                4,
                4 if k in (4, 5) else 0,
                ("debug", "big") if k >= 4 else ("debug",),
            )
            for k in range(8)
        ]

    def partitions(self) -> list[PartitionRecord]:
        return [
            PartitionRecord("debug", "n[0-7]", 8, "UP", True),
            PartitionRecord("big", "n[4-7]", 4, "UP", False),
        ]

    def jobs(self) -> list[JobRecord]:
        self.calls += 1
        if self.fail:
            raise SlurmCommandError("squeue: slurmctld is down")
        return self.running


def running(
    job_id: int,
    partition: str,
    nodes: int,
    started_ago_s: int,
    limit: int | None,
    names: frozenset[str] = frozenset(),
) -> JobRecord:
    return JobRecord(
        job_id, "x", "u", "a", partition, "RUNNING", "squeue",
        nodes_alloc=nodes, start_time=NOW - started_ago_s, time_limit_min=limit,
        node_names=names,
    )  # fmt: skip


def pending(job_id: int, partition: str, nodes: int) -> JobRecord:
    return JobRecord(job_id, "x", "u", "a", partition, "PENDING", "squeue", nodes_min=nodes)


def test_the_queue_of_each_partition_counts_the_jobs_of_overlapping_ones() -> None:
    # big (n4-n7) lies inside debug (n0-n7). Job 1 runs in big on n4, job 2 in debug on n5:
    # each holds a node of both partitions. Before, each partition saw only its own jobs
    # (big's wait for 1 node was unbounded: job 2's node never freed).
    slurm = Slurm(
        [
            running(1, "big", 1, 600, 30, frozenset({"n4"})),  # 20 min left
            running(2, "debug", 1, 0, 60, frozenset({"n5"})),  # 60 min left
            pending(3, "big", 1),  # pending jobs come from the sweep, not from here
        ]
    )
    view = ClusterView(slurm)
    me = pending(9, "debug,big", 2)
    ahead = [me, pending(4, "big,debug", 1), pending(5, "debug", 3)]
    big = view.queue("big", ahead, me, NOW)
    assert big is not None
    # Pending: job 4 whole; job 5 wants 3 of debug's 8 nodes, 4 of which are big's: 1.5.
    assert (big.idle_nodes, big.pending_nodes) == (2, 2.5)
    assert big.running == ((1, 1200.0), (1, 3600.0))
    # 2 idle + n4 at 20 min = 3 < 2.5 + 1; + n5 at 60 min = 4.
    assert wait_estimate(big, 1) == 3600.0
    debug = view.queue("debug", ahead, me, NOW)
    assert debug is not None
    # big lies inside debug: job 4's node is debug's whatever it gets.
    assert (debug.idle_nodes, debug.pending_nodes) == (6, 4.0)
    assert debug.running == ((1, 1200.0), (1, 3600.0))
    assert wait_estimate(debug, 2) == 0.0
    view.queue("big", ahead, me, NOW)
    assert slurm.calls == 1  # the running jobs are read once per cache period


def test_without_node_names_a_running_job_counts_in_its_own_partition_only() -> None:
    slurm = Slurm([running(1, "big", 2, 600, 30), running(2, "debug", 1, 0, None)])
    view = ClusterView(slurm)
    me = pending(9, "big", 1)
    big = view.queue("big", [me], me, NOW)
    debug = view.queue("debug", [me], me, NOW)
    assert big is not None
    assert debug is not None
    assert (big.running, debug.running) == (((2, 1200.0),), ((1, math.inf),))


def test_a_failed_squeue_means_no_queue() -> None:
    view = ClusterView(Slurm([], fail=True))
    assert view.queue("big", [], pending(9, "big", 1), NOW) is None


def test_listed_partitions_keep_the_users_order_without_repeats() -> None:
    assert listed_partitions(" big, debug,big,,") == ["big", "debug"]
    assert listed_partitions("") == []


def test_squeue_says_which_nodes_a_running_job_holds() -> None:
    text = (REPO_ROOT / "tests" / "data" / "slurm" / "squeue_running_moldable.json").read_text()
    (job,) = [j for j in parse_squeue_json(text) if j.state == "RUNNING"]
    assert job.node_names == {"node1", "node2", "node3", "node4"}
    assert job.nodes_alloc == len(job.node_names)
