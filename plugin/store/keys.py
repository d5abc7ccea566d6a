"""Every Redis key adaptalloc uses, in one place, under the versioned prefix ``adaptalloc:v2:``.

| key | type | holds |
|---|---|---|
| ``adaptalloc:v2:apps`` | sorted set | app key -> end time of its latest run (Unix s) |
| ``adaptalloc:v2:dirty`` | sorted set | app key -> when it first needed a refit (Unix s) |
| ``adaptalloc:v2:decisions`` | stream | the daemon's decisions, capped (XADD MAXLEN ~) |
| ``adaptalloc:v2:jobs`` | hash | job id -> app that counted it (a job counts once) |
| ``adaptalloc:v2:app:{<app>}:obs`` | hash | job id -> observation JSON (below) |
| ``adaptalloc:v2:app:{<app>}:runs`` | sorted set | job id -> end time (ageing out, trimming) |
| ``adaptalloc:v2:app:{<app>}:state`` | hash | obs_version, added_total, updated_at |
| ``adaptalloc:v2:app:{<app>}:curve`` | hash | curve JSON and its metadata (version, fitted_at, …) |
| ``adaptalloc:v2:app:{<app>}:curve:<type>`` | hash | the same, from the runs on one node type |
| ``adaptalloc:v2:app:{<app>}:types`` | set | node types that have a curve of their own |
| ``adaptalloc:v2:app:{<app>}:guard`` | hash | raised, killed, censored counts; limit safety |
| ``adaptalloc:v2:app:{<app>}:censored`` | hash | job id -> censored run JSON (a lower bound) |
| ``adaptalloc:v2:app:{<app>}:forgotten`` | string, TTL | when the app was forgotten |
| ``adaptalloc:v2:learner:<source>`` | hash | the learner's watermark for sacct or squeue |
| ``adaptalloc:v2:import:<id>`` | hash | checkpoint of one ``import sacct`` range |
| ``adaptalloc:v2:decided:<job>-<submit>`` | string, TTL | the daemon recorded this decision |
| ``adaptalloc:v2:guard:watch`` | hash | job id -> kill-guard watch JSON (limit shortened) |
| ``adaptalloc:v2:guard:raises`` | stream | every limit the kill guard raised, capped |
| ``adaptalloc:v2:migration`` | hash | the v1 -> v2 migration: state, counts (migrate.py) |
| ``adaptalloc:v2:daemon:{lease}`` (``:token``) | string, PX (int) | HA lease; fencing tokens |

``<app>`` is an :class:`~plugin.appkey.AppKey`'s string form (``lulesh`` or
``lulesh@large``): validated and normalised before it gets here, so it never holds ``:``,
``*``, ``{``, ``}``, whitespace or anything outside ``[a-z0-9._@-]``. The functions below
accept only AppKey values and check the other variable parts, so no caller can build a key
outside the namespace.

**Redis Cluster.** Each app's keys share the hash tag ``{<app>}`` (issue 16), so they live
in one slot and a script that touches only them runs on a cluster. These scripts also touch
global keys (other slots) and so do *not* run on Redis Cluster yet:

* ``add_observations.lua``: ``apps``, ``dirty``, ``jobs`` (the index, the refit queue and
  the count-each-job-once index) beside the app's keys;
* ``save_curve.lua``: ``apps`` (is the app forgotten?) and ``dirty``;
* ``forget.lua``: ``apps``, ``dirty``, ``jobs``;
* ``record_decision.lua``: ``decided:<job>-<submit>`` and ``decisions``;
* ``migrate_key.lua``: a v1 key and its v2 name (different slots by design).

``set_max.lua`` touches one key and runs anywhere. Moving the global indexes under a tag
(or per-app job index entries) is what Redis Cluster support still needs.

An observation is stored as compact JSON, ``{"n": nodes, "t": runtime_s, "e": end_time,
"s": source}`` with, only when known, ``"z"`` problem size, ``"k"`` tasks, ``"p"`` tasks per
node and ``"y"`` node type (partition), short enough for Redis to keep small apps' hashes in
its compact encoding.

**Versions.** Bumping the schema means a new prefix, never a silent change. v1
(``adaptalloc:v1:``, app keys ``adaptalloc:v1:app:<app>:obs`` without the tag) held the same
values under other names; plugin/store/migrate.py copies v1 to v2 (``adaptalloc store
migrate``; the learner runs it at start when v1 keys exist and v2 does not) and keeps v1.
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
    "MIGRATION",
    "PREFIX",
    "V1_PREFIX",
    "app_censored",
    "app_curve",
    "app_guard",
    "app_keys",
    "app_node_types",
    "app_observations",
    "app_runs",
    "app_state",
    "app_type_curve",
    "decided",
    "import_checkpoint",
    "learner",
]

PREFIX = "adaptalloc:v2:"
#: The previous schema, read only by the migration (plugin/store/migrate.py).
V1_PREFIX = "adaptalloc:v1:"
#: The migration's own record: state (running, done), counts, times.
MIGRATION = PREFIX + "migration"
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

_NODE_TYPE = re.compile(r"[a-z0-9._-]{1,64}")
_IMPORT_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")


def _app(app: AppKey) -> str:
    if not isinstance(app, AppKey):  # a str here would bypass validation
        raise TypeError(f"expected an AppKey, got {type(app).__name__}")
    return f"{PREFIX}app:{{{app}}}:"


def app_observations(app: AppKey) -> str:
    """``adaptalloc:v2:app:{<app>}:obs``: job id -> observation JSON."""
    return _app(app) + "obs"


def app_runs(app: AppKey) -> str:
    """``adaptalloc:v2:app:{<app>}:runs``: job id -> end time."""
    return _app(app) + "runs"


def app_state(app: AppKey) -> str:
    """``adaptalloc:v2:app:{<app>}:state``: obs_version, added_total, updated_at."""
    return _app(app) + "state"


def app_curve(app: AppKey) -> str:
    """``adaptalloc:v2:app:{<app>}:curve``: curve JSON and metadata."""
    return _app(app) + "curve"


def app_type_curve(app: AppKey, node_type: str) -> str:
    """``adaptalloc:v2:app:{<app>}:curve:<type>``: the app's curve on one node type (partition),
    fitted from its runs there when it ran on more than one; same fields as ``:curve``."""
    if not _NODE_TYPE.fullmatch(node_type):
        raise ValueError(f"node type {node_type!r} is not [a-z0-9._-]{{1,64}}")
    return _app(app) + "curve:" + node_type


def app_node_types(app: AppKey) -> str:
    """``adaptalloc:v2:app:{<app>}:types``: set of the node types with a curve of their own."""
    return _app(app) + "types"


def app_guard(app: AppKey) -> str:
    """``adaptalloc:v2:app:{<app>}:guard``: the kill guard's and the learner's counts for the app
    (``raised``, ``killed``, ``censored``) and its time-limit safety factor (``safety``)."""
    return _app(app) + "guard"


def app_censored(app: AppKey) -> str:
    """``adaptalloc:v2:app:{<app>}:censored``: job id -> a run stopped before it finished
    (TIMEOUT, PREEMPTED), in the observation JSON; its runtime is a lower bound. Kept apart
    from ``:obs`` so that no fit reads it as a completed run."""
    return _app(app) + "censored"


def app_forgotten(app: AppKey) -> str:
    """``adaptalloc:v2:app:{<app>}:forgotten``: when the app was last forgotten (Unix seconds).

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
    """``adaptalloc:v2:learner:<source>`` for source sacct or squeue."""
    if source not in LEARNER_SOURCES:
        raise ValueError(f"learner source must be one of {', '.join(LEARNER_SOURCES)}")
    return f"{PREFIX}learner:{source}"


def import_checkpoint(import_id: str) -> str:
    """``adaptalloc:v2:import:<id>``; id from [a-z0-9._-], e.g. ``sacct-1700000000-1700086400``."""
    if not _IMPORT_ID.fullmatch(import_id):
        raise ValueError(f"import id {import_id!r} is not of the form [a-z0-9][a-z0-9._-]*")
    return f"{PREFIX}import:{import_id}"


def decided(job_id: int, submit_time: int) -> str:
    """``adaptalloc:v2:decided:<job_id>-<submit_time>``: the daemon's record-once guard.

    Slurm reuses job ids (after MaxJobId, or a reset cluster), so the submit time is part of
    the key; both must be whole numbers ≥ 0.
    """
    for name, value in (("job_id", job_id), ("submit_time", submit_time)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number ≥ 0, got {value!r}")
    return f"{PREFIX}decided:{job_id}-{submit_time}"
