"""The write side of the Slurm adapter: pin a held job's size and time limit, record the
decision in its admin_comment, release it.

`SlurmWriter` is the interface; `ScontrolWriter` implements it with ``scontrol``, and
`CliSlurm`/`PyslurmSlurm` join it to a reader so the daemon holds one object (`SlurmClient`)
for both sides. Every method takes many jobs at once, because a burst of submissions must cost
few commands:

* ``resize``: one ``scontrol`` process reads ``update JobId=X NumNodes=N-N [TimeLimit=T]``
  lines on stdin. scontrol refuses a job *list* with NumNodes (``_is_single_job``), so it is
  one line per job, but one process for many lines (large batches are split over
  ``parallelism`` processes).
* ``set_admin_comment``: ``scontrol update JobId=X,Y,... AdminComment=TEXT``, one process per
  distinct text, as argv (scontrol's stdin reader would keep quotes inside the value).
* ``release``: ``scontrol release X,Y,...``, one process for the whole batch.

Only integers reach scontrol's stdin (job ids, node counts, minutes), and partition names that
match ``PARTITION_LIST`` (letters, digits, ``_.-``, comma-separated; no space, ``=`` or control
character): a line cannot be injected. The admin comment goes as one argv element, never
through a shell, and is refused when it holds control characters. Slurm 22.05 facts this relies
on (seen on the testbed): ``NumNodes=3`` on a 2-4 job only raises the minimum, so sizes are
pinned as ``N-N``; root may set sizes below the user's minimum, so callers keep decisions
inside the user's range (the daemon asserts it); ``scontrol release`` and ``update`` with a
list go on past a job that
fails and exit 1 at the end, so a failure means "some of these may not have happened": the
caller reads the jobs back to see which.
"""

from __future__ import annotations

import pwd
import re
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from plugin.errors import printable
from plugin.slurm.cli_backend import STDERR_LIMIT, CliSlurmReader, slurm_environ
from plugin.slurm.errors import SlurmCommandError
from plugin.slurm.pyslurm_backend import PyslurmReader
from plugin.slurm.reader import SlurmReader

__all__ = [
    "MAX_ADMIN_COMMENT",
    "CliSlurm",
    "JobUpdate",
    "PyslurmSlurm",
    "Resize",
    "ScontrolWriter",
    "SizingUser",
    "SlurmClient",
    "SlurmWriter",
    "check_admin_comment",
    "id_chunks",
    "resize_lines",
]

#: Longest admin comment the writer sets, in characters.
MAX_ADMIN_COMMENT = 1024
#: A partition name or a comma-separated list of them, as a Resize may write it. Slurm allows
#: more in a name; a name outside this is never written (the job keeps its partitions).
PARTITION_LIST = re.compile(r"[A-Za-z0-9_.-]{1,64}(?:,[A-Za-z0-9_.-]{1,64}){0,31}")

#: Job ids per ``scontrol`` list argument (keeps argv well below any limit).
IDS_PER_COMMAND = 500
#: Fewest resize lines worth a process of their own when a batch is split. Each line waits
#: on a slurmctld round trip (~12 ms on the testbed), a process costs about one line: 100
#: lines took 1.24 s in one process and 0.30 s in four (testbed, Slurm 22.05).
MIN_LINES_PER_PROCESS = 4
#: The largest time limit the writer sets: one year, in minutes.
MAX_TIME_LIMIT_MIN = 366 * 24 * 60


@dataclass(frozen=True)
class Resize:
    """Set a pending job's node range to [min_nodes, max_nodes] and, when given, its limit
    and its partition (one name the user listed, or the user's own list when put back).

    The daemon pins a decision as ``min_nodes == max_nodes``; restoring a job to its
    submitted range after a partial failure uses the original range, and `unlimited` (with
    time_limit_min None) puts back a job that had no time limit.
    """

    job_id: int
    min_nodes: int
    max_nodes: int
    time_limit_min: int | None = None
    unlimited: bool = False
    partition: str | None = None

    def __post_init__(self) -> None:
        _check_id(self.job_id)
        if self.partition is not None and not PARTITION_LIST.fullmatch(self.partition):
            raise ValueError(f"partition {self.partition[:80]!r} is not a list of partition names")
        for name in ("min_nodes", "max_nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")
        if self.max_nodes < self.min_nodes:
            raise ValueError(f"max_nodes {self.max_nodes} is below min_nodes {self.min_nodes}")
        limit = self.time_limit_min
        if limit is not None and (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_TIME_LIMIT_MIN
        ):
            raise ValueError(f"time_limit_min must be 1..{MAX_TIME_LIMIT_MIN}, got {limit!r}")

    def line(self) -> str:
        """The scontrol command for this change (integers and checked partition names only)."""
        text = f"update JobId={self.job_id} NumNodes={self.min_nodes}-{self.max_nodes}"
        if self.time_limit_min is not None:
            text += f" TimeLimit={self.time_limit_min}"
        elif self.unlimited:
            text += " TimeLimit=UNLIMITED"
        if self.partition is not None:
            text += f" Partition={self.partition}"
        return text


