"""Putting the pieces (pieces.py) in place without overwriting what is not adaptalloc's.

A file is *adaptalloc's* when install-files wrote it and nobody changed it since: its
SHA-256 is the one recorded in the manifest (``usr/share/adaptalloc/installed-files.json``
under the prefix, root's like the rest of the install) when it was written, as dpkg keeps
the checksums of the configuration files it installed. Then, per piece (its kind, pieces.py):

* missing: installed;
* the same bytes: unchanged;
* adaptalloc's, older: replaced; a config file is kept (--force: replaced);
* anyone else's: a shipped file is refused, with the diff (--force: replaced, a backup
  kept); a config file is kept (--force: replaced, a backup kept); job_submit.lua is kept
  as the site's own.

A site's own job_submit.lua is never replaced, even with --force: it carries the site's
routing and checks, and composing adaptalloc into it is the admin's edit (the doctor checks
it). When any piece is refused nothing at all is written. A backup is the old file beside the
new, named ``NAME.adaptalloc-old.YYYYmmddTHHMMSSZ``.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from plugin.doctor.pieces import CONFIG, SHIPPED, SITE_SCRIPT, Piece
from plugin.errors import InputError, printable

__all__ = [
    "KEPT",
    "REFUSED",
    "REPLACED",
    "Manifest",
    "Step",
    "apply_steps",
    "manifest_path",
    "plan",
]

INSTALLED = "installed"
UNCHANGED = "unchanged"
REPLACED = "replaced"
KEPT = "kept"
REFUSED = "refused"
#: Manifest format version.
MANIFEST_VERSION = 1
MAX_DIFF_LINES = 400


def manifest_path(prefix: Path) -> Path:
    """Where install-files records what it wrote, under `prefix`."""
    return prefix / "usr" / "share" / "adaptalloc" / "installed-files.json"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Manifest:
    """Target path -> SHA-256 of the bytes install-files wrote there."""

    path: Path
    files: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """The manifest at `path` (empty when missing; unreadable or malformed is an error:
        guessing would overwrite an admin's file)."""
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return cls(path, {})
        except OSError as exc:
            raise InputError(f"cannot read {printable(str(path))}: {exc.strerror or exc}") from exc
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InputError(
                f"{printable(str(path))} is not JSON ({exc}); move it aside to start afresh "
                "(every existing file then counts as not adaptalloc's)"
            ) from exc
        files = doc.get("files") if isinstance(doc, dict) else None
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            raise InputError(f"{printable(str(path))} is not an adaptalloc install manifest")
        return cls(path, dict(files))

    def ours(self, target: Path, current: bytes) -> bool:
        """Whether `current` (the target's bytes) is what install-files last wrote there."""
        return self.files.get(str(target)) == sha256_bytes(current)

    def save(self) -> None:
        text = json.dumps({"version": MANIFEST_VERSION, "files": self.files}, indent=1) + "\n"
        _write(self.path, text.encode(), 0o644)


@dataclass(frozen=True)
class Step:
    """What install-files does with one piece: the action, the bytes it writes, and for an
    existing file of someone else's the diff from it to ours (and where it is backed up)."""

    piece: Piece
    action: str
    data: bytes
    diff: str = ""
    backup: Path | None = None

    @property
    def writes(self) -> bool:
        return self.action in (INSTALLED, REPLACED)

    def to_dict(self) -> dict[str, str]:
        out = {"path": str(self.piece.target), "action": self.action, "kind": self.piece.kind}
        if self.backup is not None:
            out["backup"] = str(self.backup)
        if self.diff:
            out["diff"] = self.diff
        return out


def _diff(target: Path, current: bytes, wanted: bytes) -> str:
    """Unified diff from the file as it is to what install-files would write (capped)."""
    lines = list(
        difflib.unified_diff(
            current.decode("utf-8", "replace").splitlines(keepends=True),
            wanted.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=f"{target} (as it is)",
            tofile=f"{target} (adaptalloc's)",
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        cut = len(lines) - MAX_DIFF_LINES
        lines = [*lines[:MAX_DIFF_LINES], f"... ({cut} more lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _backup_name(target: Path, now: float) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return target.with_name(f"{target.name}.adaptalloc-old.{stamp}")


def _read(target: Path) -> bytes | None:
    try:
        return target.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise InputError(f"cannot read {printable(str(target))}: {exc.strerror or exc}") from exc


def _action(piece: Piece, ours: bool, force: bool) -> str:
    """What to do with an existing file that differs from ours (the module docstring)."""
    if piece.kind == SITE_SCRIPT:
        return REPLACED if ours else KEPT
    if piece.kind == CONFIG and not force:
        return KEPT
    if ours or force:
        return REPLACED
    if piece.kind != SHIPPED:
        raise ValueError(f"unknown kind {piece.kind!r}")
    return REFUSED


def plan_one(piece: Piece, wanted: bytes, manifest: Manifest, force: bool, now: float) -> Step:
    """The step for one piece (the module docstring)."""
    current = _read(piece.target)
    if current is None:
        return Step(piece, INSTALLED, wanted)
    if current == wanted:
        return Step(piece, UNCHANGED, wanted)
    ours = manifest.ours(piece.target, current)
    action = _action(piece, ours, force)
    if ours or action == KEPT:
        return Step(piece, action, wanted)
    diff = _diff(piece.target, current, wanted)
    backup = _backup_name(piece.target, now) if action == REPLACED else None
    return Step(piece, action, wanted, diff, backup)


def plan(
    wanted: list[tuple[Piece, bytes]], manifest: Manifest, force: bool, now: float | None = None
) -> list[Step]:
    """The step for every piece; nothing is written."""
    when = time.time() if now is None else now
    return [plan_one(piece, data, manifest, force, when) for piece, data in wanted]


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write `path` through a temporary file and a rename (a reader never sees half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.chmod(mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def apply_steps(steps: list[Step], manifest: Manifest) -> None:
    """Back up, write and record every step that writes; then save the manifest. Call only
    when no step is refused."""
    if any(step.action == REFUSED for step in steps):
        raise ValueError("a refused step must not be applied")
    for step in steps:
        target = step.piece.target
        try:
            if step.backup is not None:
                shutil.copy2(target, step.backup)
            if step.writes:
                _write(target, step.data, step.piece.mode)
        except OSError as exc:
            raise InputError(
                f"cannot write {printable(str(target))}: {exc.strerror or exc}"
            ) from exc
        if step.writes or step.action == UNCHANGED:
            manifest.files[str(target)] = sha256_bytes(step.data)
    try:
        manifest.save()
    except OSError as exc:
        raise InputError(
            f"cannot write {printable(str(manifest.path))}: {exc.strerror or exc}"
        ) from exc
