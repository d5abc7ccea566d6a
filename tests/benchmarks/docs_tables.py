"""Render the docs' benchmark pages from the benchmarks' JSON results.

    python -m tests.benchmarks.docs_tables [--results DIR] [--out docs/benchmarks] [NAME ...]

Each ``<name>.json`` that a benchmark wrote through :func:`tests.benchmarks.results.record`
(``$ADAPTALLOC_BENCH_OUT``, else ``.local/bench``) becomes ``docs/benchmarks/<name>.md``: its
title, then per section (one per test) a stamp (date, machine, quick or full mode, the
benchmark file), its tables and its notes. Only the named results are rendered when names
are given; pages without a result are left as they are. Exit 1 with one line when a result
is missing or unreadable.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from .results import FULL_ENV, PROJECT_ROOT, SCHEMA, results_dir

__all__ = ["main", "render"]


def _cell(value: Any) -> str:
    text = str(value).replace("\n", " ").replace("|", "\\|")
    return text if text.strip() else " "


def _table(table: dict[str, Any]) -> list[str]:
    columns = [_cell(c) for c in table["columns"]]
    lines = []
    if table.get("title"):
        lines += [f"**{table['title']}**", ""]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---" for _ in columns) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table["rows"]]
    return [*lines, ""]


def _stamp(section: dict[str, Any], source: str) -> list[str]:
    machine = section["machine"]
    load = ", ".join(str(x) for x in machine.get("load_average") or []) or "unknown"
    mode = (
        "full run"
        if section["mode"] == "full"
        else f"quick mode (the CI default; `{FULL_ENV}=1` for the full run)"
    )
    return [
        '!!! info "Generated from a benchmark run"',
        f"    `{source}`, {mode}, run {section['date']} on {machine.get('cpu', '?')}"
        f" ({machine.get('cores', '?')} cores, load average {load} at the end).",
        "    Rendered by `python -m tests.benchmarks.docs_tables`; rerun the benchmark and the",
        "    script rather than editing this page.",
        "",
    ]


def render(result: dict[str, Any]) -> str:
    """One result document as a markdown page: a section per test, each with its stamp."""
    if result.get("schema") != SCHEMA:
        raise ValueError(f"schema {result.get('schema')!r}, expected {SCHEMA}")
    lines = [f"# {result['title']}", ""]
    for section in result["sections"]:
        if section.get("heading"):
            lines += [f"## {section['heading']}", ""]
        lines += _stamp(section, result["source"])
        for table in section["tables"]:
            lines += _table(table)
        if section.get("notes"):
            lines += [f"- {note}" for note in section["notes"]]
            lines.append("")
    return "\n".join(lines)


@click.command()
@click.option(
    "--results",
    "results",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the JSON results are (default: $ADAPTALLOC_BENCH_OUT, else .local/bench).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=PROJECT_ROOT / "docs" / "benchmarks",
    show_default=True,
    help="Where the pages go.",
)
@click.argument("names", nargs=-1)
def main(results: Path | None, out: Path, names: Sequence[str]) -> None:
    """Render docs/benchmarks/NAME.md from the benchmarks' JSON results."""
    source_dir = results or results_dir()
    files = (
        [source_dir / f"{name}.json" for name in names]
        if names
        else sorted(source_dir.glob("*.json"))
    )
    if not files:
        click.echo(f"docs_tables: error: no results in {source_dir}", err=True)
        sys.exit(1)
    out.mkdir(parents=True, exist_ok=True)
    for path in files:
        try:
            page = render(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            click.echo(f"docs_tables: error: {path}: {exc}", err=True)
            sys.exit(1)
        target = out / f"{path.stem}.md"
        target.write_text(page, encoding="utf-8")
        click.echo(f"{target}")


if __name__ == "__main__":
    main()