@dataclass(frozen=True)
class JobUpdate:
    """Everything the daemon changes on one held job, for a backend that sends it as one
    update (`SlurmWriter.combined_updates`): the resize (or none), the admin comment (or
    none) and whether to release it."""

    job_id: int
    resize: Resize | None = None
    admin_comment: str | None = None
    release: bool = True

    def __post_init__(self) -> None:
        _check_id(self.job_id)
        if self.resize is not None and self.resize.job_id != self.job_id:
            raise ValueError(f"resize of job {self.resize.job_id} in job {self.job_id}'s update")
        if self.admin_comment is not None:
            check_admin_comment(self.admin_comment)


def _check_id(job_id: object) -> int:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id < 1:
        raise ValueError(f"job id must be a whole number ≥ 1, got {job_id!r}")
    return job_id


def check_admin_comment(text: str) -> str:
    """`text` if it can be an admin comment: printable, one line, at most MAX_ADMIN_COMMENT."""
    if not isinstance(text, str):
        raise ValueError("an admin comment must be a string")
    if len(text) > MAX_ADMIN_COMMENT:
        raise ValueError(f"admin comment longer than {MAX_ADMIN_COMMENT} characters")
    if not text.isprintable():
        raise ValueError(f"admin comment has control characters: {printable(text)[:60]!r}")
    return text


def id_chunks(job_ids: Sequence[int], size: int = IDS_PER_COMMAND) -> Iterator[str]:
    """Comma-separated lists of at most `size` validated job ids, in order, no repeats."""
    unique = list(dict.fromkeys(_check_id(j) for j in job_ids))
    for start in range(0, len(unique), size):
        yield ",".join(str(j) for j in unique[start : start + size])


