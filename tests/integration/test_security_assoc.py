"""Association limits bound what the daemon sets (the association part).

An admin's account ``aaparent`` limits jobs to 2 nodes and 30 minutes
(MaxTRESPerJob=node=2, MaxWallDurationPerJob=00:30:00); its child account ``aachild`` sets
nothing, and the unprivileged user has an association under it. The daemon reads the
association's effective limits from slurmctld (``scontrol show assoc_mgr``), the inherited
ones included, so the user's job under ``aachild`` is never pinned above 2 nodes, and its
120 minutes, above the inherited 30, are left as written (Slurm decides whether it starts),
while the same job under the unlimited sibling ``aafree`` is sized larger (the control: the
inherited cap is what made the difference).

The testbed does not enforce association limits (no AccountingStorageEnforce), so what is
shown is that the daemon never asks for more than the association allows. Everything added
to accounting is removed at teardown (the database is shared by the suite).
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
PARENT, CHILD, FREE = "aaparent", "aachild", "aafree"


def _remove(slurm: SlurmCLI) -> None:
    """Delete what the test adds; waits, as slurmdbd refuses while it still sees jobs in them."""
    for account in (CHILD, FREE):
        # scancel takes one account per call: "--account=a,b" matches neither
        slurm.run("scancel", f"--account={account}", check=False)
        slurm.run(
            "sacctmgr",
            "-i",
            "delete",
            "user",
            f"name={slurm.test_user}",
            f"account={account}",
            check=False,
        )

    def gone() -> bool:
        for account in (CHILD, FREE, PARENT):
            slurm.run("sacctmgr", "-i", "delete", "account", account, check=False)
        listed = slurm.run("sacctmgr", "-n", "-P", "show", "account", "format=Account")
        return not {CHILD, FREE, PARENT} & set(listed.stdout.split())

    slurm.wait_for("sacctmgr to delete the test accounts", gone)


@pytest.fixture
def limited_account(local_cluster: LocalCluster, slurm: SlurmCLI) -> Iterator[str]:
    """``aachild`` under ``aaparent`` (node=2, 30 min); the user in it and in ``aafree``."""
    _remove(slurm)
    slurm.run(
        "sacctmgr",
        "-i",
        "add",
        "account",
        PARENT,
        "MaxTRESPerJob=node=2",
        "MaxWallDurationPerJob=00:30:00",
    )
    slurm.run("sacctmgr", "-i", "add", "account", CHILD, f"parent={PARENT}")
    slurm.run("sacctmgr", "-i", "add", "account", FREE)
    slurm.run("sacctmgr", "-i", "add", "user", slurm.test_user, f"account={FREE}")
    slurm.run("sacctmgr", "-i", "add", "user", slurm.test_user, f"account={CHILD}")
    yield CHILD
    _remove(slurm)


def test_an_inherited_association_limit_caps_the_size_and_the_time_limit(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    limited_account: str,
) -> None:
    shown = slurm.run(
        "scontrol",
        "show",
        "assoc_mgr",
        f"users={slurm.test_user}",
        f"accounts={CHILD}",
        "flags=assoc",
    )
    assert "MaxWallPJ=30" in shown.stdout  # slurmctld holds the inherited limits (the premise)
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse("it-lu")
    import_csv(store, PROJECT_ROOT / "tests/data/scaling/lan_thesis_npb_lu_W.csv", key)
    assert refit_app(store, key).status == "written"
    daemon = daemon_factory().start()
    args = ("--nodes=1-8", "--time=120", "--begin=now+3600", "--comment=adaptalloc:v1 app=it-lu")
    free = submit_job(*args, f"--account={FREE}", wrap="true", as_user=slurm.test_user)
    capped = submit_job(*args, f"--account={limited_account}", wrap="true", as_user=slurm.test_user)
    control, decision = daemon.wait_decision(free), daemon.wait_decision(capped)
    assert control["action"] == "resize"
    assert control["nodes"] > 2  # without the association the policy wants more
    fields = assert_capped_release(slurm, capped, decision, nodes=2, asked="02:00:00")
    assert fields["Account"] == limited_account
