"""Whether slurmctld enforces association and QOS limits, which a resize by the daemon lifts.

The daemon changes a held job's NumNodes and TimeLimit as an operator (plugin/slurm/
privileges.py). In Slurm 22.05 an operator's job update marks what it changes as set by an
administrator (src/slurmctld/job_mgr.c, ``_update_job``: ``acct_policy_limit_set.tres[*] =
ADMIN_SET_LIMIT``, ``.time = ADMIN_SET_LIMIT``; then ``job_ptr->limit_set.tres[NODE]``, and
``[CPU]`` when the job's CPU count follows its node count, take that mark), and the
scheduler's limit checks skip every TRES so marked (src/slurmctld/acct_policy.c,
``_validate_tres_limits_for_*`` and ``_validate_tres_usage_limits_for_*``: ``if
(admin_set_limit_tres_array[i] == ADMIN_SET_LIMIT) continue``) and every wall-time limit
once the time limit is (``job_ptr->limit_set.time != ADMIN_SET_LIMIT``). Seen on the testbed
with ``AccountingStorageEnforce=limits,qos`` (tests/integration/test_security_limits.py):

* an account with ``GrpTRES=node=2`` runs a 2-node job; its next job pends with
  AssocGrpNodeLimit until root sets its NumNodes, then runs: 4 nodes under a 2-node cap;
* under ``MaxTRESPerJob=cpu=4`` a 1-4 node job of 2 tasks per node that root sets to
  NumNodes=4-4 runs on 8 CPUs.

The daemon checks per-job node and wall limits itself (plugin/daemon/cluster.py); group
limits (GrpTRES, GrpTRESMins, GrpTRESRunMins, GrpWall), per-user and per-account limits, CPU
limits and TRES-minutes it does not. So where Slurm enforces limits the daemon resizes in
one of two ways only, else it releases jobs as submitted and Slurm applies every limit to
them as to any job (`judge`):

* through a sizing user (``[daemon] sizing_user``): an account that coordinates the
  accounts whose jobs it resizes (``sacctmgr add coordinator account=A,B names=USER``,
  never root: docs/admin/sizing-user.md) and is no operator. The
  daemon, as root, runs its resizes' ``scontrol`` as that account; a coordinator's update is
  not an operator's, so nothing is marked (seen on the testbed: the job above then pends
  with AssocGrpNodeLimit, the other with AssocMaxCpuPerJobLimit, as if its user had asked
  for that size). Admin comments and releases stay the daemon's own.
* ``[daemon] resize_with_enforced_limits = true``: the admin says none of those limits is
  configured, and accepts that they would not hold for resized jobs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from plugin.errors import printable
from plugin.slurm.errors import SlurmError
from plugin.slurm.parse import parse_accounting_enforce
from plugin.slurm.privileges import check_privileges
from plugin.slurm.writer import SizingUser

__all__ = ["LIMIT_WORDS", "Verdict", "assess", "judge", "limits_enforced", "sizer_problem"]

#: AccountingStorageEnforce words under which slurmctld applies association and QOS limits
#: ("safe" implies "limits"; "qos" alone only requires a valid QOS).
LIMIT_WORDS = frozenset({"limits", "safe"})


def limits_enforced(run: Callable[..., str]) -> bool | None:
    """True when ``scontrol show config`` says slurmctld enforces limits, False when it says
    it does not, None when it cannot be read (`run`: an argument-list runner such as
    ``CliSlurmReader.run``)."""
    try:
        words = parse_accounting_enforce(run("scontrol", "show", "config"))
    except SlurmError:
        return None
    return bool(words & LIMIT_WORDS)


def assess(run: Callable[..., str], sizer: SizingUser | None, allowed: bool) -> Verdict:
    """Ask Slurm through `run` and `judge`: the daemon's check and the doctor's.
    allowed: ``resize_with_enforced_limits``."""
    enforced = limits_enforced(run)
    problem = sizer_problem(run, sizer) if sizer is not None and enforced is not False else None
    return judge(enforced, allowed, sizer, problem)


def sizer_problem(
    run: Callable[..., str], sizer: SizingUser, euid: int | None = None
) -> str | None:
    """Why `sizer` cannot make resizes that Slurm checks, None when it can: the daemon must
    be root to run commands as it, and it must hold no admin level (an operator's, an
    administrator's, SlurmUser's or root's updates are marked like the daemon's own)."""
    if (os.geteuid() if euid is None else euid) != 0:
        return "the daemon must run as root to run scontrol as sizing_user"
    level = check_privileges(run, uid=sizer.uid, user=sizer.name).level
    if level != "none":
        shown = {
            "superuser": "root or SlurmUser",
            "administrator": "an Administrator",
            "operator": "an Operator",
        }.get(level, "of unknown admin level")
        return (
            f"sizing_user {printable(sizer.name)[:64]} is {shown}: "
            "Slurm would mark its changes like the daemon's"
        )
    return None


@dataclass(frozen=True)
class Verdict:
    """Whether the daemon may resize, whether to ask Slurm again later, what to log, and
    what Slurm said of enforcement (None: it could not be read)."""

    resize: bool
    retry: bool
    note: str
    enforced: bool | None


def judge(
    enforced: bool | None, allowed: bool, sizer: SizingUser | None, problem: str | None
) -> Verdict:
    """The module docstring's rule. enforced: `limits_enforced` (None: unknown); allowed:
    ``resize_with_enforced_limits``; problem: `sizer_problem` of the configured sizer."""
    if enforced is False:
        return Verdict(True, False, "", enforced)
    if sizer is not None and problem is None:
        return Verdict(True, False, "", enforced)
    if allowed:
        return Verdict(
            True,
            False,
            "resize_with_enforced_limits: group, CPU and TRES-minute limits are not applied "
            "to the jobs the daemon resizes",
            enforced,
        )
    why = (
        "Slurm enforces association/QOS limits (AccountingStorageEnforce)"
        if enforced
        else "cannot read AccountingStorageEnforce (scontrol show config)"
    )
    fix = problem if problem is not None else "set [daemon] sizing_user (docs/admin/sizing-user.md)"
    return Verdict(
        False,
        True,
        f"{why}, and an operator's resize lifts those the daemon does not check: jobs are "
        f"released as submitted; {fix}",
        enforced,
    )
