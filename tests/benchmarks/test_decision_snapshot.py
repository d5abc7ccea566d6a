"""What live accuracy costs the daemon: the deciding curve's document in each decision record.

The daemon puts the document of the curve that sized a job into its decision record
(plugin/daemon/decider.py, `Outcome.curve_doc`), so that the learner can score the finished
run against it (plugin/learning/scoring.py). This benchmark measures, side by side in one
run on the same jobs, the daemon's work per job with the snapshot and without it (the
document step replaced by nothing, as before it existed). The document leaves the curve's
diagnostics out (nothing of the prediction reads them): 47 to 544 bytes of these curves'
397 to 1,068.

* the decision path in process: `Decider.decide` (the curve read from an in-memory store;
  the document made once per curve per batch of 100 jobs), `decision_record`, its
  `to_dict`, the JSON text the recorder sends to Redis, and the log line's field copy;
* the stored record's size in bytes of JSON;
* and, for the learner, one finished job's scoring (`score_job`: the document read back as
  a curve, its runtime and 90% interval at two sizes), which runs off the decision path.

The curves are fitted from every real strong-scaling study of tests/data/scaling (13, as
the learner stores them: diagnostics and model choice included); the jobs ask for the
ranges moldable jobs ask for (1-16 to 32-1024 nodes) on an idle 2,048-node cluster, apps
taken in turn, so a batch of 100 jobs holds 13 apps. Times are time.perf_counter on a
shared machine: printed, never asserted. Quick mode 2,000 jobs;
ADAPTALLOC_FULL_BENCH=1 20,000.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

import policies
import predictor
from plugin.appkey import AppKey, AppKeyRule
from plugin.daemon import marks
from plugin.daemon.decider import DIAGNOSTICS, Budget, CurveSource, Decider
from plugin.daemon.record import decision_record
from plugin.learning.learner import curve_from_fit
from plugin.learning.scoring import score_job
from plugin.slurm import JobRecord
from plugin.store.curves import CurveRecord

from .results import full_run, mode_note, record

pytestmark = pytest.mark.benchmark

FULL = full_run()
JOBS = 20_000 if FULL else 2_000
BATCH = 100
DATA = Path(__file__).resolve().parents[1] / "data" / "scaling"
RANGES = [(1, 16), (2, 32), (4, 64), (8, 128), (16, 256), (32, 512), (32, 1024)]
NOW = 1_800_000_000


class MemoryStore:
    """The two CurveStore calls the decider makes, from memory: each app's curve record."""

    def __init__(self, records: dict[str, CurveRecord]) -> None:
        self.records = records

    def curve_record(self, app: AppKey, node_type: str | None = None) -> CurveRecord | None:
        return self.records.get(str(app)) if node_type is None else None

    def limit_safety(self, app: AppKey) -> float:
        return 1.0


class NoSnapshot(CurveSource):
    """The decision path as it was before the snapshot: no document made."""

    def document(self, curve: Any) -> Any:
        return None


def curves() -> dict[str, CurveRecord]:
    out = {}
    for path in sorted(DATA.glob("*.csv")):
        runs = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(0, 1))
        curve = curve_from_fit(predictor.fit(runs[:, 0], runs[:, 1]))
        out[path.stem.replace("_", "-")[:40]] = CurveRecord(curve, 3, 3, None, 6, "adept", True)
    return out


def jobs(apps: list[str]) -> list[JobRecord]:
    out = []
    for k in range(JOBS):
        lo, hi = RANGES[k % len(RANGES)]
        out.append(
            JobRecord(
                job_id=1000 + k,
                name=apps[k % len(apps)],
                user="ann",
                account="phys",
                partition="batch",
                state="PENDING",
                source="squeue",
                comment="",
                admin_comment=marks.HELD,
                nodes_min=lo,
                nodes_max=hi,
                time_limit_min=600,
                submit_time=NOW - 5,
            )
        )
    return out


def idle(_: JobRecord) -> policies.ClusterState:
    return policies.ClusterState(idle_nodes=2048, pending_demand_nodes=0, total_nodes=2048)


def decider(source: type[CurveSource], store: MemoryStore) -> Decider:
    made = Decider(AppKeyRule(), policies.default_config(), source(lambda: store), Budget())  # type: ignore[arg-type, return-value]
    made.limits_enforced = False
    return made


