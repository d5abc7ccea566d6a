"""``adaptalloc install-files``: put this version's non-Python pieces in place.

    adaptalloc install-files [--prefix DIR] [--slurm-dir DIR] [--force] [--format text|json]

What goes where is plugin/doctor/pieces.py; what happens to a file already there is
plugin/doctor/installer.py (never overwrite what is not adaptalloc's: refuse and show the
diff, or with --force keep a backup; a site's own job_submit.lua is never replaced). The
files come from the wheel's ``share/adaptalloc/`` (or a checkout's ``deploy/``).

Exit 0 when every piece is in place (or kept); 1, with nothing written, when a piece is
refused: standard output then shows each refused file's diff, standard error one line.
"""

from __future__ import annotations

from pathlib import Path

import click

from plugin.cli.common import emit_json, format_option
from plugin.doctor.installer import KEPT, REFUSED, REPLACED, Manifest, Step, apply_steps, plan
from plugin.doctor.installer import manifest_path as installed_manifest
from plugin.doctor.pieces import MODULE_FILE, SITE_SCRIPT, Piece, pieces, render
from plugin.doctor.shipped import shipped_file
from plugin.doctor.site_script import read_site_script
from plugin.errors import InputError, printable

__all__ = ["install_files"]

GUIDE = "docs/admin/install.md"


def _wanted(prefix: Path, slurm_dir: Path) -> list[tuple[Piece, bytes]]:
    out = []
    for piece in pieces(prefix, slurm_dir):
        source = shipped_file(piece.source)
        if source is None:
            raise InputError(
                f"this adaptalloc ships no {piece.source}; reinstall it from its wheel"
            )
        out.append((piece, render(piece, source.read_bytes())))
    return out


def _note(step: Step) -> str:
    """What the admin should know about one step, in a few words ('' when nothing)."""
    if step.action == REFUSED:
        return "not adaptalloc's: see the diff; --force replaces it and keeps a backup"
    if step.backup is not None:
        return f"backup: {step.backup}"
    if step.piece.kind == SITE_SCRIPT and step.action == KEPT:
        text = step.piece.target.read_text(encoding="utf-8", errors="replace")
        missing = read_site_script(text).missing()
        if not missing:
            return "the site's own; it loads and calls adaptalloc_submit"
        return f"the site's own; add to it: {'; '.join(missing)} ({GUIDE})"
    if step.action == KEPT:
        return "edited here; --force replaces it and keeps a backup"
    return ""


def _next_steps(steps: list[Step], slurm_dir: Path) -> str:
    module = next(s for s in steps if s.piece.target.name == MODULE_FILE)
    words = []
    if module.writes:
        words.append(
            f"`touch {slurm_dir / 'job_submit.lua'}` (slurmctld loads the module again only "
            "when its script changes)"
        )
    words += ["`systemctl daemon-reload`", "`adaptalloc doctor`"]
    return "next: " + ", then ".join(words)


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
@click.option(
    "--force",
    is_flag=True,
    help="Replace the files an admin edited and files adaptalloc did not write too, keeping "
    "a backup of each (never a site's own job_submit.lua).",
)
@format_option
def install_files(prefix: str, slurm_dir: str | None, force: bool, output_format: str) -> None:
    """Install the hook module (adaptalloc_submit.lua) and its settings beside slurm.conf,
    the example job_submit.lua where there is none, the example configs, the systemd units
    (daemon, orphan release service and timer), the dashboard and the alert rules under
    PREFIX. Never overwrites a file adaptalloc did not write: refuses and shows the diff (or
    with --force keeps a backup); a site's job_submit.lua is kept, and the lines to add to it
    are in docs/admin/install.md. Then `adaptalloc doctor`."""
    root = Path(prefix)
    slurm = Path(slurm_dir) if slurm_dir else root / "etc" / "slurm"
    manifest = Manifest.load(installed_manifest(root))
    steps = plan(_wanted(root, slurm), manifest, force)
    refused = [step for step in steps if step.action == REFUSED]
    if not refused:
        apply_steps(steps, manifest)
    if output_format == "json":
        emit_json(
            {
                "files": [dict(step.to_dict(), note=_note(step)) for step in steps],
                "written": not refused,
            }
        )
    else:
        _render(steps, slurm, written=not refused)
    if refused:
        names = ", ".join(printable(str(step.piece.target)) for step in refused)
        raise InputError(
            f"refused to replace {len(refused)} file(s) adaptalloc did not write ({names}); "
            "nothing was written; --force replaces them and keeps a backup"
        )


def _render(steps: list[Step], slurm_dir: Path, written: bool) -> None:
    for step in steps:
        note = _note(step)
        shown = "would be " + step.action if not written and step.writes else step.action
        click.echo(f"{shown:9}  {step.piece.target}" + (f"  ({note})" if note else ""))
    for step in steps:
        if step.diff and step.action in (REFUSED, REPLACED):
            click.echo(step.diff, nl=False)
    if written:
        click.echo(_next_steps(steps, slurm_dir))
