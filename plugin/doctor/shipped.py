"""Where this version's own copies of the non-Python pieces are: in a checkout its
``deploy/`` (the files being edited: an editable install's copies go stale), else the
installed package's ``share/adaptalloc/`` (a wheel's data files, see pyproject.toml).

Both hold the same relative paths (``slurm/job_submit.lua``, ``systemd/adaptalloc.service``,
``local/adaptalloc_submit.conf.in``, ...).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

__all__ = ["data_roots", "sha256_of", "shipped_file"]


def data_roots() -> list[Path]:
    """Candidate roots: the checkout's deploy/ (when this is a checkout), then the install's."""
    checkout = Path(__file__).resolve().parents[2]
    roots = [checkout / "deploy"] if (checkout / "pyproject.toml").is_file() else []
    return [*roots, Path(sys.prefix) / "share" / "adaptalloc"]


def shipped_file(relative: str) -> Path | None:
    """This version's copy of `relative` (e.g. ``slurm/job_submit.lua``), or None."""
    for root in data_roots():
        candidate = root / relative
        if candidate.is_file():
            return candidate
    return None


def sha256_of(path: Path) -> str:
    """The file's SHA-256, hex (OSError when unreadable)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
