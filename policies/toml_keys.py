"""One validator for adaptalloc's TOML files: declared keys, typed and ranged, one error line.

Both configuration files declare their keys with `Key` values, one line per key: the plugin's
``adaptalloc.toml`` (plugin/config.py) and the policy file (policies/config.py). `read_table`
checks one parsed table against such a declaration and returns the values to store; every
refusal is a `ConfigFileError` whose text is one line naming the file, the table and the key::

    policy.toml: [partition.batch] efficiency_threshold: must be a number in (0, 1], got "high"
    adaptalloc.toml: [redis] urll: not a known key (did you mean "url"?)

Values shown in a message are short and inert (`show`); names that are not bare TOML keys are
quoted (`label`), so a hostile file cannot put a control character in the line. `is_whole` and
`is_finite_number` are the same type checks for stored JSON documents (the daemon's journal,
the decision records). Pure: no I/O.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_KEYS_LISTED",
    "ConfigFileError",
    "Key",
    "boolean",
    "choice",
    "is_finite_number",
    "is_whole",
    "key_hint",
    "label",
    "number",
    "read_table",
    "show",
    "string",
    "string_list",
    "whole",
]

#: Characters of a bad value quoted in an error message.
SHOWN = 40
#: An unknown key's error lists the allowed keys when there are at most this many.
MAX_KEYS_LISTED = 8
_BARE = re.compile(r"[A-Za-z0-9_-]+")


class ConfigFileError(ValueError):
    """A value a configuration file may not hold. ``str(exc)`` is one line:
    ``<source>: [<table>] <name>: <problem>`` (the table or the name left out where there is none).
    """

    def __init__(self, source: str, table: str, name: str, problem: str) -> None:
        where = " ".join(filter(None, [f"[{table}]" if table else "", name]))
        super().__init__(f"{source}: {where}: {problem}")
        self.source = source
        self.table = table
        self.name = name
        self.problem = problem

    @property
    def key(self) -> str:
        """The dotted key: ``partition.batch.strategy``."""
        return ".".join(filter(None, [self.table, self.name]))


@dataclass(frozen=True)
class Key:
    """One declared key: `accepts` returns the value to store, or None to refuse it (TOML has no
    null); it may raise ValueError whose text says why, shown after `allowed`."""

    allowed: str
    accepts: Callable[[Any], Any]
    doc: str = ""


def is_whole(value: object) -> bool:
    """An integer that is not a boolean (``True`` is an int to Python, not to a file)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_finite_number(value: object) -> bool:
    """An integer (not a boolean) or float that is finite as a float."""
    return _real(value) is not None


def _real(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        x = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    return x if math.isfinite(x) else None


def _g(x: float) -> str:
    return f"{x:g}".replace("e+0", "e").replace("e+", "e")  # 1e6, as a TOML file spells it


def _interval(low: float, high: float, *, low_open: bool, high_open: bool) -> str:
    if high == math.inf:
        return f"> {_g(low)}" if low_open else f"≥ {_g(low)}"
    return f"in {'(' if low_open else '['}{_g(low)}, {_g(high)}{')' if high_open else ']'}"


def number(
    low: float, high: float = math.inf, *, low_open: bool = False, high_open: bool = False
) -> Key:
    """A finite number x with low ≤ x ≤ high (< where open), stored as a float."""

    def accepts(value: object) -> float | None:
        x = _real(value)
        if x is None or x < low or x > high or (low_open and x == low):
            return None
        return None if high_open and x == high else x

    return Key(f"a number {_interval(low, high, low_open=low_open, high_open=high_open)}", accepts)


def whole(low: int, high: int | None = None, *, unit: str = "") -> Key:
    """An integer (not a boolean) with low ≤ n ≤ high; `unit` names it ("minutes")."""

    def accepts(value: object) -> int | None:
        if not isinstance(value, int) or not is_whole(value):
            return None
        return value if value >= low and (high is None or value <= high) else None

    noun = f"a whole number of {unit}" if unit else "a whole number"
    top = math.inf if high is None else high
    return Key(f"{noun} {_interval(low, top, low_open=False, high_open=False)}", accepts)


def choice(*options: str) -> Key:
    """One of the given strings."""
    return Key(
        "one of " + ", ".join(json.dumps(o) for o in options),
        lambda v: v if isinstance(v, str) and v in options else None,
    )


def _boolean(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and "\x00" not in value else None


def _string_list(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


boolean = Key("true or false", _boolean)
string = Key("a string", _string)
string_list = Key("a list of strings", _string_list)


def show(value: object) -> str:
    """A value as the TOML file would spell it, short, on one line and without control
    characters (JSON escapes them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = json.dumps(value[:SHOWN])
        return text if len(value) <= SHOWN else f'{text[:-1]}..." ({len(value):,} characters)'
    if isinstance(value, int | float):
        text = repr(value)
        return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} digits)"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"


def label(name: str) -> str:
    """A table or key name as written in TOML: bare when it can be, else quoted (JSON-escaped)."""
    return name if _BARE.fullmatch(name) else json.dumps(name)


def key_hint(name: str, known: Collection[str], listing: str) -> str:
    """The closest known name, else the known names when few, else where they are listed
    (`listing`): a message stays one short line however many keys a table has."""
    close = difflib.get_close_matches(name, list(known), n=1)
    if close:
        return f'did you mean "{close[0]}"?'
    if len(known) <= MAX_KEYS_LISTED:
        return f"allowed: {', '.join(known)}"
    return f"its keys are those of {listing}"


def read_table(
    source: str, table: str, values: object, keys: Mapping[str, Key], listing: str
) -> dict[str, Any]:
    """Check one parsed table against its declared `keys`; return the values to store.

    Raises ConfigFileError on the first key that is unknown or refused, naming `source`, the
    table and the key; `listing` names where all keys are listed (an example file).
    """
    if not isinstance(values, dict):
        raise ConfigFileError(source, table, "", f"must be a table, got {show(values)}")
    out: dict[str, Any] = {}
    for name, value in values.items():
        key = keys.get(name)
        if key is None:
            hint = key_hint(name, keys, listing)
            raise ConfigFileError(source, table, label(name), f"not a known key ({hint})")
        why = ""
        try:
            accepted = key.accepts(value)
        except ValueError as exc:
            accepted, why = None, f" ({exc})"
        if accepted is None:
            raise ConfigFileError(
                source, table, name, f"must be {key.allowed}{why}, got {show(value)}"
            )
        out[name] = accepted
    return out
