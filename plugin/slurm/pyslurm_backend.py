"""An optional backend that reads accounting through pyslurm instead of ``sacct --json``.

pyslurm links against libslurm and must match the installed Slurm's major.minor exactly
(pyslurm 22.5.x for Slurm 22.05, 23.2.x for 23.02, ...). PyPI's current pyslurm targets
Slurm 25.11 and Debian 12 ships Slurm 22.05, so on the project's testbed this backend is
*never selected*: `plugin.slurm.factory.slurm_reader` only picks it when ``import pyslurm``
works and its version matches ``sinfo --version``, and falls back to the CLI backend
otherwise.

It is deliberately small: only `finished_jobs` goes through pyslurm (its
``slurmdb_jobs().get(starttime=..., endtime=...)`` of the 22.5/23.x API, which saves one
process and one JSON document per poll on a busy slurmdbd); everything else is inherited
from the CLI backend. The mapping in `job_from_pyslurm_db` follows pyslurm 22.5's
``slurmdb_jobs.get`` dictionaries (keys ``jobid``, ``jobname``, ``alloc_nodes``, ``elapsed``,
``end``, ``exitcode`` as a raw wait status, ``state_str``, ...). pyslurm does not report
job comments there, so tags in comments need the CLI path's squeue enrichment.
This backend is not exercised against a live pyslurm here; see tests/unit/plugin/
test_slurm_parse.py for what is tested (selection, and the mapping on a dictionary shaped
like pyslurm 22.5's).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from types import ModuleType
from typing import Any

from plugin.errors import printable
from plugin.slurm.cli_backend import DEFAULT_TIMEOUT_S, CliSlurmReader, Runner, slurm_time
from plugin.slurm.errors import SlurmError
from plugin.slurm.parse import exit_from_status, field_int, field_state, field_str, field_time
from plugin.slurm.records import FINAL_STATES, JobRecord

__all__ = ["PyslurmReader", "job_from_pyslurm_db"]


#: Step ids from here up are Slurm's helper steps, not the application's tasks (slurm.h:
#: SLURM_INTERACTIVE_STEP 0xfffffffa, SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT, SLURM_PENDING_STEP).
_FIRST_HELPER_STEP_ID = 0xFFFFFFFA


def _db_tasks(steps: Any) -> int | None:
    """The most tasks of any application step: pyslurm 22.5 keys a job's ``steps`` by step id,
    each with its ``ntasks`` (the same rule as sacct's NTasks in parse.py)."""
    if not isinstance(steps, Mapping):
        return None
    counts = [
        count
        for step_id, step in steps.items()
        if isinstance(step_id, int)
        and 0 <= step_id < _FIRST_HELPER_STEP_ID
        and isinstance(step, Mapping)
        and (count := field_int(step.get("ntasks"))) is not None
        and count >= 1
    ]
    return max(counts) if counts else None


def job_from_pyslurm_db(job: Mapping[str, Any]) -> JobRecord:
    """One pyslurm 22.5 ``slurmdb_jobs().get()`` value as a JobRecord."""
    exit_code, signal = exit_from_status(job.get("exitcode"))
    return JobRecord(
        job_id=field_int(job.get("jobid")) or 0,
        name=field_str(job.get("jobname")),
        user=field_str(job.get("user")),
        account=field_str(job.get("account")),
        partition=field_str(job.get("partition")),
        state=field_state(job.get("state_str")),
        source="pyslurm",
        wckey=field_str(job.get("wckey")),
        comment=None,
        admin_comment=None,
        exit_code=exit_code,
        exit_signal=signal,
        nodes_alloc=field_int(job.get("alloc_nodes")) or 0,
        time_limit_min=field_int(job.get("timelimit")),
        submit_time=field_time(job.get("submit")),
        start_time=field_time(job.get("start")),
        end_time=field_time(job.get("end")),
        elapsed_s=field_int(job.get("elapsed")),
        workdir=field_str(job.get("work_dir")) or None,
        cluster=field_str(job.get("cluster")),
        tasks=_db_tasks(job.get("steps")),
    )


class PyslurmReader(CliSlurmReader):
    """CLI backend with `finished_jobs` read through pyslurm's slurmdb API."""

    backend = "pyslurm"

    def __init__(
        self, module: ModuleType, timeout_s: float = DEFAULT_TIMEOUT_S, runner: Runner | None = None
    ) -> None:
        super().__init__(timeout_s=timeout_s, runner=runner)
        self._pyslurm = module

    def finished_jobs(
        self, since: float, until: float, states: Collection[str] | None = None
    ) -> list[JobRecord]:
        wanted = set(states) if states else set(FINAL_STATES)
        first, last = math.floor(since), math.floor(until)
        try:
            found = self._pyslurm.slurmdb_jobs().get(
                starttime=slurm_time(first).encode(), endtime=slurm_time(last).encode()
            )
        except (ValueError, RuntimeError, OSError) as exc:  # pyslurm raises ValueError
            raise SlurmError(f"pyslurm slurmdb_jobs failed: {printable(str(exc))[:200]}") from exc
        records = [job_from_pyslurm_db(value) for value in dict(found).values()]
        out = [
            job
            for job in records
            if job.state in wanted and job.end_time is not None and first <= job.end_time <= last
        ]
        return sorted(out, key=lambda job: (job.end_time or 0, job.job_id))
