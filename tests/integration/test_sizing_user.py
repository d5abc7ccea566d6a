"""What the sizing user can do if stolen, and the doctor's warning when it can do more
(docs/admin/sizing-user.md, plugin/doctor/sizer_scope.py).

Everything here runs as the sizing user itself (``aasizer``, a plain Unix account), as a
thief holding it would: a coordinator of one account, ``aasz`` (GrpTRES=node=2), whose
unprivileged user is the testbed's. It may do in that account what the daemon needs and a
coordinator may (resize, cancel), and nothing outside it: no limit of the account itself,
no coordinator of root, no admin level (Slurm 22.05 with the CVE-2025-43904 fix refuses a
coordinator's ``add user ... adminlevel=``), no job of another account; the daemon releases
a job there as submitted. The premise: made a coordinator of root, the same account lifts
that limit.

Everything added to accounting is removed at teardown (the database is shared by the suite).
"""

from __future__ import annotations

import json
import os
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

from .daemon_harness import DaemonProcess
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration
ACCOUNT, OTHER = "aasz", "aaszother"


def _remove(slurm: SlurmCLI) -> None:
    for account in (ACCOUNT, OTHER):
        slurm.run("scancel", f"--account={account}", check=False)
    # The user entirely (its default account cannot be removed on its own), then the accounts.
    slurm.run("sacctmgr", "-i", "delete", "user", f"name={slurm.test_user}", check=False)

    def gone() -> bool:
        slurm.run("sacctmgr", "-i", "delete", "account", ACCOUNT, OTHER, check=False)
        listed = slurm.run("sacctmgr", "-n", "-P", "show", "account", "format=Account")
        return not {ACCOUNT, OTHER} & set(listed.stdout.split())

    slurm.wait_for("sacctmgr to delete the test accounts", gone)


@pytest.fixture(scope="module")
def sizer(local_cluster: LocalCluster) -> Iterator[str]:
    """The sizing user, a coordinator of ACCOUNT (and of the testbed's aausers) only."""
    slurm = SlurmCLI(local_cluster)
    name = local_cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    _remove(slurm)
    slurm.run("sacctmgr", "-i", "add", "account", ACCOUNT, "GrpTRES=node=2")
    slurm.run("sacctmgr", "-i", "add", "account", OTHER)
    for account in (ACCOUNT, OTHER):
        slurm.run("sacctmgr", "-i", "add", "user", slurm.test_user, f"account={account}")
    slurm.run("sacctmgr", "-i", "add", "coordinator", f"account={ACCOUNT}", f"names={name}")
    try:
        yield name
    finally:
        slurm.run("sacctmgr", "-i", "delete", "coordinator", "account=root", f"names={name}",
                  check=False)  # fmt: skip
        slurm.run("sacctmgr", "-i", "modify", "user", name, "set", "adminlevel=None", check=False)
        _remove(slurm)


def grp_tres(slurm: SlurmCLI, account: str) -> str:
    out = slurm.run(
        "sacctmgr", "-n", "-P", "show", "assoc", f"account={account}", "format=User,GrpTRES"
    ).stdout
    return next(line.split("|")[1] for line in out.splitlines() if line.startswith("|"))


def coordinators(slurm: SlurmCLI, user: str) -> str:
    out = slurm.run("sacctmgr", "-n", "-P", "show", "user", user, "withcoord",
                    "format=AdminLevel,Coordinators").stdout  # fmt: skip
    return out.strip()


def users_job(slurm: SlurmCLI, submit_job: SubmitJob, account: str) -> int:
    return submit_job(
        f"--account={account}", "--nodes=1-2", "--time=10", "--hold", wrap="sleep 60",
        as_user=slurm.test_user,
    )  # fmt: skip


def test_in_its_account_it_resizes_and_may_cancel(
    slurm: SlurmCLI, sizer: str, submit_job: SubmitJob
) -> None:
    job = users_job(slurm, submit_job, ACCOUNT)
    slurm.run("scontrol", "update", f"JobId={job}", "NumNodes=2-2", as_user=sizer)
    assert slurm.show_job(job)["NumNodes"] == "2-2"
    # As its user may: a pending job's limit up to the partition's MaxTime (job_mgr.c); the
    # association's MaxWall still applies, the change is not an operator's.
    slurm.run("scontrol", "update", f"JobId={job}", "TimeLimit=60", as_user=sizer)
    assert slurm.show_job(job)["TimeLimit"] == "01:00:00"
    slurm.run("scancel", str(job), as_user=sizer)  # a coordinator's power over its account
    slurm.wait_job_state(job, {"CANCELLED"})


def test_outside_its_account_it_changes_no_job(
    slurm: SlurmCLI, sizer: str, submit_job: SubmitJob
) -> None:
    job = users_job(slurm, submit_job, OTHER)
    for args in (("scontrol", "update", f"JobId={job}", "NumNodes=2-2"), ("scancel", str(job))):
        assert slurm.run(*args, as_user=sizer, check=False).returncode != 0
    fields = slurm.show_job(job)
    assert (fields["NumNodes"], fields["JobState"]) == ("1-2", "PENDING")


