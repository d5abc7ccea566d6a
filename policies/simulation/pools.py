"""Node types: pools of identical nodes, the partitions that run on them, jobs placed on them.

A machine with several node types (CEA Curie: 5,040 thin nodes of 16 cores, 360 fat nodes of
32) is simulated as one pool per type. A pool has a name, a node count, cores per node, the
trace partitions (SWF field 16) whose jobs run on it, and a speed factor (one core of it
against one core of speed 1; default 1: the trace gives no per-type speed).

The pools' text form (``--pools``), comma-separated::

    NAME=NODESxCORES:PART[+PART…][@SPEED]      large=360x32:4,standard=5040x16:10

A job's size in the trace counts processors P (SWF field 8, else 5); on its own pool of c
cores per node it asks for r = ⌈P/c⌉ nodes, so it holds r·c processors. Jobs are dropped,
each counted under its reason (`DROP_REASONS`), when the trace gives them no partition, when
no pool runs their partition, or when r exceeds their pool's nodes.

`from_header` derives pools from an SWF header where it can (CEA Curie's notes: the counts
and cores of its node types, and its partition table); `None` where it cannot.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from policies.simulation.workload import TraceJob
from predictor.downey import IntArray

NO_PARTITION = "no partition"
NO_POOL = "partition without pool"
TOO_LARGE = "larger than its pool"
DROP_REASONS = (NO_PARTITION, NO_POOL, TOO_LARGE)
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_POOL = re.compile(r"^(\d+)x(\d+):(\d+(?:\+\d+)*)(?:@([0-9.eE+-]+))?$")
#: Slack against float noise in P/c.
_EPS = 1e-9


@dataclass(frozen=True)
class Pool:
    """`nodes` nodes of `cores` cores running the trace partitions `partitions`, at `speed`."""

    name: str
    nodes: int
    cores: int
    partitions: tuple[int, ...]
    speed: float = 1.0

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"pool name {self.name!r}: letters, digits, _ or -, from a letter")
        if self.nodes < 1 or self.cores < 1:
            raise ValueError(f"pool {self.name}: nodes and cores must be ≥ 1")
        if not self.partitions or min(self.partitions) < 0:
            raise ValueError(f"pool {self.name}: at least one partition number ≥ 0")
        if not (math.isfinite(self.speed) and self.speed > 0.0):
            raise ValueError(f"pool {self.name}: speed must be a number > 0, got {self.speed}")

    def __str__(self) -> str:
        parts = "+".join(str(p) for p in self.partitions)
        speed = "" if self.speed == 1.0 else f"@{self.speed:g}"
        return f"{self.name}={self.nodes}x{self.cores}:{parts}{speed}"


def parse_pools(text: str) -> tuple[Pool, ...]:
    """Pools from their text form (module doc); ValueError naming the bad item."""
    pools: list[Pool] = []
    for item in text.split(","):
        name, sep, spec = item.strip().partition("=")
        m = _POOL.match(spec.strip())
        if not sep or m is None:
            raise ValueError(
                f"pool {item.strip()!r} is not NAME=NODESxCORES:PART[+PART…][@SPEED] "
                "(e.g. large=360x32:4)"
            )
        try:
            speed = float(m.group(4)) if m.group(4) else 1.0
        except ValueError as exc:
            raise ValueError(
                f"pool {name.strip()!r}: speed {m.group(4)!r} is not a number"
            ) from exc
        parts = tuple(int(p) for p in m.group(3).split("+"))
        pools.append(Pool(name.strip(), int(m.group(1)), int(m.group(2)), parts, speed))
    check_pools(pools)
    return tuple(pools)


def check_pools(pools: Sequence[Pool]) -> None:
    """ValueError when two pools share a name or a partition."""
    names = [p.name for p in pools]
    if len(set(names)) != len(names):
        raise ValueError(f"pool names must differ, got {', '.join(names)}")
    seen: dict[int, str] = {}
    for pool in pools:
        for part in pool.partitions:
            if part in seen:
                raise ValueError(f"partition {part} is in pools {seen[part]} and {pool.name}")
            seen[part] = pool.name


def parse_multi(text: str, pools: Sequence[Pool]) -> tuple[int, ...]:
    """`--multi-partition a,b`: the listed pools' indices in the user's order (≥ 2, distinct)."""
    names = [n.strip() for n in text.split(",")]
    index = {p.name: i for i, p in enumerate(pools)}
    unknown = [n for n in names if n not in index]
    if unknown:
        raise ValueError(
            f"--multi-partition: no pool named {unknown[0]!r} (pools: {', '.join(index)})"
        )
    if len(set(names)) != len(names) or len(names) < 2:
        raise ValueError("--multi-partition needs at least two different pool names")
    return tuple(index[n] for n in names)


#: CEA Curie's partitions and the node type each runs on (TGCC's description of Curie, the
#: page its SWF header cites): "standard" on thin nodes, "large" on fat nodes. Its hybrid
#: (GPU) nodes are left out: the header says they are not in MaxNodes/MaxProcs, and a CPU
#: curve says nothing of a GPU node.
KNOWN_PARTITIONS = {"large": "fat", "standard": "thin"}
_TYPE_COUNT = re.compile(r"(\d+)\s+([A-Za-z]+)\s+nodes")
_TYPE_PROCS = re.compile(r"(\d+)\s+in\s+([A-Za-z]+)\s+nodes")
_PARTITION = re.compile(r"^;\s*Partition:\s*(\d+)\s+(\S+)\s*$")


def from_header(comments: Sequence[str]) -> tuple[Pool, ...] | None:
    """Pools from an SWF header's comment lines, where its notes give each node type's count
    ("5040 thin nodes + 360 fat nodes") and processors ("80640 in thin nodes + …") and its
    partition table names partitions of KNOWN_PARTITIONS; None otherwise."""
    counts: dict[str, int] = {}
    procs: dict[str, int] = {}
    partitions: dict[str, int] = {}
    for line in comments:
        if "+" in line:
            for n, kind in _TYPE_PROCS.findall(line):
                procs.setdefault(kind, int(n))
            if not _TYPE_PROCS.search(line):
                for n, kind in _TYPE_COUNT.findall(line):
                    counts.setdefault(kind, int(n))
        m = _PARTITION.match(line.strip())
        if m:
            partitions.setdefault(m.group(2), int(m.group(1)))
    pools = []
    for part_name, kind in KNOWN_PARTITIONS.items():
        n, p = counts.get(kind), procs.get(kind)
        if part_name in partitions and n and p and p % n == 0:
            pools.append(Pool(part_name, n, p // n, (partitions[part_name],)))
    return tuple(pools) if pools else None


@dataclass(frozen=True, eq=False)
class Placed:
    """The jobs kept on the pools: each with its size in its own pool's nodes (r = ⌈P/c⌉),
    `pool[i]` its pool's index, `processors[i]` = r·c; `dropped`: reason -> count."""

    jobs: tuple[TraceJob, ...]
    pool: IntArray
    processors: IntArray
    dropped: dict[str, int]


