"""Job changes through libslurm's C API: one REQUEST_UPDATE_JOB per held job, for everything.

The ``scontrol`` writer (writer.py) costs a held job three slurmctld writes, each its own
RPC: the resize line, the admin comment, the release. slurmctld's update RPC takes every
field at once, and ``scontrol release`` is nothing but an update with priority INFINITE
(Slurm 22.05's scontrol), so `LibslurmSlurm.update_jobs` sends each job's NumNodes=N-N,
TimeLimit, Partition, AdminComment and release in one ``slurm_update_job`` call, from
`parallelism` threads (cffi drops the GIL during the call; slurmctld serializes the
updates under its job write lock anyway, the threads only overlap the round trips).

The binding (plugin/slurm/libslurm_build.py, built by deploy/setup.sh) is optional: the
factory uses this backend only when it is built, a probe in a child process can call
``slurm_init`` (libslurm exits the process on some configuration errors, so never first
in the daemon's own) and its Slurm major.minor matches ``sinfo --version``.

`LibslurmSlurm.held_admin_comments` reads each new held job's admin comment with
``slurm_load_job`` (the same one RPC per job as ``scontrol show job -o ID``, without a
process per job, and the field itself: no text to tell apart from a user's forged one).

Everything else (reads, and the per-step writes the applier falls back to when one job's
update fails) is the CLI backend's, so a job's text reaches Slurm either as one argv
element or as one C string: never through a shell. The admin comment is checked
(`check_admin_comment`) before either (here when the `JobUpdate` is made).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

from plugin.errors import printable
from plugin.slurm.cli_backend import slurm_environ
from plugin.slurm.writer import CliSlurm, JobUpdate

__all__ = ["BINDING", "LibslurmSlurm", "binding_version", "import_binding", "probe_binding"]

BINDING = "plugin.slurm._libslurm"
#: How long the child process that tries the binding may take.
PROBE_TIMEOUT_S = 30.0
#: Loads the binding, reads slurm.conf and sends one update of job 0 (no such job: Slurm
#: refuses it), which loads the plugins an update packs with: a binding linked against the
#: wrong libslurm dies there, in the child.
_PROBE = (
    "from plugin.slurm.libslurm_backend import import_binding; b = import_binding(); "
    "ffi, lib = b.ffi, b.lib; lib.slurm_init(ffi.NULL); "
    "d = ffi.new('job_desc_msg_t *'); lib.slurm_init_job_desc_msg(d); d.job_id = 0; "
    "lib.slurm_update_job(d); print(lib.SLURM_VERSION_NUMBER)"
)


def import_binding() -> ModuleType | None:
    """The compiled binding, or None when it was not built (or cannot load).

    Loaded with RTLD_GLOBAL: the plugins libslurm dlopens (select/cons_tres, ...) resolve
    libslurmfull's symbols from the global namespace, as they do in ``scontrol``, which
    links it; loaded locally (Python's default), the first update dies of an undefined
    symbol (seen on the testbed)."""
    flags = sys.getdlopenflags()
    try:
        sys.setdlopenflags(flags | os.RTLD_GLOBAL)
        return importlib.import_module(BINDING)
    except Exception:  # ImportError, or a libslurm.so that is gone or of another ABI
        return None
    finally:
        sys.setdlopenflags(flags)


def binding_version(number: int) -> tuple[int, int]:
    """(major, minor) of a SLURM_VERSION_NUMBER (0x160508 is 22.05.8)."""
    return (number >> 16) & 0xFF, (number >> 8) & 0xFF


def probe_binding(timeout_s: float = PROBE_TIMEOUT_S) -> tuple[int, int] | str:
    """Load the binding and call ``slurm_init`` in a child process: the (major, minor) it
    was built for, or why it cannot be used."""
    try:
        proc = subprocess.run(  # noqa: S603 - our interpreter and a fixed program, no shell
            [sys.executable, "-c", _PROBE],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env=slurm_environ(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the libslurm probe did not run: {printable(str(exc))[:200]}"
    lines = proc.stdout.split()
    if proc.returncode != 0 or not lines or not lines[-1].isdigit():
        said = printable(" ".join(proc.stderr.split()))[-200:] or f"exit {proc.returncode}"
        return f"the libslurm binding cannot load: {said}"
    return binding_version(int(lines[-1]))


class LibslurmSlurm(CliSlurm):
    """The CLI backend, with each held job's changes sent as one libslurm update."""

    backend = "libslurm"
    combined_updates = True

    def __init__(
        self,
        binding: ModuleType,
        timeout_s: float = 60.0,
        env: Mapping[str, str] | None = None,
        parallelism: int = 4,
    ) -> None:
        super().__init__(timeout_s=timeout_s, env=env, parallelism=parallelism)
        self._ffi: Any = binding.ffi
        self._lib: Any = binding.lib
        self._lib.slurm_init(self._ffi.NULL)

    def update_jobs(self, updates: Sequence[JobUpdate]) -> dict[int, str]:
        if not updates:
            return {}
        # No comment check here: a JobUpdate cannot be made with one Slurm must not get.
        workers = max(1, min(self.parallelism, len(updates)))
        if workers == 1:
            results = [self._update(u) for u in updates]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(self._update, updates))
        return {u.job_id: error for u, error in zip(updates, results, strict=True) if error}

    def held_admin_comments(self, job_ids: Collection[int]) -> dict[int, str | None]:
        """Job id -> its admin comment ("" for none), exact; a job Slurm no longer knows, or
        could not be read, is left out (the loop then counts the sweep incomplete)."""
        ids = sorted(set(job_ids))
        if not ids:
            return {}
        workers = max(1, min(self.parallelism, len(ids)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(self._admin_comment, ids))
        return {j: text for j, text in zip(ids, found, strict=True) if text is not None}

    def _admin_comment(self, job_id: int) -> str | None:
        ffi, lib = self._ffi, self._lib
        resp = ffi.new("job_info_msg_t **")
        # SHOW_LOCAL: without it each call first asks slurmctld for the federation
        # (REQUEST_FED_INFO, one more RPC per job in sdiag on the testbed).
        if lib.slurm_load_job(resp, job_id, lib.SHOW_ALL | lib.SHOW_LOCAL) != 0:
            return None
        try:
            for k in range(resp[0].record_count):
                record = resp[0].job_array[k]
                if record.job_id == job_id:
                    raw = record.admin_comment
                    return "" if raw == ffi.NULL else ffi.string(raw).decode("utf-8", "replace")
            return None
        finally:
            lib.slurm_free_job_info_msg(resp[0])

    def _update(self, update: JobUpdate) -> str | None:
        """One ``slurm_update_job``; None, or Slurm's words for the refusal."""
        ffi, lib = self._ffi, self._lib
        desc = ffi.new("job_desc_msg_t *")
        lib.slurm_init_job_desc_msg(desc)
        keep = []  # the C strings must outlive the call
        desc.job_id = update.job_id

        change = update.resize
        if change is not None:
            desc.min_nodes = change.min_nodes
            desc.max_nodes = change.max_nodes
            if change.time_limit_min is not None:
                desc.time_limit = change.time_limit_min
            elif change.unlimited:
                desc.time_limit = lib.INFINITE
            if change.partition is not None:
                keep.append(ffi.new("char[]", change.partition.encode()))
                desc.partition = keep[-1]
        if update.admin_comment is not None:
            keep.append(ffi.new("char[]", update.admin_comment.encode("utf-8")))
            desc.admin_comment = keep[-1]
        if update.release:
            desc.priority = lib.INFINITE
        if lib.slurm_update_job(desc) == 0:
            return None
        errno = lib.slurm_get_errno()
        return printable(ffi.string(lib.slurm_strerror(errno)).decode("utf-8", "replace"))[:200]
