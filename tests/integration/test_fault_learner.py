"""Fault matrix, the learner: running out of memory, or taking minutes, must never
stall the daemon's decisions nor weigh on the daemon itself.

The fault is put into the learner (our code, not Slurm's or Redis's): a ``sitecustomize``
module on the daemon's PYTHONPATH, which every interpreter of the daemon (its learner
worker too) loads at start, replaces ``Learner.refit_dirty`` by one that asks for 3 GiB and
then sleeps (``hungry``), or only sleeps for ten minutes (``slow``). Slurm and Redis are the
testbed's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .daemon_harness import (
    DaemonProcess,
)
from .fault_harness import as_env_daemon, assert_within_range, decisions_of
from .testbed import PROJECT_ROOT, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

Factory = Callable[..., DaemonProcess]
#: The daemon's own peak memory must stay far below what the faulty learner asks for.
DAEMON_MEMORY_BOUND_KIB = 1 << 20  # 1 GiB
#: A decision with the learner misbehaving still comes within this (normally well under 2 s).
DECISION_BOUND_S = 15.0

SITECUSTOMIZE = """
import os, time
import plugin.learning.learner

def _refit_dirty(self, *args, **kwargs):
    if os.environ.get("ADAPTALLOC_TEST_LEARNER_FAULT") == "hungry":
        hog = bytearray(3 << 30)  # 3 GiB, touched: really taken
        hog[:: 4096] = b"x" * len(hog[:: 4096])
    time.sleep(600)
    return []

plugin.learning.learner.Learner.refit_dirty = _refit_dirty
with open(os.environ["ADAPTALLOC_TEST_FAULT_MARK"], "a") as mark:  # the fault is in place
    mark.write(f"{os.getpid()}\\n")
"""


def _children(pid: int) -> list[int]:
    """The process's children, whichever of its threads started them."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("fault", ["hungry", "slow"])
def test_a_misbehaving_learner_never_stalls_decisions(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
    fault: str,
) -> None:
    """Before the learner ran in a worker process (hungry): the 3 GiB landed in the daemon's
    own process (its peak memory passed 3 GiB; under a real memory limit the kernel would
    have killed the daemon, every decision with it)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    daemon = daemon_factory()
    daemon.config_path.write_text(
        "[daemon]\nmetrics_port = 0\nsweep_interval_s = 1.0\nlearn = true\nlearn_interval_s = 1.0\n"
    )
    daemon = as_env_daemon(
        daemon,
        env={
            "PYTHONPATH": f"{site}:{PROJECT_ROOT}",
            "ADAPTALLOC_TEST_LEARNER_FAULT": fault,
            "ADAPTALLOC_TEST_FAULT_MARK": str(tmp_path / "fault-in-place"),
        },
    ).start()
    time.sleep(8.0)  # a few learner rounds: the worker is up and in the faulty refit
    if fault == "hungry":
        daemon.wait_for(
            "the worker's MemoryError",
            lambda: any(
                "MemoryError" in e.get("error", "") for e in daemon.events("learner_error")
            ),
            60.0,
        )
    latencies = []
    for _ in range(3):
        job = submit_job(
            "--nodes=1-3", "--time=10", "--comment=adaptalloc:v1 app=it-learn", wrap="true"
        )
        submitted = time.monotonic()
        decision = daemon.wait_decision(job, DECISION_BOUND_S)
        latencies.append(time.monotonic() - submitted)
        assert decision["status"] == "released"
        assert len(decisions_of(daemon, job)) == 1
        assert_within_range(slurm, job, 1, 3, 10)
    print(
        f"FAULT learner {fault}: 3 jobs decided in "
        f"{', '.join(f'{s:.1f}' for s in latencies)} s while the learner misbehaved"
    )
    # The fault really was in place (a sitecustomize that fails to import is skipped
    # silently): every interpreter of the daemon loaded it, and no refit ever finished.
    assert len((tmp_path / "fault-in-place").read_text().split()) >= 2  # daemon and worker
    assert not daemon.events("refit")
    peak = _peak_kib(daemon.pid)
    print(f"daemon peak memory {peak / 1024:.0f} MiB")
    assert peak < DAEMON_MEMORY_BOUND_KIB
    workers = _children(daemon.pid)
    assert workers  # the learner's worker (and multiprocessing's resource tracker)
    assert daemon.fresh_heartbeat()
    stopping = time.monotonic()
    assert daemon.stop() == 0
    print(f"stopped in {time.monotonic() - stopping:.1f} s")
    slurm.wait_for(
        "the learner's worker to exit with the daemon",
        lambda: not [w for w in workers if _running(w)],
        30.0,
    )
    assert os.path.exists(daemon.log_path)


def test_the_learner_worker_learns(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    """Without a fault the worker does the learner's rounds: polls logged, no errors."""
    daemon = daemon_factory()
    daemon.config_path.write_text(
        "[daemon]\nmetrics_port = 0\nsweep_interval_s = 1.0\nlearn = true\nlearn_interval_s = 1.0\n"
    )
    daemon.start()
    job = submit_job("--nodes=1-2", "--comment=adaptalloc:v1 app=it-learn-ok", wrap="true")
    assert daemon.wait_decision(job)["status"] == "released"
    daemon.wait_for("two learner polls", lambda: len(daemon.events("learner_poll")) >= 2, 60.0)
    workers = _children(daemon.pid)
    assert workers
    assert daemon.stop() == 0
    assert not daemon.events("learner_error")
    assert not daemon.events("learner_timeout")
