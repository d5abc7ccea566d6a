"""``release = "range"`` on the real local Slurm: the daemon releases a sized job with the
narrowed range [efficient size, larger useful size] and Slurm picks the size within it when
the job starts.

The app's history is a Downey curve (A = 4, σ = 0.5) measured at 1, 2, 4 and 8 nodes; on the
testbed's 8 nodes its efficient size is 4 and its larger useful size 7 (the cap ⌈2A − 1⌉), so
a job submitted with ``--nodes=1-8`` is released as 4-7 and must start on 4 to 7 nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore
from predictor.downey import speedup

from .daemon_harness import DaemonProcess
from .testbed import SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
RANGE_POLICY = '[defaults]\nrelease = "range"\n'


def learn_downey(url: str, app: str, folder: Path) -> None:
    """Three runs at each of 1, 2, 4 and 8 nodes of T(n) = 600 s / S(n), A = 4, σ = 0.5."""
    sizes = np.repeat([1.0, 2.0, 4.0, 8.0], 3)
    runtimes = 600.0 / speedup(sizes, 4.0, 0.5)
    csv = folder / "downey_a4.csv"
    rows = "".join(f"{int(n)},{t:.6f}\n" for n, t in zip(sizes, runtimes, strict=True))
    csv.write_text("n,runtime\n" + rows, encoding="utf-8")
    store = CurveStore(connect(url))
    key = AppKey.parse(app)
    import_csv(store, csv, key)
    assert refit_app(store, key).status == "written"


def test_a_range_release_starts_the_job_within_the_narrowed_range(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory, tmp_path: Path
) -> None:
    learn_downey(scratch_url(), "it-range", tmp_path)
    daemon = daemon_factory(policy=RANGE_POLICY).start()
    out = tmp_path / "nodes.txt"
    job = submit_job(
        "--nodes=1-8",
        "--time=60",
        "--comment=adaptalloc:v1 app=it-range",
        f"--output={out}",
        wrap="echo NNODES=$SLURM_NNODES",
    )
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize"
    assert decision["status"] == "released"
    low, top = decision["nodes"], decision["nodes_upto"]
    assert top is not None
    assert 1 <= low < top <= 8, decision
    assert "released as the range" in decision["reason"]
    fields = slurm.wait_job_state(job, {"COMPLETED"})
    ran = int(out.read_text().strip().removeprefix("NNODES="))
    assert low <= ran <= top
    assert fields["NumNodes"] == str(ran)
