"""The daemon's record in a job's admin_comment, as read back (written by plugin/daemon/marks.py).

Accounting keeps a job's admin_comment, so the record the daemon wrote when it decided a job
comes back with the finished job; the learner reads the user's own limit from it (a sized
job's limit in accounting is the one the daemon set, not the one the user asked). The words:

    adaptalloc:v1:sized n=16 range=4-64 rule=load_adaptive limit=120 for=4
    adaptalloc:v1:kept range=4-64 rule=fallback limit=120 for=4
    adaptalloc:v1:released reason=store_unavailable range=4-64

``limit`` is the user's limit in whole minutes as submitted, ``for`` the size it is read as
written for (policies/time_limit.py, `reference_size`); both are absent from records written
before they were kept, and when the job gave no limit. This module only parses: it sits below
both the daemon and the learner.
"""

from __future__ import annotations

import re

__all__ = ["KEPT", "RECORDS", "RELEASED", "SIZED", "parse_record", "users_limit"]

SIZED = "adaptalloc:v1:sized"
KEPT = "adaptalloc:v1:kept"
RELEASED = "adaptalloc:v1:released"
RECORDS = (SIZED, KEPT, RELEASED)
_FIELD = re.compile(r"([a-z_]+)=([a-z0-9_.@-]+)")
#: The longest limit a record may hold, minutes (Slurm's own ceiling is below 2^32 minutes).
_MAX_LIMIT_MIN = 1 << 31


def parse_record(admin_comment: str | None) -> dict[str, str]:
    """The daemon's record as fields (``{"record": "sized", "n": "16", ...}``), {} if none."""
    words = (admin_comment or "").split()
    for i, word in enumerate(words):
        if word.rstrip(";") in RECORDS:
            out = {"record": word.rstrip(";").rsplit(":", 1)[1]}
            if word.endswith(";"):
                return out
            for field in words[i + 1 :]:
                match = _FIELD.fullmatch(field.rstrip(";"))
                if match is None:
                    break
                out[match.group(1)] = match.group(2)
                if field.endswith(";"):
                    break
            return out
    return {}


def users_limit(admin_comment: str | None) -> tuple[int, int] | None:
    """(the user's limit in minutes, the size it was written for) from a sized or kept record
    that holds both as whole numbers ≥ 1; None otherwise (no record, an older one, a job
    without a limit, or fields that are not plain numbers)."""
    fields = parse_record(admin_comment)
    if fields.get("record") not in ("sized", "kept"):
        return None
    limit, size = fields.get("limit", ""), fields.get("for", "")
    if not (limit.isdigit() and size.isdigit()):
        return None
    minutes, nodes = int(limit), int(size)
    if not (1 <= minutes <= _MAX_LIMIT_MIN and nodes >= 1):
        return None
    return minutes, nodes
