"""Tasks and tasks per node from the real accounting (sacct on the testbed) and from a CSV:
an uneven spread keeps its tasks and nodes and records no tasks per node, never the busiest
node's count alone (plugin/learning/importers.py)."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .testbed import SlurmCLI, SubmitJob, adaptalloc, own, scratch_url

pytestmark = pytest.mark.integration


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def test_sacct_jobs_record_the_spread_that_is_true_of_every_node(
    redis_client: Any, slurm: SlurmCLI, submit_job: SubmitJob, tmp_path: Path
) -> None:
    name = f"spread-{uuid.uuid4().hex[:10]}"
    since = time.time() - 5
    # 4 tasks on 3 nodes (2, 1, 1) and on 2 nodes (2, 2), each an srun step (that lasts:
    # the learner refuses a run of 0 s).
    uneven = submit_job(f"--job-name={name}", "--nodes=3", "--ntasks=4", wrap="srun sleep 2")
    even = submit_job(f"--job-name={name}", "--nodes=2", "--ntasks=4", wrap="srun sleep 2")
    for job_id in (uneven, even):
        slurm.wait_sacct_job(
            job_id,
            {"COMPLETED"},
            where=lambda r: r["allocation_nodes"] > 0 and len(r.get("steps") or []) >= 2,
        )
    window = ["--since", stamp(since), "--until", stamp(time.time() + 5)]
    proc = adaptalloc("import", "sacct", *window, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    runs = CurveStore(connect(scratch_url())).observations(own(name))
    got = {r.job_id: (r.nodes, r.tasks, r.tasks_per_node) for r in runs}
    assert got == {str(uneven): (3, 4, None), str(even): (2, 4, 2)}


def test_a_csv_spread_is_recorded_as_true_or_refused(redis_client: Any, tmp_path: Path) -> None:
    study = tmp_path / "spread.csv"
    study.write_text("n,runtime,tasks,tasks_per_node\n4,100,16,4\n4,120,10,3\n2,150,,2\n")
    proc = adaptalloc("import", "csv", study, "--app", "spread-csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    runs = CurveStore(connect(scratch_url())).observations(AppKey("spread-csv"))
    assert sorted((r.nodes, r.tasks, r.tasks_per_node) for r in runs) == [
        (2, 4, 2),
        (4, 10, None),  # the busiest node's 3 is not recorded as every node's
        (4, 16, 4),
    ]
    bad = tmp_path / "bad.csv"
    bad.write_text("n,runtime,tasks,tasks_per_node\n4,100,16,4\n4,120,16,3\n")
    refused: subprocess.CompletedProcess[str] = adaptalloc(
        "import", "csv", bad, "--app", "spread-bad", cwd=tmp_path
    )
    assert refused.returncode != 0
    errors = [line for line in refused.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, refused.stderr
    assert "data row 2: 16 tasks on 4 nodes cannot have 3 tasks per node" in errors[0]
    assert "Traceback" not in refused.stderr
    assert CurveStore(connect(scratch_url())).observations(AppKey("spread-bad")) == []
