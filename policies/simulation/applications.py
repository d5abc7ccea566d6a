"""The learner's applications: the key the daemon would file each job's runs under.

A site's daemon learns per application, so the simulator groups the trace's jobs the way the
daemon would name them:

* by the SWF executable number (field 14) where the trace has one: ``exe-<n>``;
* else by user and requested-size class, ``user-<u>-size-<2^k>`` with 2^k ≤ r < 2^(k+1):
  one user's jobs of about the same size are filed together (``size-<2^k>`` when the trace
  has no user either). `Applications.grouping` says which was used for how many jobs.

These keys are what the learner sees, not what runs: the true curves belong to hidden
applications drawn apart from the keys (world.py), so one key may mix several codes and one
code may appear under several keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from policies.simulation.workload import TraceJob
from predictor.downey import IntArray

EXECUTABLE = "executable"
USER_SIZE = "user + size class"


@dataclass(frozen=True, eq=False)
class Applications:
    """The trace's applications: `index[i]` is job i's application, `names[a]` its key."""

    index: IntArray
    names: tuple[str, ...]
    #: How many jobs were grouped by executable and by user + size class.
    grouping: dict[str, int]

    def __len__(self) -> int:
        return len(self.names)


def size_class(nodes: int) -> int:
    """2^⌊log2 nodes⌋: the size class of a request."""
    return 1 << (int(nodes).bit_length() - 1)


def app_key(job: TraceJob) -> str:
    """The application's key (module doc)."""
    if job.executable is not None:
        return f"exe-{job.executable}"
    cls = size_class(job.nodes)
    return f"size-{cls}" if job.user is None else f"user-{job.user}-size-{cls}"


def group(jobs: Sequence[TraceJob]) -> Applications:
    """Each job's application, numbered in order of first appearance."""
    numbers: dict[str, int] = {}
    index = np.empty(len(jobs), dtype=np.int64)
    by_exe = 0
    for i, job in enumerate(jobs):
        index[i] = numbers.setdefault(app_key(job), len(numbers))
        by_exe += job.executable is not None
    return Applications(index, tuple(numbers), {EXECUTABLE: by_exe, USER_SIZE: len(jobs) - by_exe})


def time_class(limit_s: float) -> int:
    """⌊log2(limit in minutes)⌋ (0 below two minutes): the requested-time class of a job."""
    return max(0, math.floor(math.log2(max(limit_s, 60.0) / 60.0)))


def by_time_class(jobs: Sequence[TraceJob], apps: Applications) -> Applications:
    """The learner's keys when it keys by (application, requested-time class): each
    application's jobs split by `time_class` of their limit, a proxy for the problem size
    known at submit time (the trace's requested time; on a trace without one, the limit
    drawn from the model of user estimates, estimates.py)."""
    numbers: dict[str, int] = {}
    index = np.empty(len(jobs), dtype=np.int64)
    for i, job in enumerate(jobs):
        key = f"{apps.names[apps.index[i]]}-t{time_class(job.limit)}"
        index[i] = numbers.setdefault(key, len(numbers))
    return Applications(index, tuple(numbers), dict(apps.grouping))
