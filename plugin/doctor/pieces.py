"""The files a production install puts in place (``adaptalloc install-files``), where each
goes, and how it is rendered for this install.

| piece | goes to (under PREFIX, default /) | kind |
|---|---|---|
| adaptalloc_submit.lua (the hook, a Lua module) | ``etc/slurm/`` (``--slurm-dir``) | shipped |
| job_submit.lua (the example that loads it) | ``etc/slurm/`` (``--slurm-dir``) | site script |
| adaptalloc_submit.conf (its settings) | ``etc/slurm/`` (``--slurm-dir``) | config |
| adaptalloc.toml, policy.toml (from the examples) | ``etc/adaptalloc/`` | config |
| adaptalloc.service, adaptalloc-orphans.service, .timer | ``etc/systemd/system/`` | config |
| Grafana dashboard, Prometheus rules | ``usr/share/adaptalloc/`` | shipped |

Kinds: *shipped* files must be this version's (replaced when adaptalloc wrote the old one);
*config* files are the admin's once written (kept); the *site script* is slurmctld's
job_submit.lua, the site's own wherever one exists: the example is written only where none
is (or where it is still the example adaptalloc wrote). The units' ``ExecStart`` lines are
pointed at this install's ``adaptalloc``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from plugin.daemon.state import SYSTEM_STATE_DIR

__all__ = [
    "CONFIG",
    "MODULE_FILE",
    "SHIPPED",
    "SITE_SCRIPT",
    "SITE_SCRIPT_FILE",
    "UNIT_EXECUTABLE",
    "Piece",
    "pieces",
    "render",
]

SHIPPED = "shipped"
CONFIG = "config"
SITE_SCRIPT = "site script"
#: The hook module and the site script, in slurm.conf's directory.
MODULE_FILE = "adaptalloc_submit.lua"
SITE_SCRIPT_FILE = "job_submit.lua"
#: The adaptalloc the shipped units name; replaced by this install's.
UNIT_EXECUTABLE = "/opt/adaptalloc/bin/adaptalloc"
_UNITS = ("adaptalloc.service", "adaptalloc-orphans.service", "adaptalloc-orphans.timer")


@dataclass(frozen=True)
class Piece:
    """One file to install: its shipped name (a path under deploy/ or share/adaptalloc/),
    where it goes, its mode and its kind (SHIPPED, CONFIG or SITE_SCRIPT)."""

    source: str
    target: Path
    kind: str
    mode: int = 0o644


def pieces(prefix: Path, slurm_dir: Path) -> list[Piece]:
    """Every piece, in the order they are installed (the module before the script that
    loads it)."""
    etc = prefix / "etc"
    share = prefix / "usr" / "share" / "adaptalloc"
    units = etc / "systemd" / "system"
    return [
        Piece(f"slurm/{MODULE_FILE}", slurm_dir / MODULE_FILE, SHIPPED),
        Piece(f"slurm/{SITE_SCRIPT_FILE}", slurm_dir / SITE_SCRIPT_FILE, SITE_SCRIPT),
        Piece("local/adaptalloc_submit.conf.in", slurm_dir / "adaptalloc_submit.conf", CONFIG),
        Piece("adaptalloc.example.toml", etc / "adaptalloc" / "adaptalloc.toml", CONFIG),
        Piece("policy.example.toml", etc / "adaptalloc" / "policy.toml", CONFIG),
        *(Piece(f"systemd/{unit}", units / unit, CONFIG) for unit in _UNITS),
        Piece("grafana/adaptalloc.json", share / "grafana" / "adaptalloc.json", SHIPPED),
        Piece(
            "prometheus/adaptalloc-rules.yml",
            share / "prometheus" / "adaptalloc-rules.yml",
            SHIPPED,
        ),
    ]


def render(piece: Piece, shipped: bytes, executable: Path | None = None) -> bytes:
    """The file as installed: the hook's settings with the system state directory, the
    units' ExecStart pointed at `executable` (default: this install's, when it exists)."""
    if piece.source == "local/adaptalloc_submit.conf.in":
        return shipped.replace(b"@STATE_DIR@/adaptalloc", SYSTEM_STATE_DIR.encode())
    if piece.source.startswith("systemd/") and piece.source.endswith(".service"):
        mine = executable or Path(sys.prefix) / "bin" / "adaptalloc"
        if mine.is_file():
            return shipped.replace(UNIT_EXECUTABLE.encode(), str(mine).encode())
    return shipped
