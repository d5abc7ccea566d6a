"""The demo's A/B table (deploy/demo.sh): the same burst run twice on the local Slurm, once in
advise mode (Slurm's own sizes) and once enforced (adaptalloc's), compared from sacct.

    demo_ab.py --advise IDS --enforce IDS --decisions-advise FILE --decisions-enforce FILE
               --json OUT

IDS are comma-separated job ids; the decisions files are ``adaptalloc decisions --format json``
of each run. It reads sacct (argument lists, no shell; times as epoch seconds through
SLURM_TIME_FORMAT), waits until accounting has every job's end, prints the table and the
jobs side by side, and writes the same numbers to OUT. Per run (`summary`):

* mean turnaround: mean of end - submit;   * mean wait: mean of start - submit;
* makespan: last end - first submit;        * node-hours: sum of nodes x (end - start) / 3600.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FIELDS = "JobIDRaw,Submit,Start,End,NNodes,State"
#: How long to wait for slurmdbd to have every job's end.
SACCT_WAIT_S = 60.0
EMULATED = (
    "The applications are emulated: each job sleeps for its application's runtime at the "
    "size it got, from a curve through real strong-scaling studies (tests/data/scaling, "
    "runtimes scaled to T(1) = 16 s); the scheduling, sizes, waits and node counts are the "
    "real Slurm's, on this machine's 8 virtual nodes."
)


@dataclass(frozen=True)
class Run:
    """One job as sacct saw it (epoch seconds)."""

    job_id: int
    submit: int
    start: int
    end: int
    nodes: int
    state: str


def parse_sacct(text: str) -> dict[int, Run]:
    """``sacct -X -n -P -o FIELDS`` with SLURM_TIME_FORMAT=%s; rows not yet ended are left out."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 6 or not all(p.isdigit() for p in parts[:5]):
            continue
        job, submit, start, end, nodes = (int(p) for p in parts[:5])
        out[job] = Run(job, submit, start, end, nodes, parts[5])
    return out


def summary(runs: list[Run]) -> dict[str, float]:
    """The four figures of one run (module docstring)."""
    if not runs:
        raise ValueError("no jobs")
    return {
        "jobs": len(runs),
        "mean_turnaround_s": round(sum(r.end - r.submit for r in runs) / len(runs), 1),
        "mean_wait_s": round(sum(r.start - r.submit for r in runs) / len(runs), 1),
        "makespan_s": max(r.end for r in runs) - min(r.submit for r in runs),
        "node_hours": round(sum(r.nodes * (r.end - r.start) for r in runs) / 3600.0, 4),
    }


def sacct(ids: list[int]) -> dict[int, Run]:
    """Every job's row, waiting up to SACCT_WAIT_S for slurmdbd to record their ends."""
    env = dict(os.environ, SLURM_TIME_FORMAT="%s")
    argv = ["sacct", "-X", "-n", "-P", "-o", FIELDS, "-j", ",".join(map(str, ids))]
    deadline = time.monotonic() + SACCT_WAIT_S
    while True:
        text = subprocess.run(  # noqa: S603 - fixed argument list, no shell
            argv, capture_output=True, text=True, env=env, check=False, timeout=60
        ).stdout
        found = parse_sacct(text)
        if set(ids) <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


def _ids(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _decisions(path: str) -> dict[int, dict[str, Any]]:
    return {d["job_id"]: d for d in json.loads(Path(path).read_text())["decisions"]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("advise", "enforce", "decisions-advise", "decisions-enforce", "json"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    from rich import box  # noqa: PLC0415 - the venv's; imported once the arguments are read
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    runs = {"advise": _ids(args.advise), "enforce": _ids(args.enforce)}
    rows = {name: sacct(ids) for name, ids in runs.items()}
    missing = [j for name, ids in runs.items() for j in ids if j not in rows[name]]
    if missing:
        print(f"demo_ab: sacct has no end for jobs {missing}", file=sys.stderr)
        return 1
    figures = {name: summary(list(rows[name].values())) for name in runs}
    console = Console(width=110)
    table = Table(box=box.SIMPLE_HEAD, title="The same 9 jobs, twice (from sacct)")
    table.add_column("")
    table.add_column("advise: Slurm's sizes", justify="right")
    table.add_column("enforce: adaptalloc's", justify="right")
    table.add_column("change", justify="right")
    for key, label, unit in (
        ("mean_turnaround_s", "mean turnaround", "s"),
        ("mean_wait_s", "mean wait", "s"),
        ("makespan_s", "makespan", "s"),
        ("node_hours", "node-hours", ""),
    ):
        a, b = figures["advise"][key], figures["enforce"][key]
        change = f"{(b - a) / a * 100:+.0f}%" if a else "-"
        table.add_row(label, f"{a:g} {unit}".strip(), f"{b:g} {unit}".strip(), change)
    console.print(table)
    console.print(EMULATED, soft_wrap=False)

    advice, enforced = _decisions(args.decisions_advise), _decisions(args.decisions_enforce)
    jobs = Table(box=box.SIMPLE_HEAD, title="Job by job: nodes x seconds run (wait)")
    for column in (
        "app",
        "advise: Slurm gave",
        "adaptalloc would give",
        "enforce: adaptalloc gave",
    ):
        jobs.add_column(column, justify="left" if column == "app" else "right")
    per_job = []
    for a_id, b_id in zip(runs["advise"], runs["enforce"], strict=True):
        a, b = rows["advise"][a_id], rows["enforce"][b_id]
        would = advice.get(a_id, {})
        app = str(would.get("app") or enforced.get(b_id, {}).get("app") or "-")
        size = would.get("nodes") or f"kept ({would.get('min_nodes')}-{would.get('max_nodes')})"
        jobs.add_row(
            app,
            f"{a.nodes} x {a.end - a.start} s ({a.start - a.submit} s)",
            str(size),
            f"{b.nodes} x {b.end - b.start} s ({b.start - b.submit} s)",
        )
        per_job.append({"app": app, "advise": asdict(a), "would": would.get("nodes"),
                        "enforce": asdict(b)})  # fmt: skip
    console.print(jobs)
    Path(args.json).write_text(
        json.dumps({"emulated": EMULATED, "runs": figures, "jobs": per_job}, indent=1) + "\n"
    )
    console.print(f"The same numbers as JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
