"""Read Standard Workload Format traces (the Parallel Workloads Archive's logs).

SWF (Feitelson, Tsafrir and Krakov, JPDC 2014; https://www.cs.huji.ac.il/labs/parallel/workload/)
is plain text. Lines starting with ``;`` are header comments, some of them ``Key: value``
fields (``MaxNodes: 128``, ``MaxProcs: 128``); every other non-blank line is one job, 18
whitespace-separated numbers, −1 where a value is missing:

     1 job number        7 used memory          13 group
     2 submit time (s)   8 requested processors 14 executable (application) number
     3 wait time         9 requested time (s)   15 queue
     4 run time (s)     10 requested memory     16 partition
     5 allocated procs  11 status               17 preceding job
     6 average CPU time 12 user                 18 think time

What the simulator takes from a job: submit time, run time (> 0), the size (requested
processors, else allocated), the time limit (requested time as written; when missing, left
to the simulator, which draws it from a published model of user estimates,
`policies.simulation.estimates`), the status (1 completed; 0 failed, 5 cancelled and the
others are replayed as recorded; -1, unknown, is taken as completed and counted), the user
and the executable (its application), and, for node types (policies/simulation/pools.py),
the size in processors and the partition.

Units: SWF sizes count processors, the simulator counts nodes. Processors per node p come from
``--procs-per-node``, else the header's MaxProcs / MaxNodes when it has both (Curie: 93312 /
5544 ≈ 16.8, an average over its node types), else 1. A job of P processors needs ⌈P/p⌉ nodes.
The machine is the header's MaxNodes, else ⌊MaxProcs/p⌋, else the largest job in nodes; a job
is dropped as "larger than the machine" only when its nodes exceed the machine's.

Bad lines never stop the reading: a line with the wrong number of fields or a field that is not
a number is skipped, and so is a job that lacks what the simulator needs or is larger than the
machine, each counted under its reason (`SKIP_REASONS`; "no size" covers a missing, zero,
fractional or implausible size, above MAX_SIZE; "implausible value" a field beyond ±MAX_FIELD,
such as 1e100 or 1e308, which no clock or counter of a real log reaches). Only a file that
cannot be read, or one with no usable job at all, is an error (`SwfError`, one line).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TextIO

from plugin.errors import InputError, printable
from policies.simulation import TraceJob

__all__ = [
    "FIELDS",
    "SKIP_REASONS",
    "SwfError",
    "SwfTrace",
    "parse_swf",
    "read_swf",
    "skipped_summary",
]

FIELDS = 18
#: Why a line was skipped, in the order summaries list them.
SKIP_REASONS = (
    "wrong number of fields",
    "not a number",
    "no submit time",
    "no run time",
    "implausible value",
    "no size",
    "larger than the machine",
)
_WRONG_COUNT, _NOT_NUMBER, _NO_SUBMIT, _NO_RUNTIME, _IMPLAUSIBLE, _NO_SIZE, _TOO_LARGE = (
    SKIP_REASONS
)
#: No field of a real log is larger than this (seconds: 31,000 years; ids, counts).
MAX_FIELD = 1e12
_MACHINE_KEYS = ("MaxNodes", "MaxProcs")
#: Sizes above this are not a machine's (garbage in the size field): counted as "no size".
MAX_SIZE = 10_000_000
#: Header values longer than this are cut (a header line is not a place for megabytes).
_HEADER_VALUE_LIMIT = 200
#: Header comment lines kept as read (SwfTrace.comments).
MAX_COMMENTS = 1000
#: Longest line read, in characters: an SWF line is 18 numbers; a file without newlines
#: (/dev/zero) is refused here instead of being pulled into memory whole.
MAX_LINE_CHARS = 65_536
#: Most lines read: the largest traces of the Parallel Workloads Archive have about a
#: million jobs; an endless stream of job lines is refused here.
MAX_LINES = 20_000_000


class SwfError(InputError):
    """A trace that cannot be read or holds no usable job."""


@dataclass(frozen=True)
class SwfTrace:
    """A parsed trace.

    machine: nodes of the partition to simulate; machine_from: where that number came from
    ("MaxNodes", "MaxProcs" or "largest job"). procs_per_node: p of the module doc;
    procs_per_node_from: "--procs-per-node", "MaxProcs/MaxNodes" or "default". header: the
    ``Key: value`` comment fields (first occurrence wins). lines: job lines read (skipped ones
    included). skipped: reason -> count.
    limits_from_runtime: jobs without a requested time, whose limit the simulator models (the
    name is older than the model: the limit is no longer made from the run time).
    usable: usable jobs in the file (more than len(jobs) after `head`). not_completed: jobs
    whose status is neither completed nor unknown (failed, cancelled, ...: replayed as
    recorded); status_unknown: jobs with status -1, taken as completed.
    """

    source: str
    machine: int
    machine_from: str
    jobs: tuple[TraceJob, ...]
    lines: int
    skipped: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    header: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    limits_from_runtime: int = 0
    usable: int = 0
    procs_per_node: float = 1.0
    procs_per_node_from: str = "default"
    #: The header's comment lines as read (the first MAX_COMMENTS, each cut), for what the
    #: ``Key: value`` fields cannot hold (node types in notes: policies.simulation.pools).
    comments: tuple[str, ...] = ()
    not_completed: int = 0
    status_unknown: int = 0

    def __post_init__(self) -> None:
        if self.usable < len(self.jobs):
            object.__setattr__(self, "usable", len(self.jobs))

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def head(self, count: int) -> SwfTrace:
        """The trace with only its first `count` usable jobs (in file order)."""
        if count >= len(self.jobs):
            return self
        jobs = self.jobs[:count]
        return SwfTrace(
            self.source,
            self.machine,
            self.machine_from,
            jobs,
            self.lines,
            self.skipped,
            self.header,
            sum(not j.limit_given for j in jobs),
            self.usable,
            self.procs_per_node,
            self.procs_per_node_from,
            self.comments,
            sum(not j.completed for j in jobs),
            sum(j.status == -1 for j in jobs),
        )


def skipped_summary(skipped: Mapping[str, int]) -> str:
    """``"3 wrong number of fields, 1 no run time"``, in SKIP_REASONS order; "" for none."""
    return ", ".join(f"{skipped[r]:,} {r}" for r in SKIP_REASONS if skipped.get(r))


def _header_field(line: str, header: dict[str, str], comments: list[str]) -> None:
    """Record ``; Key: value`` (first occurrence wins) and the line (up to MAX_COMMENTS)."""
    if len(comments) < MAX_COMMENTS:
        comments.append(line[:_HEADER_VALUE_LIMIT])
    key, sep, value = line.lstrip(";").partition(":")
    key = key.strip()
    if sep and key and key.isidentifier() and key not in header:
        header[key] = value.strip()[:_HEADER_VALUE_LIMIT]


def _header_count(header: Mapping[str, str], key: str) -> int | None:
    text = header.get(key, "").split()
    if text and text[0].isascii() and text[0].isdigit() and 0 < int(text[0]) <= MAX_SIZE:
        return int(text[0])
    return None


def _units(
    header: Mapping[str, str], procs_per_node: float | None
) -> tuple[float, str, int | None, str]:
    """(p, where p is from, machine in nodes or None, where it is from): the module doc."""
    nodes, procs = (_header_count(header, key) for key in _MACHINE_KEYS)
    if procs_per_node is not None:
        p, p_from = procs_per_node, "--procs-per-node"
    elif nodes is not None and procs is not None and procs >= nodes:
        p, p_from = procs / nodes, "MaxProcs/MaxNodes"
    else:
        p, p_from = 1.0, "default"
    if nodes is not None:
        return p, p_from, nodes, "MaxNodes"
    if procs is not None and int(procs / p + _EPS) >= 1:
        return p, p_from, int(procs / p + _EPS), "MaxProcs"
    return p, p_from, None, "largest job"


#: Slack against float noise in P/p.
_EPS = 1e-9


@dataclass
class _Job:
    """A job line's numbers before the machine size is known."""

    job_id: int
    submit: float
    runtime: float
    size: int
    limit: float
    executable: int | None
    user: int | None
    processors: int
    partition: int | None
    status: int


