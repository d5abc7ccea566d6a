"""What a benchmark hands to the docs: its tables as a small JSON result, stamped.

The docs' benchmark pages (docs/benchmarks/*.md) are rendered from these files by
``python -m tests.benchmarks.docs_tables``, never pasted from a terminal. A benchmark that has
a table for the docs calls :func:`record` once, after it printed its figures::

    from .results import full_run, mode_note, record

    FULL = full_run()  # ADAPTALLOC_FULL_BENCH=1: the full run; otherwise the quick mode

    def test_something() -> None:
        table = Table(title=f"What it measures ({mode_note(FULL)})")
        ...
        Console().print(table)
        record(
            "something",                      # docs/benchmarks/something.md
            title="What it measures",
            source=__file__,
            full=FULL,
            tables=[table],                   # rich Tables, or ResultTable
            notes=["What data chose each constant, what data scores it, what is assumed."],
        )

A benchmark file with several tests gives each its ``section`` (a heading of the same page):
each test's call replaces its own section and keeps the others, so one page gathers the
file's tables even when its tests run separately.

Where the file goes: ``$ADAPTALLOC_BENCH_OUT/<name>.json`` when that is set, else
``<project>/.local/bench/<name>.json``. Each run replaces its section of the file, so the
docs show the last run; each section's stamp says when it ran, on what machine (CPU model,
cores, load average at the end) and in which mode (quick or full). A page rendered from a
quick run says so.

The JSON (``SCHEMA``, version 2)::

    {"schema": 2, "name", "title", "source": "tests/benchmarks/test_x.py",
     "sections": [{"heading": "" | "...", "mode": "quick" | "full", "date": ISO-8601 UTC,
                   "machine": {"cpu", "cores", "load_average", "python"},
                   "tables": [{"title", "columns": [...], "rows": [[...]]}],
                   "notes": [...]}]}

Cells are plain text (rich markup is dropped). Nothing here is asserted about figures.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

__all__ = [
    "FULL_ENV",
    "SCHEMA",
    "ResultTable",
    "full_run",
    "mode_note",
    "record",
    "results_dir",
]

SCHEMA = 2
#: The one switch for every benchmark's full run.
FULL_ENV = "ADAPTALLOC_FULL_BENCH"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ResultTable:
    """A table for the docs when the benchmark prints no rich Table."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]] = field(default_factory=list)


def full_run(*older_switches: str) -> bool:
    """True when ``ADAPTALLOC_FULL_BENCH=1`` (or one of a benchmark's own older switches) asks
    for the full run; the quick mode is the default, the one CI runs."""
    return any(os.environ.get(name) == "1" for name in (FULL_ENV, *older_switches))


def mode_note(full: bool) -> str:
    """The words a benchmark's header carries: which mode, and how to get the other."""
    return "full run" if full else f"quick mode; {FULL_ENV}=1 for the full run"


def results_dir() -> Path:
    """Where :func:`record` writes: ``$ADAPTALLOC_BENCH_OUT``, else ``.local/bench``."""
    configured = os.environ.get("ADAPTALLOC_BENCH_OUT")
    return Path(configured) if configured else PROJECT_ROOT / ".local" / "bench"


def record(
    name: str,
    *,
    title: str,
    source: str,
    full: bool,
    tables: Sequence[Table | ResultTable],
    notes: Sequence[str] = (),
    section: str = "",
) -> Path:
    """Write one benchmark's result for the docs (its ``section`` of the page, replacing an
    earlier run of the same section); returns the file written.

    ``name`` names the docs page (``docs/benchmarks/<name>.md``): letters, digits, ``-``
    and ``_`` only. ``source`` is the benchmark's ``__file__``.
    """
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"name must be letters, digits, - or _: {name!r}")
    entry = {
        "heading": section,
        "mode": "full" if full else "quick",
        "date": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "machine": machine(),
        "tables": [_table_dict(table) for table in tables],
        "notes": [str(note) for note in notes],
    }
    out = results_dir()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    sections = [s for s in _earlier_sections(path, _relative(source)) if s["heading"] != section]
    at = next(
        (
            i
            for i, s in enumerate(_earlier_sections(path, _relative(source)))
            if s["heading"] == section
        ),
        len(sections),
    )
    sections.insert(at, entry)
    document = {
        "schema": SCHEMA,
        "name": name,
        "title": title,
        "source": _relative(source),
        "sections": sections,
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _earlier_sections(path: Path, source: str) -> list[dict[str, Any]]:
    """The sections an earlier run wrote to ``path`` (none when it is unreadable, of another
    schema or from another benchmark file)."""
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(earlier, dict) or earlier.get("schema") != SCHEMA:
        return []
    if earlier.get("source") != source:
        return []
    sections = earlier.get("sections")
    return [s for s in sections if isinstance(s, dict)] if isinstance(sections, list) else []


def machine() -> dict[str, Any]:
    """What the figures depend on: the CPU, how many cores, how busy the box was."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_average": load,
        "python": platform.python_version(),
    }


def _relative(source: str) -> str:
    path = Path(source).resolve()
    try:
        return path.relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        return path.name


def _plain(cell: Any) -> str:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return str(cell)


def _table_dict(table: Table | ResultTable) -> dict[str, Any]:
    if isinstance(table, ResultTable):
        return {
            "title": table.title,
            "columns": [_plain(c) for c in table.columns],
            "rows": [[_plain(c) for c in row] for row in table.rows],
        }
    columns = [_plain(column.header) for column in table.columns]
    cells = [[_plain(cell) for cell in column.cells] for column in table.columns]
    rows = [list(row) for row in zip(*cells, strict=True)] if cells else []
    return {"title": _plain(table.title or ""), "columns": columns, "rows": rows}
