"""Whether the sizing user holds more power than resizing needs (docs/admin/sizing-user.md).

The sizing user only has to be a coordinator of the accounts whose jobs the daemon resizes:
Slurm 22.05 lets a coordinator update the jobs of its accounts as their users could
(src/slurmctld/job_mgr.c, ``_update_job``). A coordinator may also, in its accounts and
every account under them, cancel, hold and requeue jobs, add users, sub-accounts and
other coordinators, and change the limits of the associations under them
(src/plugins/accounting_storage/mysql/as_mysql_assoc.c). So a coordinator of ``root``
holds that over the whole cluster, and an AdminLevel (Operator, Administrator) more still,
its changes skipping limits besides. Both are warned of; read with
``sacctmgr -n -P show user NAME withcoord format=User,AdminLevel,Coordinators``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from plugin.doctor.check import FAIL, OK, WARN, Check
from plugin.errors import printable
from plugin.slurm.errors import SlurmError

__all__ = ["Scope", "parse_scope", "sizer_scope"]

NAME = "sizing_user_scope"
#: How to narrow it; NAME is the account, ACCOUNTS the accounts the daemon resizes jobs of.
NARROW = (
    "sacctmgr -i delete coordinator account=root names=NAME; "
    "sacctmgr -i add coordinator account=ACCOUNTS names=NAME "
    "(the accounts whose jobs the daemon resizes, not their parents)"
)
NO_LEVEL = "sacctmgr -i modify user NAME set adminlevel=None"


@dataclass(frozen=True)
class Scope:
    """What Slurm's accounting says of the sizing user: its AdminLevel (lower case, "none"
    when it has none) and the accounts it coordinates, as sacctmgr lists them."""

    level: str
    accounts: tuple[str, ...]


def parse_scope(text: str, name: str) -> Scope | None:
    """The `Scope` of user `name` in sacctmgr's ``User|AdminLevel|Coordinators`` lines, or
    None when the user is not listed."""
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) == 3 and fields[0] == name:
            accounts = tuple(a for a in fields[2].split(",") if a)
            return Scope(fields[1].strip().lower() or "none", accounts)
    return None


def sizer_scope(run: Callable[..., str], sizing_user: str) -> Check:
    """ok: no sizing user, or one that coordinates some accounts other than root and holds
    no admin level; warn: a coordinator of root, an admin level, or no coordination at all
    (its resizes would be refused); fail: sacctmgr cannot say."""
    if not sizing_user:
        return Check(NAME, OK, "no sizing user configured")
    shown = printable(sizing_user)[:64]
    try:
        text = run(
            "sacctmgr", "-n", "-P", "show", "user", sizing_user, "withcoord",
            "format=User,AdminLevel,Coordinators",
        )  # fmt: skip
    except SlurmError as exc:
        return Check(NAME, FAIL, f"sacctmgr could not say: {printable(str(exc))[:200]}",
                     "check that slurmdbd answers (sacctmgr show user)")  # fmt: skip
    scope = parse_scope(text, sizing_user)
    if scope is None or not scope.accounts:
        return Check(
            NAME,
            WARN,
            f"sizing user {shown} coordinates no account: Slurm refuses its resizes",
            NARROW.split("; ", 1)[1].replace("NAME", shown),
        )
    problems, fixes = [], []
    if scope.level != "none":
        problems.append(
            f"has AdminLevel {scope.level}: its changes skip limits, and stolen it may "
            "change any job and, as an Administrator, Slurm's accounting"
        )
        fixes.append(NO_LEVEL.replace("NAME", shown))
    if "root" in scope.accounts:
        problems.append(
            "is a coordinator of root, so of every account: stolen it may cancel any job, "
            "lift the limits of every association under root, add users, accounts and "
            "coordinators"
        )
        fixes.append(NARROW.replace("NAME", shown))
    if problems:
        return Check(NAME, WARN, f"sizing user {shown} " + "; it ".join(problems), "; ".join(fixes))
    return Check(
        NAME,
        OK,
        f"sizing user {shown} coordinates {', '.join(scope.accounts)} (and any account "
        "under them) and holds no admin level",
    )
