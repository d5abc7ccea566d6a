"""The ``adaptalloc`` command line: one module per command group.

root.py holds the click group, the entry point and the list of subcommands; common.py the
options and helpers every command shares (opening the store among them); render.py the text
and JSON output. Command modules import only common, render and the rooms below them.
"""
