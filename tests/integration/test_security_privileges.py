"""What the daemon's account needs, checked against what Slurm really allows.

For each sacctmgr AdminLevel the testbed's unprivileged user is given, the start-up check
(plugin/slurm/privileges.py, run as that user) is compared with what that user can really
do to another user's held job: set AdminComment, NumNodes, TimeLimit and release it. The
check must never say "enough" when an action is refused, nor "missing" when it works.
"""

from __future__ import annotations

import pwd
from collections.abc import Iterator

import pytest

from plugin.slurm.errors import SlurmCommandError
from plugin.slurm.privileges import ACTIONS, check_privileges

from .testbed import LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration
ACCOUNT = "aaprivtest"


def set_level(slurm: SlurmCLI, level: str) -> None:
    slurm.run("sacctmgr", "-i", "modify", "user", slurm.test_user, "set", f"adminlevel={level}")
    wanted = {"None": "None", "Operator": "Operator", "Admin": "Administrator"}[level]

    def known() -> bool:  # slurmctld learns it from slurmdbd asynchronously
        out = slurm.run(
            "scontrol", "show", "assoc_mgr", f"users={slurm.test_user}", "flags=users"
        ).stdout
        return f"AdminLevel={wanted}" in out

    slurm.wait_for(f"slurmctld to know {slurm.test_user} as {wanted}", known)


@pytest.fixture
def user_in_accounting(local_cluster: LocalCluster, slurm: SlurmCLI) -> Iterator[str]:
    """The test user with an association (an admin level needs one), level None at the end."""
    cluster = local_cluster.env.get("ADAPTALLOC_CLUSTER_NAME", "adaptalloc")
    slurm.run("sacctmgr", "-i", "add", "account", ACCOUNT, f"cluster={cluster}", check=False)
    slurm.run("sacctmgr", "-i", "add", "user", slurm.test_user, f"account={ACCOUNT}", check=False)
    yield slurm.test_user
    set_level(slurm, "None")
    # the database is shared by the suite: leave no account behind
    slurm.run(
        "sacctmgr", "-i", "delete", "user", slurm.test_user, f"account={ACCOUNT}", check=False
    )
    slurm.run("sacctmgr", "-i", "delete", "account", ACCOUNT, check=False)


def really_allowed(slurm: SlurmCLI, submit_job: SubmitJob) -> set[str]:
    """Which of ACTIONS the test user can do to a held job of root's."""
    job = str(submit_job("--hold", "--nodes=1-3", "--time=10", "--begin=now+3600", wrap="true"))
    user = slurm.test_user
    attempts = {
        "AdminComment": ("scontrol", "update", f"JobId={job}", "AdminComment=probe"),
        "NumNodes": ("scontrol", "update", f"JobId={job}", "NumNodes=2-2"),
        "TimeLimit": ("scontrol", "update", f"JobId={job}", "TimeLimit=600"),
        "release": ("scontrol", "release", job),
    }
    return {
        action
        for action, argv in attempts.items()
        if slurm.run(*argv, check=False, as_user=user).returncode == 0
    }


@pytest.mark.parametrize(
    ("level", "missing"),
    [
        ("None", set(ACTIONS)),
        ("Operator", {"AdminComment"}),
        ("Admin", set()),
    ],
)
def test_the_start_up_check_says_what_slurm_really_allows(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    user_in_accounting: str,
    level: str,
    missing: set[str],
) -> None:
    set_level(slurm, level)

    def run(*args: str) -> str:
        proc = slurm.run(*args, check=False, as_user=user_in_accounting)
        if proc.returncode != 0:
            raise SlurmCommandError(proc.stderr.strip())
        return proc.stdout

    uid = pwd.getpwnam(user_in_accounting).pw_uid
    verdict = check_privileges(run, uid=uid, user=user_in_accounting)
    allowed = really_allowed(slurm, submit_job)
    assert set(ACTIONS) - allowed == missing  # what the testbed shows (the module's table)
    assert set(verdict.missing) == missing
    assert verdict.ok == (not missing)
    if missing:
        problem = verdict.problem()
        assert problem is not None
        assert "adminlevel=Admin" in problem


def test_root_is_a_superuser(slurm: SlurmCLI) -> None:
    def run(*args: str) -> str:
        return slurm.run(*args).stdout

    verdict = check_privileges(run, uid=0, user="root")
    assert (verdict.level, verdict.ok) == ("superuser", True)
