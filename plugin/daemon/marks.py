"""What the daemon reads and writes in a job's admin_comment (versioned, like jobstats' JS1:).

job_submit.lua holds a moldable job and writes ``adaptalloc:v1:held`` in front of any
admin_comment the job had. The daemon replaces that marker with its record, after the app
key as a v1 tag (so that accounting, which keeps admin_comment, tells the learner which
application the run was) and keeps the text that was there before:

    adaptalloc:v1 app=lu size=w; adaptalloc:v1:sized n=16 range=4-64 rule=pws limit=120 for=4
    adaptalloc:v1 app=lu; adaptalloc:v1:kept range=4-64 rule=fallback; <earlier text>
    adaptalloc:v1:released reason=store_unavailable range=4-64

``limit`` and ``for``: the user's own limit in minutes, as submitted, and the size it is read
as written for, so that the learner can fit the run with the limit its user asked
(plugin/formats/daemon_record.py reads them; absent for a job without a limit).

``sized``: the daemon pinned the size (and maybe the time limit). ``kept``: the policy left
the job as submitted. ``released``: the daemon failed open (reason code, plugin/daemon/
reasons.py). The tag ends at ``;`` (plugin/appkey.py); words starting ``adaptalloc:v1:`` are
never tags. Everything written here is built from validated parts: an AppKey, integers, rule
names and reason codes from fixed sets, and the earlier admin text (set by Slurm
administrators, escaped and cut).
"""

from __future__ import annotations

import functools
import re

from plugin.appkey import TAG_MARKER, AppKey, AppKeyError, parse_tag
from plugin.errors import printable
from plugin.formats.daemon_record import KEPT, RECORDS, RELEASED, SIZED, parse_record

__all__ = [
    "HELD",
    "KEPT",
    "RECORDS",
    "RELEASED",
    "SIZED",
    "admin_comment",
    "app_tag",
    "is_held",
    "kept_record",
    "parse_record",
    "prior_text",
    "record_word",
    "released_record",
    "sized_record",
]

HELD = "adaptalloc:v1:held"
#: Characters of earlier admin text kept.
PRIOR_LIMIT = 400
_TOKEN = re.compile(r"[a-z0-9_.@=-]+")


def _words(admin_comment: str | None) -> list[str]:
    return (admin_comment or "").split()


def is_held(admin_comment: str | None) -> bool:
    """The job carries job_submit.lua's marker (the daemon has not recorded anything yet)."""
    return HELD in _words(admin_comment)


def record_word(admin_comment: str | None) -> str | None:
    """SIZED, KEPT or RELEASED when the daemon's record is there, else None."""
    for word in _words(admin_comment):
        if word.rstrip(";") in RECORDS:
            return word.rstrip(";")
    return None


@functools.lru_cache(maxsize=4096)
def prior_text(admin_comment: str | None) -> str:
    """The admin text the job had before job_submit.lua's marker: marker removed once,
    escaped, cut to PRIOR_LIMIT characters. Remembered per text (the decider asks for it
    several times per job, and a burst's jobs share their admin comments)."""
    words = _words(admin_comment)
    if HELD in words:
        words.remove(HELD)
    text = printable(" ".join(words))
    return text[:PRIOR_LIMIT]


def app_tag(app: AppKey) -> str:
    """The v1 tag naming `app` (``adaptalloc:v1 app=lu size=w``)."""
    size = f" size={app.size}" if app.size is not None else ""
    return f"{TAG_MARKER} app={app.name}{size}"


def _token(value: object, what: str) -> str:
    text = str(value)
    if not _TOKEN.fullmatch(text):
        raise ValueError(f"{what} {printable(text)[:40]!r} cannot go into an admin comment")
    return text


def _limit_words(limit: tuple[int, int] | None) -> str:
    """`` limit=L for=r``: the user's limit in minutes and the size it is read as written for
    (plugin/formats/daemon_record.py), or nothing for a job without a limit."""
    if limit is None:
        return ""
    return f" limit={int(limit[0])} for={int(limit[1])}"


def sized_record(
    nodes: int, low: int, high: int, rule: str, limit: tuple[int, int] | None = None
) -> str:
    return (
        f"{SIZED} n={int(nodes)} range={int(low)}-{int(high)} rule={_token(rule, 'rule')}"
        + _limit_words(limit)
    )


def kept_record(low: int, high: int, rule: str, limit: tuple[int, int] | None = None) -> str:
    return f"{KEPT} range={int(low)}-{int(high)} rule={_token(rule, 'rule')}" + _limit_words(limit)


def released_record(reason: str, low: int | None, high: int | None) -> str:
    span = f" range={int(low)}-{int(high)}" if low is not None and high is not None else ""
    return f"{RELEASED} reason={_token(reason, 'reason')}{span}"


def _has_tag(text: str) -> bool:
    try:
        return parse_tag(text, "admin_comment") is not None
    except AppKeyError:
        return True  # an admin's tag we cannot read: do not add a second one


def admin_comment(record: str, prior: str = "", app: AppKey | None = None) -> str:
    """The admin comment the daemon sets: ``[tag; ]record[; prior]``.

    The tag is left out when the earlier admin text has one already (a second tag would make
    the key unreadable, and the earlier one is what named the app).
    """
    parts = []
    if app is not None and not _has_tag(prior):
        parts.append(app_tag(app) + ";")
    parts.append(record + (";" if prior else ""))
    if prior:
        parts.append(prior)
    return " ".join(parts)
