"""The cluster prefetch (plugin/daemon/cluster.py): what it refreshed in time, a batch reads
from the cache, so no Slurm read waits with jobs in hand; its reads go to the metrics, never
to the batch's timer (which pings the loop's watchdog)."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator

from plugin.daemon.cluster import REFRESH_AT, ClusterPrefetch, ClusterView
from plugin.slurm import AssocRecord, JobRecord, NodeRecord, PartitionRecord, QosRecord
from plugin.slurm.cli_backend import CliSlurmReader


class Counting(CliSlurmReader):
    """A reader that counts each kind of read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()

    def nodes(self) -> list[NodeRecord]:
        self.reads["nodes"] += 1
        return [NodeRecord(f"n{k}", "idle", 4, 0, ("debug",)) for k in range(8)]

    def partitions(self) -> list[PartitionRecord]:
        self.reads["partitions"] += 1
        return [PartitionRecord("debug", "n[0-7]", 8, "UP", True, 6, 120)]

    def qos_limits(self) -> list[QosRecord]:
        self.reads["qos"] += 1
        return [QosRecord("normal", 4, 60)]

    def assoc_limits(self, user: str, account: str, partition: str) -> AssocRecord | None:
        self.reads["assoc"] += 1
        return None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def job() -> JobRecord:
    return JobRecord(1, "lu", "ann", "phys", "debug", "PENDING", "squeue", qos="normal")


def view(slurm: Counting, clock: Clock) -> tuple[ClusterView, list[str], list[str]]:
    """A view with a 2 s node cache and a 60 s one for the rest; the names each timer saw."""
    timed: list[str] = []
    metered: list[str] = []

    def timer(seen: list[str]) -> object:
        @contextlib.contextmanager
        def call(name: str) -> Iterator[None]:
            seen.append(name)
            yield

        return call

    made = ClusterView(
        slurm,
        2.0,
        60.0,
        clock=clock,
        timed=timer(timed),  # type: ignore[arg-type]
        metered=timer(metered),  # type: ignore[arg-type]
    )
    return made, timed, metered


def test_a_batch_after_the_prefetch_reads_nothing_from_slurm() -> None:
    slurm, clock = Counting(), Clock()
    cluster, timed, metered = view(slurm, clock)
    cluster.state(job(), Counter())  # the first batch reads everything (its timer)
    assert sorted(timed) == ["assoc", "partitions", "qos", "sinfo"]
    first = Counter(slurm.reads)
    # Before the node cache is REFRESH_AT old the prefetch reads nothing.
    clock.now += 2.0 * REFRESH_AT - 0.01
    cluster.prefetch()
    assert slurm.reads == first
    # Then it refreshes the nodes (and, 45 s on, the 60 s caches), so that a batch at the
    # moment the old ones would have expired reads nothing itself.
    for _ in range(30):
        clock.now += 1.5
        cluster.prefetch()
        clock.now += 0.5
        timed.clear()
        cluster.state(job(), Counter())
        assert timed == []
    assert slurm.reads["nodes"] > 20
    assert slurm.reads["qos"] == slurm.reads["partitions"] == slurm.reads["assoc"] == 2
    assert set(metered) == {"sinfo", "partitions", "qos", "assoc"}


def test_without_the_prefetch_the_batch_reads_what_expired() -> None:
    slurm, clock = Counting(), Clock()
    cluster, timed, _ = view(slurm, clock)
    cluster.state(job(), Counter())
    timed.clear()
    clock.now += 2.0
    cluster.state(job(), Counter())
    assert timed == ["sinfo"]


def test_the_thread_prefetches_only_while_wanted() -> None:
    slurm, clock = Counting(), Clock()
    cluster, _, _ = view(slurm, clock)
    wanted = threading.Event()
    asked = threading.Event()

    def want() -> bool:
        asked.set()
        return wanted.is_set()

    thread = ClusterPrefetch(cluster, want, poll_s=0.01).start()
    try:
        assert asked.wait(5.0)
        assert slurm.reads == Counter()  # not wanted: nothing read
        wanted.set()
        for _ in range(500):
            if slurm.reads["nodes"]:
                break
            threading.Event().wait(0.01)
        assert slurm.reads["nodes"] >= 1
    finally:
        thread.stop()
    assert not thread.thread.is_alive()
