"""The default Slurm backend: Slurm's own commands, ``--json`` where they have it.

Commands run as argument lists (never through a shell: job names and comments are hostile
text), with stdin closed, a timeout, and stderr captured into the error message so that
Slurm's own words reach the admin (reportseff drops them). The output is parsed by
plugin/slurm/parse.py; when ``sacct --json`` fails (a non-zero exit, a signal: 22.05's can
abort in json_object.c, or no JSON), finished_jobs asks the same query as text and logs
one ``sacct_json_failed`` warning.

| method | command |
|---|---|
| finished_jobs | ``sacct --json --allusers --starttime S --endtime E [--state ...]`` |
| (its fallback) | the same query as ``sacct --parsable2 --delimiter=NONCE ...`` (sacct_text.py) |
| jobs | ``squeue --json`` (22.05 ignores --jobs/--states, so no filters are passed) |
| nodes | ``sinfo --json`` |
| partitions | ``scontrol show partition -o`` |
| qos_limits | ``sacctmgr -n -P show qos format=Name,MaxTRESPerJob,MaxWall`` |
| assoc_limits | ``scontrol show assoc_mgr users=U accounts=A flags=assoc`` |
| accounting_enabled | ``scontrol show config`` |
| version | ``sinfo --version`` |
| scontrol_job | ``scontrol show job -o ID`` (raw fields, for diagnostics) |
| pending_jobs | ``squeue --states=PENDING --Format=...`` with nonce separators (pending.py) |
| held_admin_comments | ``scontrol show job -o ID`` per job, a few at a time (pending.py) |
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import time
from collections.abc import Callable, Collection, Mapping, Sequence

import structlog

from plugin.errors import printable
from plugin.slurm.errors import SlurmCommandError, SlurmParseError
from plugin.slurm.parse import (
    QOS_FORMAT,
    parse_accounting_type,
    parse_assoc_mgr,
    parse_key_values,
    parse_qos_limits,
    parse_sacct_json,
    parse_scontrol_partitions,
    parse_sinfo_json,
    parse_slurm_version,
    parse_squeue_json,
    pick_association,
)
from plugin.slurm.pending import admin_comments, new_separator, parse_pending, pending_format
from plugin.slurm.reader import SlurmReader
from plugin.slurm.records import (
    FINAL_STATES,
    AssocRecord,
    JobRecord,
    NodeRecord,
    PartitionRecord,
    QosRecord,
)
from plugin.slurm.sacct_text import (
    parse_sacct_text,
    parse_sacct_users,
    sacct_text_args,
    sacct_user_args,
)

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "CliSlurmReader",
    "Runner",
    "run_command",
    "slurm_environ",
    "slurm_time",
]

log = structlog.get_logger("adaptalloc.slurm")

DEFAULT_TIMEOUT_S = 60.0
#: Characters of a command's stderr kept in an error message.
STDERR_LIMIT = 400

#: What scontrol takes as one user or account name (no list comma, no blank, no option).
_SLURM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}")


def _slurm_name(text: str) -> bool:
    return _SLURM_NAME.fullmatch(text) is not None


#: Runs an argument list with a timeout; returns stdout or raises SlurmCommandError.
Runner = Callable[[Sequence[str], float], str]


#: Environment variables that change what Slurm's commands print, pinned to the form the
#: parsers read: a daemon started with ``SLURM_TIME_FORMAT=relative`` (or ``%s``) would
#: otherwise read every SubmitTime as unknown, and its watchdog would never fire.
PINNED_ENV = {"SLURM_TIME_FORMAT": "standard"}
#: The only variables of the daemon's environment its Slurm commands get: where the client
#: finds Slurm's configuration and programs, and the locale and time zone that
#: `slurm_time` shares with sacct. Everything else stays behind: the Redis URL and
#: password, other secrets, and the SQUEUE_FORMAT / SACCT_FORMAT / SLURM_* variables that
#: would change what the parsers read (docs/admin/sizing-user.md).
PASSED_ENV = ("PATH", "SLURM_CONF", "LANG", "TZ")


def slurm_environ(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The minimal environment of a Slurm command: `PASSED_ENV` taken from `env` (default:
    this process's), where set, and `PINNED_ENV`."""
    source = os.environ if env is None else env
    out = {name: source[name] for name in PASSED_ENV if name in source}
    out.update(PINNED_ENV)
    return out