def per_job(made: Decider, batch: list[JobRecord]) -> tuple[list[float], list[int]]:
    """µs per job and bytes per record for one batch, as the daemon's loop handles them."""
    made.curves.begin_batch()
    times, sizes = [], []
    for job in batch:
        start = time.perf_counter()
        outcome = made.decide(job, idle)
        doc = decision_record(outcome, "released", 0.1, float(NOW)).to_dict()
        text = json.dumps(doc, separators=(",", ":"), default=str)
        logged = {k: v for k, v in doc.items() if k != "curve_doc"}
        times.append(1e6 * (time.perf_counter() - start))
        sizes.append(len(text.encode()))
        assert logged["job_id"] == job.job_id
    return times, sizes


def test_decision_snapshot_cost(capsys: pytest.CaptureFixture[str]) -> None:
    records = curves()
    store = MemoryStore(records)
    apps = sorted(records)
    mix = jobs(apps)
    with_doc, without = decider(CurveSource, store), decider(NoSnapshot, store)
    per_job(with_doc, mix[:BATCH])  # imports and first-call caches out of the timing
    per_job(without, mix[:BATCH])
    timed: dict[str, list[float]] = {"with": [], "without": []}
    size: dict[str, list[int]] = {"with": [], "without": []}
    for first in range(0, len(mix), BATCH):  # the two alternate batch by batch
        batch = mix[first : first + BATCH]
        for name, made in (("with", with_doc), ("without", without)):
            t, s = per_job(made, batch)
            timed[name] += t
            size[name] += s
    sized = [o for o in (with_doc.decide(j, idle) for j in mix[:200]) if o.curve_doc is not None]
    assert sized  # the mix sizes jobs with curves, so records carry documents
    for o in sized:  # the deciding curve's document, without its diagnostics
        assert o.app is not None
        curve = records[str(o.app.site)].curve
        assert curve is not None
        assert o.curve_doc == {k: v for k, v in curve.to_dict().items() if k not in DIAGNOSTICS}

    finished = [
        replace(o.job, state="COMPLETED", exit_code=0, nodes_alloc=o.nodes or 1,
                end_time=NOW + 600, elapsed_s=600)
        for o in sized
    ]  # fmt: skip
    docs = [json.loads(json.dumps(decision_record(o, "released", 0.1).to_dict())) for o in sized]
    scoring: list[float] = []
    for job, doc in zip(finished, docs, strict=True):
        start = time.perf_counter()
        scored = score_job(job, doc, censored=False)
        scoring.append(1e6 * (time.perf_counter() - start))
        assert not isinstance(scored, str)

    view = Table(title=f"The deciding curve in the decision record ({mode_note(FULL)})")
    view.add_column("per job", justify="left")
    view.add_column("without", justify="right")
    view.add_column("with the curve's document", justify="right")
    for label, pick in (("median", statistics.median), ("mean", statistics.fmean)):
        view.add_row(
            f"decide + record + JSON, {label} µs",
            f"{pick(timed['without']):.0f}",
            f"{pick(timed['with']):.0f}",
        )
    for label, q in (("median", 0.5), ("90th percentile", 0.9), ("largest", 1.0)):
        view.add_row(
            f"record JSON bytes, {label}",
            f"{np.quantile(size['without'], q):,.0f}",
            f"{np.quantile(size['with'], q):,.0f}",
        )
    view.add_row(
        "learner: score one finished job (off the decision path), median µs",
        "—",
        f"{statistics.median(scoring):.0f}",
    )
    with capsys.disabled():
        Console(width=110).print(view)
    record(
        "decision-snapshot",
        title="What the deciding curve in each decision record costs",
        source=__file__,
        full=FULL,
        tables=[view],
        notes=[
            f"{len(mix):,} jobs over {len(apps)} curves fitted from the real studies of "
            "tests/data/scaling (as the learner stores them), ranges 1-16 to 32-1024 nodes, "
            f"batches of {BATCH}; the two variants alternate batch by batch on the same jobs. "
            "'without' is the decision path with the document step removed, as before it "
            "existed. One core, the machine shared with other work.",
        ],
    )
