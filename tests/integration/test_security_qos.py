"""QOS limits bound what the daemon sets (the QOS part).

A QOS an admin made (MaxTRESPerJob=node=2, MaxWall=30 minutes) is read by the daemon
(``sacctmgr show qos``) and tightens the partition's limits: a job of the unprivileged user
in that QOS is never pinned above 2 nodes, and its 120 minutes, above the QOS's 30, are left
as written (a shorter limit would make startable a job Slurm would not start), while the
same job outside it is sized larger (the control: the cap is what made the difference).

The testbed does not enforce QOS limits (no AccountingStorageEnforce), so "Slurm would
keep it pending forever" is not shown here; what is shown is that the daemon never asks
for more than the QOS allows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .daemon_harness import (
    DaemonProcess,
    assert_capped_release,
)
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration
Factory = Callable[..., DaemonProcess]
QOS = "aatestsmall"


@pytest.fixture
def small_qos(local_cluster: LocalCluster, slurm: SlurmCLI) -> Iterator[str]:
    slurm.run("sacctmgr", "-i", "delete", "qos", QOS, check=False)
    slurm.run(
        "sacctmgr", "-i", "add", "qos", QOS, "set", "MaxTRESPerJob=node=2", "MaxWall=00:30:00"
    )
    yield QOS
    slurm.run("sacctmgr", "-i", "delete", "qos", QOS, check=False)


def test_a_qos_caps_the_size_and_the_time_limit(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    small_qos: str,
) -> None:
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse("it-lu")
    import_csv(store, PROJECT_ROOT / "tests/data/scaling/lan_thesis_npb_lu_W.csv", key)
    assert refit_app(store, key).status == "written"
    daemon = daemon_factory().start()
    args = ("--nodes=1-8", "--time=120", "--begin=now+3600", "--comment=adaptalloc:v1 app=it-lu")
    free = submit_job(*args, wrap="true", as_user=slurm.test_user)
    capped = submit_job(*args, f"--qos={small_qos}", wrap="true", as_user=slurm.test_user)
    control, decision = daemon.wait_decision(free), daemon.wait_decision(capped)
    assert control["action"] == "resize"
    assert control["nodes"] > 2  # without the QOS the policy wants more than it allows
    assert control["new_time_limit_min"] is None or control["new_time_limit_min"] > 0
    fields = assert_capped_release(slurm, capped, decision, nodes=2, asked="02:00:00")
    assert fields["QOS"] == small_qos