def run_command(args: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None) -> str:
    """Run one Slurm command (environment: `slurm_environ(env)`); its stdout, or
    SlurmCommandError carrying its stderr."""
    shown = " ".join(printable(a) for a in args[:4]) + (" ..." if len(args) > 4 else "")
    try:
        proc = subprocess.run(  # noqa: S603 - an argument list, never a shell
            list(args),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            check=False,
            env=slurm_environ(env),
        )
    except FileNotFoundError as exc:
        raise SlurmCommandError(
            f"{printable(args[0])} not found on PATH; is Slurm's client installed?"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise SlurmCommandError(f"{shown} did not finish within {timeout_s:g} s") from exc
    except OSError as exc:
        raise SlurmCommandError(f"{shown} could not run: {exc.strerror or exc}") from exc
    stdout = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        stderr = printable(" ".join(proc.stderr.decode("utf-8", "replace").split()))
        if len(stderr) > STDERR_LIMIT:
            stderr = stderr[:STDERR_LIMIT] + "..."
        raise SlurmCommandError(
            f"{shown} failed (exit {proc.returncode}): {stderr or 'no message on stderr'}"
        )
    return stdout


def slurm_time(epoch: float) -> str:
    """A Unix time as Slurm's local-time ``YYYY-MM-DDTHH:MM:SS`` (what sacct -S/-E take)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(int(epoch)))


class CliSlurmReader(SlurmReader):
    """Reads Slurm through its commands. `runner` replaces subprocess (tests, wrappers)."""

    backend = "cli"

    def __init__(
        self,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        runner: Runner | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self._env = env
        self._runner = runner

    def run(self, *args: str) -> str:
        """Run one Slurm command (argument list) with this reader's timeout; its stdout."""
        if self._runner is not None:
            return self._runner(args, self.timeout_s)
        return run_command(args, self.timeout_s, self._env if self._env is not None else os.environ)

    def finished_jobs(
        self, since: float, until: float, states: Collection[str] | None = None
    ) -> list[JobRecord]:
        """Jobs that ended in [since, until] in `states` (default: every final state).

        Read from ``sacct --json``; when that call fails or prints no JSON (Slurm 22.05's
        sacct can abort in json_object.c), from the same query's text output instead
        (`_finished_jobs_text`), with one warning naming the JSON call's error, which
        `sacct_json_error` keeps until a JSON call works again (adaptalloc doctor shows it).
        """
        wanted = sorted(states) if states else sorted(FINAL_STATES)
        first, last = math.floor(since), math.floor(until)  # sacct works in whole seconds
        query = [
            "--allusers",
            "--starttime",
            slurm_time(first),
            "--endtime",
            slurm_time(last),
            "--state",
            ",".join(wanted),
        ]
        try:
            found = parse_sacct_json(self.run("sacct", "--json", *query))
            self.sacct_json_error = None
        except (SlurmCommandError, SlurmParseError) as exc:
            self.sacct_json_error = printable(str(exc))[:300]
            log.warning("sacct_json_failed", error=self.sacct_json_error, fallback="sacct text")
            found = self._finished_jobs_text(query)
        records = [
            job
            for job in found
            if job.state in wanted and job.end_time is not None and first <= job.end_time <= last
        ]
        records = self._with_users(records, query)
        return sorted(records, key=lambda job: (job.end_time or 0, job.job_id))

    def _with_users(self, records: list[JobRecord], query: Sequence[str]) -> list[JobRecord]:
        """`records` with the user of each that has none filled in from sacct's text output
        (sacct_text.parse_sacct_users: 22.05's JSON has no user for a job whose user has no
        association); the learner keys runs by their user, so a run without one is not
        learned. Left as they are when that query fails, with a warning."""
        if all(job.user for job in records):
            return records
        sep = new_separator()
        try:
            users = parse_sacct_users(self.run("sacct", *sacct_user_args(sep), *query), sep)
        except (SlurmCommandError, SlurmParseError) as exc:
            log.warning("sacct_users_unknown", error=printable(str(exc))[:300])
            return records
        return [
            job if job.user else dataclasses.replace(job, user=users.get(job.job_id, ""))
            for job in records
        ]

    def _finished_jobs_text(self, query: Sequence[str]) -> list[JobRecord]:
        """The jobs of ``sacct QUERY`` read from its text output (sacct_text.py), with a
        separator drawn for this call; records that do not read are skipped, with a warning."""
        sep = new_separator()
        read = parse_sacct_text(self.run("sacct", *sacct_text_args(sep), *query), sep)
        if read.skipped:
            log.warning("sacct_text_records_skipped", skipped=read.skipped, read=len(read.jobs))
        return read.jobs

    def jobs(self) -> list[JobRecord]:
        return parse_squeue_json(self.run("squeue", "--json"))

    def nodes(self) -> list[NodeRecord]:
        return parse_sinfo_json(self.run("sinfo", "--json"))

    def partitions(self) -> list[PartitionRecord]:
        return parse_scontrol_partitions(self.run("scontrol", "show", "partition", "-o"))

    def qos_limits(self) -> list[QosRecord]:
        return parse_qos_limits(
            self.run("sacctmgr", "-n", "-P", "show", "qos", f"format={QOS_FORMAT}")
        )

    def assoc_limits(self, user: str, account: str, partition: str) -> AssocRecord | None:
        if not (_slurm_name(user) and _slurm_name(account)):
            return None  # not a name scontrol could take as one value: unknown
        text = self.run(
            "scontrol", "show", "assoc_mgr", f"users={user}", f"accounts={account}", "flags=assoc"
        )
        return pick_association(parse_assoc_mgr(text), user, account, partition)

    def accounting_enabled(self) -> bool:
        kind = parse_accounting_type(self.run("scontrol", "show", "config"))
        return kind not in ("", "accounting_storage/none")

    def version(self) -> tuple[int, int, int]:
        return parse_slurm_version(self.run("sinfo", "--version"))

    def pending_jobs(self) -> list[JobRecord]:
        """Pending jobs from squeue's formatted output: no JSON of every job (pending.py)."""
        sep = new_separator()
        out = self.run(
            "squeue", "--noheader", "--states=PENDING", f"--Format={pending_format(sep)}"
        )
        return parse_pending(out, sep)

    def known_jobs(self) -> list[JobRecord]:
        """Every job slurmctld knows, from the pending read's format (pending.py) over every
        state: no JSON. A started job's NumNodes (nodes_min) is its allocated count."""
        sep = new_separator()
        out = self.run("squeue", "--noheader", "--states=all", f"--Format={pending_format(sep)}")
        return parse_pending(out, sep)

    def held_admin_comments(self, job_ids: Collection[int]) -> dict[int, str | None]:
        """The held marker from each job's own ``scontrol show job -o`` (pending.py)."""
        return admin_comments(self.run, sorted(job_ids), int(getattr(self, "parallelism", 4)))

    def scontrol_job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o ID`` as raw ``Key -> Value`` text (see parse_key_values)."""
        return parse_key_values(self.run("scontrol", "show", "job", "-o", str(int(job_id))))
