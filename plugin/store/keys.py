"""Every Redis key adaptalloc uses, in one place, under the versioned prefix ``adaptalloc:v2:``.

Every key carries exactly one hash tag, so that Redis Cluster puts it in a known slot:
``{<app>}`` for an app's keys, ``{global}`` for the rest (``G`` below stands for
``adaptalloc:v2:{global}:``, ``A`` for ``adaptalloc:v2:app:{<app>}:``).

| key | type | holds |
|---|---|---|
| ``G apps`` | sorted set | app key -> end time of its latest run (Unix s) |
| ``G dirty`` | sorted set | app key -> when it first needed a refit (Unix s) |
| ``G dirty:version`` | hash | app key -> the newest obs_version that marked it dirty |
| ``G decisions`` | stream | the daemon's decisions, capped (XADD MAXLEN ~) |
| ``G jobs`` | hash | job id -> app that counted it (a job counts once) |
| ``A obs`` | hash | job id -> observation JSON (below) |
| ``A runs`` | sorted set | job id -> end time (ageing out, trimming) |
| ``A state`` | hash | obs_version, added_total, updated_at |
| ``A curve`` | hash | curve JSON and its metadata (version, fitted_at, added_total, …) |
| ``A curve:<type>`` | hash | the same, from the runs on one node type |
| ``A types`` | set | node types that have a curve of their own |
| ``A guard`` | hash | raised, killed, censored counts; limit safety |
| ``A censored`` | hash | job id -> censored run JSON (a lower bound) |
| ``A forgotten`` | string, TTL | when the app was forgotten |
| ``G learner:<source>`` | hash | the learner's watermark for sacct or squeue |
| ``G import:<id>`` | hash | checkpoint of one ``import sacct`` range |
| ``G decided:<job>-<submit>`` | string, TTL | the daemon recorded this decision: its entry id |
| ``G scores`` | stream | finished jobs scored against the prediction that decided them, capped |
| ``G scored:<job>-<submit>`` | string, TTL | the learner scored this job |
| ``G guard:watch`` | hash | job id -> kill-guard watch JSON (limit shortened) |
| ``G guard:raises`` | stream | every limit the kill guard raised, capped |
| ``G migration`` | hash | the v1 -> v2 migration: state, counts (migrate.py) |
| ``G daemon:lease`` (``:token``) | string, PX (int) | HA lease; fencing tokens |

``<app>`` is an :class:`~plugin.appkey.AppKey`'s string form (``lulesh``, ``lulesh@large``,
or a user's own ``alice/lulesh@large``): validated and normalised before it gets here, so it
never holds ``:``, ``*``, ``{``, ``}``, whitespace or anything outside ``[A-Za-z0-9._@/-]``
(upper case only in the owner, a user name taken exactly). The functions below
accept only AppKey values and check the other variable parts, so no caller can build a key
outside the namespace. (An app named ``global`` shares the global keys' slot: harmless, the
names differ.)

**Redis Cluster**. Every script and every transaction touches keys of one slot:

* per app (``{<app>}``): ``add_observations.lua``, ``save_curve.lua``, ``forget.lua``,
  ``refit_input``'s snapshot;
* global (``{global}``): ``claim_jobs.lua``, ``index_app.lua``, ``clear_dirty.lua``,
  ``forget_index.lua``, ``record_decision.lua`` and ``record_score.lua`` (each a once-guard
  and its stream; the learner reads a decision by the id its guard holds), the HA
  lease (``lease.lua``) and the daemon's fenced transactions, which WATCH the lease and
  write the decision keys in one MULTI;
* ``set_max.lua`` touches one key.

An update that needs both an app's keys and the global indexes (adding observations,
saving a curve, forgetting an app) runs as a per-app script and one or two global ones,
each atomic; the scripts' headers say why the steps in between are safe (every step is
idempotent and a crash between them is healed by the next call). On a cluster the v1 -> v2
migration copies each key with DUMP and RESTORE from the client (its two names are in two
slots), see migrate.py.

An observation is stored as compact JSON, ``{"n": nodes, "t": runtime_s, "e": end_time,
"s": source}`` with, only when known, ``"z"`` problem size, ``"k"`` tasks, ``"p"`` tasks per
node, ``"y"`` node type (partition) and ``"u"`` the user whose run it was (a site key's runs),
short enough for Redis to keep small apps' hashes in its compact encoding.

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
    "DIRTY_VERSION",
    "GLOBAL",
    "GLOBAL_TAG",
    "GUARD_RAISES",
    "GUARD_WATCH",
    "JOBS",
    "LEARNER_SOURCES",
    "LEASE",
    "LEASE_TOKEN",
    "MIGRATION",
    "PREFIX",
    "SCORES",
    "V1_PREFIX",
    "app_censored",
    "app_curve",
    "app_forgotten",
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
    "scored",
]

PREFIX = "adaptalloc:v2:"
#: The previous schema, read only by the migration (plugin/store/migrate.py).
V1_PREFIX = "adaptalloc:v1:"
#: The hash tag of every key that is not an app's: one Redis Cluster slot for them all.
GLOBAL_TAG = "{global}"
GLOBAL = PREFIX + GLOBAL_TAG + ":"
#: The migration's own record: state (running, done), counts, times.
MIGRATION = GLOBAL + "migration"
APPS = GLOBAL + "apps"
DIRTY = GLOBAL + "dirty"
#: app -> the newest obs_version that marked it dirty, so that a refit of older
#: observations never clears a newer mark (clear_dirty.lua).
DIRTY_VERSION = GLOBAL + "dirty:version"
DECISIONS = GLOBAL + "decisions"
#: Finished jobs scored against the prediction that decided them (plugin/store/score_stream.py).
SCORES = GLOBAL + "scores"
JOBS = GLOBAL + "jobs"
GUARD_WATCH = GLOBAL + "guard:watch"
GUARD_RAISES = GLOBAL + "guard:raises"
#: The HA daemons' lease and its fencing-token counter (plugin/daemon/lease.py). In the
#: global slot: lease.lua touches both, and the fenced decision write (record.py) WATCHes
#: the lease and writes ``decided:`` and ``decisions`` in one transaction.
LEASE = GLOBAL + "daemon:lease"
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
    """``adaptalloc:v2:{global}:learner:<source>`` for source sacct or squeue."""
    if source not in LEARNER_SOURCES:
        raise ValueError(f"learner source must be one of {', '.join(LEARNER_SOURCES)}")
    return f"{GLOBAL}learner:{source}"


def import_checkpoint(import_id: str) -> str:
    """``adaptalloc:v2:{global}:import:<id>``; id from [a-z0-9._-], e.g.
    ``sacct-1700000000-1700086400``."""
    if not _IMPORT_ID.fullmatch(import_id):
        raise ValueError(f"import id {import_id!r} is not of the form [a-z0-9][a-z0-9._-]*")
    return f"{GLOBAL}import:{import_id}"


def _job(job_id: int, submit_time: int) -> str:
    for name, value in (("job_id", job_id), ("submit_time", submit_time)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number ≥ 0, got {value!r}")
    return f"{job_id}-{submit_time}"


def decided(job_id: int, submit_time: int) -> str:
    """``adaptalloc:v2:{global}:decided:<job_id>-<submit_time>``: the daemon's record-once
    guard, holding the id of the decision's stream entry.

    Slurm reuses job ids (after MaxJobId, or a reset cluster), so the submit time is part of
    the key; both must be whole numbers ≥ 0.
    """
    return f"{GLOBAL}decided:{_job(job_id, submit_time)}"


def scored(job_id: int, submit_time: int) -> str:
    """``adaptalloc:v2:{global}:scored:<job_id>-<submit_time>``: the learner's score-once
    guard (job id and submit time as in `decided`)."""
    return f"{GLOBAL}scored:{_job(job_id, submit_time)}"
