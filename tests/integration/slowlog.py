"""What Redis itself records of each script call: SLOWLOG with every command logged
(``slowlog-log-slower-than 0``), read back as (script sha, arguments, microseconds).

SLOWLOG keeps the first 31 arguments of a command and, past 32, a last one saying
``... (N more arguments)``; the count of a long call is read from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["ScriptCall", "recording"]

_MORE = re.compile(r"\.\.\. \((\d+) more arguments\)")


@dataclass(frozen=True)
class ScriptCall:
    """One EVALSHA as SLOWLOG saw it: the script's sha, its ARGV count, its time."""

    sha: str
    argc: int
    micros: int


def _calls(entries: list[Any]) -> list[ScriptCall]:
    out = []
    for entry in entries:
        args = [a if isinstance(a, str) else a.decode("utf-8", "replace") for a in entry[3]]
        if not args or args[0].upper() != "EVALSHA":
            continue
        count = len(args)
        more = _MORE.fullmatch(args[-1])
        if more:
            count = len(args) - 1 + int(more.group(1))
        numkeys = int(args[2])
        out.append(ScriptCall(args[1], count - 3 - numkeys, int(entry[2])))
    return out


@contextmanager
def recording(client: Any, max_len: int = 1_000_000) -> Iterator[list[ScriptCall]]:
    """Log every command on `client`'s server while the block runs; the script calls are in
    the yielded list afterwards. The server's slowlog settings are put back."""
    before = client.config_get("slowlog-*")
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", max_len)
    client.execute_command("SLOWLOG", "RESET")
    found: list[ScriptCall] = []
    try:
        yield found
        found.extend(_calls(client.execute_command("SLOWLOG", "GET", -1)))
    finally:
        for name, value in before.items():
            client.config_set(name, value)
        client.execute_command("SLOWLOG", "RESET")
