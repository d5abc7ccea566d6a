"""Every Redis key adaptalloc uses, in one place, under the versioned prefix ``adaptalloc:v1:``.

| key | type | holds |
|---|---|---|
| ``adaptalloc:v1:apps`` | sorted set | app key -> end time of its latest run (Unix s) |
| ``adaptalloc:v1:dirty`` | sorted set | app key -> when it first needed a refit (Unix s) |
| ``adaptalloc:v1:decisions`` | stream | the daemon's decisions, capped (XADD MAXLEN ~) |
| ``adaptalloc:v1:jobs`` | hash | job id -> app that counted it (a job counts once) |
| ``adaptalloc:v1:app:<app>:obs`` | hash | job id -> observation JSON ``{"n","t","e","s"}`` |
| ``adaptalloc:v1:app:<app>:runs`` | sorted set | job id -> end time, for ageing out and trimming |
| ``adaptalloc:v1:app:<app>:state`` | hash | obs_version, added_total, updated_at |
| ``adaptalloc:v1:app:<app>:curve`` | hash | curve JSON and its metadata (version, fitted_at, …) |
| ``adaptalloc:v1:learner:<source>`` | hash | the learner's watermark for sacct or squeue |
| ``adaptalloc:v1:import:<id>`` | hash | checkpoint of one ``import sacct`` range |
| ``adaptalloc:v1:decided:<job>-<submit>`` | string, TTL | the daemon recorded this decision |
| ``adaptalloc:v1:guard:watch`` | hash | job id -> kill-guard watch JSON (limit shortened) |
| ``adaptalloc:v1:guard:raises`` | stream | every limit the kill guard raised, capped |
| ``adaptalloc:v1:app:<app>:guard`` | hash | raised, killed, censored counts; limit safety |
| ``adaptalloc:v1:app:<app>:censored`` | hash | job id -> censored run JSON (a lower bound) |
| ``adaptalloc:v1:daemon:{lease}`` (``:token``) | string, PX (int) | HA lease; fencing tokens |

``<app>`` is an :class:`~plugin.appkey.AppKey`'s string form (``lulesh`` or
``lulesh@large``): validated and normalised before it gets here, so it never holds ``:``,
``*``, whitespace or anything outside ``[a-z0-9._@-]``. The functions below accept only
AppKey values and check the other variable parts, so no caller can build a key outside the
namespace.

An observation is stored as compact JSON, ``{"n": nodes, "t": runtime_s, "e": end_time,
"s": source}``, short enough for Redis to keep small apps' hashes in its compact encoding.
Bumping the schema means a new prefix (``adaptalloc:v2:``), never a silent change.
"""

from __future__ import annotations

import re

from plugin.appkey import AppKey

__all__ = [
    "APPS",
    "DECISIONS",
    "DIRTY",
    "GUARD_RAISES",
    "GUARD_WATCH",
    "JOBS",
    "LEARNER_SOURCES",
    "LEASE",
    "LEASE_TOKEN",
    "PREFIX",
    "app_censored",
    "app_curve",
    "app_guard",
    "app_keys",
    "app_observations",
    "app_runs",
    "app_state",
    "decided",
    "import_checkpoint",
    "learner",
]

PREFIX = "adaptalloc:v1:"
APPS = PREFIX + "apps"
DIRTY = PREFIX + "dirty"
DECISIONS = PREFIX + "decisions"
JOBS = PREFIX + "jobs"
GUARD_WATCH = PREFIX + "guard:watch"
GUARD_RAISES = PREFIX + "guard:raises"
#: The HA daemons' lease and its fencing-token counter (plugin/daemon/lease.py); one hash tag,
#: so that lease.lua's two keys share a Redis Cluster slot.
LEASE = PREFIX + "daemon:{lease}"
LEASE_TOKEN = LEASE + ":token"
#: Where the learner can read finished jobs from; each has its own watermark.
LEARNER_SOURCES = ("sacct", "squeue")

_IMPORT_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")


def _app(app: AppKey) -> str:
    if not isinstance(app, AppKey):  # a str here would bypass validation
        raise TypeError(f"expected an AppKey, got {type(app).__name__}")
    return f"{PREFIX}app:{app}:"


def app_observations(app: AppKey) -> str:
    """``adaptalloc:v1:app:<app>:obs``: job id -> observation JSON."""
    return _app(app) + "obs"


def app_runs(app: AppKey) -> str:
    """``adaptalloc:v1:app:<app>:runs``: job id -> end time."""
    return _app(app) + "runs"


def app_state(app: AppKey) -> str:
    """``adaptalloc:v1:app:<app>:state``: obs_version, added_total, updated_at."""
    return _app(app) + "state"


def app_curve(app: AppKey) -> str:
    """``adaptalloc:v1:app:<app>:curve``: curve JSON and metadata."""
    return _app(app) + "curve"


def app_guard(app: AppKey) -> str:
    """``adaptalloc:v1:app:<app>:guard``: the kill guard's and the learner's counts for the app
    (``raised``, ``killed``, ``censored``) and its time-limit safety factor (``safety``)."""
    return _app(app) + "guard"


def app_censored(app: AppKey) -> str:
    """``adaptalloc:v1:app:<app>:censored``: job id -> a run stopped before it finished
    (TIMEOUT, PREEMPTED), in the observation JSON; its runtime is a lower bound. Kept apart
    from ``:obs`` so that no fit reads it as a completed run."""
    return _app(app) + "censored"


def app_forgotten(app: AppKey) -> str:
    """``adaptalloc:v1:app:<app>:forgotten``: when the app was last forgotten (Unix seconds).

    A tombstone with a time to live: runs of the app that ended before it are not counted
    again (the learner re-reads a window of finished jobs; without it a forgotten app came
    back from its own old runs).
    """
    return _app(app) + "forgotten"


def app_keys(app: AppKey) -> tuple[str, str, str, str, str, str]:
    """All per-app keys (what ``forget`` deletes besides the index entries)."""
    return (
        app_observations(app),
        app_runs(app),
        app_state(app),
        app_curve(app),
        app_guard(app),
        app_censored(app),
    )


def learner(source: str) -> str:
    """``adaptalloc:v1:learner:<source>`` for source sacct or squeue."""
    if source not in LEARNER_SOURCES:
        raise ValueError(f"learner source must be one of {', '.join(LEARNER_SOURCES)}")
    return f"{PREFIX}learner:{source}"


def import_checkpoint(import_id: str) -> str:
    """``adaptalloc:v1:import:<id>``; id from [a-z0-9._-], e.g. ``sacct-1700000000-1700086400``."""
    if not _IMPORT_ID.fullmatch(import_id):
        raise ValueError(f"import id {import_id!r} is not of the form [a-z0-9][a-z0-9._-]*")
    return f"{PREFIX}import:{import_id}"


def decided(job_id: int, submit_time: int) -> str:
    """``adaptalloc:v1:decided:<job_id>-<submit_time>``: the daemon's record-once guard.

    Slurm reuses job ids (after MaxJobId, or a reset cluster), so the submit time is part of
    the key; both must be whole numbers ≥ 0.
    """
    for name, value in (("job_id", job_id), ("submit_time", submit_time)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number ≥ 0, got {value!r}")
    return f"{PREFIX}decided:{job_id}-{submit_time}"
