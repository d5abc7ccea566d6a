"""The ``adaptalloc`` command line: one module per command group.

root.py holds the click group, the entry point and the list of subcommands; common.py the
options and helpers every command shares (opening the store among them); render.py the text
and JSON output. Command modules import only common, render and the rooms below them.
"""

from __future__ import annotations

from typing import NoReturn

__all__ = ["main"]


def main() -> NoReturn:
    """The console script ``adaptalloc`` (pyproject: ``plugin.cli:main``): root.py's main.

    Imported on call, so that importing a module of this package does not load every command.
    """
    from plugin.cli.root import main as run_and_exit  # noqa: PLC0415

    run_and_exit()
