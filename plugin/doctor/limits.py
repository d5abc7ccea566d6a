"""Whether the daemon will resize on this cluster, given the limits Slurm enforces
(plugin/slurm/enforcement.py): the same verdict the daemon reaches at start-up."""

from __future__ import annotations

from plugin.doctor.check import FAIL, OK, WARN, Check
from plugin.errors import printable
from plugin.slurm.enforcement import assess
from plugin.slurm.errors import SlurmCommandError
from plugin.slurm.writer import CliSlurm, SizingUser

__all__ = ["SIZER_SETUP", "enforced_limits"]

#: How to make a sizing user (README, "Limits"); NAME is the account's name.
SIZER_SETUP = (
    "useradd --system --no-create-home --shell /usr/sbin/nologin NAME; "
    "sacctmgr -i add user NAME account=root; "
    "sacctmgr -i add coordinator account=root names=NAME; "
    'then [daemon] sizing_user = "NAME" and restart the daemon'
)


def enforced_limits(slurm: CliSlurm, sizing_user: str, allowed: bool) -> Check:
    """ok: the daemon resizes and Slurm checks every limit; warn: it releases every job as
    submitted (limits enforced, no usable sizing user) or it resizes past limits it does
    not check (``resize_with_enforced_limits``)."""
    try:
        sizer = SizingUser.named(sizing_user) if sizing_user else None
    except SlurmCommandError as exc:
        fix = SIZER_SETUP.replace("NAME", printable(sizing_user)[:64])
        return Check("enforced_limits", FAIL, str(exc), fix)
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
