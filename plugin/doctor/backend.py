"""Which way the daemon will write to Slurm: the compiled libslurm binding (one update RPC
per held job) or ``scontrol`` (three), decided as the daemon decides it
(plugin/slurm/factory.py's `choose_writer`, with the binding probed in a child process).

The binding is compiled on the site's machine against its Slurm's headers, into the installed
package (``python -m plugin.slurm.libslurm_build``; docs/admin/install.md). Without it the
daemon works, with scontrol: a warning, not a failure.
"""

from __future__ import annotations

import sys

from plugin.config import Config
from plugin.doctor.check import OK, WARN, Check
from plugin.slurm.errors import SlurmError
from plugin.slurm.factory import LIBSLURM, choose_writer
from plugin.slurm.libslurm_backend import import_binding, probe_binding
from plugin.slurm.writer import CliSlurm

__all__ = ["BUILD_BINDING", "slurm_backend"]

#: How to build the binding into this install (Debian's package names).
BUILD_BINDING = (
    f"`apt-get install libslurm-dev gcc python3-dev && {sys.executable} -m "
    "plugin.slurm.libslurm_build`, then `systemctl restart adaptalloc` (libslurm-dev must "
    "be the installed Slurm's major.minor)"
)


def slurm_backend(config: Config, slurm: CliSlurm) -> Check:
    """ok: the daemon writes through the binding, or scontrol by choice; warn: the binding
    is wanted (backend auto or libslurm*) but not built, not loadable or for another Slurm."""
    requested = config.slurm.backend
    if requested in ("cli", "pyslurm"):
        return Check("slurm_backend", OK, f"[slurm] backend = {requested}: scontrol writes")
    if config.daemon.sizing_user:
        return Check(
            "slurm_backend",
            OK,
            "scontrol writes: a sizing user's resizes go through scontrol as that account",
        )
    binding: tuple[int, int] | str | None = None
    installed: tuple[int, int] | None = None
    if import_binding() is not None:
        binding = probe_binding()
        try:
            major, minor, _ = slurm.version()
            installed = (major, minor)
        except SlurmError:
            installed = None
    choice = choose_writer(requested, binding, installed)
    if choice.backend == "libslurm":
        return Check("slurm_backend", OK, f"{choice.reason}: one update RPC per held job")
    why = "the libslurm binding is not built" if binding is None else choice.reason
    stance = "fails over to" if requested in LIBSLURM else "uses"
    return Check(
        "slurm_backend",
        WARN,
        f"{why}: the daemon {stance} scontrol, three update RPCs per held job instead of one",
        BUILD_BINDING,
    )
