"""``adaptalloc explain JOBID``: why your job got its size and time limit.

    adaptalloc explain 1234 [--state-dir DIR] [--config FILE] [--format text|json]

For users, without root or a Redis password: it reads the explanation the daemon wrote for
the job into the caller's own directory of the state directory
(``<state_dir>/explain/<uid>/<job>.json``, which only that user and the daemon can reach:
plugin/daemon/explain_files.py). It never opens another user's directory, so it cannot show
another user's decision; root reads any. A job that has no explanation there is refused in
one line, exit 1: "not yours" when Slurm says the job belongs to someone else, else "no
explanation" (not moldable, opted out, decided more than ``decided_ttl_days`` ago, ...).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import click

from plugin.cli.common import emit_json, format_option, stdout_console
from plugin.config import load_config
from plugin.daemon.explain_files import EXPLAIN_DIR, explanation_path
from plugin.daemon.state import default_state_dir
from plugin.errors import InputError, printable
from plugin.slurm import SlurmError, run_command
from plugin.store.decisions import DecisionRecord, DecisionRecordError

__all__ = ["explain"]

_JOB_ID = re.compile(r"[0-9]{1,12}")
#: Largest explanation read (the daemon writes well under 4 kB).
MAX_BYTES = 64 * 1024
SLURM_TIMEOUT_S = 20.0


def _job_id(ctx: click.Context, param: click.Parameter, value: str) -> int:
    if not _JOB_ID.fullmatch(value.strip()):
        raise click.BadParameter(f"{printable(value)[:20]!r} is not a job id", ctx, param)
    return int(value)


def _read(path: Path) -> DecisionRecord | None:
    """The explanation at `path`; None when it is not there (or not readable by the caller)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    except OSError as exc:
        raise InputError(f"cannot read {printable(str(path))}: {exc.strerror}") from exc
    try:
        doc = json.loads(raw[:MAX_BYTES].decode("utf-8"))
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        return DecisionRecord.from_dict(doc)
    except (ValueError, UnicodeDecodeError, DecisionRecordError) as exc:
        raise InputError(f"the explanation {printable(str(path))} is damaged: {exc}") from exc


def _owner(job_id: int) -> int | None:
    """The uid of the job's user as Slurm tells the caller (squeue, then sacct); None when
    Slurm does not say (forgotten, hidden by PrivateData, Slurm unreachable)."""
    queries = (
        ("squeue", "--noheader", f"--jobs={job_id}", "--format=%U"),
        ("sacct", "--noheader", "--parsable2", "-X", f"--jobs={job_id}", "--format=UID"),
    )
    for query in queries:
        try:
            out = run_command(query, SLURM_TIMEOUT_S, os.environ)
        except (SlurmError, OSError):
            continue
        for line in out.splitlines():
            if line.strip().isdigit():
                return int(line.strip())
    return None


def find(state_dir: Path, job_id: int, uid: int) -> DecisionRecord | None:
    """The caller's explanation of `job_id`; root looks in every user's directory."""
    if uid != 0:
        return _read(explanation_path(state_dir, uid, job_id))
    try:
        folders = sorted(p for p in (state_dir / EXPLAIN_DIR).iterdir() if p.name.isdigit())
    except OSError:
        return None
    for folder in folders:
        found = _read(folder / f"{job_id}.json")
        if found is not None:
            return found
    return None


def _range(low: int | None, high: int | None) -> str:
    return "unknown" if low is None or high is None else f"{low}-{high}"


def lines(r: DecisionRecord) -> list[str]:
    """The explanation for people (every value escaped)."""
    p = printable
    advise = r.mode == "advise"
    head = f"Job {r.job_id}" + (f" (app {p(r.app)})" if r.app else "")
    out = [head + (": advise mode, nothing was changed." if advise else ".")]
    limit = f", time limit {r.time_limit_min} min" if r.time_limit_min else ""
    out.append(f"Asked for: {_range(r.min_nodes, r.max_nodes)} nodes{limit}.")
    who = "adaptalloc would have" if advise else "adaptalloc"
    size = r.size_text
    if r.action == "resize" and size is not None:
        new_limit = r.new_time_limit_min
        told = f", time limit {new_limit} min" if new_limit else ", time limit unchanged"
        where = f" in partition {p(r.new_partition)}" if r.new_partition else ""
        gave = "given it" if advise else "gave it"
        out.append(f"{who} {gave} {size} nodes{told}{where} (rule {p(r.rule or '-')}).")
    elif r.action == "keep":
        out.append(f"{who} kept it as submitted (rule {p(r.rule or '-')}).")
    else:
        out.append(f"{who} left it as submitted (reason code {p(r.fail_open or '-')}).")
    out.append(f"Why: {p(r.reason)}")
    if r.time_limit_reason:
        out.append(f"Time limit: {p(r.time_limit_reason)}")
    if advise:
        out.append(
            "The job ran as Slurm decided; this is what adaptalloc would do once this "
            "partition is enforced."
        )
    if r.status == "advised_late":
        out.append(
            "(The job had started before adaptalloc saw it: the decision is made on the "
            "cluster as it was a moment later.)"
        )
    return out


def _document(r: DecisionRecord) -> dict[str, Any]:
    doc = r.to_dict()
    doc.pop("version", None)
    return {k: v for k, v in doc.items() if v is not None or k in ("nodes", "rule")}


@click.command()
@click.argument("job_id", metavar="JOBID", callback=_job_id)
@click.option(
    "--state-dir",
    default=None,
    metavar="DIR",
    help="The daemon's state directory; default: [daemon] state_dir, /var/lib/adaptalloc.",
)
@click.option("--config", "config_path", default=None, metavar="FILE", help="adaptalloc TOML.")
@format_option
def explain(
    job_id: int, state_dir: str | None, config_path: str | None, output_format: str
) -> None:
    """Why your job JOBID got its size and time limit (advise mode: what adaptalloc would do).

    Only your own jobs: another user's is refused (exit 1).
    """
    where = (
        Path(state_dir)
        if state_dir
        else default_state_dir(load_config(config_path).daemon.state_dir)
    )
    uid = os.getuid()
    record = find(where, job_id, uid)
    if record is None:
        owner = _owner(job_id)
        if owner is not None and uid not in (0, owner):
            raise InputError(f"job {job_id} is not yours: adaptalloc explains only your own jobs")
        raise InputError(
            f"no explanation for job {job_id}: adaptalloc recorded no decision for it "
            "(not a moldable job, opted out, submitted while the daemon was down, or "
            "decided too long ago)"
        )
    if output_format == "json":
        emit_json(_document(record))
        return
    console = stdout_console()
    for line in lines(record):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