def test_it_lifts_no_limit_and_grants_no_power(slurm: SlurmCLI, sizer: str) -> None:
    attempts = [
        ("modify", "account", ACCOUNT, "set", "GrpTRES=node=-1"),
        ("add", "coordinator", "account=root", f"names={slurm.test_user}"),
        ("add", "coordinator", "account=root", f"names={sizer}"),
        ("modify", "user", sizer, "set", "adminlevel=Admin"),
        ("add", "user", sizer, f"account={ACCOUNT}", "adminlevel=Admin"),
        ("add", "account", "aaszevil", "parent=root"),
    ]
    for args in attempts:
        slurm.run("sacctmgr", "-i", *args, as_user=sizer, check=False)
    assert grp_tres(slurm, ACCOUNT) == "node=2"
    level, accounts = coordinators(slurm, sizer).split("|")
    assert (level, set(accounts.split(","))) == ("None", {ACCOUNT, "aausers"})
    assert coordinators(slurm, slurm.test_user) == "None|"
    listed = slurm.run("sacctmgr", "-n", "-P", "show", "account", "format=Account").stdout
    assert "aaszevil" not in listed.split()


def test_a_coordinator_of_root_lifts_the_accounts_limit(slurm: SlurmCLI, sizer: str) -> None:
    """The premise: the setup this replaced (coordinator of root) reaches the limits of
    every account under root."""
    slurm.run("sacctmgr", "-i", "add", "coordinator", "account=root", f"names={sizer}")
    try:
        slurm.run("sacctmgr", "-i", "modify", "account", ACCOUNT, "set", "GrpTRES=node=-1",
                  as_user=sizer, check=False)  # fmt: skip
        assert grp_tres(slurm, ACCOUNT) == ""
    finally:
        slurm.run("sacctmgr", "-i", "delete", "coordinator", "account=root", f"names={sizer}")
        slurm.run("sacctmgr", "-i", "modify", "account", ACCOUNT, "set", "GrpTRES=node=2")


def doctor_scope(sizer: str, tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "adaptalloc.toml"
    config.write_text(f'[daemon]\nsizing_user = "{sizer}"\n')
    proc = subprocess.run(  # noqa: S603 - our interpreter and module, no shell
        [sys.executable, "-m", "plugin", "doctor", "--format", "json", "--no-probe",
         "--config", str(config)],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    check: dict[str, str] = checks["sizing_user_scope"]
    return check


def test_the_doctor_warns_of_a_coordinator_of_root_or_an_admin_level(
    slurm: SlurmCLI, sizer: str, tmp_path: Path
) -> None:
    check = doctor_scope(sizer, tmp_path)
    assert check["status"] == "ok", check
    assert ACCOUNT in check["detail"]
    slurm.run("sacctmgr", "-i", "add", "coordinator", "account=root", f"names={sizer}")
    try:
        check = doctor_scope(sizer, tmp_path)
    finally:
        slurm.run("sacctmgr", "-i", "delete", "coordinator", "account=root", f"names={sizer}")
    assert check["status"] == "warn", check
    assert "coordinator of root" in check["detail"]
    assert "delete coordinator account=root" in check["fix"]
    slurm.run("sacctmgr", "-i", "modify", "user", sizer, "set", "adminlevel=Operator")
    try:
        check = doctor_scope(sizer, tmp_path)
    finally:
        slurm.run("sacctmgr", "-i", "modify", "user", sizer, "set", "adminlevel=None")
    assert check["status"] == "warn", check
    assert "AdminLevel operator" in check["detail"]
    assert "adminlevel=None" in check["fix"]


def test_the_daemon_resizes_in_its_accounts_and_releases_the_rest_as_submitted(
    slurm: SlurmCLI,
    sizer: str,
    submit_job: SubmitJob,
    daemon_factory: Callable[..., DaemonProcess],
) -> None:
    """Slurm refuses the sizing user's resize of a job in an account it does not
    coordinate; the daemon then releases that job as its user submitted it."""
    store = CurveStore(connect(scratch_url()))
    key = AppKey.parse("it-sz")
    import_csv(store, PROJECT_ROOT / "tests/data/scaling/lan_thesis_npb_lu_W.csv", key)
    assert refit_app(store, key).status == "written"
    daemon = daemon_factory(config=f'sizing_user = "{sizer}"\n').start()
    args = ("--nodes=1-8", "--time=60", "--begin=now+3600", "--comment=adaptalloc:v1 app=it-sz")
    mine = submit_job(f"--account={ACCOUNT}", *args, wrap="true", as_user=slurm.test_user)
    other = submit_job(f"--account={OTHER}", *args, wrap="true", as_user=slurm.test_user)
    resized, refused = daemon.wait_decision(mine), daemon.wait_decision(other)
    assert resized["action"] == "resize"
    n = resized["nodes"]
    assert slurm.show_job(mine)["NumNodes"] == f"{n}-{n}"
    assert (refused["status"], refused["fail_open"]) == ("released", "slurm_error"), refused
    assert slurm.show_job(other)["NumNodes"] == "1-8"
