"""The benchmarks' results for the docs: recorded as JSON, rendered as markdown pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.table import Table

from . import docs_tables
from .results import ResultTable, full_run, mode_note, record


def _table() -> Table:
    table = Table(title="[bold]latency[/]")
    table.add_column("mode")
    table.add_column("p99 ms", justify="right")
    table.add_row("floor", "[green]53[/]")
    table.add_row("daemon | cli", "326")
    return table


def test_record_writes_the_tables_as_plain_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADAPTALLOC_BENCH_OUT", str(tmp_path))
    path = record(
        "latency",
        title="Release latency",
        source=__file__,
        full=False,
        tables=[_table(), ResultTable("extra", ["a", "b"], [[1, 2.5]])],
        notes=["synthetic jobs"],
    )
    assert path == tmp_path / "latency.json"
    doc = json.loads(path.read_text())
    assert doc["sections"][0]["mode"] == "quick"
    assert doc["source"] == "tests/benchmarks/test_docs_tables.py"
    assert doc["sections"][0]["tables"][0] == {
        "title": "latency",
        "columns": ["mode", "p99 ms"],
        "rows": [["floor", "53"], ["daemon | cli", "326"]],
    }
    assert doc["sections"][0]["tables"][1]["rows"] == [["1", "2.5"]]
    assert doc["sections"][0]["machine"]["cores"] >= 1


def test_rendered_page_is_stamped_and_escapes_pipes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADAPTALLOC_BENCH_OUT", str(tmp_path / "results"))
    record("latency", title="Release latency", source=__file__, full=True, tables=[_table()])
    out = tmp_path / "pages"
    result = CliRunner().invoke(docs_tables.main, ["--out", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "latency.md").read_text()
    assert page.startswith("# Release latency\n")
    assert "full run" in page
    assert "| mode | p99 ms |" in page
    assert "| daemon \\| cli | 326 |" in page


def test_quick_mode_is_the_default_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADAPTALLOC_FULL_BENCH", raising=False)
    monkeypatch.delenv("OLD_SWITCH", raising=False)
    assert not full_run("OLD_SWITCH")
    assert "quick mode" in mode_note(full_run())
    monkeypatch.setenv("OLD_SWITCH", "1")
    assert full_run("OLD_SWITCH")
    monkeypatch.setenv("ADAPTALLOC_FULL_BENCH", "1")
    assert full_run()


def test_missing_result_is_one_error_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        docs_tables.main, ["--results", str(tmp_path), "--out", str(tmp_path), "nothing"]
    )
    assert result.exit_code == 1
    assert "nothing.json" in result.output


def test_a_name_that_is_not_a_file_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="name"):
        record("../x", title="t", source=__file__, full=False, tables=[])


def test_each_test_replaces_its_own_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADAPTALLOC_BENCH_OUT", str(tmp_path))
    one = ResultTable("one", ["a"], [["1"]])
    two = ResultTable("two", ["a"], [["2"]])
    record("page", title="P", source=__file__, full=False, tables=[one], section="first")
    record("page", title="P", source=__file__, full=False, tables=[two], section="second")
    record("page", title="P", source=__file__, full=True, tables=[two], section="first")
    doc = json.loads((tmp_path / "page.json").read_text())
    assert [s["heading"] for s in doc["sections"]] == ["first", "second"]
    assert doc["sections"][0]["mode"] == "full"
    assert doc["sections"][0]["tables"][0]["title"] == "two"
    page = docs_tables.render(doc)
    assert page.index("## first") < page.index("## second")
