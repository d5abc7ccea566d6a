"""Pick the Slurm backend: pyslurm only when it matches the installed Slurm, else the CLI.

pyslurm's version names the Slurm release it was built for without the leading zero of
the minor (pyslurm 22.5.3 is for Slurm 22.05, 23.2.2 for 23.02). A pyslurm for another
major.minor fails at import or, worse, misreads structures, so a mismatch always gives the
CLI backend, as does a missing or broken pyslurm. `choose_backend` is the pure decision;
`slurm_reader` gathers its inputs (``sinfo --version``, ``import pyslurm``) and logs it;
`slurm_client` does the same for the daemon, which needs the write side too (writer.py).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from types import ModuleType

import structlog

from plugin.errors import printable
from plugin.slurm.cli_backend import DEFAULT_TIMEOUT_S, CliSlurmReader, Runner
from plugin.slurm.errors import SlurmError
from plugin.slurm.pyslurm_backend import PyslurmReader
from plugin.slurm.reader import SlurmReader
from plugin.slurm.writer import CliSlurm, PyslurmSlurm, SlurmClient

__all__ = [
    "BACKENDS",
    "Choice",
    "choose_backend",
    "pyslurm_version",
    "slurm_client",
    "slurm_reader",
]

BACKENDS = ("auto", "cli", "pyslurm")
_PYSLURM_VERSION = re.compile(r"(\d+)\.(\d+)")
log = structlog.get_logger("adaptalloc.slurm")


@dataclass(frozen=True)
class Choice:
    """The backend to use and why (logged once when the reader is made)."""

    backend: str
    reason: str


def pyslurm_version(module: ModuleType | None) -> tuple[int, int] | None:
    """(major, minor) of an imported pyslurm, from ``__version__`` or ``version()``."""
    if module is None:
        return None
    text = getattr(module, "__version__", None)
    if text is None and callable(getattr(module, "version", None)):
        try:
            text = module.version()
        except Exception:  # a broken pyslurm is just "no pyslurm"
            text = None
    match = _PYSLURM_VERSION.match(str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def choose_backend(
    requested: str, pyslurm: tuple[int, int] | None, slurm: tuple[int, int] | None
) -> Choice:
    """Which backend to use for `requested` ("auto", "cli", "pyslurm").

    pyslurm is chosen only when requested or "auto", importable, and built for the same
    major.minor as the installed Slurm; every other case gives "cli" with the reason.
    """
    if requested not in BACKENDS:
        raise ValueError(f"Slurm backend must be one of {', '.join(BACKENDS)}, got {requested!r}")
    if requested == "cli":
        return Choice("cli", "configured")
    if pyslurm is None:
        return Choice("cli", "pyslurm is not installed (or has no readable version)")
    if slurm is None:
        return Choice("cli", "the installed Slurm's version is unknown")
    if pyslurm != slurm:
        return Choice(
            "cli",
            f"pyslurm {pyslurm[0]}.{pyslurm[1]} does not match Slurm {slurm[0]}.{slurm[1]:02d}",
        )
    return Choice("pyslurm", f"pyslurm matches Slurm {slurm[0]}.{slurm[1]:02d}")


def _import_pyslurm() -> ModuleType | None:
    try:
        return importlib.import_module("pyslurm")
    except Exception:  # ImportError, or a pyslurm linked against another libslurm
        return None


def slurm_reader(
    backend: str = "auto", timeout_s: float = DEFAULT_TIMEOUT_S, runner: Runner | None = None
) -> SlurmReader:
    """The Slurm reader to use (see the module docstring); logs the choice.

    `runner` replaces subprocess for the Slurm commands (see CliSlurmReader).
    """
    cli = CliSlurmReader(timeout_s=timeout_s, runner=runner)
    if backend == "cli":
        return cli
    module = _import_pyslurm()
    slurm: tuple[int, int] | None = None
    if module is not None:
        try:
            major, minor, _ = cli.version()
            slurm = (major, minor)
        except SlurmError as exc:
            log.warning("slurm_version_unknown", error=printable(str(exc)))
    choice = choose_backend(backend, pyslurm_version(module), slurm)
    log.debug("slurm_backend", backend=choice.backend, reason=choice.reason)
    if choice.backend == "pyslurm" and module is not None:
        return PyslurmReader(module, timeout_s=timeout_s, runner=runner)
    if backend == "pyslurm":
        log.warning("slurm_backend_fallback", backend="cli", reason=choice.reason)
    return cli


def slurm_client(
    backend: str = "auto", timeout_s: float = DEFAULT_TIMEOUT_S, parallelism: int = 4
) -> SlurmClient:
    """Reader and writer in one (the daemon's): the backend `slurm_reader` would pick, with
    ``scontrol`` for writes whichever it is."""
    reader = slurm_reader(backend, timeout_s)
    if isinstance(reader, PyslurmReader):
        return PyslurmSlurm(reader._pyslurm, timeout_s=timeout_s, parallelism=parallelism)
    return CliSlurm(timeout_s=timeout_s, parallelism=parallelism)
