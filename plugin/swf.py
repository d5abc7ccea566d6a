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
processors, else allocated), the time limit (requested time, else the run time: a trace without
limits is replayed as if users knew their runtimes), and the executable (its app in the store).
The machine is the header's MaxNodes, else MaxProcs, else the largest size in the trace.

Bad lines never stop the reading: a line with the wrong number of fields or a field that is not
a number is skipped, and so is a job that lacks what the simulator needs or is larger than the
machine, each counted under its reason (`SKIP_REASONS`; "no size" covers a missing, zero,
fractional or implausible size, above MAX_SIZE). Only a file that cannot be read, or one
with no usable job at all, is an error (`SwfError`, one line).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

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
    "no size",
    "larger than the machine",
)
_WRONG_COUNT, _NOT_NUMBER, _NO_SUBMIT, _NO_RUNTIME, _NO_SIZE, _TOO_LARGE = SKIP_REASONS
_MACHINE_KEYS = ("MaxNodes", "MaxProcs")
#: Sizes above this are not a machine's (garbage in the size field): counted as "no size".
MAX_SIZE = 10_000_000
#: Header values longer than this are cut (a header line is not a place for megabytes).
_HEADER_VALUE_LIMIT = 200


class SwfError(InputError):
    """A trace that cannot be read or holds no usable job."""


@dataclass(frozen=True)
class SwfTrace:
    """A parsed trace.

    machine: nodes of the partition to simulate; machine_from: where that number came from
    ("MaxNodes", "MaxProcs" or "largest job"). header: the ``Key: value`` comment fields (first
    occurrence wins). lines: job lines read (skipped ones included). skipped: reason -> count.
    limits_from_runtime: jobs whose time limit is their run time (no requested time).
    usable: usable jobs in the file (more than len(jobs) after `head`).
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
            sum(j.limit == j.runtime for j in jobs) if self.limits_from_runtime else 0,
            self.usable,
        )


def skipped_summary(skipped: Mapping[str, int]) -> str:
    """``"3 wrong number of fields, 1 no run time"``, in SKIP_REASONS order; "" for none."""
    return ", ".join(f"{skipped[r]:,} {r}" for r in SKIP_REASONS if skipped.get(r))


def _header_field(line: str, header: dict[str, str]) -> None:
    """Record ``; Key: value`` (first occurrence wins); other comments are ignored."""
    key, sep, value = line.lstrip(";").partition(":")
    key = key.strip()
    if sep and key and key.isidentifier() and key not in header:
        header[key] = value.strip()[:_HEADER_VALUE_LIMIT]


def _machine_from_header(header: Mapping[str, str]) -> tuple[int, str] | None:
    for key in _MACHINE_KEYS:
        text = header.get(key, "").split()
        if text and text[0].isdigit() and 0 < int(text[0]) <= MAX_SIZE:
            return int(text[0]), key
    return None


@dataclass
class _Job:
    """A job line's numbers before the machine size is known."""

    job_id: int
    submit: float
    runtime: float
    size: int
    limit: float
    executable: int | None


def _job(values: list[float], skipped: Counter[str]) -> _Job | None:
    """The simulator's fields of one job line, or None (counted) when it lacks one."""
    job_id, submit, _, runtime, allocated = values[:5]
    requested, requested_time = values[7], values[8]
    executable = values[13]
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
    limit = requested_time if requested_time > 0 else runtime
    exe = int(executable) if executable >= 0 and executable == int(executable) else None
    return _Job(int(job_id), submit, runtime, int(size), limit, exe)


def parse_swf(lines: Iterable[str], source: str) -> SwfTrace:
    """Parse SWF text lines (module doc); SwfError when no job is usable."""
    header: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    parsed: list[_Job] = []
    count = 0
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            _header_field(line, header)
            continue
        count += 1
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
        job = _job(values, skipped)
        if job is not None:
            parsed.append(job)

    found = _machine_from_header(header)
    if found is not None:
        machine, machine_from = found
    else:
        machine, machine_from = max((j.size for j in parsed), default=0), "largest job"
    jobs: list[TraceJob] = []
    from_runtime = 0
    for j in parsed:
        if j.size > machine:
            skipped[_TOO_LARGE] += 1
            continue
        from_runtime += j.limit == j.runtime
        jobs.append(TraceJob(j.job_id, j.submit, j.runtime, j.size, j.limit, j.executable))
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
    )


def read_swf(path: str | Path) -> SwfTrace:
    """Read and parse an SWF file; SwfError (one line) when it cannot be read or has no job.

    Bytes that are not UTF-8 are replaced, so binary garbage becomes lines that are skipped.
    """
    name = printable(str(path))
    try:
        with open(path, encoding="utf-8", errors="replace", newline=None) as handle:
            return parse_swf(handle, name)
    except IsADirectoryError as exc:
        raise SwfError(f"cannot read {name}: it is a directory") from exc
    except OSError as exc:
        raise SwfError(f"cannot read {name}: {exc.strerror or type(exc).__name__}") from exc
