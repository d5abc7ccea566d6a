"""The longest a Lua script of ``import csv`` holds Redis, by rows per script call (real Redis).

Redis runs a script to its end while every other client waits: the daemon's reads, the
job_submit heartbeat's readers, the learner. An import's script calls must therefore cost
the same whatever the file's size. Printed, for one observation CSV imported as one app
with the CLI's default retention (plugin/learning/importers.import_csv, the path of
``adaptalloc import csv``), per rows-per-call setting (curves.SCRIPT_ROWS): the slowest call
of each script and its rows, every script's total, and the import's wall time. Times are
Redis' own SLOWLOG (every command logged during the import: tests/integration/slowlog.py),
in microseconds of the server's time, on the testbed's Redis (scratch database).

The rows: 30,000 by default (about half a minute); ADAPTALLOC_FULL_BENCH=1 imports 1,000,000,
the largest file ``import csv`` accepts by default (--max-rows, DEFAULT_MAX_ROWS). The
"unbounded" row is the store before the bound (one call per step for the whole file, as
the security review saw: 9.2 s for 300,000 rows); SCRIPT_ROWS = 1,000 was chosen from these
figures: its slowest call stays a few milliseconds where 50 ms is the budget, and larger
calls buy little import time. Nothing is asserted on time; the figures depend on the
machine.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
import structlog
from integration.slowlog import recording
from rich.console import Console
from rich.table import Table

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.log_setup import configure_logging
from plugin.store import curves
from plugin.store.curves import CurveStore, Retention

pytestmark = [pytest.mark.benchmark, pytest.mark.integration]

FULL = os.environ.get("ADAPTALLOC_FULL_BENCH") == "1"
ROWS = 1_000_000 if FULL else 30_000
#: Rows per script call compared; None: unbounded (the whole file in one call per step).
SETTINGS: tuple[int | None, ...] = (250, 1_000, 4_000, None)


def study(path: Path, rows: int) -> Path:
    """`rows` distinct runs of one app (n 1-64, runtimes all different)."""
    with path.open("w") as out:
        out.write("n,runtime\n")
        for i in range(rows):
            out.write(f"{1 + i % 64},{100.0 + i * 0.0001:.4f}\n")
    return path


def measure(client: Any, path: Path, rows: int | None) -> list[str]:
    client.flushdb()
    store = CurveStore(client, Retention())  # the CLI's default retention
    saved = curves.SCRIPT_ROWS
    curves.SCRIPT_ROWS = ROWS * 3 if rows is None else rows
    try:
        started = time.perf_counter()
        with recording(client) as calls:
            result = import_csv(store, path, AppKey("bench-import"), max_rows=ROWS)
        wall = time.perf_counter() - started
    finally:
        curves.SCRIPT_ROWS = saved
    assert result.stats.seen == ROWS
    cells = ["unbounded" if rows is None else f"{rows:,}"]
    for script, per_row, fixed in ((store._claim, 1, 2), (store._add, 3, 3), (store._index, 1, 6)):
        mine = [c for c in calls if c.sha == script.sha]
        slowest = max(mine, key=lambda c: c.micros)
        cells.append(
            f"{slowest.micros / 1000:,.1f} ms ({max(0, slowest.argc - fixed) // per_row:,} rows)"
        )
    every = [c.micros for c in calls]
    cells += [f"{max(every) / 1000:,.1f} ms", f"{sum(every) / 1e6:.2f} s", f"{wall:.1f} s"]
    return cells


def test_largest_script_time_of_an_import(
    redis_client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = structlog.get_config()
    configure_logging(logging.WARNING)
    try:
        path = study(tmp_path / "study.csv", ROWS)
        rows = [measure(redis_client, path, setting) for setting in SETTINGS]
    finally:
        structlog.configure(**saved)
    table = Table(
        title=f"import csv of {ROWS:,} rows, one app (SLOWLOG, testbed Redis); "
        f"shipped: {curves.SCRIPT_ROWS:,} rows per call"
    )
    for name in ("rows per call", "claim_jobs slowest", "add_observations slowest",
                 "index_app slowest", "slowest call", "all scripts", "import wall"):  # fmt: skip
        table.add_column(name, justify="right")
    for cells in rows:
        table.add_row(*cells)
    with capsys.disabled():
        Console(width=160).print(table)