def _job(values: list[float], skipped: Counter[str], p: float) -> _Job | None:
    """The simulator's fields of one job line (size in nodes at p processors per node), or
    None (counted) when it lacks one."""
    job_id, submit, _, runtime, allocated = values[:5]
    requested, requested_time = values[7], values[8]
    executable, user, partition, status = values[13], values[11], values[15], values[10]
    if any(abs(v) > MAX_FIELD for v in values):
        skipped[_IMPLAUSIBLE] += 1
        return None
    if submit < 0:
        skipped[_NO_SUBMIT] += 1
        return None
    if runtime <= 0:
        skipped[_NO_RUNTIME] += 1
        return None
    size = requested if requested > 0 else allocated
    if size < 1 or size > MAX_SIZE or size != int(size):
        skipped[_NO_SIZE] += 1
        return None
    limit = requested_time if requested_time > 0 else math.nan
    exe = int(executable) if executable >= 0 and executable == int(executable) else None
    who = int(user) if user >= 0 and user == int(user) else None
    part = int(partition) if partition >= 0 and partition == int(partition) else None
    nodes = max(1, math.ceil(size / p - _EPS))
    # A status that is not a whole number is not a status: taken as unknown (-1).
    code = int(status) if status == int(status) else -1
    return _Job(int(job_id), submit, runtime, nodes, limit, exe, who, int(size), part, code)


