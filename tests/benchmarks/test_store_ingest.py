"""Ingest rate and memory of the curve store for a history of 100,000 jobs (real Redis).

The jobs are synthetic JobRecords (1,000 apps, sizes 1-64, Downey-like runtimes with noise)
mixed with what real accounting holds: repeated records, failed jobs, zero runtimes and
hostile names. They go through the same path as the learner and ``import sacct``
(`Ingestor.ingest`: validation, app keys, one Lua call per app, pipelined), in batches of
5,000 as one import window would bring. Printed: observations stored per second, Redis
memory (INFO used_memory, before and after), this process's RSS, the rate of a second pass
that finds every job already counted, and the cost of refitting. Only correctness is
asserted (stored == unique valid jobs); the figures depend on the machine.
"""

from __future__ import annotations

import logging
import resource
import time
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import structlog
from rich.console import Console
from rich.table import Table

from plugin.appkey import AppKeyRule
from plugin.learning.learner import Ingestor, refit_app
from plugin.log_setup import configure_logging
from plugin.slurm import JobRecord
from plugin.store import keys
from plugin.store.curves import CurveStore, Retention

pytestmark = [pytest.mark.benchmark, pytest.mark.integration]

JOBS = 100_000
APPS = 1_000
BATCH = 5_000
#: Apps refitted for the refit figure (a refit includes the predictor's model choice).
REFITS = 20
NOW = 1_800_000_000


def history(seed: int = 5) -> tuple[list[JobRecord], int]:
    """(records in arrival order, number of unique valid jobs among them)."""
    rng = np.random.default_rng(seed)
    app = rng.integers(0, APPS, JOBS)
    nodes = 2 ** rng.integers(0, 7, JOBS)
    A = 8 + (app % 50) * 2.0
    runtime = (
        600.0 * np.maximum(1 / nodes, 1 / A) * (1 + nodes / (4 * A)) * rng.lognormal(0, 0.05, JOBS)
    )
    kind = rng.random(JOBS)
    records = []
    for i in range(JOBS):
        record = JobRecord(
            job_id=1_000_000 + i,
            name=f"app{app[i]:04d}",
            user="u",
            account="a",
            partition="batch",
            state="COMPLETED",
            source="sacct",
            nodes_alloc=int(nodes[i]),
            elapsed_s=max(1, int(runtime[i])),
            end_time=NOW - JOBS + i,
        )
        if kind[i] < 0.01:
            record = replace(record, state="FAILED")
        elif kind[i] < 0.015:
            record = replace(record, elapsed_s=0)
        elif kind[i] < 0.02:
            record = replace(record, name=f"\x1b[31m{record.name}:*\n")
        records.append(record)
    valid = sum(1 for k in kind if k >= 0.02)
    # accounting repeats records (overlapping windows, requeues): 2% come again later
    repeats = rng.choice(JOBS, JOBS // 50, replace=False)
    for k, index in enumerate(sorted(repeats)):
        records.insert(min(len(records), int(index) + 3000 + k), records[int(index)])
    return records, valid


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def used_memory_mb(client: Any) -> float:
    return float(client.info("memory")["used_memory"]) / 2**20


def test_ingest_100k_jobs(redis_client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    saved = structlog.get_config()
    configure_logging(logging.WARNING)  # 500 hostile names would otherwise log 500 lines
    try:
        measure(redis_client, capsys)
    finally:
        structlog.configure(**saved)


def measure(client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    records, valid = history()
    store = CurveStore(client, Retention(max_observations=10_000, max_age_s=None))
    ingestor = Ingestor(store, AppKeyRule(), max_nodes=64, max_age_s=None, clock=lambda: NOW)
    redis_before, rss_before = used_memory_mb(client), rss_mb()

    started = time.perf_counter()
    added = rejected = duplicates = 0
    for start in range(0, len(records), BATCH):
        stats = ingestor.ingest(records[start : start + BATCH])
        added += stats.added
        duplicates += stats.duplicates
        rejected += sum(stats.rejected.values())
    ingest_s = time.perf_counter() - started
    redis_after, rss_after = used_memory_mb(client), rss_mb()

    started = time.perf_counter()
    again = sum(ingestor.ingest(records[s : s + BATCH]).added for s in range(0, JOBS, BATCH))
    replay_s = time.perf_counter() - started

    started = time.perf_counter()
    outcomes = [refit_app(store, app) for app in store.dirty_apps(limit=REFITS)]
    refit_s = time.perf_counter() - started

    assert added == valid
    assert client.hlen(keys.JOBS) == valid
    assert client.zcard(keys.APPS) == APPS
    assert again == 0
    assert all(o.status == "written" for o in outcomes)
    assert added + duplicates + rejected == len(records)  # every record accounted for

    table = Table(title=f"Curve store ingest: {JOBS:,} jobs, {APPS:,} apps, batches of {BATCH:,}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("records read (incl. 2% repeated)", f"{len(records):,}")
    table.add_row("observations stored (unique valid jobs)", f"{added:,}")
    table.add_row("refused (failed, 0 s, hostile names)", f"{rejected:,}")
    table.add_row("repeats found", f"{duplicates:,}")
    table.add_row("ingest time", f"{ingest_s:.2f} s")
    table.add_row("ingest rate", f"{added / ingest_s:,.0f} observations/s")
    table.add_row("record rate (validation + store)", f"{len(records) / ingest_s:,.0f} records/s")
    table.add_row("second pass, all already counted", f"{JOBS / replay_s:,.0f} records/s")
    table.add_row("Redis used_memory", f"{redis_before:.1f} → {redis_after:.1f} MB")
    table.add_row(
        "Redis memory per observation", f"{(redis_after - redis_before) * 2**20 / added:.0f} B"
    )
    table.add_row("process RSS", f"{rss_before:.0f} → {rss_after:.0f} MB")
    table.add_row(
        f"refit of {len(outcomes)} apps (~100 runs each)",
        f"{1000 * refit_s / max(1, len(outcomes)):.1f} ms per app",
    )
    with capsys.disabled():
        Console(width=110).print(table)
