"""Time limits never escape Slurm's maximums (policies/time_limit.py, plugin/daemon/guard.py).

The attack: a user asks for more time than the partition allows (here ``batch`` with
MaxTime=2 minutes, set for this module and put back afterwards). Slurm alone keeps such a
job pending (Reason=PartitionTimeLimit). adaptalloc once cut the limit to the maximum, so
the job started, and near that limit its kill guard gave the user's own limit back as root:
the job outran the partition's maximum. Now:

* a job asking 60 minutes where 2 are allowed is released with its 60 minutes, as the user
  wrote them, and stays pending as Slurm decides (its size is still chosen: that changes
  nothing of whether it may start);
* the control: the same job asking for 2 minutes gets a limit of at most 2 and starts;
* the premise of the kill guard's rule: a coordinator (the sizing user) may not raise a
  running job's limit at all; only an operator may, and an operator's raise is the one
  Slurm's enforced limits skip. So where limits are enforced no limit is shortened, and the
  guard raises nothing (shown without a testbed in tests/unit/plugin/test_daemon_guard.py).

The jobs are submitted by the testbed's unprivileged user with an app whose curve an admin
imported (its runs size every user's jobs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .daemon_harness import DaemonProcess
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration
Factory = Callable[..., DaemonProcess]
PARTITION = "batch"
#: How long a job that must stay pending is watched (the scheduler runs every few seconds).
PENDING_WATCH_S = 8.0


@pytest.fixture
def short_partition(local_cluster: LocalCluster, slurm: SlurmCLI) -> Iterator[str]:
    """``batch`` with MaxTime=2 minutes, INFINITE again afterwards."""
    slurm.run("scontrol", "update", f"PartitionName={PARTITION}", "MaxTime=2")
    try:
        yield PARTITION
    finally:
        slurm.run("scancel", "-p", PARTITION, check=False)
        slurm.run("scontrol", "update", f"PartitionName={PARTITION}", "MaxTime=INFINITE")


@pytest.fixture
def tag() -> str:
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse("it-lu")
    import_csv(store, PROJECT_ROOT / "tests/data/scaling/lan_thesis_npb_lu_W.csv", key)
    assert refit_app(store, key).status == "written"
    return "--comment=adaptalloc:v1 app=it-lu"


def test_a_limit_above_the_partitions_maximum_is_left_and_slurm_keeps_the_job(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    short_partition: str,
    tag: str,
) -> None:
    daemon = daemon_factory().start()
    asked = submit_job(
        f"--partition={short_partition}", "--nodes=1-3", "--time=60", tag,
        wrap="sleep 300", as_user=slurm.test_user,
    )  # fmt: skip
    decision = daemon.wait_decision(asked)
    assert (decision["status"], decision["action"]) == ("released", "resize")
    assert decision["new_time_limit_min"] is None
    fields = slurm.show_job(asked)
    assert fields["TimeLimit"] == "01:00:00"  # as the user wrote it

    def started() -> bool:
        return slurm.show_job(asked)["JobState"] != "PENDING"

    with pytest.raises(pytest.fail.Exception):
        slurm.wait_for(f"job {asked} to start", started, PENDING_WATCH_S)
    assert slurm.show_job(asked)["Reason"] == "PartitionTimeLimit"

    # The control: within the maximum the job is sized, its limit is at most 2 minutes, and
    # it starts.
    within = submit_job(
        f"--partition={short_partition}", "--nodes=1-3", "--time=2", tag,
        wrap="sleep 300", as_user=slurm.test_user,
    )  # fmt: skip
    control = daemon.wait_decision(within)
    assert (control["status"], control["action"]) == ("released", "resize")
    limit = control["new_time_limit_min"]
    assert limit is None or 1 <= limit <= 2
    running = slurm.wait_job_state(within, {"RUNNING"})
    assert running["TimeLimit"] in ("00:01:00", "00:02:00")


def test_only_an_operator_can_raise_a_running_jobs_limit(
    slurm: SlurmCLI, submit_job: SubmitJob
) -> None:
    """Why the kill guard raises only where no accounting limits are enforced: the sizing
    user (a coordinator) is refused, as the user is; root's raise goes through."""
    job = submit_job("--nodes=1", "--time=5", wrap="sleep 300", as_user=slurm.test_user)
    slurm.wait_job_state(job, {"RUNNING"})
    sizer = slurm.cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    for who in (sizer, slurm.test_user):
        refused = slurm.run(
            "scontrol", "update", f"JobId={job}", "TimeLimit=10", check=False, as_user=who
        )
        assert refused.returncode != 0, f"{who} raised a running job's limit"
        assert slurm.show_job(job)["TimeLimit"] == "00:05:00"
    slurm.run("scontrol", "update", f"JobId={job}", "TimeLimit=10")
    assert slurm.show_job(job)["TimeLimit"] == "00:10:00"
