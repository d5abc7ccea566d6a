"""Reading the two files a site edits for adaptalloc: ``slurm.conf`` and the hook's
``adaptalloc_submit.conf`` beside it.

Only what the doctor needs: ``slurm.conf``'s top-level ``Key=Value`` lines (keys are
case-insensitive in Slurm; a line's first word is its key, so ``NodeName=...`` and
``PartitionName=...`` lines keep only their first pair), and the hook's ``key = value``
lines, where ``#`` starts a comment anywhere (as job_submit.lua reads them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["SlurmConf", "parse_slurm_conf", "parse_submit_conf", "read_submit_conf"]

SUBMIT_CONF = "adaptalloc_submit.conf"
HOOK = "job_submit.lua"
#: The hook module the site's job_submit.lua loads, beside it.
MODULE = "adaptalloc_submit.lua"


@dataclass(frozen=True)
class SlurmConf:
    """slurm.conf's top-level settings (keys lower-cased) and where it lives."""

    path: Path
    settings: tuple[tuple[str, str], ...]

    def get(self, key: str, default: str = "") -> str:
        """The last value of `key` (Slurm: the last occurrence wins), else `default`."""
        wanted = key.lower()
        value = default
        for name, text in self.settings:
            if name == wanted:
                value = text
        return value

    def values(self, key: str) -> list[str]:
        """A comma-separated setting as lower-cased words (``JobSubmitPlugins=lua,x``)."""
        return [v.strip().lower() for v in self.get(key).split(",") if v.strip()]

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def slurm_user(self) -> str:
        """SlurmUser (Slurm's default is root)."""
        return self.get("SlurmUser", "root") or "root"


def parse_slurm_conf(path: Path, text: str) -> SlurmConf:
    """The first ``Key=Value`` word of every line, comments (``#``) removed."""
    pairs: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.split(None, 1)[0].partition("=")
        if sep and key:
            pairs.append((key.strip().lower(), value.strip()))
    return SlurmConf(path, tuple(pairs))


def parse_submit_conf(text: str) -> dict[str, str]:
    """``key = value`` lines of adaptalloc_submit.conf; ``#`` starts a comment anywhere."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def read_submit_conf(directory: Path) -> tuple[Path, dict[str, str]]:
    """The hook's settings file beside slurm.conf, parsed (OSError when unreadable)."""
    path = directory / SUBMIT_CONF
    return path, parse_submit_conf(path.read_text(encoding="utf-8", errors="replace"))
