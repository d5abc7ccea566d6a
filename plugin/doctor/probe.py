"""Checks that need slurmctld's cooperation: the daemon's account may do what the daemon does
(tried on a job of its own, held and cancelled), and this host's clock agrees with slurmctld's.

The probe job: ``sbatch --hold --begin=now+1hour`` (held by its submitter, so job_submit.lua
leaves it alone; the begin time keeps it from starting once released), then exactly the
daemon's writes through the same writer (``scontrol update AdminComment=...``, ``NumNodes``
and ``TimeLimit``, ``scontrol release``), then ``scancel``, whatever happened. Its SubmitTime,
stamped by slurmctld, against this host's clock before and after submitting gives the clock
offset to one second.

Acting on one's own job is not acting on other users' jobs: the level Slurm grants for those
comes from ``plugin.slurm.privileges`` (SlurmUser, root, sacctmgr AdminLevel) and is judged
in the same check.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from plugin.doctor.check import FAIL, OK, WARN, Check
from plugin.errors import printable
from plugin.slurm.errors import SlurmError
from plugin.slurm.parse import parse_key_values
from plugin.slurm.privileges import check_privileges
from plugin.slurm.writer import CliSlurm, Resize

__all__ = ["ProbeResult", "clock_offset", "daemon_privileges", "judge_offset", "run_probe"]

PROBE_NAME = "adaptalloc-doctor-probe"
PROBE_COMMENT = "adaptalloc:v1:doctor probe"
#: The daemon's writes, in the order it makes them.
STEPS = ("AdminComment", "NumNodes", "TimeLimit", "release")


@dataclass(frozen=True)
class ProbeResult:
    """What the probe job showed: the steps refused (with Slurm's words), and the clock."""

    job_id: int | None
    refused: tuple[tuple[str, str], ...]
    submit_error: str = ""
    #: Seconds slurmctld's clock is ahead of this host's (None: not measured).
    offset_s: float | None = None


def _submit_time(fields: dict[str, str]) -> float | None:
    """slurmctld's SubmitTime (its local time, whole seconds) as Unix seconds."""
    text = fields.get("SubmitTime", "")
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
    except (ValueError, OverflowError):
        return None


def judge_offset(before: float, after: float, stamped: float) -> float:
    """Seconds slurmctld is ahead (+) or behind (−) of this host, given that it stamped
    `stamped` (whole seconds, truncated) while this host's clock ran from `before` to
    `after`: 0 when the stamp fits that window."""
    low, high = math.floor(before), after
    if stamped < low:
        return stamped - low
    if stamped > high:
        return stamped - high
    return 0.0


def run_probe(slurm: CliSlurm, clock: Callable[[], float] = time.time) -> ProbeResult:
    """Submit, change and cancel the probe job (see the module docstring)."""
    before = clock()
    try:
        out = slurm.run(
            "sbatch",
            "--parsable",
            "--hold",
            "--begin=now+1hour",
            "--nodes=1",
            "--time=2",
            f"--job-name={PROBE_NAME}",
            "--output=/dev/null",
            "--chdir=/",
            "--wrap",
            "true",
        )
    except SlurmError as exc:
        return ProbeResult(None, (), submit_error=str(exc))
    after = clock()
    try:
        job_id = int(out.strip().split(";", 1)[0])
    except ValueError:
        return ProbeResult(None, (), submit_error=f"sbatch said {printable(out[:80])!r}")
    refused: list[tuple[str, str]] = []
    offset: float | None = None
    try:
        try:
            stamped = _submit_time(
                parse_key_values(slurm.run("scontrol", "show", "job", "-o", str(job_id)))
            )
            if stamped is not None:
                offset = judge_offset(before, after, stamped)
        except SlurmError:
            offset = None
        actions: dict[str, Callable[[], None]] = {
            "AdminComment": lambda: slurm.set_admin_comment([job_id], PROBE_COMMENT),
            "NumNodes": lambda: slurm.resize([Resize(job_id, 1, 1)]),
            "TimeLimit": lambda: slurm.set_time_limit(job_id, 1),
            "release": lambda: slurm.release([job_id]),
        }
        for step in STEPS:
            try:
                actions[step]()
            except SlurmError as exc:
                refused.append((step, str(exc)))
    finally:
        try:
            slurm.run("scancel", str(job_id))
        except SlurmError as exc:
            refused.append(("scancel", str(exc)))
    return ProbeResult(job_id, tuple(refused), offset_s=offset)


def daemon_privileges(slurm: CliSlurm, probe: ProbeResult | None) -> Check:
    """This account may set AdminComment, NumNodes, TimeLimit and release: on its own probe
    job (Slurm's answer) and, by its Slurm level, on other users' jobs."""
    level = check_privileges(slurm.run)
    problems: list[str] = []
    if probe is None:
        tried = "probe job not run (--no-probe)"
    elif probe.job_id is None:
        problems.append(f"the probe job could not be submitted: {probe.submit_error}")
        tried = ""
    elif probe.refused:
        problems.extend(f"{step} refused: {why}" for step, why in probe.refused)
        tried = ""
    else:
        tried = f"probe job {probe.job_id}: {', '.join(STEPS)} accepted, then cancelled"
    if level.problem():
        problems.append(str(level.problem()))
    if problems:
        return Check(
            "daemon_privileges",
            FAIL,
            f"account {printable(level.user)}: " + "; ".join(problems),
            f"run the daemon as SlurmUser or root, or `sacctmgr modify user "
            f"{printable(level.user)} set adminlevel=Admin` (an Operator may not set "
            "AdminComment); run the doctor as the daemon's account",
        )
    return Check(
        "daemon_privileges",
        OK,
        f"account {printable(level.user)} (Slurm level {level.level}); {tried}",
    )


def clock_offset(probe: ProbeResult | None, max_age: int) -> Check:
    """This host's clock against slurmctld's (the hook ages the heartbeat by slurmctld's)."""
    if probe is None or probe.offset_s is None:
        return Check(
            "clock_offset",
            WARN,
            "not measured (needs the probe job's SubmitTime)",
            "run the doctor without --no-probe, as the daemon's account",
        )
    offset = probe.offset_s
    seen = (
        f"slurmctld's clock is {abs(offset):.0f} s {'ahead of' if offset > 0 else 'behind'} "
        "this host's"
        if offset
        else "slurmctld's clock agrees with this host's (to the second)"
    )
    fix = "synchronise both hosts' clocks (chrony or systemd-timesyncd)"
    if abs(offset) >= max_age:
        return Check(
            "clock_offset", FAIL, f"{seen}: the hook sees the heartbeat stale or future", fix
        )
    if abs(offset) > 2:
        return Check("clock_offset", WARN, f"{seen}: heartbeats lose that much of {max_age} s", fix)
    return Check("clock_offset", OK, seen)
