"""The cluster as the policy sees it, per partition: idle nodes, pending demand, limits.

Idle nodes come from ``sinfo --json`` and the partitions' limits (MaxNodes, MaxTime, size)
from ``scontrol show partition``, both cached (``cluster_cache_s``, ``partition_cache_s``) so
a burst does not query Slurm per job. The job's QOS limits (MaxTRESPerJob node=, MaxWall,
from ``sacctmgr show qos``, cached like the partitions) tighten the partition's: the policy
gets the smaller of each, so it never pins a size or sets a limit the QOS refuses (a job
pinned above its QOS's node limit would pend forever). When sacctmgr cannot answer, the
last QOS table read stays in use (none at first: the partition's limits alone).

The job's association (user, account, partition) tightens them too: its effective per-job
limits (MaxTRESPerJob node=, MaxWallDurationPerJob, parents' limits included) come from
slurmctld's ``scontrol show assoc_mgr``, cached per (user, account, partition) for
``partition_cache_s``. Under a GrpTRES node= limit (the association's or its account's),
the pin is also capped by the nodes the group has free (the limit less what its running
jobs hold, read from the same output: ``node=3(2)``), so a job is not pinned to a size that
pends while a smaller one could start; such an association is read again after
``cluster_cache_s``, as its usage changes. A failed read leaves the association's limits
unknown (the partition and QOS limits still apply) and is logged once until a read succeeds
again.

Off the decision path: `ClusterPrefetch` (a thread of the daemon's) refreshes the nodes,
the partitions, the QOS table and the cached associations once they are `REFRESH_AT` of
their cache time old (about as often as the batches read them before), so a batch finds
them cached and does not wait on ``sinfo``, ``scontrol`` or ``sacctmgr`` with jobs in hand
(measured: a QOS read took 275 ms inside a one-job batch at 10 jobs/s). A read the
prefetch has not made in time is still made by the batch, as before.

Pending demand is the sum of the requested minimum
nodes of the partition's pending jobs, taken from the sweep the batch came from (the job
being decided is not counted). When sinfo fails the load counts as unknown (the policy then
assumes a neutral load); it is not a reason to fail open.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import structlog

from plugin.daemon.periodic import PeriodicThread
from plugin.errors import printable
from plugin.slurm import (
    AssocRecord,
    JobRecord,
    NodeRecord,
    PartitionRecord,
    QosRecord,
    SlurmError,
    SlurmReader,
)
from plugin.slurm.parse import tighter
from policies import ClusterState
from policies.partition import Queue, overlap_share

__all__ = ["ClusterPrefetch", "ClusterView", "listed_partitions", "pending_demand", "tighter"]

log = structlog.get_logger("adaptalloc.daemon")
T = TypeVar("T")

#: Cached associations kept before expired ones are dropped (bounds the cache on a big site).
ASSOC_CACHE_SIZE = 4096
#: The prefetch refreshes a cached read this far into its cache time: late enough that Slurm
#: is asked about as often as when the batches read it, early enough that they never do
#: while the prefetch keeps up (it looks every quarter of cluster_cache_s).
REFRESH_AT = 0.75
AssocKey = tuple[str, str, str]


def _startable(free: int | None) -> int | None:
    """The most nodes worth pinning under a group limit with `free` nodes left: those,
    or 1 when none is (every size then waits for the group's jobs; the fewest soonest)."""
    return None if free is None else max(1, free)


def first_partition(partition: str) -> str:
    """A job submitted to ``a,b`` is judged by ``a``."""
    return partition.split(",", 1)[0].strip()


def listed_partitions(partition: str) -> list[str]:
    """The partitions a job lists (``a,b`` -> [a, b]), in the user's order, without repeats."""
    out: list[str] = []
    for word in partition.split(","):
        name = word.strip()
        if name and name not in out:
            out.append(name)
    return out


def pending_demand(jobs: Iterable[JobRecord]) -> Counter[str]:
    """Requested minimum nodes of the pending jobs, per (first) partition."""
    demand: Counter[str] = Counter()
    for job in jobs:
        if job.state == "PENDING" and job.nodes_min:
            demand[first_partition(job.partition)] += job.nodes_min
    return demand


def _holding(job: JobRecord, name: str, mine: set[str], now: float) -> tuple[int, float] | None:
    """(nodes of partition `name` the running `job` holds, seconds left of its limit; inf
    when unlimited), None when it holds none. A source without node names leaves only the
    jobs submitted to the partition."""
    if not job.nodes_alloc:
        return None
    held = len(job.node_names & mine) if job.node_names else 0
    if not job.node_names and job.partition == name:
        held = job.nodes_alloc
    if not held:
        return None
    if job.time_limit_min and job.start_time:
        return held, max(job.start_time + 60.0 * job.time_limit_min - now, 0.0)
    return held, float("inf")


class ClusterView:
    """Cached nodes and partitions; `state` builds one job's ClusterState."""

    def __init__(
        self,
        slurm: SlurmReader,
        cache_s: float = 2.0,
        partition_cache_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        timed: Callable[[str], AbstractContextManager[None]] | None = None,
        metered: Callable[[str], AbstractContextManager[None]] | None = None,
    ) -> None:
        self.slurm = slurm
        self.cache_s = cache_s
        self.partition_cache_s = partition_cache_s
        self.clock = clock
        self._nodes: tuple[float, list[NodeRecord] | None] = (-1e18, None)
        self._partitions: tuple[float, dict[str, PartitionRecord]] = (-1e18, {})
        self._qos: tuple[float, dict[str, QosRecord]] = (-1e18, {})
        self._running: tuple[float, list[JobRecord] | None] = (-1e18, None)
        self._assoc: dict[AssocKey, tuple[float, AssocRecord | None]] = {}
        self._assoc_failing = False
        #: The batch's timer (its log line, the watchdog); `metered` (metrics only) for the
        #: prefetch thread, which must not ping the loop's watchdog.
        self._timed = timed
        self._metered = metered
        self._local = threading.local()
        #: What the per-job questions derive from one node list (`_of_nodes`): the list
        #: and its answers by question.
        self._derived: tuple[list[NodeRecord] | None, dict[Any, Any]] = (None, {})

    def _call(self, name: str, fn: Callable[[], object]) -> object:
        timer = self._metered if getattr(self._local, "prefetching", False) else self._timed
        if timer is None:
            return fn()
        with timer(name):
            return fn()

    def prefetch(self) -> None:
        """Refresh what is `REFRESH_AT` of its cache time old (module docstring); never
        raises for a Slurm error (each read logs and keeps what it had, as in a batch)."""
        self._local.prefetching = True
        try:
            now = self.clock()
            if self.cache_s > 0 and now - self._nodes[0] >= self.cache_s * REFRESH_AT:
                self._load_nodes(now)
            if self.partition_cache_s > 0:
                due = self.partition_cache_s * REFRESH_AT
                if now - self._partitions[0] >= due:
                    self._load_partitions(now, self._partitions[1])
                if now - self._qos[0] >= due:
                    self._load_qos(now, self._qos[1])
                for key, (stamp, _) in list(self._assoc.items()):
                    if now - stamp >= due:
                        self._load_association(key, now)
        finally:
            self._local.prefetching = False

    def nodes(self) -> list[NodeRecord] | None:
        stamp, cached = self._nodes
        now = self.clock()
        if now - stamp < self.cache_s:
            return cached
        return self._load_nodes(now)

    def _load_nodes(self, now: float) -> list[NodeRecord] | None:
        try:
            found = self._call("sinfo", self.slurm.nodes)
        except SlurmError as exc:
            log.warning("cluster_load_unknown", error=printable(str(exc))[:200])
            found = None
        nodes = found if isinstance(found, list) else None
        self._nodes = (now, nodes)
        return nodes

    def _of_nodes(self, nodes: list[NodeRecord], question: Any, answer: Callable[[], T]) -> T:
        """`answer()` about `nodes`, worked out once per node list (a read replaces the list):
        each job of a batch asks the same few questions (idle nodes of its partition, CPUs
        per node, core counts), and a pass over every node per job grows with the cluster."""
        of, answers = self._derived
        if of is not nodes:
            answers = {}
            self._derived = (nodes, answers)
        if question not in answers:
            answers[question] = answer()
        found: T = answers[question]
        return found

    def partitions(self) -> dict[str, PartitionRecord]:
        stamp, cached = self._partitions
        now = self.clock()
        if now - stamp < self.partition_cache_s and cached:
            return cached
        return self._load_partitions(now, cached)

    def _load_partitions(
        self, now: float, cached: dict[str, PartitionRecord]
    ) -> dict[str, PartitionRecord]:
        try:
            found = self._call("partitions", self.slurm.partitions)
        except SlurmError as exc:
            log.warning("partitions_unknown", error=printable(str(exc))[:200])
            return cached
        table = {p.name: p for p in found} if isinstance(found, list) else {}
        self._partitions = (now, table)
        return table

    def qos(self) -> dict[str, QosRecord]:
        """QOS name -> its per-job limits, cached for ``partition_cache_s``."""
        stamp, cached = self._qos
        now = self.clock()
        if now - stamp < self.partition_cache_s:
            return cached
        return self._load_qos(now, cached)

    def _load_qos(self, now: float, cached: dict[str, QosRecord]) -> dict[str, QosRecord]:
        try:
            found = self._call("qos", self.slurm.qos_limits)
        except SlurmError as exc:
            log.warning("qos_limits_unknown", error=printable(str(exc))[:200])
            self._qos = (now, cached)
            return cached
        table = {q.name: q for q in found} if isinstance(found, list) else {}
        self._qos = (now, table)
        return table

    def association(self, user: str, account: str, partition: str) -> AssocRecord | None:
        """The job's association limits, cached per key for ``partition_cache_s``."""
        key = (user, account, partition)
        now = self.clock()
        hit = self._assoc.get(key)
        # An association under a group node limit is read again after cluster_cache_s: the
        # nodes its running jobs hold change as they start and end (nodes_free_group).
        fresh = self.partition_cache_s
        if hit is not None and hit[1] is not None and hit[1].nodes_free_group is not None:
            fresh = min(fresh, self.cache_s)
        if hit is not None and now - hit[0] < fresh:
            return hit[1]
        if not (user and account):
            return None
        return self._load_association(key, now)

    def _load_association(self, key: AssocKey, now: float) -> AssocRecord | None:
        user, account, partition = key
        found: AssocRecord | None = None
        try:
            result = self._call("assoc", lambda: self.slurm.assoc_limits(user, account, partition))
            found = result if isinstance(result, AssocRecord) else None
            self._assoc_failing = False
        except SlurmError as exc:
            if not self._assoc_failing:
                log.warning("assoc_limits_unknown", error=printable(str(exc))[:200])
            self._assoc_failing = True
        if len(self._assoc) >= ASSOC_CACHE_SIZE:
            # A snapshot (list() is one C call): the prefetch thread may add entries meanwhile.
            self._assoc = {
                k: v for k, v in list(self._assoc.items()) if now - v[0] < self.partition_cache_s
            }
        self._assoc[key] = (now, found)
        return found

    def partition(self, name: str) -> PartitionRecord | None:
        table = self.partitions()
        wanted = first_partition(name)
        if wanted:
            return table.get(wanted)
        return next((p for p in table.values() if p.default), None)

    def state(self, job: JobRecord, demand: Counter[str]) -> ClusterState:
        """The ClusterState for `job`, with the demand of the *other* pending jobs."""
        part = self.partition(job.partition)
        name = part.name if part is not None else first_partition(job.partition)
        nodes = self.nodes()
        idle: int | None = None
        if nodes is not None:
            idle = self._of_nodes(
                nodes,
                ("idle", name),
                lambda: sum(1 for n in nodes if n.idle and (not name or name in n.partitions)),
            )
        total = part.total_nodes if part is not None and part.total_nodes > 0 else None
        if idle is not None and total is not None:
            idle = min(idle, total)
        others = max(demand.get(name, 0) - (job.nodes_min or 0), 0)
        qos = self.qos().get(job.qos) if job.qos else None
        assoc = self.association(job.user, job.account, name)
        return ClusterState(
            idle_nodes=idle,
            pending_demand_nodes=others,
            total_nodes=total,
            max_nodes_per_job=tighter(
                part.max_nodes if part is not None else None,
                qos.max_nodes_per_job if qos is not None else None,
                qos.max_nodes_group if qos is not None else None,
                assoc.max_nodes_per_job if assoc is not None else None,
                assoc.max_nodes_group if assoc is not None else None,
                _startable(assoc.nodes_free_group) if assoc is not None else None,
            ),
            max_time_min=tighter(
                part.max_time_min if part is not None else None,
                qos.max_wall_min if qos is not None else None,
                assoc.max_wall_min if assoc is not None else None,
            ),
        )

    def cpus_per_node(self, name: str) -> int | None:
        """The fewest CPUs of the partition's nodes (what a placement may put on any node),
        None when sinfo is unavailable or shows none of its nodes."""
        nodes = self.nodes()
        if nodes is None:
            return None

        def fewest() -> int | None:
            cpus = [n.cpus for n in nodes if name in n.partitions and n.cpus > 0]
            return min(cpus) if cpus else None

        return self._of_nodes(nodes, ("cpus", name), fewest)

    def core_counts(self) -> frozenset[int] | None:
        """The distinct CPU counts of the cluster's nodes, None when sinfo is unavailable."""
        nodes = self.nodes()
        if nodes is None:
            return None
        return self._of_nodes(
            nodes, "cores", lambda: frozenset(n.cpus for n in nodes if n.cpus > 0)
        )

    def running(self) -> list[JobRecord] | None:
        """The running jobs (``squeue --json``, cached ``cluster_cache_s``); None when squeue
        fails. Read only for jobs that list several partitions (the sweep reads pending
        jobs alone)."""
        stamp, cached = self._running
        now = self.clock()
        if now - stamp < self.cache_s:
            return cached
        try:
            found = self._call("squeue_json", self.slurm.jobs)
        except SlurmError as exc:
            log.warning("running_jobs_unknown", error=printable(str(exc))[:200])
            found = None
        jobs = [j for j in found if j.state == "RUNNING"] if isinstance(found, list) else None
        self._running = (now, jobs)
        return jobs

    def queue(
        self, name: str, pending: Iterable[JobRecord], job: JobRecord, now: float
    ) -> Queue | None:
        """The partition's queue as policies.partition.wait_estimate reads it (its docstring):
        idle nodes (sinfo), the other pending jobs' minimum nodes (their first partition's
        share of this one's nodes, `overlap_share`) and the running jobs holding this one's
        nodes as (how many, seconds left of their limit, inf when unlimited). None when sinfo
        or squeue fails: no wait can be estimated."""
        nodes = self.nodes()
        running = self.running()
        if nodes is None or running is None:
            return None
        part = self.partitions().get(name)
        idle = sum(1 for n in nodes if n.idle and name in n.partitions)
        if part is not None and part.total_nodes > 0:
            idle = min(idle, part.total_nodes)
        members: dict[str, set[str]] = {}
        for n in nodes:
            for where in n.partitions:
                members.setdefault(where, set()).add(n.name)
        mine = members.get(name, set())
        ahead = 0.0
        for other in pending:
            if other.job_id == job.job_id or other.state != "PENDING" or not other.nodes_min:
                continue
            first = first_partition(other.partition)
            share = 1.0 if first == name else overlap_share(mine, members.get(first, set()))
            ahead += other.nodes_min * share
        ends = [e for e in (_holding(other, name, mine, now) for other in running) if e]
        return Queue(idle, ahead, tuple(ends))


class ClusterPrefetch(PeriodicThread):
    """Calls `view.prefetch()` in a thread of its own (module docstring) every `poll_s`
    while `wanted()` (the daemon decides: a standby reads nothing; plugin/daemon/periodic.py)."""

    def __init__(self, view: ClusterView, wanted: Callable[[], bool], poll_s: float) -> None:
        super().__init__(
            "adaptalloc-cluster", view.prefetch, wanted, poll_s, "cluster_prefetch_failed"
        )
        self.view = view
