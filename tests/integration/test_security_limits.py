"""Where Slurm enforces limits, a resize by the daemon must not lift them (plugin/slurm/
enforcement.py).

For this module slurmctld is restarted with ``AccountingStorageEnforce=limits,qos``
(up.sh's ADAPTALLOC_ACCOUNTING_ENFORCE) and put back as it was afterwards. An admin's account
``aagrp`` may run 2 nodes at once (GrpTRES=node=2), and the unprivileged user has an
association in it (and a default account without limits). Each test first fills the group
with a running 2-node job, so any further job of the account must pend with
AssocGrpNodeLimit:

* the premise, the hole: root's NumNodes update (the daemon's, as an operator) lets such a
  job run, 4 nodes under the 2-node cap; the same update by the sizing user, a coordinator
  of the two accounts only (not of root: docs/admin/sizing-user.md), leaves it pending;
* the daemon without a sizing user releases a moldable job of the account as submitted
  (reason limits_enforced), range untouched, and it pends;
* the daemon with ``sizing_user = aasizer`` resizes the same job, and it still pends.

Everything added to accounting is removed at teardown (the database is shared by the suite).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .daemon_harness import DaemonProcess, held, job_fields
from .testbed import (
    PROJECT_ROOT,
    LocalCluster,
    SlurmCLI,
    SubmitJob,
    adaptalloc,
    scratch_url,
    start_testbed,
)

pytestmark = pytest.mark.integration
Factory = Callable[..., DaemonProcess]
HOME, GROUP = "aahome", "aagrp"
ENFORCE = "limits,qos"
#: How long a job that must stay pending is watched (the backfill scheduler runs every
#: few seconds on the testbed; the lifted job of the premise starts within ~1 s).
PENDING_WATCH_S = 8.0


def restart_slurmctld(cluster: LocalCluster, slurm: SlurmCLI, enforce: str) -> None:
    """Stop slurmctld and start it again through up.sh with AccountingStorageEnforce
    `enforce` ("" : not set); slurmctld reads that setting only when it starts."""
    pid = cluster.slurmctld_pid()
    os.kill(pid, signal.SIGTERM)
    slurm.wait_for("slurmctld to stop", lambda: not Path(f"/proc/{pid}").exists(), 60)
    start_testbed({"ADAPTALLOC_ACCOUNTING_ENFORCE": enforce})


def _remove(slurm: SlurmCLI) -> None:
    for account in (GROUP, HOME):
        slurm.run("scancel", f"--account={account}", check=False)
    # The user entirely (its default account cannot be removed on its own), then the accounts.
    slurm.run("sacctmgr", "-i", "delete", "user", f"name={slurm.test_user}", check=False)

    def gone() -> bool:
        slurm.run("sacctmgr", "-i", "delete", "account", GROUP, HOME, check=False)
        listed = slurm.run("sacctmgr", "-n", "-P", "show", "account", "format=Account")
        return not {GROUP, HOME} & set(listed.stdout.split())

    slurm.wait_for("sacctmgr to delete the test accounts", gone)


@pytest.fixture(scope="module")
def enforcing(local_cluster: LocalCluster) -> Iterator[SlurmCLI]:
    slurm = SlurmCLI(local_cluster)
    _remove(slurm)
    slurm.run("sacctmgr", "-i", "add", "account", HOME)
    slurm.run("sacctmgr", "-i", "add", "account", GROUP, "GrpTRES=node=2")
    slurm.run("sacctmgr", "-i", "add", "user", slurm.test_user, f"account={HOME}")
    slurm.run("sacctmgr", "-i", "add", "user", slurm.test_user, f"account={GROUP}")
    sizer = slurm.cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    slurm.run("sacctmgr", "-i", "add", "coordinator", f"account={HOME},{GROUP}", f"names={sizer}")
    restart_slurmctld(local_cluster, slurm, ENFORCE)
    try:
        config = slurm.run("scontrol", "show", "config").stdout
        assert "associations,limits,qos" in config  # the premise: limits are enforced
        yield slurm
    finally:
        slurm.run("scancel", "-u", slurm.test_user, check=False)
        restart_slurmctld(local_cluster, slurm, "")
        _remove(slurm)


def fill_the_group(slurm: SlurmCLI, submit_job: SubmitJob) -> int:
    """A running 2-node job of the account: the group is at its cap."""
    job = submit_job(
        f"--account={GROUP}", "--nodes=2", "--exclusive", "--time=10",
        wrap="sleep 600", as_user=slurm.test_user,
    )  # fmt: skip
    slurm.wait_job_state(job, {"RUNNING"})
    return job


def assert_stays_pending(slurm: SlurmCLI, job_id: int, reason: str) -> None:
    def started() -> bool:
        return slurm.show_job(job_id)["JobState"] != "PENDING"

    with pytest.raises(pytest.fail.Exception):
        slurm.wait_for(f"job {job_id} to start", started, PENDING_WATCH_S)
    assert slurm.show_job(job_id)["Reason"] == reason


def held_extra_job(slurm: SlurmCLI, submit_job: SubmitJob) -> int:
    """A 1-node job of the account, held by its user (job_submit.lua leaves it alone)."""
    return submit_job(
        f"--account={GROUP}", "--nodes=1", "--exclusive", "--time=10", "--hold",
        wrap="sleep 600", as_user=slurm.test_user,
    )  # fmt: skip


def test_an_operators_resize_lifts_the_group_limit_a_coordinators_does_not(
    enforcing: SlurmCLI, submit_job: SubmitJob
) -> None:
    slurm = enforcing
    fill_the_group(slurm, submit_job)
    by_sizer = held_extra_job(slurm, submit_job)
    sizer = slurm.cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    slurm.run("scontrol", "update", f"JobId={by_sizer}", "NumNodes=2-2", as_user=sizer)
    slurm.run("scontrol", "release", str(by_sizer), as_user=slurm.test_user)
    assert slurm.show_job(by_sizer)["NumNodes"] == "2-2"
    assert_stays_pending(slurm, by_sizer, "AssocGrpNodeLimit")

    by_root = held_extra_job(slurm, submit_job)
    slurm.run("scontrol", "update", f"JobId={by_root}", "NumNodes=2-2")
    slurm.run("scontrol", "release", str(by_root), as_user=slurm.test_user)
    slurm.wait_job_state(by_root, {"RUNNING"})  # 4 nodes under GrpTRES=node=2: the hole


@pytest.fixture
def curve() -> str:
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse("it-lu")
    import_csv(store, PROJECT_ROOT / "tests/data/scaling/lan_thesis_npb_lu_W.csv", key)
    assert refit_app(store, key).status == "written"
    return "--comment=adaptalloc:v1 app=it-lu"


def moldable_job(slurm: SlurmCLI, submit_job: SubmitJob, tag: str) -> int:
    return submit_job(
        f"--account={GROUP}", "--nodes=1-2", "--exclusive", "--time=60", tag,
        wrap="sleep 600", as_user=slurm.test_user,
    )  # fmt: skip


def assert_released_as_submitted(slurm: SlurmCLI, job: int) -> None:
    """adaptalloc's verdict on `job` (its admin comment) is a release of the range as
    submitted, and the user's limit stands. Slurm's NumNodes is not compared with "1-2": once
    its scheduler has looked at the released pending job it may show the count it plans
    ("2-2") though nobody updated the job (slurmctld logs only the comment and the release);
    a resize by adaptalloc would be marked "sized" in the comment instead."""
    comment = job_fields(slurm, job)["admin_comment"]
    assert "adaptalloc:v1:released reason=limits_enforced range=1-2" in comment
    assert ":sized" not in comment
    assert slurm.show_job(job)["TimeLimit"] == "01:00:00"


def test_without_a_sizing_user_the_daemon_releases_as_submitted(
    enforcing: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory, curve: str
) -> None:
    slurm = enforcing
    fill_the_group(slurm, submit_job)
    daemon = daemon_factory().start()
    job = moldable_job(slurm, submit_job, curve)
    decision = daemon.wait_decision(job)
    assert (decision["status"], decision["action"], decision["fail_open"]) == (
        "released",
        "release",
        "limits_enforced",
    )
    assert daemon.events("limits_enforced")
    assert_released_as_submitted(slurm, job)
    assert_stays_pending(slurm, job, "AssocGrpNodeLimit")


def test_a_single_sweep_releases_as_submitted_too(
    enforcing: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    curve: str,
    tmp_path: Path,
) -> None:
    """``adaptalloc daemon --once`` decides held jobs outside the loop: the same verdict.
    The group is full, so the released job stays pending with the range it was given (a
    job that starts shows the size Slurm picked)."""
    slurm = enforcing
    fill_the_group(slurm, submit_job)
    daemon = daemon_factory().start()
    daemon.signal(signal.SIGSTOP)  # holding (fresh heartbeat) but deciding nothing
    job = moldable_job(slurm, submit_job, curve)
    assert held(job_fields(slurm, job))  # by job_submit.lua
    daemon.kill()
    once = adaptalloc(
        "daemon", "--once", "--config", daemon.config_path, "--state-dir", daemon.state_dir,
        cwd=tmp_path,
    )  # fmt: skip
    assert once.returncode == 0, once.stderr[-2000:]
    assert_released_as_submitted(slurm, job)
    assert_stays_pending(slurm, job, "AssocGrpNodeLimit")


def test_with_a_sizing_user_the_daemon_resizes_and_slurm_keeps_the_limit(
    enforcing: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory, curve: str
) -> None:
    slurm = enforcing
    sizer = slurm.cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    fill_the_group(slurm, submit_job)
    daemon = daemon_factory(config=f'sizing_user = "{sizer}"\n').start()
    job = moldable_job(slurm, submit_job, curve)
    decision = daemon.wait_decision(job)
    assert (decision["status"], decision["action"]) == ("released", "resize")
    n = decision["nodes"]
    # No limit is shortened where limits are enforced: only an operator could give it back
    # (tests/integration/test_security_time_limits.py), and that would lift them.
    assert decision["new_time_limit_min"] is None
    fields = slurm.show_job(job)
    assert (fields["NumNodes"], fields["TimeLimit"]) == (f"{n}-{n}", "01:00:00")
    assert_stays_pending(slurm, job, "AssocGrpNodeLimit")
    assert not daemon.events("limits_enforced")


@pytest.mark.parametrize(
    ("settings", "status", "words"),
    [
        ("", "warn", "released as submitted"),
        ('sizing_user = "SIZER"\n', "ok", "resizes run as sizing user"),
        ("resize_with_enforced_limits = true\n", "warn", "not applied"),
        ('sizing_user = "no-such-account-aa"\n', "fail", "not an account on this host"),
    ],
)
def test_the_doctor_says_whether_the_daemon_will_resize(
    enforcing: SlurmCLI, tmp_path: Path, settings: str, status: str, words: str
) -> None:
    sizer = enforcing.cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    config = tmp_path / "adaptalloc.toml"
    config.write_text("[daemon]\n" + settings.replace("SIZER", sizer))
    proc = subprocess.run(  # noqa: S603 - our interpreter and module, no shell
        [sys.executable, "-m", "plugin", "doctor", "--format", "json", "--no-probe",
         "--config", str(config)],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    check = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}["enforced_limits"]
    assert check["status"] == status, check
    assert words in check["detail"]
    assert (check["fix"] == "") == (status == "ok")


def test_a_group_node_limit_caps_the_size_as_slurm_caps_a_range(
    enforcing: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory, curve: str
) -> None:
    """A job pinned past its account's GrpTRES=node=2 would never start (slurmctld caps a
    node range by it, acct_policy_get_max_nodes; a pinned size it cannot shrink); the
    daemon caps the pin at 2, while the same job in the account without limits is sized
    larger (the control: the group cap made the difference)."""
    slurm = enforcing
    sizer = slurm.cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    daemon = daemon_factory(config=f'sizing_user = "{sizer}"\n').start()
    args = ("--nodes=1-8", "--time=60", "--begin=now+3600", curve)
    free = submit_job(f"--account={HOME}", *args, wrap="true", as_user=slurm.test_user)
    capped = submit_job(f"--account={GROUP}", *args, wrap="true", as_user=slurm.test_user)
    control, decision = daemon.wait_decision(free), daemon.wait_decision(capped)
    assert (control["action"], decision["action"]) == ("resize", "resize")
    assert control["nodes"] > 2
    assert 1 <= decision["nodes"] <= 2
    n = decision["nodes"]
    assert slurm.show_job(capped)["NumNodes"] == f"{n}-{n}"


def test_a_pin_leaves_out_the_nodes_the_group_already_uses(
    enforcing: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory, curve: str
) -> None:
    """GrpTRES node=3 with a 2-node job running: 1 node is free. Pinned to 3 (the group's
    limit) the job would pend until that job ends; the daemon pins 1, and it starts."""
    slurm = enforcing
    sizer = slurm.cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    slurm.run("sacctmgr", "-i", "modify", "account", GROUP, "set", "GrpTRES=node=3")
    try:
        fill_the_group(slurm, submit_job)  # 2 of the 3 nodes

        def seen() -> bool:
            text = slurm.run("scontrol", "show", "assoc_mgr", f"accounts={GROUP}",
                             "flags=assoc").stdout  # fmt: skip
            return "node=3(2)" in text

        slurm.wait_for("slurmctld to hold the new limit and its usage", seen, 60)
        daemon = daemon_factory(config=f'sizing_user = "{sizer}"\n').start()
        job = submit_job(
            f"--account={GROUP}", "--nodes=1-8", "--exclusive", "--time=60", curve,
            wrap="sleep 600", as_user=slurm.test_user,
        )  # fmt: skip
        decision = daemon.wait_decision(job)
        assert (decision["action"], decision["nodes"]) == ("resize", 1), decision
        assert slurm.show_job(job)["NumNodes"] == "1-1"
        slurm.wait_job_state(job, {"RUNNING"})
    finally:
        slurm.run("scancel", f"--account={GROUP}", check=False)
        slurm.run("sacctmgr", "-i", "modify", "account", GROUP, "set", "GrpTRES=node=2")