def resize_lines(changes: Sequence[Resize], processes: int) -> list[list[str]]:
    """Split the changes' command lines over at most `processes` scontrol processes."""
    lines = [change.line() for change in changes]
    if not lines:
        return []
    count = max(1, min(processes, len(lines) // MIN_LINES_PER_PROCESS))
    return [lines[k::count] for k in range(count)]


@dataclass(frozen=True)
class SizingUser:
    """The account resizes run as where Slurm enforces limits (plugin/slurm/enforcement.py):
    a coordinator, not an operator, so slurmctld checks each change as its own user's."""

    name: str
    uid: int
    gid: int

    @classmethod
    def named(cls, name: str) -> SizingUser:
        """The local account `name` (SlurmCommandError when there is none)."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise SlurmCommandError(
                f"sizing user {printable(name)[:64]!r} is not an account on this host"
            ) from None
        return cls(name, entry.pw_uid, entry.pw_gid)


class SlurmWriter(ABC):
    """Change held jobs: size and time limit, admin comment, release.

    Each method may partly succeed before it raises `SlurmCommandError`; the caller reads
    the jobs back (squeue) to see where each one stands.
    """

    @abstractmethod
    def resize(self, changes: Sequence[Resize]) -> None:
        """Apply every change (one job each)."""

    @abstractmethod
    def set_admin_comment(self, job_ids: Sequence[int], text: str) -> None:
        """Set the same admin comment on every job."""

    @abstractmethod
    def release(self, job_ids: Sequence[int]) -> None:
        """Release the holds of every job (priority recomputed by Slurm)."""

    def restore(self, changes: Sequence[Resize]) -> None:
        """Put jobs back to what their users submitted (`resize`, but as the daemon's own
        account even where resizes run as the sizing user: only an operator may raise a
        time limit back)."""
        self.resize(changes)

    def set_time_limit(self, job_id: int, minutes: int) -> None:
        """Set one job's time limit, running or not (the daemon's kill guard raises it)."""
        raise SlurmCommandError(f"{type(self).__name__} cannot change time limits")

    #: Whether `update_jobs` works: each job's changes in one Slurm update.
    combined_updates: bool = False

    def update_jobs(self, updates: Sequence[JobUpdate]) -> dict[int, str]:
        """Apply each update (one job each) as one change; job id -> Slurm's refusal for
        the jobs it refused (the rest went through). A refused update may have been partly
        applied: the caller reads the job back or applies it again step by step."""
        raise SlurmCommandError(f"{type(self).__name__} cannot combine a job's changes")

    def send_updates(self, updates: Sequence[JobUpdate]) -> list[Future[str | None]]:
        """`update_jobs` without waiting: one future per update (in order), its result
        None or Slurm's refusal. Here: `update_jobs` itself, the futures already done (its
        SlurmError raised here); a backend with its own senders returns at once."""
        refused = self.update_jobs(updates)
        futures: list[Future[str | None]] = []
        for update in updates:
            future: Future[str | None] = Future()
            future.set_result(refused.get(update.job_id))
            futures.append(future)
        return futures


class SlurmClient(SlurmReader, SlurmWriter, ABC):
    """Both sides of the adapter, as the daemon uses them."""


def _stderr_text(raw: bytes) -> str:
    text = printable(" ".join(raw.decode("utf-8", "replace").split()))
    return text if len(text) <= STDERR_LIMIT else text[:STDERR_LIMIT] + "..."


class ScontrolWriter(SlurmWriter):
    """`SlurmWriter` through ``scontrol`` (see the module docstring).

    Mixed into a `CliSlurmReader`, whose timeout and environment it uses.
    """

    timeout_s: float
    _env: Mapping[str, str] | None
    parallelism: int = 4
    #: The account `resize` runs ``scontrol`` as (SizingUser), None: this process's own.
    sizing_user: SizingUser | None = None

    def _environ(self) -> dict[str, str]:
        return slurm_environ(self._env)

    def _argv(self, *args: str) -> None:
        run = getattr(self, "run", None)
        if run is None:  # pragma: no cover - always mixed into a CliSlurmReader
            raise TypeError("ScontrolWriter needs a CliSlurmReader")
        run(*args)

    def resize(self, changes: Sequence[Resize]) -> None:
        self._resize_as(changes, self.sizing_user)

    def restore(self, changes: Sequence[Resize]) -> None:
        if self.sizing_user is None:
            self.resize(changes)
        else:
            self._resize_as(changes, None)

    def _resize_as(self, changes: Sequence[Resize], user: SizingUser | None) -> None:
        scripts = resize_lines(changes, self.parallelism)
        procs = [self._start_script(user) for _ in scripts]
        failures = []
        for proc, lines in zip(procs, scripts, strict=True):
            try:
                _, err = proc.communicate(("\n".join(lines) + "\n").encode(), self.timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                failures.append(f"did not finish within {self.timeout_s:g} s")
                continue
            if proc.returncode != 0:
                failures.append(f"exit {proc.returncode}: {_stderr_text(err) or 'no message'}")
        if failures:
            raise SlurmCommandError(
                f"scontrol update (NumNodes/TimeLimit of {len(changes)} jobs) failed: "
                + "; ".join(failures)
            )

    def _start_script(self, user: SizingUser | None = None) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(  # an argument list, never a shell
                ["scontrol"],  # noqa: S607 - Slurm's client from PATH, as every command here
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=self._environ(),
                user=None if user is None else user.uid,
                group=None if user is None else user.gid,
                extra_groups=None if user is None else [],
            )
        except FileNotFoundError as exc:
            raise SlurmCommandError(
                "scontrol not found on PATH; is Slurm's client installed?"
            ) from exc
        except OSError as exc:
            raise SlurmCommandError(f"scontrol could not run: {exc.strerror or exc}") from exc

    def set_admin_comment(self, job_ids: Sequence[int], text: str) -> None:
        value = check_admin_comment(text)
        for ids in id_chunks(job_ids):
            self._argv("scontrol", "update", f"JobId={ids}", f"AdminComment={value}")

    def release(self, job_ids: Sequence[int]) -> None:
        for ids in id_chunks(job_ids):
            self._argv("scontrol", "release", ids)

    def set_time_limit(self, job_id: int, minutes: int) -> None:
        if isinstance(minutes, bool) or not isinstance(minutes, int):
            raise ValueError(f"time limit must be whole minutes, got {minutes!r}")
        if not 1 <= minutes <= MAX_TIME_LIMIT_MIN:
            raise ValueError(f"time limit must be 1..{MAX_TIME_LIMIT_MIN} minutes, got {minutes}")
        self._argv("scontrol", "update", f"JobId={_check_id(job_id)}", f"TimeLimit={minutes}")


class CliSlurm(ScontrolWriter, CliSlurmReader, SlurmClient):
    """Reads with Slurm's commands (``--json``), writes with ``scontrol``."""

    def __init__(
        self,
        timeout_s: float = 60.0,
        env: Mapping[str, str] | None = None,
        parallelism: int = 4,
        sizing_user: SizingUser | None = None,
    ) -> None:
        CliSlurmReader.__init__(self, timeout_s=timeout_s, env=env)
        self.parallelism = parallelism
        self.sizing_user = sizing_user


class PyslurmSlurm(ScontrolWriter, PyslurmReader, SlurmClient):
    """Reads accounting through pyslurm, writes with ``scontrol`` (pyslurm 22.5's job update
    API is not exercised anywhere we can test, and ``scontrol`` is what admins can replay)."""

    def __init__(
        self,
        module: object,
        timeout_s: float = 60.0,
        parallelism: int = 4,
        sizing_user: SizingUser | None = None,
    ) -> None:
        PyslurmReader.__init__(self, module, timeout_s=timeout_s)  # type: ignore[arg-type]
        self.parallelism = parallelism
        self.sizing_user = sizing_user
