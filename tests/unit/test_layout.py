"""The layout's rules, checked on the source with `ast` so that breaking one fails a test.

* Arrows point one way: plugin -> policies -> predictor (predictor imports neither,
  policies never imports plugin).
* Inside plugin/, rooms import downward: cli -> doctor -> daemon, report -> learning ->
  store, slurm, formats -> the root modules (appkey, config, errors, log_setup, metrics,
  policy_file). Rooms on one level do not import each other.
* CLI modules never import each other: a command module imports from plugin.cli only
  common and render; only root (which registers the commands) imports command modules.
* No module of plugin/ imports a private name (`_name`) from another module.
* No import cycle among the imports a module runs when it is loaded.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("plugin", "policies", "predictor")

#: Level of each room of plugin/; a module may import rooms of a lower level and its own.
ROOM_LEVEL = {
    "cli": 5,
    "doctor": 4,
    "daemon": 3,
    "report": 3,
    "learning": 2,
    "store": 1,
    "slurm": 1,
    "formats": 1,
}
ROOT_LEVEL = 0
ENTRY_LEVEL = 6  # plugin/__main__.py, `python -m plugin`
#: The only modules of plugin/cli that command modules may import.
CLI_SHARED = {"plugin.cli.common", "plugin.cli.render"}
CLI_ROOT = "plugin.cli.root"


@dataclass(frozen=True)
class Import:
    """One imported module (and the name taken from it, if any) at one line of one module."""

    importer: str
    module: str
    name: str | None
    line: int
    at_load: bool  # False for an import inside a function (runs only when it is called)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


MODULES = {module_name(path): path for path in source_files()}


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[importer].name == "__init__.py"
    base = importer.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(importer: str) -> list[Import]:
    tree = ast.parse(MODULES[importer].read_text(encoding="utf-8"))
    function_nodes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function_nodes.update(id(inner) for inner in ast.walk(node) if inner is not node)
    found = []
    for node in ast.walk(tree):
        at_load = id(node) not in function_nodes
        if isinstance(node, ast.Import):
            found += [Import(importer, a.name, None, node.lineno, at_load) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(importer, node)
            for alias in node.names:
                # `from plugin.store import keys` imports the module plugin.store.keys
                submodule = f"{source}.{alias.name}"
                if submodule in MODULES:
                    found.append(Import(importer, submodule, None, node.lineno, at_load))
                else:
                    found.append(Import(importer, source, alias.name, node.lineno, at_load))
    return found


ALL_IMPORTS = [imp for name in sorted(MODULES) for imp in imports_of(name)]


def _ours(imp: Import) -> bool:
    return imp.module.split(".")[0] in PACKAGES


def _where(imp: Import) -> str:
    what = f"{imp.module}.{imp.name}" if imp.name else imp.module
    return f"{imp.importer} (line {imp.line}) imports {what}"


def room_level(module: str) -> tuple[str, int]:
    """The room of a plugin module and its level ('' and ROOT_LEVEL for plugin/*.py)."""
    parts = module.split(".")
    if module == "plugin.__main__":
        return "__main__", ENTRY_LEVEL
    if len(parts) > 2 or (len(parts) == 2 and parts[1] in ROOM_LEVEL):
        return parts[1], ROOM_LEVEL[parts[1]]
    return "", ROOT_LEVEL


def test_the_walk_sees_the_rooms() -> None:
    # Guards the test itself: a broken walk would find no imports and pass everything.
    rooms = {room_level(name)[0] for name in MODULES if name.startswith("plugin.")}
    assert rooms >= set(ROOM_LEVEL)
    assert any(imp.module == "plugin.cli.common" for imp in ALL_IMPORTS)
    assert rooms <= {"", "__main__", *ROOM_LEVEL}


def test_arrows_point_from_plugin_to_policies_to_predictor() -> None:
    allowed = {"predictor": {"predictor"}, "policies": {"policies", "predictor"}}
    wrong = [
        _where(imp)
        for imp in ALL_IMPORTS
        if _ours(imp)
        and imp.importer.split(".")[0] in allowed
        and imp.module.split(".")[0] not in allowed[imp.importer.split(".")[0]]
    ]
    assert wrong == []


def test_rooms_import_downward() -> None:
    wrong = []
    for imp in ALL_IMPORTS:
        if not (imp.importer.startswith("plugin.") and imp.module.startswith("plugin.")):
            continue
        room, level = room_level(imp.importer)
        target_room, target_level = room_level(imp.module)
        if target_room != room and target_level >= level:
            wrong.append(_where(imp))
    assert wrong == []


def test_cli_modules_never_import_each_other() -> None:
    wrong = [
        _where(imp)
        for imp in ALL_IMPORTS
        if imp.importer.startswith("plugin.cli.")
        and imp.importer != CLI_ROOT
        and imp.module.startswith("plugin.cli.")
        and imp.module not in CLI_SHARED
    ]
    assert wrong == []


def test_no_private_name_is_imported_from_another_module() -> None:
    wrong = [
        _where(imp)
        for imp in ALL_IMPORTS
        if imp.importer.startswith("plugin")
        and _ours(imp)
        and imp.name is not None
        and imp.name.startswith("_")
        and not imp.name.startswith("__")
    ]
    assert wrong == []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` (as a path that returns to its start), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_no_import_cycle_at_load_time() -> None:
    graph: dict[str, set[str]] = {}
    for imp in ALL_IMPORTS:
        if imp.at_load and _ours(imp) and imp.module in MODULES and imp.module != imp.importer:
            graph.setdefault(imp.importer, set()).add(imp.module)
    assert _cycle(graph) is None


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize(
    ("importer", "module", "expected"),
    [
        ("plugin.report.html", "plugin.cli.render", "upward"),
        ("plugin.store.curves", "plugin.slurm.parse", "same level"),
        ("plugin.cli.simulate", "plugin.learning.learner", None),
        ("plugin.daemon.loop", "plugin.daemon.apply", None),
    ],
)
def test_the_room_rule_reads_levels_right(importer: str, module: str, expected: str | None) -> None:
    room, level = room_level(importer)
    target_room, target_level = room_level(module)
    broken = target_room != room and target_level >= level
    assert broken == (expected is not None)


def test_the_architecture_page_picture_names_every_room() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    picture = page[page.index("```\nplugin/\n") :]
    picture = picture[: picture.index("\n```", 4)]
    drawn = set(re.findall(r"── ([a-z_]+)/ ", picture))
    rooms = {p.parent.name for p in (ROOT / "plugin").glob("*/__init__.py")}
    assert drawn == rooms
    top = {p.name for p in (ROOT / "plugin").glob("*.py")} - {"__init__.py"}
    assert {name for name in top if name not in picture} == set()
