"""Pick the Slurm backend: pyslurm only when it matches the installed Slurm, else the CLI.

pyslurm's version names the Slurm release it was built for without the leading zero of
the minor (pyslurm 22.5.3 is for Slurm 22.05, 23.2.2 for 23.02). A pyslurm for another
major.minor fails at import or, worse, misreads structures, so a mismatch always gives the
CLI backend, as does a missing or broken pyslurm. `choose_backend` is the pure decision;
`slurm_reader` gathers its inputs (``sinfo --version``, ``import pyslurm``) and logs it;
`slurm_client` does the same for the daemon, which needs the write side too (writer.py):
there the compiled libslurm binding (libslurm_backend.py) sends each held job's changes as
one update when it is built, loads in a child process and matches the installed Slurm's
major.minor (`choose_writer`); otherwise ``scontrol`` writes, as always.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from types import ModuleType

import structlog

from plugin.errors import printable
from plugin.slurm.cli_backend import DEFAULT_TIMEOUT_S, CliSlurmReader, Runner
from plugin.slurm.errors import SlurmCommandError, SlurmError
from plugin.slurm.libslurm_backend import LibslurmSlurm, import_binding, probe_binding
from plugin.slurm.pyslurm_backend import PyslurmReader
from plugin.slurm.reader import SlurmReader
from plugin.slurm.writer import CliSlurm, PyslurmSlurm, SizingUser, SlurmClient

__all__ = [
    "BACKENDS",
    "Choice",
    "choose_backend",
    "choose_writer",
    "pyslurm_version",
    "slurm_client",
    "slurm_reader",
]

#: "libslurm-writes": libslurm for the job changes only, the queue read with ``squeue`` (the
#: read as it was before the libslurm one, kept as an operator's way back and for benchmarks).
BACKENDS = ("auto", "cli", "pyslurm", "libslurm", "libslurm-writes")
LIBSLURM = ("libslurm", "libslurm-writes")
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
    if requested in ("cli", *LIBSLURM):
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


def choose_writer(
    requested: str, binding: tuple[int, int] | str | None, slurm: tuple[int, int] | None
) -> Choice:
    """Whether the daemon's job changes go through libslurm ("libslurm") or ``scontrol``
    ("cli"), for `requested` (one of `BACKENDS`).

    `binding` is what the probe found: the (major, minor) the binding was built for, why
    it cannot load (text), or None when it is not built. libslurm is chosen when requested
    or "auto" and the binding loads and matches the installed Slurm.
    """
    if requested not in BACKENDS:
        raise ValueError(f"Slurm backend must be one of {', '.join(BACKENDS)}, got {requested!r}")
    if requested in ("cli", "pyslurm"):
        return Choice("cli", "configured")
    if binding is None:
        return Choice(
            "cli", "the libslurm binding is not built (python -m plugin.slurm.libslurm_build)"
        )
    if isinstance(binding, str):
        return Choice("cli", binding)
    if slurm is None:
        return Choice("cli", "the installed Slurm's version is unknown")
    if binding != slurm:
        return Choice(
            "cli",
            f"the libslurm binding was built for Slurm {binding[0]}.{binding[1]:02d}, "
            f"not the installed {slurm[0]}.{slurm[1]:02d}",
        )
    return Choice("libslurm", f"the libslurm binding matches Slurm {slurm[0]}.{slurm[1]:02d}")


def _installed_release(cli: CliSlurmReader) -> tuple[int, int] | None:
    """The installed Slurm's (major, minor) from ``sinfo --version``, None (logged) when
    it cannot be read: what a backend built for one release is matched against."""
    try:
        major, minor, _ = cli.version()
    except SlurmError as exc:
        log.warning("slurm_version_unknown", error=printable(str(exc)))
        return None
    return major, minor


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
    slurm = _installed_release(cli) if module is not None else None
    choice = choose_backend(backend, pyslurm_version(module), slurm)
    log.debug("slurm_backend", backend=choice.backend, reason=choice.reason)
    if choice.backend == "pyslurm" and module is not None:
        return PyslurmReader(module, timeout_s=timeout_s, runner=runner)
    if backend == "pyslurm":
        log.warning("slurm_backend_fallback", backend="cli", reason=choice.reason)
    return cli


def slurm_client(
    backend: str = "auto",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    parallelism: int = 4,
    sizing_user: str = "",
) -> SlurmClient:
    """Reader and writer in one (the daemon's): the backend `slurm_reader` would pick; its
    job changes through libslurm when `choose_writer` says so, else ``scontrol``.

    With `sizing_user` (an account name) resizes run as that account, so through
    ``scontrol`` whatever the backend: libslurm's one update per job carries the admin
    comment and the release too, which need the daemon's own privileges.
    """
    sizer = SizingUser.named(sizing_user) if sizing_user else None
    if sizer is not None and os.geteuid() != 0:
        raise SlurmCommandError(
            "sizing_user needs the daemon to run as root (it runs scontrol as that account)"
        )
    reader = slurm_reader(backend, timeout_s)
    if isinstance(reader, PyslurmReader):
        return PyslurmSlurm(
            reader._pyslurm, timeout_s=timeout_s, parallelism=parallelism, sizing_user=sizer
        )
    if backend in ("cli", "pyslurm") or sizer is not None:
        return CliSlurm(timeout_s=timeout_s, parallelism=parallelism, sizing_user=sizer)
    binding_module = import_binding()
    binding: tuple[int, int] | str | None = None
    slurm: tuple[int, int] | None = None
    if binding_module is not None:
        binding = probe_binding()
        slurm = _installed_release(CliSlurmReader(timeout_s=timeout_s))
    choice = choose_writer(backend, binding, slurm)
    log.debug("slurm_writer", backend=choice.backend, reason=choice.reason)
    if choice.backend == "libslurm" and binding_module is not None:
        return LibslurmSlurm(
            binding_module,
            timeout_s=timeout_s,
            parallelism=parallelism,
            read_queue=backend != "libslurm-writes",
        )
    if backend in LIBSLURM:
        log.warning("slurm_backend_fallback", backend="cli", reason=choice.reason)
    return CliSlurm(timeout_s=timeout_s, parallelism=parallelism)