def place(jobs: Sequence[TraceJob], pools: Sequence[Pool]) -> Placed:
    """Each job on the pool of its partition, sized in that pool's nodes (module doc).

    A job without `processors` counts its `nodes` as processors."""
    check_pools(pools)
    owner = {part: i for i, pool in enumerate(pools) for part in pool.partitions}
    kept: list[TraceJob] = []
    where: list[int] = []
    dropped: Counter[str] = Counter()
    for job in jobs:
        if job.partition is None:
            dropped[NO_PARTITION] += 1
            continue
        q = owner.get(job.partition)
        if q is None:
            dropped[NO_POOL] += 1
            continue
        procs = job.nodes if job.processors is None else job.processors
        nodes = max(1, math.ceil(procs / pools[q].cores - _EPS))
        if nodes > pools[q].nodes:
            dropped[TOO_LARGE] += 1
            continue
        kept.append(replace(job, nodes=nodes))
        where.append(q)
    pool = np.asarray(where, dtype=np.int64)
    cores = np.array([p.cores for p in pools], dtype=np.int64)
    sizes = np.array([j.nodes for j in kept], dtype=np.int64)
    processors = sizes * cores[pool] if kept else np.zeros(0, dtype=np.int64)
    return Placed(
        tuple(kept), pool, processors, {r: dropped[r] for r in DROP_REASONS if dropped[r]}
    )
