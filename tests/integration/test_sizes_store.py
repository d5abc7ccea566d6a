"""Cold start from sibling sizes through the real store (Redis db 15): the decision path.

Sibling sizes cg@1000, cg@2000, cg@4000, cg@5000 hold exact runs from Kishimoto and
Ichikawa's N-T/P-T equations, each refitted by the learner; a job tagged ``size=3000`` has no
curve of its own. The daemon's decider and ``adaptalloc decide --app`` must use the borrowed
curve and say so in the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import policies
from plugin.appkey import AppKey, AppKeyRule
from plugin.daemon import marks
from plugin.daemon.decider import Budget, CurveSource, Decider
from plugin.learning.borrow import BORROWED, curve_with_borrowing
from plugin.learning.learner import refit_app
from plugin.slurm import JobRecord
from plugin.store.curves import CurveStore, Observation, Retention

from .testbed import adaptalloc

pytestmark = pytest.mark.integration

NOW = 1_800_000_000.0
P = (1, 2, 4, 8, 16, 32, 64)
SIZES = (1000, 2000, 4000, 5000)


def kishimoto(N: float, p: float) -> float:
    g = 2e-9 * N**3 + 1e-5 * N**2 + 0.01 * N + 5.0
    return 1e-4 * p * g + g / p + 0.5


@pytest.fixture
def store(redis_client: Any) -> CurveStore:
    store = CurveStore(redis_client, Retention(max_observations=100, max_age_s=None))
    job_id = 1000
    for N in SIZES:
        app = AppKey("cg", str(N))
        runs = []
        for p in P:
            job_id += 1
            runs.append(Observation(str(job_id), app, p, kishimoto(N, p), NOW, size=float(N)))
        store.add_observations(app, runs)
        assert refit_app(store, app).status == "written"
    return store


def test_a_new_size_borrows_the_curve_of_its_siblings(store: CurveStore) -> None:
    record = curve_with_borrowing(store, AppKey("cg", "3000"))
    assert record is not None
    assert record.curve is not None
    assert record.method == BORROWED
    assert not record.reliable
    assert "borrowed from sizes 1000, 2000, 4000, 5000" in record.note
    truth = np.array([kishimoto(3000, p) for p in P])
    assert np.max(np.abs(record.curve.runtime(np.array(P)) / truth - 1.0)) < 0.10
    # A size with its own curve keeps it; a word size class or a lone size borrows nothing.
    own = curve_with_borrowing(store, AppKey("cg", "2000"))
    assert own is not None
    assert own.method == "adept"
    assert curve_with_borrowing(store, AppKey("cg", "large")) is None
    assert curve_with_borrowing(store, AppKey("mg", "3000")) is None


def test_the_daemon_decides_with_the_borrowed_curve_and_says_so(store: CurveStore) -> None:
    decider = Decider(AppKeyRule(), policies.default_config(), CurveSource(lambda: store), Budget())
    job = JobRecord(
        job_id=7,
        name="cg",
        user="ann",
        account="phys",
        partition="debug",
        state="PENDING",
        source="squeue",
        comment="adaptalloc:v1 app=cg size=3000",
        admin_comment=marks.HELD,
        nodes_min=2,
        nodes_max=64,
        time_limit_min=60,
        submit_time=int(NOW) - 5,
        priority=0,
        state_reason="JobHeldUser",
    )
    state = policies.ClusterState(idle_nodes=64, pending_demand_nodes=0, total_nodes=64)
    outcome = decider.decide(job, lambda _: state)
    assert outcome.action == "resize", outcome.reason
    assert outcome.rule != "fallback"
    assert "curve of problem size 3000 borrowed from sizes 1000, 2000, 4000, 5000" in outcome.reason
    assert outcome.resize is not None
    assert outcome.resize.time_limit_min in (None, 60)  # never cut on a borrowed curve
    # Without siblings the same job is left as submitted.
    alone = decider.decide(
        JobRecord(**{**job.__dict__, "comment": "adaptalloc:v1 app=mg size=3000"}),
        lambda _: state,
    )
    assert alone.rule == "fallback"


def test_decide_app_uses_the_borrowed_curve(store: CurveStore, tmp_path: Path) -> None:
    del store
    proc = adaptalloc(
        "decide",
        "--app",
        "cg@3000",
        "--nodes",
        "2-64",
        "--idle",
        "64",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["rule"] != "fallback"
    assert "borrowed from sizes 1000, 2000, 4000, 5000" in doc["reason"]


def test_app_shows_the_borrowed_curve_of_a_size_without_its_own(
    store: CurveStore, tmp_path: Path
) -> None:
    app = AppKey("cg", "3000")
    store.add_observations(app, [Observation("9001", app, 4, kishimoto(3000, 4), NOW, size=3e3)])
    assert refit_app(store, app).status == "no_curve"  # one node count: no curve of its own
    proc = adaptalloc("app", "cg@3000", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["borrowed_curve"]["from_sizes"] == [1000.0, 2000.0, 4000.0, 5000.0]
    assert doc["borrowed_curve"]["kind"] == "borrowed"
    assert doc["node_type_curves"] == {}
    text = adaptalloc("app", "cg@3000", cwd=tmp_path)
    assert "decisions use the curve of problem size 3000 borrowed" in " ".join(text.stdout.split())
