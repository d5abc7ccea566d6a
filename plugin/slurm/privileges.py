"""Whether the daemon's account may do what the daemon does to other users' jobs.

What each change needs, seen on the Slurm 22.05 testbed (``sacctmgr modify user NAME set
adminlevel=...``, then the command run as that user on another user's held job):

| change | None | Operator | Administrator | SlurmUser / root |
|---|---|---|---|---|
| ``scontrol update NumNodes=N-N`` | no | yes | yes | yes |
| ``scontrol update TimeLimit=T`` (raise too) | no | yes | yes | yes |
| ``scontrol release`` | no | yes | yes | yes |
| ``scontrol update AdminComment=...`` | no | **no** (permission denied) | yes | yes |

So the daemon needs AdminLevel=Administrator, or to run as SlurmUser or root: an Operator's
every admin-comment update fails, and jobs would be released still marked.

`judge` is the decision (pure); `check_privileges` reads its inputs: the account's uid and
name, SlurmUser from ``scontrol show config``, the admin level from
``sacctmgr -n -P show user NAME format=AdminLevel``. A level that cannot be read counts as
missing: the daemon then refuses to hold rather than hold jobs it cannot record.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable
from dataclasses import dataclass

from plugin.errors import printable
from plugin.slurm.errors import SlurmError
from plugin.slurm.parse import config_value

__all__ = [
    "ACTIONS",
    "LEVEL_ACTIONS",
    "Privileges",
    "check_privileges",
    "judge",
    "privilege_problem",
]

#: What the daemon does to held jobs (names used in messages).
ACTIONS = ("NumNodes", "TimeLimit", "release", "AdminComment")
#: Actions each sacctmgr AdminLevel allows on other users' jobs (the table above).
LEVEL_ACTIONS = {
    "none": frozenset[str](),
    "operator": frozenset({"NumNodes", "TimeLimit", "release"}),
    "administrator": frozenset(ACTIONS),
}


@dataclass(frozen=True)
class Privileges:
    """What the account may do. `level`: "superuser" (root or SlurmUser), an AdminLevel
    ("administrator", "operator", "none"), or "unknown" (could not be read)."""

    user: str
    level: str
    missing: tuple[str, ...]
    detail: str = ""

    @property
    def ok(self) -> bool:
        return not self.missing

    def problem(self) -> str | None:
        """One line for the log and the admin, or None when nothing is missing."""
        if self.ok:
            return None
        why = f" ({self.detail})" if self.detail else ""
        return (
            f"account {printable(self.user)!r} (Slurm admin level {self.level}{why}) may not set "
            f"{', '.join(self.missing)} on other users' jobs; run the daemon as SlurmUser or "
            f"root, or `sacctmgr modify user {printable(self.user)} set adminlevel=Admin`"
        )


def _level_name(text: str) -> str:
    value = text.strip().lower()
    if value in ("admin", "administrator"):
        return "administrator"
    if value in ("operator", "none"):
        return value
    return "unknown"


def judge(uid: int, user: str, slurm_user: str | None, admin_level: str | None) -> Privileges:
    """The account's privileges: root and SlurmUser may do everything; otherwise its
    AdminLevel's actions (LEVEL_ACTIONS); an unreadable level allows nothing."""
    if uid == 0 or (slurm_user is not None and user == slurm_user):
        return Privileges(user, "superuser", ())
    level = _level_name(admin_level) if admin_level is not None else "unknown"
    allowed = LEVEL_ACTIONS.get(level, frozenset())
    detail = "" if admin_level is not None else "sacctmgr did not say"
    return Privileges(user, level, tuple(a for a in ACTIONS if a not in allowed), detail)


def _slurm_user(config_text: str) -> str | None:
    """SlurmUser's name from ``scontrol show config`` ("SlurmUser = slurm(64030)")."""
    return config_value(config_text, "SlurmUser").split("(", 1)[0] or None


def check_privileges(
    run: Callable[..., str], uid: int | None = None, user: str | None = None
) -> Privileges:
    """`judge` for this process's account (or `uid`/`user`), asking Slurm through `run`
    (an argument-list runner such as ``CliSlurmReader.run``)."""
    uid = os.getuid() if uid is None else uid
    if user is None:
        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:
            user = str(uid)
    if uid == 0:
        return judge(uid, user, None, None)
    try:
        slurm_user = _slurm_user(run("scontrol", "show", "config"))
    except SlurmError:
        slurm_user = None
    if slurm_user == user:
        return judge(uid, user, slurm_user, None)
    try:
        out = run("sacctmgr", "-n", "-P", "show", "user", user, "format=AdminLevel")
    except SlurmError:
        return judge(uid, user, slurm_user, None)
    lines = [line for line in out.splitlines() if line.strip()]
    return judge(uid, user, slurm_user, lines[0] if len(lines) == 1 else None)


def privilege_problem(run: Callable[..., str]) -> str | None:
    """The daemon's start-up check: None when its account may size, annotate and release
    other users' jobs, else the one-line reason to refuse holding (heartbeat off)."""
    return check_privileges(run).problem()
