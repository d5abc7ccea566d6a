"""Where this version's own copies of the non-Python pieces are: the installed package's
``share/adaptalloc/`` (a wheel's data files, see pyproject.toml) or, in a checkout, ``deploy/``.

Both hold the same relative paths (``slurm/job_submit.lua``, ``systemd/adaptalloc.service``,
``local/adaptalloc_submit.conf.in``, ...).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

__all__ = ["data_roots", "sha256_of", "shipped_file"]


def data_roots() -> list[Path]:
    """Candidate roots, the installed data first, then the checkout's deploy/."""
    return [
        Path(sys.prefix) / "share" / "adaptalloc",
        Path(__file__).resolve().parents[2] / "deploy",
    ]


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
