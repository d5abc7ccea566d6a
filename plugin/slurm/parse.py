"""Parsers from Slurm's output to records: pure functions, tested on real captured output.

Slurm 22.05's JSON (``openapi/v0.0.38`` for squeue/sinfo, ``openapi/dbv0.0.38`` for sacct) is
the reference, see tests/data/slurm/README.md; later versions' shapes are accepted where
they differ in small ways (states as lists, numbers as ``{"set", "infinite", "number"}``).

Things the parsers know (seen in the captures):

* ``sacct --json`` of 22.05 reports ``exit_code`` ``{"status": "SUCCESS", "return_code": 0}``
  for every job, FAILED ones included (and so do ``derived_exit_code`` and the steps'
  ``exit_code``). Its exit codes are therefore reported as unknown (None); whether a job
  succeeded is its state (Slurm sets COMPLETED only when the batch script exited 0).
* ``squeue --json`` of 22.05 gives ``exit_code`` as the raw wait status (768 = exit 3,
  15 = killed by SIGTERM).
* ``sacct --json`` has no job comment unless slurm.conf has
  ``AccountingStoreFlags=job_comment``: ``comment.job`` is null, reported here as None.
* ``squeue --json`` reports a pending job's requested range as ``node_count`` (minimum) and
  ``max_nodes``; once the job has started, ``node_count`` is its allocation.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from plugin.errors import printable, quote_value
from plugin.slurm.errors import SlurmError, SlurmParseError
from plugin.slurm.records import AssocRecord, JobRecord, NodeRecord, PartitionRecord, QosRecord

__all__ = [
    "HELPER_STEPS",
    "UNRELIABLE_EXIT_CODE_PLUGINS",
    "config_value",
    "exit_from_status",
    "field_int",
    "field_state",
    "field_str",
    "field_time",
    "local_epoch",
    "parse_accounting_enforce",
    "parse_accounting_type",
    "parse_assoc_mgr",
    "parse_key_values",
    "parse_qos_limits",
    "parse_sacct_json",
    "parse_scontrol_partitions",
    "parse_sinfo_json",
    "parse_slurm_version",
    "parse_squeue_json",
    "parse_time_minutes",
    "pick_association",
    "tighter",
    "tres_nodes",
]

#: sacct JSON plugins whose exit codes say SUCCESS/0 for failed jobs (see the module docstring).
UNRELIABLE_EXIT_CODE_PLUGINS = frozenset(
    {"openapi/dbv0.0.36", "openapi/dbv0.0.37", "openapi/dbv0.0.38"}
)
#: Slurm's error number for "Nothing found with query" (an empty sacct window).
NOTHING_FOUND = 9003
#: Slurm's NO_VAL and INFINITE for 32-bit fields, and the 16-bit ones.
_SENTINELS = frozenset({0xFFFFFFFF, 0xFFFFFFFE, 0xFFFF, 0xFFFE})
_VERSION = re.compile(r"(?:slurm(?:-wlm)?\s+)?(\d+)\.(\d+)(?:\.(\d+))?")
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9/:_.]*")


# --- small field readers ------------------------------------------------------------------


def field_int(value: Any) -> int | None:
    """A count or time from Slurm JSON; None for null, NO_VAL/INFINITE and unset numbers."""
    if isinstance(value, Mapping):  # v0.0.39+: {"set": true, "infinite": false, "number": 5}
        unset = not value.get("set", True) or value.get("infinite")
        return None if unset else field_int(value.get("number"))
    number: int | None = None
    if isinstance(value, float) and math.isfinite(value):
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value)
    if number is None or number in _SENTINELS or number < 0:
        return None
    return number


def field_time(value: Any) -> int | None:
    """A Unix time; 0 (Slurm's "not yet") becomes None."""
    number = field_int(value)
    return number if number else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def field_str(value: Any) -> str:
    """A string field; "" for anything else (null, a number, a dict)."""
    return value if isinstance(value, str) else ""


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def field_state(value: Any) -> str:
    """The base state: "COMPLETED" from "COMPLETED", ["COMPLETED"] or {"current": ...}."""
    if isinstance(value, Mapping):
        value = value.get("current")
    if isinstance(value, list):
        value = value[0] if value else ""
    return field_str(value).split(" ", 1)[0].upper()


def _load(text: str | bytes, command: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        head = text[:60].decode("utf-8", "replace") if isinstance(text, bytes) else text[:60]
        raise SlurmParseError(
            f"{command} did not print JSON ({printable(str(exc))}); it began {quote_value(head)}"
        ) from exc
    if not isinstance(doc, dict):
        raise SlurmParseError(f"{command} printed JSON that is not an object")
    # sacct's "Nothing found with query" (9003) is an empty result, not a failure.
    listed = doc.get("errors") or []
    if not isinstance(listed, list):
        raise SlurmParseError(f"{command} printed an 'errors' value that is not a list")
    errors = [e for e in listed if _map(e).get("error_number") != NOTHING_FOUND]
    if errors:
        first = errors[0]
        text_ = first.get("error") or first.get("description") if isinstance(first, dict) else None
        raise SlurmError(f"{command} reported an error: {printable(str(text_ or first))[:200]}")
    return doc


def _items(doc: Mapping[str, Any], key: str, command: str) -> Iterable[Mapping[str, Any]]:
    items = doc.get(key)
    if not isinstance(items, list):
        raise SlurmParseError(f"{command} printed no {key!r} list")
    return (item for item in items if isinstance(item, Mapping))


def _tres_count(entries: Any, kind: str) -> int | None:
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("type") == kind:
            return field_int(entry.get("count"))
    return None


def exit_from_status(value: Any) -> tuple[int | None, int | None]:
    """(exit code, signal) from a raw wait status or a {"status", "return_code", ...} dict."""
    if isinstance(value, Mapping):
        signal = value.get("signal")
        sig = field_int(signal.get("signal_id")) if isinstance(signal, Mapping) else None
        return field_int(value.get("return_code")), sig
    status = field_int(value)
    if status is None:
        return None, None
    return (status >> 8) & 0xFF, (status & 0x7F) or None


# --- sacct ------------------------------------------------------------------------------------

#: Steps that are not the application's tasks (the batch script, the extern container).
HELPER_STEPS = frozenset({"batch", "extern", "interactive"})


def _sacct_tasks(steps: Any) -> int | None:
    """The most tasks of any application step (sacct's NTasks of the ``srun`` steps)."""
    if not isinstance(steps, list):
        return None
    counts = []
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        name = field_str(_map(step.get("step")).get("name"))
        count = field_int(_map(step.get("tasks")).get("count"))
        if name not in HELPER_STEPS and count is not None and count >= 1:
            counts.append(count)
    return max(counts) if counts else None


def _sacct_job(job: Mapping[str, Any], exit_codes_reliable: bool) -> JobRecord:
    times = _map(job.get("time"))
    comment = _map(job.get("comment"))
    wckey = job.get("wckey")
    tres = _map(job.get("tres"))
    exit_code, signal = (
        exit_from_status(job.get("exit_code")) if exit_codes_reliable else (None, None)
    )
    start, end = field_time(times.get("start")), field_time(times.get("end"))
    return JobRecord(
        job_id=field_int(job.get("job_id")) or 0,
        name=field_str(job.get("name")),
        user=field_str(job.get("user")),
        account=field_str(job.get("account")),
        partition=field_str(job.get("partition")),
        state=field_state(job.get("state")),
        source="sacct",
        wckey=field_str(wckey.get("wckey")) if isinstance(wckey, Mapping) else field_str(wckey),
        comment=_opt_str(comment.get("job")),
        admin_comment=_opt_str(comment.get("administrator")),
        exit_code=exit_code,
        exit_signal=signal,
        nodes_min=_tres_count(tres.get("requested"), "node"),
        nodes_max=None,
        nodes_alloc=field_int(job.get("allocation_nodes")) or 0,
        time_limit_min=field_int(times.get("limit")),
        submit_time=field_time(times.get("submission")),
        start_time=start,
        end_time=end,
        elapsed_s=field_int(times.get("elapsed")),
        workdir=_opt_str(job.get("working_directory")),
        script=None,
        priority=field_int(job.get("priority")),
        state_reason=field_str(_map(job.get("state")).get("reason")),
        cluster=field_str(job.get("cluster")),
        tasks=_sacct_tasks(job.get("steps")),
    )


def parse_sacct_json(text: str | bytes) -> list[JobRecord]:
    """Jobs from ``sacct --json`` (steps are ignored: a job is one observation)."""
    doc = _load(text, "sacct --json")
    plugin = _map(_map(doc.get("meta")).get("plugin"))
    reliable = field_str(plugin.get("type")) not in UNRELIABLE_EXIT_CODE_PLUGINS
    return [_sacct_job(job, reliable) for job in _items(doc, "jobs", "sacct --json")]


# --- squeue -----------------------------------------------------------------------------------


def _squeue_job(job: Mapping[str, Any]) -> JobRecord:
    state = field_state(job.get("job_state"))
    start = field_time(job.get("start_time"))
    end = field_time(job.get("end_time"))
    # Ran at all: a start time and nodes (a job cancelled while pending has a start time
    # but no nodes).
    started = (
        state not in ("PENDING", "") and start is not None and bool(field_str(job.get("nodes")))
    )
    node_count = field_int(job.get("node_count"))
    resources = job.get("job_resources")
    if started:
        hosts = (
            field_int(resources.get("allocated_hosts")) if isinstance(resources, Mapping) else None
        )
        nodes_alloc = hosts if hosts else (node_count or 0)
        nodes_min = nodes_max = None
    else:
        nodes_alloc = 0
        nodes_min = node_count
        max_nodes = field_int(job.get("max_nodes"))
        nodes_max = max_nodes if max_nodes else node_count
    final = bool(state) and state not in ("PENDING", "RUNNING", "SUSPENDED", "CONFIGURING")
    elapsed = end - start if final and started and end and start else None
    exit_code, signal = exit_from_status(job.get("exit_code"))
    if not state or state in ("PENDING", "RUNNING", "SUSPENDED", "CONFIGURING", "COMPLETING"):
        exit_code, signal = None, None
    return JobRecord(
        job_id=field_int(job.get("job_id")) or 0,
        name=field_str(job.get("name")),
        user=field_str(job.get("user_name")),
        account=field_str(job.get("account")),
        partition=field_str(job.get("partition")),
        state=state,
        source="squeue",
        wckey=field_str(job.get("wckey")),
        comment=_opt_str(job.get("comment")),
        admin_comment=_opt_str(job.get("admin_comment")),
        exit_code=exit_code,
        exit_signal=signal,
        nodes_min=nodes_min,
        nodes_max=nodes_max,
        nodes_alloc=nodes_alloc,
        time_limit_min=field_int(job.get("time_limit")),
        submit_time=field_time(job.get("submit_time")),
        start_time=start if started else None,
        end_time=end if final else None,
        elapsed_s=max(elapsed, 0) if elapsed is not None else None,
        workdir=_opt_str(job.get("current_working_directory")),
        script=field_str(job.get("command")) or None,
        priority=field_int(job.get("priority")),
        state_reason=field_str(job.get("state_reason")),
        cluster=field_str(job.get("cluster")),
        num_tasks=None if started else field_int(job.get("tasks")),
        ntasks_per_node=None if started else field_int(job.get("tasks_per_node")),
        node_names=_allocated_names(resources) if started else frozenset(),
    )


def _allocated_names(resources: Any) -> frozenset[str]:
    """The node names of squeue's ``job_resources.allocated_nodes``."""
    listed = resources.get("allocated_nodes") if isinstance(resources, Mapping) else None
    if not isinstance(listed, list):
        return frozenset()
    names = (field_str(n.get("nodename")) for n in listed if isinstance(n, Mapping))
    return frozenset(name for name in names if name)


def parse_squeue_json(text: str | bytes) -> list[JobRecord]:
    """Every job in ``squeue --json`` (22.05 ignores --jobs/--states: filter the result)."""
    doc = _load(text, "squeue --json")
    return [_squeue_job(job) for job in _items(doc, "jobs", "squeue --json")]


# --- sinfo ------------------------------------------------------------------------------------


def parse_sinfo_json(text: str | bytes) -> list[NodeRecord]:
    """Nodes from ``sinfo --json``."""
    doc = _load(text, "sinfo --json")
    nodes = []
    for node in _items(doc, "nodes", "sinfo --json"):
        state = node.get("state")
        if isinstance(state, list):  # 23.02+: ["IDLE", "DRAIN"]
            flags = tuple(field_str(s).lower() for s in state[1:])
            state = state[0] if state else ""
        else:
            flags = tuple(field_str(f).lower() for f in node.get("state_flags") or [])
        nodes.append(
            NodeRecord(
                name=field_str(node.get("name")),
                state=field_str(state).lower(),
                cpus=field_int(node.get("cpus")) or 0,
                alloc_cpus=field_int(node.get("alloc_cpus")) or 0,
                partitions=tuple(field_str(p) for p in node.get("partitions") or []),
                state_flags=flags,
                real_memory_mb=field_int(node.get("real_memory")),
            )
        )
    return nodes


# --- scontrol text ------------------------------------------------------------------------------


def parse_key_values(line: str) -> dict[str, str]:
    """``Key=Value`` words of one ``scontrol show ... -o`` line.

    A word without ``=`` continues the previous value (values such as WorkDir or Comment
    may hold spaces). The first occurrence of a key wins, so a free-text value printed later
    in the line (a comment holding `` JobState=X``) cannot override a field printed before
    it; fields printed after a free-text value are ambiguous in this format, which is why
    the adapter reads jobs from ``squeue --json`` instead.
    """
    fields: dict[str, str] = {}
    last: str | None = None
    for word in line.strip().split(" "):
        key, sep, value = word.partition("=")
        if sep and _KEY.fullmatch(key):
            if key in fields:
                last = None  # a repeated key: ignore it and what follows until the next key
                continue
            fields[key] = value
            last = key
        elif last is not None:
            fields[last] = f"{fields[last]} {word}"
    return {key: value.rstrip() for key, value in fields.items()}


def local_epoch(text: str) -> int:
    """Unix time of a timestamp in Slurm's standard text format (``2026-01-02T03:04:05``),
    read in the local zone as Slurm prints it; ValueError (OverflowError past the platform's
    range) when it is no such time. In the hour a daylight-saving change repeats, a time
    reads as its first occurrence."""
    return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def parse_time_minutes(text: str) -> int | None:
    """Slurm's ``[days-]hours:minutes:seconds`` (or minutes) as whole minutes; None if unlimited."""
    value = text.strip()
    if value.upper() in ("UNLIMITED", "INFINITE", "NONE", "N/A", "PARTITION_LIMIT", ""):
        return None
    days = 0
    if "-" in value:
        day_text, value = value.split("-", 1)
        days = int(day_text)
    parts = [int(p) for p in value.split(":")]
    if len(parts) == 1:
        return days * 1440 + parts[0]
    while len(parts) < 3:
        parts.insert(0, 0)
    hours, minutes, seconds = parts
    return days * 1440 + hours * 60 + minutes + (1 if seconds else 0)


def _limit(text: str | None) -> int | None:
    if text is None or text.upper() == "UNLIMITED":
        return None
    return int(text) if text.isascii() and text.isdigit() else None


def _names(text: str | None) -> tuple[str, ...] | None:
    """A partition's Allow list: None for ALL (or not shown), else its comma-separated names."""
    if text is None or text.upper() == "ALL":
        return None
    return tuple(name for name in text.split(",") if name)


def parse_scontrol_partitions(text: str) -> list[PartitionRecord]:
    """Partitions from ``scontrol show partition -o`` (one line each)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = parse_key_values(line)
        if "PartitionName" not in fields:
            raise SlurmParseError(
                f"scontrol show partition printed a line without PartitionName: {quote_value(line)}"
            )
        try:
            max_time = parse_time_minutes(fields.get("MaxTime", "UNLIMITED"))
        except ValueError:
            max_time = None
        out.append(
            PartitionRecord(
                name=fields["PartitionName"],
                nodes=fields.get("Nodes", ""),
                total_nodes=_limit(fields.get("TotalNodes")) or 0,
                state=fields.get("State", ""),
                default=fields.get("Default") == "YES",
                max_nodes=_limit(fields.get("MaxNodes")),
                max_time_min=max_time,
                allow_groups=_names(fields.get("AllowGroups")),
                allow_accounts=_names(fields.get("AllowAccounts")),
                deny_accounts=_names(fields.get("DenyAccounts")) or (),
                allow_qos=_names(fields.get("AllowQos")),
                deny_qos=_names(fields.get("DenyQos")) or (),
                root_only=fields.get("RootOnly") == "YES",
                req_resv=fields.get("ReqResv") == "YES",
            )
        )
    return out


#: sacctmgr fields parse_qos_limits reads, in this order.
QOS_FORMAT = "Name,MaxTRESPerJob,MaxWall,GrpTRES,MaxTRESPerUser,MaxTRESPerAccount"


def tres_nodes(text: str) -> int | None:
    """The node count in a TRES list ("cpu=4,node=2" -> 2), None when it has none; a count
    with its usage, as ``scontrol show assoc_mgr`` prints them ("node=2(1)", "node=N(0)":
    N is no limit), gives the count."""
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip() == "node":
            return _limit(value.split("(", 1)[0].strip())
    return None


def tres_nodes_used(text: str) -> int:
    """The node usage in a TRES list as ``scontrol show assoc_mgr`` prints it ("node=3(2)"
    -> 2, "node=N(0)" -> 0); 0 when it prints none."""
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip() == "node" and "(" in value:
            used = value.split("(", 1)[1].rstrip(")").strip()
            return int(used) if used.isascii() and used.isdigit() else 0
    return 0


def tighter(*limits: int | None) -> int | None:
    """The smallest of the limits that are set (None: none is)."""
    found = [limit for limit in limits if limit is not None]
    return min(found) if found else None


def parse_qos_limits(text: str) -> list[QosRecord]:
    """QOS per-job limits from ``sacctmgr -n -P show qos format=QOS_FORMAT``.

    Only administrators create QOSes, but a line that does not read is an error, not a
    guess: a wrong limit would size jobs Slurm then never starts.
    """
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) < 3 or not fields[0]:
            raise SlurmParseError(f"sacctmgr show qos printed {quote_value(line[:200])}")
        try:
            wall = parse_time_minutes(fields[2]) if fields[2] else None
        except ValueError as exc:
            raise SlurmParseError(
                f"sacctmgr show qos printed a MaxWall that is no time: {quote_value(fields[2])}"
            ) from exc
        group = tighter(*(tres_nodes(text) for text in fields[3:6]))
        out.append(QosRecord(fields[0], tres_nodes(fields[1]), wall, group))
    return out


def _assoc_record(words: dict[str, str]) -> AssocRecord:
    wall_text = words.get("MaxWallPJ", "")
    if wall_text and not (wall_text.isascii() and wall_text.isdigit()):
        raise SlurmParseError(
            f"scontrol show assoc_mgr printed a MaxWallPJ that is no minutes: "
            f"{quote_value(wall_text[:80])}"
        )
    return AssocRecord(
        account=words.get("Account", ""),
        # "aatest(1001)": the name, then the uid
        user=words.get("UserName", "").split("(", 1)[0],
        partition=words.get("Partition", ""),
        max_nodes_per_job=tres_nodes(words.get("MaxTRESPJ", "")),
        max_wall_min=int(wall_text) if wall_text else None,
        max_nodes_group=tres_nodes(words.get("GrpTRES", "")),
        nodes_in_use=tres_nodes_used(words.get("GrpTRES", "")),
    )


def parse_assoc_mgr(text: str) -> list[AssocRecord]:
    """Associations from ``scontrol show assoc_mgr users=U accounts=A flags=assoc``.

    Slurm 22.05 prints a header, then per association a ``ClusterName=... Account=A
    UserName=U(uid) Partition=P ...`` line and indented lines of ``Key=Value`` words, among
    them ``MaxWallPJ=<minutes>`` (empty: none) and ``MaxTRESPJ=node=2`` (a TRES list). The
    values are slurmctld's effective ones, parents' limits included (checked on the
    testbed: a user under an account whose parent sets the limits shows them).
    """
    out: list[AssocRecord] = []
    words: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("ClusterName="):
            if words is not None:
                out.append(_assoc_record(words))
            words = {}
        elif words is None or not line.startswith(" "):
            continue  # the header ("Current Association Manager state", ...)
        for word in line.split():
            key, sep, value = word.partition("=")
            if sep and key not in words:
                words[key] = value
    if words is not None:
        out.append(_assoc_record(words))
    return out


def pick_association(
    records: Iterable[AssocRecord], user: str, account: str, partition: str
) -> AssocRecord | None:
    """The association Slurm gives a job of (user, account, partition).

    The user's association for that partition when there is one, else the user's
    partition-less one (Slurm's lookup order); None when the user has none in the account.
    Its max_nodes_group is the tighter of its own GrpTRES node= and the account's (the
    account's own association, user ""), which its jobs share too; accounts above that
    are not read. Its nodes_free_group is the same with each limit less the nodes its
    association's running jobs hold (at least 0): a job pinned to more than that pends
    until the group's other jobs end, one pinned within it can start now.
    """
    mine = [r for r in records if r.user == user and r.account == account]
    exact = [r for r in mine if partition and r.partition == partition]
    general = [r for r in mine if not r.partition]
    found = exact or general
    if not found:
        return None
    groups = [found[0], *(r for r in records if r.account == account and not r.user)]
    return replace(
        found[0],
        max_nodes_group=tighter(*(r.max_nodes_group for r in groups)),
        nodes_free_group=tighter(
            *(
                max(0, r.max_nodes_group - r.nodes_in_use)
                for r in groups
                if r.max_nodes_group is not None
            )
        ),
    )


def parse_slurm_version(text: str) -> tuple[int, int, int]:
    """(major, minor, micro) from ``sinfo --version`` ("slurm-wlm 22.05.8", "slurm 23.11.1")."""
    match = _VERSION.search(text.strip())
    if match is None:
        raise SlurmParseError(f"cannot read a Slurm version from {quote_value(text.strip())}")
    major, minor, micro = match.groups()
    return int(major), int(minor), int(micro or 0)


def config_value(config_text: str, name: str) -> str:
    """One ``Name = value`` of ``scontrol show config`` ("" when absent)."""
    for line in config_text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == name:
            return value.strip()
    return ""


def parse_accounting_type(config_text: str) -> str:
    """``AccountingStorageType`` from ``scontrol show config`` ("" when absent)."""
    return config_value(config_text, "AccountingStorageType")


def parse_accounting_enforce(config_text: str) -> frozenset[str]:
    """``AccountingStorageEnforce``'s words from ``scontrol show config``, lower-cased
    ("associations,limits,qos" -> {associations, limits, qos}; "none" or absent -> {})."""
    text = config_value(config_text, "AccountingStorageEnforce").lower()
    return frozenset(w.strip() for w in text.split(",") if w.strip() not in ("", "none"))
