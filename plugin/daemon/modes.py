"""The modes file: which jobs job_submit.lua may hold, published by the daemon.

``<state_dir>/modes``, beside the heartbeat, world-readable, rewritten atomically (a
temporary file and a rename) whenever its text changes: at start-up, on SIGHUP, and before
every heartbeat if it went missing. One line per setting, ``#`` lines are comments::

    default advise
    partition batch enforce
    account trial advise

``default`` is ``[daemon] mode``; the ``partition`` and ``account`` lines are the policy
file's ``mode`` overrides. job_submit.lua resolves a job's mode from them the way
policies/mode.py does (the account's line, then every listed partition's, then the
default) and holds only jobs that resolve to ``enforce``. So a SIGHUP switches the hook
without touching its own settings: the daemon writes this file before it beats again.

The hook's fallbacks: no modes file beside a fresh heartbeat (a daemon from before modes
existed) is ``enforce``, as such a daemon only enforces; a file that it cannot read, or
whose ``default`` line is missing or unknown, holds nothing. A name that is not a plain
Slurm name (letters, digits, ``_.@+-``) cannot match a job's partition or account and is
left out, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import structlog

from plugin.daemon.state import atomic_write
from plugin.errors import printable
from policies.config import PolicyConfig

__all__ = ["MODES_FILE", "modes_text", "write_modes"]

log = structlog.get_logger("adaptalloc.daemon")
MODES_FILE = "modes"
_NAME = re.compile(r"[A-Za-z0-9_.@+-]+")


def _lines(kind: str, table: Iterable[tuple[str, str]]) -> list[str]:
    out = []
    for name, mode in sorted(table):
        if _NAME.fullmatch(name):
            out.append(f"{kind} {name} {mode}")
        else:
            log.warning(
                "mode_not_published",
                table=f"{kind}.{printable(name)[:60]}",
                note="not a Slurm name, so no job can be in it",
            )
    return out


def modes_text(default: str, policy: PolicyConfig) -> str:
    """The file's text for the site's `default` and the policy file's overrides."""
    lines = [
        "# Written by the adaptalloc daemon (plugin/daemon/modes.py); read by job_submit.lua.",
        f"default {default}",
        *_lines("partition", policy.partition_modes.items()),
        *_lines("account", policy.account_modes.items()),
    ]
    return "\n".join(lines) + "\n"


def write_modes(state_dir: Path, text: str) -> None:
    """Publish `text` (OSError when it cannot be written)."""
    atomic_write(state_dir / MODES_FILE, text, mode=0o644)
