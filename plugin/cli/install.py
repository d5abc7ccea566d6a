"""``adaptalloc install-files``: put this version's non-Python pieces in place.

    adaptalloc install-files [--prefix DIR] [--slurm-dir DIR] [--force] [--format text|json]

| piece | goes to (under --prefix, default /) | when it exists |
|---|---|---|
| job_submit.lua | ``etc/slurm/`` (``--slurm-dir``) | replaced: it must be this version's |
| adaptalloc_submit.conf | ``etc/slurm/`` (``--slurm-dir``), state_dir /var/lib/adaptalloc | kept |
| adaptalloc.toml, policy.toml | ``etc/adaptalloc/`` (from the examples) | kept |
| adaptalloc.service | ``etc/systemd/system/``, ExecStart pointing at this install | kept |
| Grafana dashboard, Prometheus rules | ``usr/share/adaptalloc/`` | replaced |

``--force`` replaces the kept ones too. The files come from the wheel's
``share/adaptalloc/`` (or a checkout's ``deploy/``); see plugin/doctor/shipped.py.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from plugin.cli.common import emit_json, format_option
from plugin.daemon.state import SYSTEM_STATE_DIR
from plugin.doctor.shipped import shipped_file
from plugin.errors import InputError, printable

__all__ = ["install_files"]

#: The adaptalloc the shipped unit names; replaced by this install's.
UNIT_EXECUTABLE = "/opt/adaptalloc/bin/adaptalloc"


@dataclass(frozen=True)
class Piece:
    """One file to install: its shipped name, where it goes, whether an admin edits it."""

    source: str
    target: Path
    mode: int
    edited: bool


def _pieces(prefix: Path, slurm_dir: Path) -> list[Piece]:
    etc = prefix / "etc"
    share = prefix / "usr" / "share" / "adaptalloc"
    return [
        Piece("slurm/job_submit.lua", slurm_dir / "job_submit.lua", 0o644, edited=False),
        Piece(
            "local/adaptalloc_submit.conf.in",
            slurm_dir / "adaptalloc_submit.conf",
            0o644,
            edited=True,
        ),
        Piece("adaptalloc.example.toml", etc / "adaptalloc" / "adaptalloc.toml", 0o644, True),
        Piece("policy.example.toml", etc / "adaptalloc" / "policy.toml", 0o644, True),
        Piece(
            "systemd/adaptalloc.service",
            etc / "systemd" / "system" / "adaptalloc.service",
            0o644,
            True,
        ),
        Piece("grafana/adaptalloc.json", share / "grafana" / "adaptalloc.json", 0o644, False),
        Piece(
            "prometheus/adaptalloc-rules.yml",
            share / "prometheus" / "adaptalloc-rules.yml",
            0o644,
            False,
        ),
    ]


def _content(piece: Piece, source: Path) -> bytes:
    """The file as installed: the hook's settings rendered, the unit pointed at this install."""
    data = source.read_bytes()
    if piece.source == "local/adaptalloc_submit.conf.in":
        data = data.replace(b"@STATE_DIR@/adaptalloc", SYSTEM_STATE_DIR.encode())
    if piece.source == "systemd/adaptalloc.service":
        mine = Path(sys.prefix) / "bin" / "adaptalloc"
        if mine.is_file():
            data = data.replace(UNIT_EXECUTABLE.encode(), str(mine).encode())
    return data


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.chmod(mode)
    os.replace(tmp, path)


@click.command("install-files")
@click.option(
    "--prefix",
    metavar="DIR",
    default="/",
    show_default=True,
    help="Root to install under (a staging directory for packaging, or /).",
)
@click.option(
    "--slurm-dir",
    metavar="DIR",
    default=None,
    help="slurm.conf's directory, where slurmctld loads job_submit.lua from "
    "(default: PREFIX/etc/slurm).",
)
@click.option("--force", is_flag=True, help="Replace the configuration files an admin edits too.")
@format_option
def install_files(prefix: str, slurm_dir: str | None, force: bool, output_format: str) -> None:
    """Install this version's hook, its settings, the example configs, the systemd unit,
    the dashboard and the alert rules under PREFIX (README: Packages). The hook, dashboard
    and rules are replaced; files an admin edits are kept unless --force. Then run
    `scontrol reconfigure` and `adaptalloc doctor`."""
    root = Path(prefix)
    slurm = Path(slurm_dir) if slurm_dir else root / "etc" / "slurm"
    done: list[dict[str, str]] = []
    for piece in _pieces(root, slurm):
        source = shipped_file(piece.source)
        if source is None:
            raise InputError(
                f"this adaptalloc ships no {piece.source}; reinstall it from its wheel"
            )
        if piece.edited and piece.target.exists() and not force:
            done.append({"path": str(piece.target), "action": "kept"})
            continue
        existed = piece.target.exists()
        try:
            _write(piece.target, _content(piece, source), piece.mode)
        except OSError as exc:
            raise InputError(
                f"cannot write {printable(str(piece.target))}: {exc.strerror or exc}"
            ) from exc
        done.append({"path": str(piece.target), "action": "replaced" if existed else "installed"})
    if output_format == "json":
        emit_json({"files": done})
        return
    for entry in done:
        click.echo(f"{entry['action']:9}  {entry['path']}")
    click.echo("next: `scontrol reconfigure`, then `adaptalloc doctor`")
