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

`LibslurmSlurm.pending_jobs` reads the queue with one ``slurm_load_jobs`` (the
REQUEST_JOB_INFO ``squeue`` sends, without squeue's process and text): the pending jobs'
records exactly as the ``squeue --Format`` read makes them (libslurm_jobs.py), and every
pending job's admin comment, the field itself (no text to tell apart from a user's forged
one). It passes the last answer's update time, so an unchanged queue costs slurmctld a
SLURM_NO_CHANGE_IN_DATA reply (the last records are kept, at most `SNAPSHOT_MAX_AGE_S`).
`held_admin_comments` then answers from that same read; a job it does not hold (or after
one of this client's writes, which change admin comments) is read on its own with
``slurm_load_job``. Whatever goes wrong in the libslurm read (a binding built before it
had the read, a refusal, a record that does not convert) gives the ``squeue`` read
instead, counted in `read_fallbacks`: the daemon still sees the queue and fails open.

Everything else (other reads, and the per-step writes the applier falls back to when one
job's update fails) is the CLI backend's, so a job's text reaches Slurm either as one argv
element or as one C string: never through a shell. The admin comment is checked
(`check_admin_comment`) before either (here when the `JobUpdate` is made).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog

from plugin.errors import printable
from plugin.slurm.cli_backend import slurm_environ
from plugin.slurm.errors import SlurmError
from plugin.slurm.libslurm_jobs import RawJob, pending_record, user_name
from plugin.slurm.records import JobRecord
from plugin.slurm.writer import CliSlurm, JobUpdate, Resize

__all__ = [
    "BINDING",
    "LibslurmSlurm",
    "binding_version",
    "import_binding",
    "probe_binding",
    "probe_environ",
]

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
    "lib.slurm_update_job(d); r = ffi.new('job_info_msg_t **'); "
    "lib.slurm_load_jobs(0, r, lib.SHOW_LOCAL) == 0 and lib.slurm_free_job_info_msg(r[0]); "
    "print(lib.SLURM_VERSION_NUMBER)"
)
#: enum job_states' first member (slurm.h): a pending job's base state.
JOB_PENDING = 0
#: The longest a queue read answered "no change" is trusted before a full one.
SNAPSHOT_MAX_AGE_S = 5.0
log = structlog.get_logger("adaptalloc.slurm")


def _decode(text: bytes) -> str:
    """A C string as squeue's output is decoded (plugin/slurm/cli_backend.run_command)."""
    return text.decode("utf-8", "replace")


@dataclass(frozen=True)
class Snapshot:
    """One ``slurm_load_jobs`` answer, converted: its update time, when it was read
    (monotonic), the pending records and each pending job's admin comment ("" for none)."""

    last_update: int
    read_at: float
    records: tuple[JobRecord, ...]
    admin_comments: Mapping[int, str]


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


def probe_environ() -> dict[str, str]:
    """The probe's environment: a Slurm command's (`slurm_environ`: no secrets), and
    PYTHONPATH naming the directory this copy of the ``plugin`` package is in, so that the
    child imports the same code whatever the daemon's own PYTHONPATH was."""
    return {**slurm_environ(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


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
            env=probe_environ(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the libslurm probe did not run: {printable(str(exc))[:200]}"
    lines = proc.stdout.split()
    if proc.returncode != 0 or not lines or not lines[-1].isdigit():
        said = printable(" ".join(proc.stderr.split()))[-200:] or f"exit {proc.returncode}"
        return f"the libslurm binding cannot load: {said}"
    return binding_version(int(lines[-1]))


class LibslurmSlurm(CliSlurm):
    """The CLI backend, with each held job's changes sent as one libslurm update and the
    queue read with one ``slurm_load_jobs``."""

    backend = "libslurm"
    combined_updates = True
    #: held_admin_comments gives the field itself: "" means no admin comment, for sure.
    exact_admin_comments = True

    def __init__(
        self,
        binding: ModuleType,
        timeout_s: float = 60.0,
        env: Mapping[str, str] | None = None,
        parallelism: int = 4,
        read_queue: bool = True,
    ) -> None:
        """`read_queue` False: the queue is read with ``squeue`` as before the libslurm read
        (backend "libslurm-writes"), the admin comments each with ``slurm_load_job``, the
        kill guard's jobs with ``squeue --json``."""
        super().__init__(timeout_s=timeout_s, env=env, parallelism=parallelism)
        self.read_queue = read_queue
        if not read_queue:
            self.backend = "libslurm-writes"
        self._ffi: Any = binding.ffi
        self._lib: Any = binding.lib
        self._lib.slurm_init(self._ffi.NULL)
        self._read_lock = threading.Lock()
        #: The last queue read; None after any of this client's writes (which change admin
        #: comments) until the next read.
        self._snapshot: Snapshot | None = None
        #: How many queue reads went to ``squeue`` because the libslurm one failed.
        self.read_fallbacks = 0
        #: How many queue reads slurmctld answered "no change" (the snapshot reused).
        self.unchanged_reads = 0
        #: The last read's records by their members (`_convert`).
        self._records: dict[tuple[Any, ...], JobRecord] = {}
        #: The threads that send updates (`send_updates`), started at the first.
        self._senders: ThreadPoolExecutor | None = None

    # --- reads ---------------------------------------------------------------------------

    def pending_jobs(self) -> list[JobRecord]:
        """The pending jobs as the ``squeue`` read gives them, from one ``slurm_load_jobs``
        (the ``squeue`` read itself when that fails: see the module docstring)."""
        if not self.read_queue:
            return super().pending_jobs()
        try:
            with self._read_lock:
                snapshot = self._load_pending()
                self._snapshot = snapshot
            return list(snapshot.records)
        except Exception as exc:  # any failure of the binding: the squeue read instead
            with self._read_lock:
                self._snapshot = None
                self.read_fallbacks += 1
            log.warning("libslurm_read_failed", error=printable(str(exc))[:200], fallback="squeue")
            return super().pending_jobs()

    def _load_pending(self) -> Snapshot:
        ffi, lib = self._ffi, self._lib
        now = time.monotonic()
        last = self._snapshot
        fresh = last is not None and now - last.read_at < SNAPSHOT_MAX_AGE_S
        # One second early: slurmctld stamps in whole seconds, and a change within the
        # second of the last answer must not read as "no change".
        since = last.last_update - 1 if last is not None and fresh else 0
        resp = ffi.new("job_info_msg_t **")
        # No SHOW_ALL (squeue's default: jobs in hidden partitions stay hidden); SHOW_LOCAL
        # spares the federation lookup.
        if lib.slurm_load_jobs(since, resp, lib.SHOW_LOCAL) != 0:
            errno = lib.slurm_get_errno()
            if errno == lib.SLURM_NO_CHANGE_IN_DATA and last is not None and since > 0:
                self.unchanged_reads += 1
                return last
            said = ffi.string(lib.slurm_strerror(errno)).decode("utf-8", "replace")
            raise SlurmError(f"slurm_load_jobs failed: {printable(said)[:200]}")
        try:
            return self._convert(resp[0], now)
        finally:
            lib.slurm_free_job_info_msg(resp[0])

    def _convert(self, msg: Any, now: float) -> Snapshot:
        """The pending jobs of one answer. Each job's members are read as they are (bytes,
        numbers) into a key; a job whose key the last answer had keeps its record, so only
        new or changed jobs are decoded and built (most of a read's time in Python)."""
        ffi, lib = self._ffi, self._lib
        null, string, base = ffi.NULL, ffi.string, lib.JOB_STATE_BASE

        def raw(ptr: Any) -> bytes | None:
            return None if ptr == null else bytes(string(ptr))

        known = self._records
        records: dict[tuple[Any, ...], JobRecord] = {}
        comments: dict[int, str] = {}
        jobs = msg.job_array
        for k in range(msg.record_count):
            r = jobs[k]
            if r.job_state & base != JOB_PENDING:
                continue
            desc = r.state_desc
            key = (
                r.job_id,
                r.priority,
                r.num_nodes,
                r.max_nodes,
                r.time_limit,
                int(r.submit_time),
                r.user_id,
                r.num_tasks,
                r.ntasks_per_node,
                r.state_reason if desc == null else raw(desc),
                raw(r.partition),
                raw(r.account),
                raw(r.wckey),
                raw(r.command),
                raw(r.work_dir),
                raw(r.name),
                raw(r.comment),
                raw(r.qos),
            )
            record = known.get(key)
            if record is None:
                record = self._record(key)
            records[key] = record
            comment = r.admin_comment
            comments[r.job_id] = "" if comment == null else _decode(string(comment))
        self._records = records
        return Snapshot(int(msg.last_update), now, tuple(records.values()), comments)

    def _record(self, key: tuple[Any, ...]) -> JobRecord:
        """The record of one job's `_convert` key (its members in RawJob's order)."""
        numbers, reason, texts = key[:9], key[9], key[10:]
        fields: list[Any] = [
            *numbers,
            self._reason(reason) if isinstance(reason, int) else _decode(reason),
            *(None if t is None else _decode(t) for t in texts),
        ]
        raw = RawJob(*fields)
        return pending_record(raw, user_name(raw.user_id))

    def jobs_of(self, job_ids: Collection[int]) -> list[JobRecord]:
        """The jobs of `job_ids` slurmctld still knows, from one ``slurm_load_jobs``: the
        fields the kill guard reads (state, start, end and submit times, time limit, nodes)
        and the names; comments are not reported (None). ``squeue --json`` (every job,
        serialized and parsed: seconds with a few thousand jobs) when the read fails."""
        wanted = set(job_ids)
        if not wanted:
            return []
        if not self.read_queue:
            return super().jobs_of(wanted)
        try:
            return self._load_jobs_of(wanted)
        except Exception as exc:  # any failure of the binding: squeue --json instead
            with self._read_lock:
                self.read_fallbacks += 1
            log.warning("libslurm_read_failed", error=printable(str(exc))[:200], fallback="squeue")
            return super().jobs_of(wanted)

    def _load_jobs_of(self, wanted: set[int]) -> list[JobRecord]:
        ffi, lib = self._ffi, self._lib
        resp = ffi.new("job_info_msg_t **")
        if lib.slurm_load_jobs(0, resp, lib.SHOW_ALL | lib.SHOW_LOCAL) != 0:
            said = ffi.string(lib.slurm_strerror(lib.slurm_get_errno()))
            raise SlurmError(f"slurm_load_jobs failed: {printable(_decode(said))[:200]}")
        try:
            msg = resp[0]
            jobs = msg.job_array
            out = []
            for k in range(msg.record_count):
                r = jobs[k]
                if r.job_id in wanted:
                    out.append(self._job_record(r))
            return out
        finally:
            lib.slurm_free_job_info_msg(resp[0])

    def _job_record(self, r: Any) -> JobRecord:
        """One job as `parse_squeue_json` reads ``squeue --json``: a start time, end time
        and allocation only once it ran (a start time and nodes), the requested range
        before."""
        ffi, lib = self._ffi, self._lib

        def text(ptr: Any) -> str:
            return "" if ptr == ffi.NULL else _decode(ffi.string(ptr))

        base = r.job_state & lib.JOB_STATE_BASE
        state = _decode(ffi.string(lib.slurm_job_state_string(base))).upper()
        start, end = int(r.start_time) or None, int(r.end_time) or None
        started = state != "PENDING" and start is not None and bool(text(r.nodes))
        final = state not in ("PENDING", "RUNNING", "SUSPENDED", "CONFIGURING")
        nodes, most, limit = int(r.num_nodes), int(r.max_nodes), int(r.time_limit)
        return JobRecord(
            job_id=int(r.job_id),
            name=text(r.name),
            user=user_name(int(r.user_id)),
            account=text(r.account),
            partition=text(r.partition),
            state=state,
            source="libslurm",
            nodes_min=None if started else nodes,
            nodes_max=None if started else most or nodes,
            nodes_alloc=nodes if started else 0,
            time_limit_min=None if limit in (lib.INFINITE, lib.NO_VAL) else limit,
            submit_time=int(r.submit_time) or None,
            start_time=start if started else None,
            end_time=end if final else None,
            priority=int(r.priority),
        )

    def _reason(self, code: int) -> str:
        raw: bytes = self._ffi.string(self._lib.slurm_job_reason_string(code))
        return raw.decode("ascii", "replace")

    def held_admin_comments(self, job_ids: Collection[int]) -> dict[int, str | None]:
        """Job id -> its admin comment ("" for none), exact: from the last queue read while
        none of this client's writes came after it, else each job's own record. A job
        Slurm no longer knows, or that could not be read, is left out (the loop then counts
        the sweep incomplete)."""
        ids = sorted(set(job_ids))
        if not ids:
            return {}
        found: dict[int, str | None] = {}
        with self._read_lock:
            snapshot = self._snapshot
        if snapshot is not None:
            found = {j: snapshot.admin_comments[j] for j in ids if j in snapshot.admin_comments}
        rest = [j for j in ids if j not in found]
        if rest:
            workers = max(1, min(self.parallelism, len(rest)))
            with ThreadPoolExecutor(max_workers=workers) as pool:
                read = list(pool.map(self._admin_comment, rest))
            found.update((j, t) for j, t in zip(rest, read, strict=True) if t is not None)
        return found

    # --- writes --------------------------------------------------------------------------

    def _written(self) -> None:
        """This client changed jobs: the last read's admin comments no longer count."""
        with self._read_lock:
            self._snapshot = None

    def resize(self, changes: Sequence[Resize]) -> None:
        self._written()
        super().resize(changes)

    def set_admin_comment(self, job_ids: Sequence[int], text: str) -> None:
        self._written()
        super().set_admin_comment(job_ids, text)

    def release(self, job_ids: Sequence[int]) -> None:
        self._written()
        super().release(job_ids)

    def set_time_limit(self, job_id: int, minutes: int) -> None:
        self._written()
        super().set_time_limit(job_id, minutes)

    def update_jobs(self, updates: Sequence[JobUpdate]) -> dict[int, str]:
        futures = self.send_updates(updates)
        results = [future.result() for future in futures]
        return {u.job_id: error for u, error in zip(updates, results, strict=True) if error}

    def send_updates(self, updates: Sequence[JobUpdate]) -> list[Future[str | None]]:
        """Each update to the sender threads (`parallelism` of them, kept for the client's
        life): a job's update does not wait for another's, so one that slurmctld holds for a
        second does not hold back the jobs sent after it (plugin/daemon/apply.py)."""
        if not updates:
            return []
        self._written()
        # No comment check here: a JobUpdate cannot be made with one Slurm must not get.
        with self._read_lock:
            if self._senders is None:
                self._senders = ThreadPoolExecutor(
                    max_workers=max(1, self.parallelism), thread_name_prefix="slurm-update"
                )
            senders = self._senders
        return [senders.submit(self._update, u) for u in updates]

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
