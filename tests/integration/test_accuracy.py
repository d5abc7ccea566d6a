"""Live accuracy end to end on the testbed: a curve imported for an app, moldable jobs held,
sized and run (each sleeping what the curve predicts for the size it got), the daemon's
learner scoring them once they finished, and ``adaptalloc report --format json`` and the
metrics endpoint showing the scores.

Beside them one job runs as Slurm sized it with a decision record in advise mode (what the
daemon would have done, written here as advise mode writes it: the record with
``"mode": "advise"``): the report's "what sizing would have bought" counts it.
"""

from __future__ import annotations

import json
import math
import re
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

import predictor
from plugin.appkey import AppKey
from plugin.daemon.decider import DIAGNOSTICS
from plugin.daemon.record import DecisionRecorder
from plugin.learning.importers import import_csv
from plugin.learning.learner import refit_app
from plugin.slurm import CliSlurmReader
from plugin.store.connection import connect
from plugin.store.curves import CurveStore
from plugin.store.decisions import DecisionRecord
from plugin.store.score_stream import ScoreStore

from .daemon_harness import DaemonProcess
from .testbed import SlurmCLI, SubmitJob, adaptalloc, free_port, scratch_url

pytestmark = pytest.mark.integration

#: The app's runtimes: T(n) = 3 + 21/n seconds (Amdahl, 12.5% serial), runs at 1 to 8 nodes.
SIZES = (1, 2, 4, 8)
#: Each job sleeps what the curve says for its size ($SLURM_NNODES), to 0.1 s.
SLEEP = 'sleep "$(awk -v n="$SLURM_NNODES" \'BEGIN { printf "%.1f", 3 + 21 / n }\')"'
#: How long the learner may take to score the finished jobs (it polls every 2 s).
SCORED_TIMEOUT_S = 120.0


def learn(app: str, tmp_path: Path) -> predictor.Curve:
    """The site's curve of `app`, fitted from an imported scaling study."""
    study = tmp_path / "study.csv"
    study.write_text("n,runtime\n" + "".join(f"{n},{3 + 21 / n}\n" for n in SIZES))
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse(app)
    import_csv(store, study, key)
    assert refit_app(store, key).status == "written"
    curve = store.curve(key)
    assert curve is not None
    return curve


def metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        return str(reply.read().decode())


def sample(text: str, name: str, labels: str = "") -> float | None:
    """One sample's value from Prometheus' text format (`labels` as it prints them)."""
    pattern = rf"^{re.escape(name)}{re.escape(labels)} (\S+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return None if found is None else float(found.group(1))