def parse_swf(lines: Iterable[str], source: str, procs_per_node: float | None = None) -> SwfTrace:
    """Parse SWF text lines (module doc); SwfError when no job is usable.

    The header comes first in an SWF file, so p is known before the first job line.
    """
    if procs_per_node is not None and not (
        math.isfinite(procs_per_node) and 0 < procs_per_node <= MAX_SIZE
    ):
        raise SwfError(f"procs per node must be in (0, {MAX_SIZE}], got {procs_per_node!r}")
    header: dict[str, str] = {}
    comments: list[str] = []
    skipped: Counter[str] = Counter()
    parsed: list[_Job] = []
    count = 0
    units: tuple[float, str, int | None, str] | None = None
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            _header_field(line, header, comments)
            continue
        count += 1
        if units is None:
            units = _units(header, procs_per_node)
        words = line.split()
        if len(words) != FIELDS:
            skipped[_WRONG_COUNT] += 1
            continue
        try:
            values = [float(w) for w in words]
        except ValueError:
            skipped[_NOT_NUMBER] += 1
            continue
        if not math.isfinite(sum(values)):  # nan or ±inf somewhere (or absurdly large values)
            skipped[_NOT_NUMBER] += 1
            continue
        job = _job(values, skipped, units[0])
        if job is not None:
            parsed.append(job)

    p, p_from, found, machine_from = units or _units(header, procs_per_node)
    machine = found if found is not None else max((j.size for j in parsed), default=0)
    jobs: list[TraceJob] = []
    from_runtime = 0
    for j in parsed:
        if j.size > machine:
            skipped[_TOO_LARGE] += 1
            continue
        given = not math.isnan(j.limit)
        from_runtime += not given
        limit = j.limit if given else math.inf
        jobs.append(
            TraceJob(
                j.job_id,
                j.submit,
                j.runtime,
                j.size,
                limit,
                j.executable,
                j.user,
                limit_given=given,
                processors=j.processors,
                partition=j.partition,
                status=j.status,
            )
        )
    if not jobs:
        why = skipped_summary(skipped)
        detail = f" ({count:,} job lines skipped: {why})" if why else " (no job lines)"
        raise SwfError(f"{source}: no usable job in the trace{detail}")
    return SwfTrace(
        source,
        machine,
        machine_from,
        tuple(jobs),
        count,
        MappingProxyType({r: skipped[r] for r in SKIP_REASONS if skipped.get(r)}),
        MappingProxyType(header),
        from_runtime,
        procs_per_node=p,
        procs_per_node_from=p_from,
        comments=tuple(comments),
        not_completed=sum(not j.completed for j in jobs),
        status_unknown=sum(j.status == -1 for j in jobs),
    )


def _bounded_lines(handle: TextIO, name: str) -> Iterator[str]:
    """The lines of `handle`, each read with a length cap; SwfError at a line longer than
    MAX_LINE_CHARS or past MAX_LINES lines."""
    for lineno in range(1, MAX_LINES + 2):
        line = handle.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if lineno > MAX_LINES:
            raise SwfError(f"{name} has more than {MAX_LINES:,} lines; is it an SWF trace?")
        if len(line) > MAX_LINE_CHARS:
            raise SwfError(
                f"{name} line {lineno}: longer than {MAX_LINE_CHARS:,} characters; "
                "is it an SWF trace?"
            )
        yield line


def read_swf(path: str | Path, procs_per_node: float | None = None) -> SwfTrace:
    """Read and parse an SWF file; SwfError (one line) when it cannot be read or has no job.

    Bytes that are not UTF-8 are replaced, so binary garbage becomes lines that are skipped.
    """
    name = printable(str(path))
    try:
        with open(path, encoding="utf-8", errors="replace", newline=None) as handle:
            return parse_swf(_bounded_lines(handle, name), name, procs_per_node)
    except IsADirectoryError as exc:
        raise SwfError(f"cannot read {name}: it is a directory") from exc
    except OSError as exc:
        raise SwfError(f"cannot read {name}: {exc.strerror or type(exc).__name__}") from exc
