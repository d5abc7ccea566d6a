"""What the daemon remembers to spend less per job gives the answers it would
work out afresh: the app key per rule and job fields, the node counts per node list, and the
cluster read before the first batch instead of with its jobs in hand."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey, AppKeyError, AppKeyRule
from plugin.daemon import marks, reasons
from plugin.daemon.cluster import ClusterView
from plugin.slurm import NodeRecord

from ..test_daemon import FakeSlurm, FakeStore, decider, idle, job
from ..test_daemon_health import daemon
from .test_cluster_prefetch import Counting


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"name": "lulesh-2"},
        {"comment": "adaptalloc:v1 app=lu size=w"},
        {"admin_comment": f"{marks.HELD} adaptalloc:v1 app=amg"},
        {"comment": "adaptalloc:v1 size=big"},
    ],
)
def test_the_remembered_app_key_is_the_rules_own(fields: dict[str, Any]) -> None:
    d = decider(FakeStore())
    one = job(1, **fields)
    expected = d.rule.key_for(
        job(1, **{**fields, "admin_comment": marks.prior_text(one.admin_comment)})
    )
    assert d.app_key(one) == expected
    assert d.app_key(job(2, **fields)) == expected  # remembered, the same


def test_a_new_rule_keys_the_same_jobs_anew() -> None:
    d = decider(FakeStore())
    lulesh = job(1, account="phys")
    assert d.app_key(lulesh) == AppKey("lulesh", owner="ann")
    d.rule = AppKeyRule(template="{account}.{name}")  # as a SIGHUP reload replaces it
    assert d.app_key(job(2, account="phys")) == AppKey("phys.lulesh", owner="ann")
    assert d.app_key(job(3, account="chem")) == AppKey("chem.lulesh", owner="ann")
    # The same job of another user is that user's key, never a remembered one.
    assert d.app_key(job(4, account="chem", user="bob")) == AppKey("chem.lulesh", owner="bob")


def test_a_job_without_a_key_is_refused_each_time() -> None:
    d = decider(FakeStore())
    for job_id in (1, 2):
        with pytest.raises(AppKeyError):
            d.app_key(job(job_id, name="wrap"))
    bad = job(3, comment="adaptalloc:v1 app=lu colour=red")
    for _ in range(2):
        assert d.decide(bad, idle).fail_open == reasons.BAD_TAG


def nodes(idle_count: int, cpus: int = 4) -> list[NodeRecord]:
    return [
        NodeRecord(f"n{k}", "idle" if k < idle_count else "allocated", cpus, 0, ("debug",))
        for k in range(8)
    ]


class Nodes(Counting):
    """A reader whose node list the test replaces."""

    def __init__(self) -> None:
        super().__init__()
        self.current = nodes(8)

    def nodes(self) -> list[NodeRecord]:
        self.reads["nodes"] += 1
        return self.current


def test_node_counts_follow_each_new_node_list() -> None:
    slurm = Nodes()
    clock = [1000.0]
    view = ClusterView(slurm, 2.0, 60.0, clock=lambda: clock[0])
    assert view.state(job(), Counter()).idle_nodes == 8
    assert (view.cpus_per_node("debug"), view.core_counts()) == (4, frozenset({4}))
    slurm.current = nodes(3, cpus=8)
    assert view.state(job(), Counter()).idle_nodes == 8  # cached for cluster_cache_s
    clock[0] += 2.0
    assert view.state(job(), Counter()).idle_nodes == 3
    assert (view.cpus_per_node("debug"), view.core_counts()) == (8, frozenset({8}))
    assert slurm.reads["nodes"] == 2


class Queue(FakeSlurm, Nodes):
    """An empty queue on the reading side; the cluster reads counted."""

    def __init__(self) -> None:
        FakeSlurm.__init__(self)
        Nodes.__init__(self)

    def pending_jobs(self) -> list[Any]:
        return []


def test_a_daemon_that_starts_deciding_has_read_the_cluster_before_its_first_job(
    tmp_path: Path,
) -> None:
    slurm = Queue()
    d = daemon(tmp_path, slurm, "check_privileges = false\ncluster_cache_s = 30\n")
    try:
        d.startup()
        assert {"nodes", "partitions", "qos"} <= set(slurm.reads)
        assert d._prefetch_wanted()  # the start counts as a batch for the prefetch
        d.slurm_ms.clear()
        d.cluster.state(job(user=""), Counter())  # the first job's batch
        assert dict(d.slurm_ms) == {}  # read nothing itself
    finally:
        d.teardown()


class Broken(Queue):
    """A reader whose QOS table cannot be parsed (a bug, not a SlurmError)."""

    def qos_limits(self) -> list[Any]:
        raise KeyError("MaxTRESPerJob")


def test_a_bug_in_the_first_cluster_read_does_not_stop_the_start(tmp_path: Path) -> None:
    d = daemon(tmp_path, Broken(), "check_privileges = false\n")
    try:
        d.startup()  # logged, not raised
        assert d.active
    finally:
        d.teardown()
