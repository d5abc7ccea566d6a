"""Whether the daemon will resize on this cluster, given the limits Slurm enforces
(plugin/slurm/enforcement.py): the same verdict the daemon reaches at start-up, and the
same refusal (plugin/slurm/factory.py) when a sizing user is set and the daemon is not root.
"""

from __future__ import annotations

import os

from plugin.doctor.check import FAIL, OK, WARN, Check
from plugin.errors import printable
from plugin.slurm.enforcement import assess
from plugin.slurm.errors import SlurmCommandError
from plugin.slurm.writer import CliSlurm, SizingUser

__all__ = ["ROOT_UNIT", "SIZER_SETUP", "enforced_limits"]

#: How to make a sizing user (docs/admin/sizing-user.md); NAME is the account's name.
SIZER_SETUP = (
    "useradd --system --no-create-home --shell /usr/sbin/nologin NAME; "
    "sacctmgr -i add user NAME account=ACCOUNT MaxSubmitJobs=0; "
    "sacctmgr -i add coordinator account=ACCOUNT names=NAME "
    "(ACCOUNT: the accounts whose jobs the daemon resizes, comma-separated; never root); "
    'then [daemon] sizing_user = "NAME" and restart the daemon'
)
#: How to run the daemon as root under the shipped unit (which runs it as SlurmUser).
ROOT_UNIT = (
    "run the daemon as root: `mkdir -p /etc/systemd/system/adaptalloc.service.d && printf "
    "'[Service]\\nUser=root\\nGroup=root\\n' > "
    "/etc/systemd/system/adaptalloc.service.d/root.conf && systemctl daemon-reload && "
    "systemctl restart adaptalloc`, then run the doctor as root"
)


def enforced_limits(
    slurm: CliSlurm, sizing_user: str, allowed: bool, euid: int | None = None
) -> Check:
    """ok: the daemon resizes and Slurm checks every limit; warn: it releases every job as
    submitted (limits enforced, no usable sizing user) or it resizes past limits it does
    not check (``resize_with_enforced_limits``); fail: a sizing user is set and this account
    (the daemon's: the doctor runs as it) is not root, so the daemon refuses to start, or the
    sizing user is no account here."""
    try:
        sizer = SizingUser.named(sizing_user) if sizing_user else None
    except SlurmCommandError as exc:
        fix = SIZER_SETUP.replace("NAME", printable(sizing_user)[:64])
        return Check("enforced_limits", FAIL, str(exc), fix)
    if sizer is not None and (os.geteuid() if euid is None else euid) != 0:
        return Check(
            "enforced_limits",
            FAIL,
            f"[daemon] sizing_user = {printable(sizing_user)[:64]!r}, but this account is not "
            "root: the daemon runs scontrol as the sizing user (a child switched to its "
            "uid), so it refuses to start unless it runs as root",
            ROOT_UNIT,
        )
    verdict = assess(slurm.run, sizer, allowed)
    name = printable(sizing_user)[:64] or "adaptalloc-sizer"
    if not verdict.resize:
        return Check("enforced_limits", WARN, verdict.note, SIZER_SETUP.replace("NAME", name))
    if verdict.note:
        return Check(
            "enforced_limits",
            WARN,
            verdict.note,
            "set resize_with_enforced_limits = false and use a sizing user: "
            + SIZER_SETUP.replace("NAME", name),
        )
    detail = (
        "Slurm enforces no association/QOS limits (AccountingStorageEnforce)"
        if verdict.enforced is False
        else f"limits enforced; resizes run as sizing user {name}, so Slurm checks them"
    )
    return Check("enforced_limits", OK, detail)
