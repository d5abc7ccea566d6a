"""Backfilling the store: accounting history (`import sacct`) and studies (`import csv`).

``import sacct`` walks [since, until) in windows (default 24 h) so that no single sacct
query asks slurmdbd for months of jobs, optionally pausing between windows, and records
after each window how far it got in a checkpoint in Redis (one per range). Run again with
the same range, it resumes after the last finished window; a window re-read after a crash
is harmless, because observations are deduplicated by job id. Every job goes through the
learner's validation (`plugin.learning.learner.Ingestor`). Job comments are in accounting only with
``AccountingStoreFlags=job_comment``; without it, history is keyed by the template rule.

``import csv`` reads an observation CSV (header ``n,runtime``, plugin/formats/observations_csv.py)
for one app key. Each row gets a synthetic job id, ``csv-`` and a hash of the app key, the
file's name, the row's values and how many identical rows came before it: importing the
same file again adds nothing, appending rows to it and importing again adds only the new
rows, and the same study under another file name counts as another study.

Tasks per node is recorded only when it is true of every node: an even spread, tasks =
nodes × tasks per node. A run whose tasks do not divide over its nodes (10 tasks on 4 nodes:
3, 3, 2, 2) keeps its tasks and nodes and records tasks per node as None, as the learner does
for sacct's jobs (plugin/learning/learner.py), never the busiest node's count alone: the
placement model (predictor/placement.py) would read that as 4 × 3 = 12 tasks. `task_spread`
states the rule for the CSV's columns; a row whose columns contradict each other is an
error naming its row.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from plugin.appkey import AppKey, numeric_size, size_class
from plugin.errors import InputError, printable
from plugin.formats.observations_csv import (
    DEFAULT_MAX_ROWS,
    RawObservations,
    read_observations,
)
from plugin.learning.learner import CENSORED_STATES, Ingestor, IngestStats
from plugin.slurm import SlurmReader
from plugin.store.curves import CurveStore, Observation

__all__ = [
    "ImportResult",
    "csv_job_ids",
    "import_csv",
    "import_sacct",
    "sacct_import_id",
    "task_spread",
]

log = structlog.get_logger("adaptalloc.import")

#: Called after each window: (window end, range end, stats so far).
Progress = Callable[[float, float, IngestStats], None]


@dataclass
class ImportResult:
    """What an import did; `resumed_from` is the checkpoint it started after (or None)."""

    stats: IngestStats
    windows: int = 0
    resumed_from: float | None = None
    since: float | None = None
    until: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "windows": self.windows,
            "resumed_from": self.resumed_from,
            **self.stats.to_dict(),
            **self.extra,
        }


def sacct_import_id(since: float, until: float) -> str:
    """The checkpoint id of one range: ``sacct-<since>-<until>`` in whole Unix seconds
    (since rounded down, until up, as import_sacct reads them)."""
    return f"sacct-{math.floor(since)}-{math.ceil(until)}"


def import_sacct(
    store: CurveStore,
    reader: SlurmReader,
    ingestor: Ingestor,
    since: float,
    until: float,
    window_s: float = 86400.0,
    pause_s: float = 0.0,
    restart: bool = False,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ImportResult:
    """Backfill COMPLETED jobs that ended in [since, until) from accounting, window by window.

    Times are Unix seconds (since rounded down, until up); `window_s` is rounded to whole
    seconds. The checkpoint records the end of the last window read.
    """
    if not until > since:
        raise InputError("--until must be after --since")
    if not (math.isfinite(window_s) and window_s > 0):
        raise InputError("the window must be a positive number of hours")
    # Whole seconds, as Slurm keeps times: window k is [start + k·w, start + (k+1)·w - 1].
    since, until, step = math.floor(since), math.ceil(until), max(1, round(window_s))
    import_id = sacct_import_id(since, until)
    if restart:
        store.reset_checkpoint(import_id)
    done = store.checkpoint(import_id).get("done_until")
    start = since if done is None else max(since, math.floor(float(done)))
    result = ImportResult(
        IngestStats(), resumed_from=None if done is None else float(done), since=since, until=until
    )
    cursor = start
    while cursor < until:
        end = min(cursor + step, until)
        jobs = reader.finished_jobs(cursor, end - 1, states=("COMPLETED", *CENSORED_STATES))
        stats = ingestor.ingest(jobs)
        store.save_checkpoint(import_id, end, stats.counts())
        result.stats.merge(stats)
        result.windows += 1
        log.debug("import_window", since=cursor, until=end, **stats.counts())
        if progress is not None:
            progress(end, until, result.stats)
        cursor = end
        if pause_s > 0 and cursor < until:
            sleep(pause_s)
    log.info("import_sacct", **result.to_dict())
    return result


def csv_job_ids(app: AppKey, source: str, n: list[float], runtime: list[float]) -> list[str]:
    """Synthetic job ids for CSV rows (see the module docstring)."""
    seen: dict[tuple[float, float], int] = {}
    ids = []
    for size, seconds in zip(n, runtime, strict=True):
        occurrence = seen.get((size, seconds), 0)
        seen[(size, seconds)] = occurrence + 1
        text = f"{app}\x00{source}\x00{size!r}\x00{seconds!r}\x00{occurrence}"
        ids.append("csv-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:24])
    return ids


def task_spread(
    nodes: int, tasks: int | None, per_node: int | None
) -> tuple[int | None, int | None]:
    """(tasks, tasks per node) to record for a run on `nodes` nodes (module docstring).

    tasks only: per node = tasks / nodes when it divides, else None. Per node only: tasks =
    nodes × per node (that many on every node). Both: kept when tasks = nodes × per node;
    per node None when it is ⌈tasks / nodes⌉, the busiest node of an uneven spread.
    ValueError when they contradict each other or leave a node without a task.
    """
    if tasks is None:
        return (None, None) if per_node is None else (nodes * per_node, per_node)
    if tasks < nodes:
        raise ValueError(f"{tasks} tasks on {nodes} nodes leave a node without a task")
    even = tasks % nodes == 0
    if per_node is None or per_node * nodes == tasks:
        return tasks, tasks // nodes if even else None
    if not even and per_node == -(-tasks // nodes):
        return tasks, None
    raise ValueError(
        f"{tasks} tasks on {nodes} nodes cannot have {per_node} tasks per node (every node "
        f"has {tasks // nodes} when they divide, the busiest ⌈tasks/nodes⌉ when they do not)"
    )


def _optional_fields(raw: RawObservations, row: int, app: AppKey) -> dict[str, Any]:
    """A CSV row's size, tasks, tasks per node and node type (None where not given); the
    size falls back to the app key's numeric size class. InputError naming the row when the
    tasks and tasks per node contradict each other (`task_spread`)."""

    def number(column: Any) -> float | None:
        return None if column is None or math.isnan(column[row]) else float(column[row])

    tasks, per_node = number(raw.tasks), number(raw.tasks_per_node)
    try:
        spread = task_spread(
            int(raw.n[row]),
            None if tasks is None else int(tasks),
            None if per_node is None else int(per_node),
        )
    except ValueError as exc:
        raise InputError(f"{raw.source}: data row {row + 1}: {exc}") from exc
    size = number(raw.size)
    return {
        "size": size if size is not None else numeric_size(app.size),
        "tasks": spread[0],
        "tasks_per_node": spread[1],
        "node_type": None if raw.node_type is None else raw.node_type[row],
    }


def import_csv(
    store: CurveStore,
    path: str | Path,
    app: AppKey,
    max_rows: int = DEFAULT_MAX_ROWS,
    now: float | None = None,
) -> ImportResult:
    """Store the runs of an observation CSV as observations of `app` (idempotent)."""
    raw = read_observations(path, max_rows)
    when = time.time() if now is None else now
    n = [float(v) for v in raw.n]
    runtime = [float(v) for v in raw.runtime]
    ids = csv_job_ids(app, Path(str(path)).name, n, runtime)
    # A study of several problem sizes under a bare app name: each size is its own app key
    # (cg@1000, cg@4000), as a job tagged size=1000 would be.
    split = raw.size is not None and app.size is None and not bool(np.isnan(raw.size).any())
    keys_ = (
        [AppKey(app.name, size_class(float(v)), app.owner) for v in raw.size]
        if split and raw.size is not None
        else [app] * len(n)
    )
    observations = [
        Observation(
            job_id=job_id,
            app=keys_[row],
            nodes=int(size),
            runtime_s=seconds,
            end_time=when,
            source="csv",
            **_optional_fields(raw, row, keys_[row]),
        )
        for row, (job_id, size, seconds) in enumerate(zip(ids, n, runtime, strict=True))
    ]
    groups: dict[AppKey, list[Observation]] = {}
    for obs in observations:
        groups.setdefault(obs.app, []).append(obs)
    added = store.add_batch(groups)
    stats = IngestStats(
        seen=len(observations),
        added=added.added,
        duplicates=added.duplicates,
        removed=added.removed,
        apps={str(key) for key in groups},
    )
    extra: dict[str, Any] = {"app": str(app), "file": printable(str(path))}
    if split:
        extra["size_apps"] = sorted(str(key) for key in groups)
    result = ImportResult(stats, extra=extra)
    log.info("import_csv", **result.to_dict())
    return result