def test_finished_jobs_are_scored_in_the_report_and_the_metrics(
    daemon_factory: Callable[..., DaemonProcess],
    submit_job: SubmitJob,
    slurm: SlurmCLI,
    tmp_path: Path,
) -> None:
    app = f"acc-{uuid.uuid4().hex[:8]}"
    curve = learn(app, tmp_path)
    port = free_port()
    made = daemon_factory(args=("--metrics-port", str(port)))
    made.config_path.write_text(
        made.config_path.read_text().replace(
            "learn = false\n", "learn = true\nlearn_interval_s = 2.0\n"
        )
    )
    daemon = made.start()

    sized = [
        submit_job("--nodes=1-4", "--time=5", f"--comment=adaptalloc:v1 app={app}", wrap=SLEEP)
        for _ in range(2)
    ]
    for job in sized:
        decision = daemon.wait_decision(job)
        assert decision["action"] == "resize"
        assert decision["curve_app"] == app  # the site's curve decided the user's job
        assert "curve_doc" not in decision  # the log line names the curve; the stream has it
    stored = CurveStore(connect(scratch_url())).decisions(None, 10)
    snapshot = {k: v for k, v in curve.to_dict().items() if k not in DIAGNOSTICS}
    assert {d.record.job_id: d.record.curve_doc for d in stored} == dict.fromkeys(sized, snapshot)

    # Advise mode: a job Slurm runs on 2 nodes, for which the daemon would have advised 1.
    advised = submit_job("--nodes=2", "--time=5", f"--comment=adaptalloc:v1 app={app}", wrap=SLEEP)
    (queued,) = [j for j in CliSlurmReader().jobs() if j.job_id == advised]
    record = DecisionRecord(
        job_id=advised,
        app=app,
        user=queued.user,
        partition=queued.partition,
        min_nodes=1,
        max_nodes=4,
        action="resize",
        nodes=1,
        nodes_upto=1,
        rule="efficiency",
        submit_time=queued.submit_time,
        curve_doc=curve.to_dict(),
    )
    recorder = DecisionRecorder(lambda: connect(scratch_url()))
    assert recorder.record([record], [{**record.to_dict(), "mode": "advise"}]) == 1

    jobs = [*sized, advised]
    elapsed = {
        job: slurm.wait_sacct_job(job, {"COMPLETED"}, where=lambda r: r["allocation_nodes"] > 0)
        for job in jobs
    }
    scores = ScoreStore(connect(scratch_url()))
    slurm.wait_for(
        "the learner to score the finished jobs",
        lambda: len(scores.read(app=app)) == len(jobs),
        timeout=SCORED_TIMEOUT_S,
    )
    by_job = {s.job_id: s for s in scores.read(app=app)}
    for job in jobs:
        s = by_job[job]
        assert s.nodes == elapsed[job]["allocation_nodes"]
        assert s.runtime_s == elapsed[job]["time"]["elapsed"]
        # The prediction of the curve that decided, at the size the job ran on.
        assert s.predicted_s == pytest.approx(float(curve.runtime(float(s.nodes))))
        lower, upper = curve.runtime_interval(float(s.nodes))
        assert (s.lower_s, s.upper_s) == pytest.approx((float(lower[0]), float(upper[0])))
        assert s.error == pytest.approx(abs(s.predicted_s - s.runtime_s) / s.runtime_s)
    assert by_job[advised].mode == "advise"
    assert by_job[advised].advised() is not None
    assert {by_job[j].mode for j in sized} == {"enforce"}

    shown = adaptalloc("report", app, "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    live = json.loads(shown.stdout)["accuracy"]
    assert live["kept"]["jobs"] == len(jobs)
    assert {p["job_id"] for p in live["points"]} == set(jobs)
    for point in live["points"]:
        assert point["predicted_s"] == pytest.approx(by_job[point["job_id"]].predicted_s)
        assert point["actual_s"] == by_job[point["job_id"]].runtime_s
    modes = {b["mode"]: b for b in live["bought"]}
    assert modes["advise"]["jobs"] == 1
    assert modes["advise"]["moved"] == 1  # advised 1 node, Slurm ran it on 2
    one = float(curve.runtime(1.0))
    assert modes["advise"]["advised_node_hours"]["estimate"] == pytest.approx(one / 3600.0)
    assert modes["enforce"]["jobs"] == len(sized)

    fleet = adaptalloc("report", "--all", "--format", "json", cwd=tmp_path)
    assert fleet.returncode == 0, fleet.stderr
    doc = json.loads(fleet.stdout)
    assert dict(doc["accuracy"]["apps"][0])["app"] == app

    def exported() -> bool:
        text = metrics(port)
        counted = sum(
            sample(text, "adaptalloc_predictions_scored_total", f'{{interval="{place}"}}') or 0.0
            for place in ("inside", "above", "below", "unknown")
        )
        window = sample(text, "adaptalloc_app_accuracy_window_jobs", f'{{app="{app}"}}')
        return counted == len(jobs) and window == len(jobs)

    slurm.wait_for("the metrics to show the scores", exported, timeout=30.0)
    text = metrics(port)
    assert sample(text, "adaptalloc_prediction_error_ratio_count") == len(jobs)
    coverage = sample(text, "adaptalloc_accuracy_coverage")
    assert coverage is not None
    inside = sum(1 for s in by_job.values() if s.where == "inside")
    assert coverage == pytest.approx(inside / len(jobs))
    median = sample(text, "adaptalloc_app_accuracy_error_ratio", f'{{app="{app}",quantile="0.5"}}')
    assert median is not None
    assert math.isfinite(median)
    daemon.stop()
