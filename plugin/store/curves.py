"""The curve store: observations, curves and decisions per app key, in Redis.

Key names are in plugin/store/keys.py; every multi-key update is made of Lua scripts in
plugin/store/lua/ (loaded once per connection), each touching the keys of one Redis Cluster
slot (an app's, or the global indexes'), so the store runs on a single Redis and on a
cluster alike. A crash never leaves half a curve, and two learners running at once stay
correct:

* `add_observations` claims each job id once across all apps (claim_jobs.lua, the job
  index), then writes the app's observations, ages out and trims the oldest and bumps its
  observation version (add_observations.lua), then marks it dirty and indexes it
  (index_app.lua); what the last step writes is derived from the app's keys, so a crash
  between the steps is healed by the next call;
* `save_curve` is a compare-and-set on that version (save_curve.lua): a curve fitted from
  older observations never replaces one fitted from newer ones, and a forgotten app stays
  forgotten; the dirty mark goes only when no newer observations marked it
  (clear_dirty.lua);
* `forget` removes an app's keys and leaves a tombstone in one step (forget.lua), then its
  index entries and job-index entries (forget_index.lua).

Reading a curve returns `predictor.Curve.from_dict(...)`, which validates; a stored curve it
refuses is logged and read as "no curve" (the daemon then explores, and the next refit
replaces it). Every Redis failure surfaces as `StoreUnavailable` (or `StoreError`), never as
a redis-py exception.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis
import structlog

import predictor
from plugin.appkey import AppKey, AppKeyError, numeric_size, owner_of
from plugin.errors import printable
from plugin.store import keys, scripts
from plugin.store.connection import StoreError, client_location, guarded
from plugin.store.decisions import DecisionRecord, StoredDecision

__all__ = [
    "AddResult",
    "AppSummary",
    "CurveRecord",
    "CurveStore",
    "Observation",
    "Retention",
    "SaveResult",
]

log = structlog.get_logger("adaptalloc.store")

#: Largest decision document accepted, in bytes of JSON.
MAX_DECISION_BYTES = 64 * 1024
#: How long a forgotten app's old runs stay uncountable: a day, well past any window the
#: learner re-reads (its overlap is minutes) and short enough not to pile up tombstones.
FORGET_TOMBSTONE_S = 24 * 3600
#: Censored runs kept per app (the newest by end time).
MAX_CENSORED = 1000
#: Apps or observations per pipeline round trip.
PIPELINE_CHUNK = 500
#: Most rows one script call receives: observations (claim_jobs.lua, add_observations.lua)
#: or job ids to release (index_app.lua). Redis runs a script to its end while every other
#: client waits, so a call's cost must not grow with the input: a 300,000-row import as one
#: call per step blocked Redis for 9.2 s (SLOWLOG), and the daemon's reads timed out. In a
#: 100,000-row import on the testbed (tests/benchmarks/test_store_scripts.py) the slowest
#: call took 17 ms at 1,000 rows per call, 41 ms at 4,000 and 3.0 s unbounded, while the
#: scripts' total stayed about 1 s from 250 rows per call up.
SCRIPT_ROWS = 1000
#: The keys of claim_jobs.lua and index_app.lua (all in the global slot).
CLAIM_KEYS = (keys.JOBS, keys.APPS)
INDEX_KEYS = (keys.APPS, keys.DIRTY, keys.DIRTY_VERSION, keys.JOBS)
#: Job ids are Slurm's numbers or synthetic ids such as ``csv-<hex>``.
_JOB_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._-")
#: What decoding a corrupt stored document can raise (garbage JSON, a list where an object
#: belongs, 1e999 where an int belongs, nesting deeper than the interpreter's stack).
CORRUPT_DOCUMENT = (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError)


#: A node type is a Slurm partition name (what the learner reads from sacct's Partition).
NODE_TYPE = re.compile(r"[a-z0-9._-]{1,64}")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True)
class Observation:
    """One finished run: app (with size class), job id, allocated nodes, runtime, end time.

    The optional fields say what else the run was (None: not known): `size`, the problem
    size (the tag's numeric ``size=``, a CSV column); `tasks` and `tasks_per_node`, its MPI
    tasks and how they were spread (from sacct; tasks per node only when the tasks divide
    evenly over the nodes); `node_type`, the partition it ran in (curves are kept per node
    type when an app ran on several); `limit_s` and `written_for`, the time limit its user
    asked, in seconds, and the size that limit is read as written for (the covariate of a
    curve of heterogeneous runs, predictor/heterogeneous.py; plugin/learning/learner.py says
    where they come from). `preempted`: a run stopped before it finished (a censored one,
    `CurveStore.add_censored`) that was preempted, not killed at its limit; its time is a
    lower bound all the same, but it says nothing of its limit (predictor/covariate.py).
    """

    job_id: str
    app: AppKey
    nodes: int
    runtime_s: float
    end_time: float
    source: str = "sacct"
    size: float | None = None
    tasks: int | None = None
    tasks_per_node: int | None = None
    node_type: str | None = None
    user: str | None = None
    limit_s: float | None = None
    written_for: int | None = None
    preempted: bool = False

    def __post_init__(self) -> None:
        job = str(self.job_id)
        if not (0 < len(job) <= 64 and set(job) <= _JOB_ID_CHARS):
            raise ValueError(f"job id {printable(job[:40])!r} is not [a-z0-9._-]{{1,64}}")
        if not (isinstance(self.nodes, int) and self.nodes >= 1):
            raise ValueError(f"nodes must be a whole number ≥ 1, got {self.nodes!r}")
        if not (math.isfinite(self.runtime_s) and self.runtime_s > 0):
            raise ValueError(f"runtime_s must be finite and > 0, got {self.runtime_s!r}")
        if not math.isfinite(self.end_time):
            raise ValueError("end_time must be finite")
        if self.size is not None and not (
            isinstance(self.size, int | float)
            and not isinstance(self.size, bool)
            and math.isfinite(self.size)
            and self.size > 0
        ):
            raise ValueError(f"size must be finite and > 0, got {printable(repr(self.size))[:40]}")
        if self.limit_s is not None and not (
            isinstance(self.limit_s, int | float)
            and not isinstance(self.limit_s, bool)
            and math.isfinite(self.limit_s)
            and self.limit_s > 0
        ):
            shown = printable(repr(self.limit_s))[:40]
            raise ValueError(f"limit_s must be finite and > 0, got {shown}")
        for name in ("tasks", "tasks_per_node", "written_for"):
            value = getattr(self, name)
            if value is not None and not _whole(value):
                raise ValueError(
                    f"{name} must be a whole number ≥ 1, got {printable(repr(value))[:40]}"
                )
        if self.node_type is not None and not (
            isinstance(self.node_type, str) and NODE_TYPE.fullmatch(self.node_type)
        ):
            shown = printable(repr(self.node_type))[:80]
            raise ValueError(f"node type {shown} is not a partition name [a-z0-9._-]{{1,64}}")
        if self.user is not None:
            owner_of(self.user)  # AppKeyError (a ValueError) for a name a key cannot hold
        if not isinstance(self.preempted, bool):
            raise ValueError(
                f"preempted must be true or false, got {printable(repr(self.preempted))[:40]}"
            )

    def to_json(self) -> str:
        """The stored form (see plugin/store/keys.py): compact, app and job id live in the
        keys; the optional fields only when set (``z`` size, ``k`` tasks, ``p`` tasks per
        node, ``y`` node type, ``u`` the user whose run it was, kept for a site key's runs,
        which many users share: plugin/learning/sharing.py; ``l`` the user's limit in
        seconds, ``w`` the size it was written for; ``x`` true for a preempted run)."""
        doc: dict[str, Any] = {
            "n": self.nodes,
            "t": self.runtime_s,
            "e": self.end_time,
            "s": self.source,
        }
        for short, value in (
            ("z", self.size),
            ("k", self.tasks),
            ("p", self.tasks_per_node),
            ("y", self.node_type),
            ("u", self.user),
            ("l", self.limit_s),
            ("w", self.written_for),
        ):
            if value is not None:
                doc[short] = value
        if self.preempted:
            doc["x"] = True
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, app: AppKey, job_id: str, text: str) -> Observation:
        doc = json.loads(text)
        size, tasks, per_node, node_type, user = (doc.get(k) for k in ("z", "k", "p", "y", "u"))
        limit, written_for = doc.get("l"), doc.get("w")
        return cls(
            job_id=job_id,
            app=app,
            nodes=int(doc["n"]),
            runtime_s=float(doc["t"]),
            end_time=float(doc["e"]),
            source=str(doc.get("s", "")),
            size=None if size is None else _stored_number(size),
            tasks=None if tasks is None else _stored_whole(tasks, "k"),
            tasks_per_node=None if per_node is None else _stored_whole(per_node, "p"),
            node_type=None if node_type is None else _stored_text(node_type),
            user=None if user is None else _stored_text(user),
            limit_s=None if limit is None else _stored_number(limit, "l (limit)"),
            written_for=None if written_for is None else _stored_whole(written_for, "w"),
            preempted=_stored_flag(doc.get("x", False), "x (preempted)"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "app": str(self.app),
            "nodes": self.nodes,
            "runtime_s": self.runtime_s,
            "end_time": self.end_time,
            "source": self.source,
            "size": self.size,
            "tasks": self.tasks,
            "tasks_per_node": self.tasks_per_node,
            "node_type": self.node_type,
            "user": self.user,
            "limit_s": self.limit_s,
            "written_for": self.written_for,
            "preempted": self.preempted,
        }


def _stored_number(value: object, key: str = "z (size)") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"stored {key} is not a number")
    return float(value)


def _stored_flag(value: object, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"stored {key} is not true or false")
    return value


def _stored_text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("stored y (node type) or u (user) is not a string")
    return value


def _stored_whole(value: object, key: str) -> int:
    """A stored whole number (JSON int); anything else is a corrupt document."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"stored {key} is not a whole number")
    return value


@dataclass(frozen=True)
class Retention:
    """How many observations an app keeps (the newest) and for how long (None: forever)."""

    max_observations: int = 500
    max_age_s: float | None = 365 * 86400.0


@dataclass(frozen=True)
class AddResult:
    """What add_observations did: new runs kept, runs already counted, old runs removed."""

    added: int = 0
    duplicates: int = 0
    removed: int = 0

    def __add__(self, other: AddResult) -> AddResult:
        return AddResult(
            self.added + other.added,
            self.duplicates + other.duplicates,
            self.removed + other.removed,
        )


@dataclass(frozen=True)
class CurveRecord:
    """A stored curve with its metadata; `curve` is None when none could be fitted (`note`)
    or the stored document is unreadable (`error`)."""

    curve: predictor.Curve | None
    version: int
    obs_version: int
    fitted_at: float | None
    n_observations: int
    method: str
    reliable: bool
    note: str = ""
    error: str = ""
    #: The app's added_total when the fit read its runs (None: not kept, an older record).
    added_total: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "obs_version": self.obs_version,
            "fitted_at": self.fitted_at,
            "n_observations": self.n_observations,
            "method": self.method,
            "reliable": self.reliable,
            "note": self.note,
            "error": self.error,
            "parameters": None if self.curve is None else self.curve.to_dict(),
        }


@dataclass(frozen=True)
class AppSummary:
    """One line of ``adaptalloc apps``."""

    app: AppKey
    observations: int
    last_run: float | None
    curve: CurveRecord | None
    dirty: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "app": str(self.app),
            "observations": self.observations,
            "last_run": self.last_run,
            "dirty": self.dirty,
            "curve": None if self.curve is None else self.curve.to_dict(),
        }


@dataclass(frozen=True)
class SaveResult:
    """status: "written", "stale" (a curve from newer observations is kept) or "forgotten"."""

    status: str
    version: int


@dataclass(frozen=True)
class RefitInput:
    """An app's observations and the observation version they are, read atomically."""

    app: AppKey
    observations: tuple[Observation, ...]
    obs_version: int
    #: Runs ever added to the app (its state's added_total) as of this snapshot.
    added_total: int = 0


def _float(value: str | None) -> float | None:
    try:
        return None if value is None or value == "" else float(value)
    except ValueError:
        return None


def _count(value: str | None) -> int | None:
    """A stored counter (ASCII digits); None when it is garbage, 0 when absent."""
    if not value:
        return 0
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None


class CurveStore:
    """The store's operations on one Redis connection (see the module docstring).

    Parameters
    ----------
    client : redis.Redis
        A client with ``decode_responses=True`` (plugin.store.connection.connect makes one).
    retention : Retention
        Observation limits applied on every write.
    decisions_maxlen : int
        Approximate cap of the decision stream.
    clock : callable
        Unix time now (tests pass their own).
    """

    def __init__(
        self,
        client: redis.Redis,
        retention: Retention | None = None,
        decisions_maxlen: int = 100_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # redis-py types replies as bytes | str | None whatever decode_responses says; the
        # store reads them as the str they are (decode_responses=True is required).
        self.client: Any = client
        self.retention = retention or Retention()
        self.decisions_maxlen = decisions_maxlen
        self.clock = clock
        self.where = client_location(client)
        #: Corrupt documents skipped while reading, by kind ("curve", "observation", "decision").
        self.skipped: Counter[str] = Counter()
        self._claim = scripts.load(client, "claim_jobs.lua")
        self._add = scripts.load(client, "add_observations.lua")
        self._index = scripts.load(client, "index_app.lua")
        self._save = scripts.load(client, "save_curve.lua")
        self._clear_dirty = scripts.load(client, "clear_dirty.lua")
        self._forget = scripts.load(client, "forget.lua")
        self._forget_index = scripts.load(client, "forget_index.lua")
        self._set_max = scripts.load(client, "set_max.lua")

    # --- observations ---------------------------------------------------------------------

    def _oldest_kept(self, now: float) -> str:
        age = self.retention.max_age_s
        return "-inf" if age is None else repr(now - age)

    def _kept(self, app: AppKey, obs: Sequence[Observation], now: float) -> list[Observation]:
        """`obs` minus those older than the retention keeps (never claimed, never counted)."""
        for o in obs:
            if o.app != app:
                raise ValueError(f"observation of job {o.job_id} is for {o.app}, not {app}")
        age = self.retention.max_age_s
        return list(obs) if age is None else [o for o in obs if o.end_time >= now - age]

    @guarded
    def add_observations(self, app: AppKey, observations: Iterable[Observation]) -> int:
        """Add an app's observations; returns how many were new (dedup by job id)."""
        return self.add_batch({app: list(observations)}).added

    @guarded
    def add_batch(self, groups: Mapping[AppKey, Sequence[Observation]]) -> AddResult:
        """Add observations of many apps in three steps per app, each atomic: claim the job
        ids in the global job index and put the app in the app index (claim_jobs.lua),
        write the app's keys (add_observations.lua), update the global indexes
        (index_app.lua). The scripts' headers say why a crash between the steps loses
        nothing and leaves no key outside the indexes.

        The input goes in chunks of at most SCRIPT_ROWS observations (an app with more is
        split over chunks, in order), each its own claim, writes and index, so no script
        call grows with the input; a failure midway leaves the chunks before it stored and
        indexed, and adding the same observations again completes the rest (job ids count
        once)."""
        now = self.clock()
        total = AddResult()
        kept = [(app, self._kept(app, obs, now)) for app, obs in groups.items() if obs]
        for chunk in _row_chunks(kept, SCRIPT_ROWS, PIPELINE_CHUNK):
            total = total + self._add_chunk(chunk, now)
        return total

    def _add_chunk(
        self, kept: Sequence[tuple[AppKey, Sequence[Observation]]], now: float
    ) -> AddResult:
        groups: list[str | int] = []
        for app, obs in kept:
            groups.extend((str(app), len(obs), *(o.job_id for o in obs)))
        claims = scripts.run(self.client, [scripts.Call(self._claim, CLAIM_KEYS, groups)])[0]
        ours: list[tuple[AppKey, list[Observation]]] = []
        elsewhere = 0
        for (app, obs), owned in zip(kept, claims, strict=True):
            mine = set(owned)
            ours.append((app, [o for o in obs if str(o.job_id) in mine]))
            elsewhere += len(obs) - len(ours[-1][1])
        replies = self._write_apps(ours, now)
        return AddResult(
            sum(int(r[0]) for r in replies),
            elsewhere + sum(int(r[1]) for r in replies),
            sum(int(r[2]) for r in replies),
        )

    def _write_apps(
        self, items: Sequence[tuple[AppKey, Sequence[Observation]]], now: float
    ) -> list[list[Any]]:
        """Steps 2 and 3 of add_batch (also all of age_out); add_observations.lua's replies.
        The index's groups go in calls of at most SCRIPT_ROWS released ids (an app's list
        split over several groups: the script is idempotent per group)."""
        calls = []
        for app, obs in items:
            argv: list[str | int | float] = [
                repr(now), self.retention.max_observations, self._oldest_kept(now),
            ]  # fmt: skip
            for o in obs:
                argv.extend((o.job_id, repr(o.end_time), o.to_json()))
            app_keys = [
                keys.app_observations(app), keys.app_runs(app), keys.app_state(app),
                keys.app_forgotten(app), keys.app_curve(app),
            ]  # fmt: skip
            calls.append(scripts.Call(self._add, app_keys, argv))
        replies = scripts.run(self.client, calls)
        index_calls: list[scripts.Call] = []
        groups: list[str | int] = [repr(now)]
        rows = 0
        for (app, _), reply in zip(items, replies, strict=True):
            version, needs_refit, latest, *released = reply[3:]
            start = 0
            while True:
                part = released[start : start + SCRIPT_ROWS - rows]
                groups.extend((str(app), version, needs_refit, latest, len(part), *part))
                rows, start = rows + len(part), start + len(part)
                if rows >= SCRIPT_ROWS:  # full: this call goes, the rest in the next
                    index_calls.append(scripts.Call(self._index, INDEX_KEYS, groups))
                    groups, rows = [repr(now)], 0
                if start >= len(released):
                    break
        if len(groups) > 1:
            index_calls.append(scripts.Call(self._index, INDEX_KEYS, groups))
        scripts.run(self.client, index_calls)  # all in the global slot
        return replies

    @guarded
    def age_out(self, apps: Iterable[AppKey] | None = None) -> int:
        """Apply the retention limits now to `apps` (default: every app), pipelined.

        Returns the number of observations removed; apps that lost some become dirty.
        """
        targets = list(apps) if apps is not None else self._indexed_apps()
        now = self.clock()
        removed = 0
        for start in range(0, len(targets), PIPELINE_CHUNK):
            chunk = [(app, ()) for app in targets[start : start + PIPELINE_CHUNK]]
            removed += sum(int(reply[2]) for reply in self._write_apps(chunk, now))
        return removed

    def _indexed_apps(self) -> list[AppKey]:
        return _parse_apps(self.client.zrange(keys.APPS, 0, -1))

    @guarded
    def observations(self, app: AppKey) -> list[Observation]:
        """An app's observations, oldest first."""
        return list(self._observations(app, self.client.hgetall(keys.app_observations(app))))

    def _observations(self, app: AppKey, raw: Mapping[str, str]) -> Iterable[Observation]:
        out = []
        for job_id, text in raw.items():
            try:
                out.append(Observation.from_json(app, job_id, text))
            except CORRUPT_DOCUMENT as exc:
                self.skipped["observation"] += 1
                log.error(
                    "observation_unreadable",
                    app=str(app),
                    job_id=printable(job_id),
                    error=printable(str(exc)),
                )
        return sorted(out, key=lambda o: (o.end_time, o.job_id))

    # --- curves -----------------------------------------------------------------------------

    @guarded
    def curve(self, app: AppKey | str, node_type: str | None = None) -> predictor.Curve | None:
        """The app's current curve, or None (no curve yet, none fittable, or unreadable).

        `node_type` (a partition name) asks for the curve fitted from the app's runs on that
        type alone, which exists only when the app ran on more than one type; None asks for
        the curve over all its runs.
        """
        record = self.curve_record(app, node_type)
        return None if record is None else record.curve

    #: The agreed name of `curve` for the placement and node-type code.
    load_curve = curve

    @guarded
    def curve_record(self, app: AppKey | str, node_type: str | None = None) -> CurveRecord | None:
        """The curve with its metadata, or None when nothing was ever fitted for the app (on
        that node type)."""
        key = _app_key(app)
        name = keys.app_curve(key) if node_type is None else keys.app_type_curve(key, node_type)
        return self._curve_record(key, self.client.hgetall(name))

    @guarded
    def node_types(self, app: AppKey | str) -> list[str]:
        """The node types with a per-type curve record (its curve may be None, with the note
        why), sorted; empty when the app ran on one type only."""
        members = self.client.smembers(keys.app_node_types(_app_key(app)))
        return sorted(m for m in members if NODE_TYPE.fullmatch(m))

    @guarded
    def drop_node_types(self, app: AppKey, node_types: Iterable[str]) -> int:
        """Remove per-type curves the app's runs no longer support (their runs aged out, or it
        runs on one type now); returns how many were removed."""
        stale = [t for t in node_types if NODE_TYPE.fullmatch(t)]
        if not stale:
            return 0
        pipe = self.client.pipeline(transaction=True)
        pipe.srem(keys.app_node_types(app), *stale)
        pipe.delete(*(keys.app_type_curve(app, t) for t in stale))
        removed, _ = pipe.execute()
        return int(removed)

    @guarded
    def sibling_sizes(self, app: AppKey | str) -> dict[AppKey, list[Observation]]:
        """The observations of the app's sibling sizes: apps of the same name whose size
        class is a number (``cg@1e6`` for ``cg@4e6``), the app itself left out. What
        predictor.sizes borrows a curve from when a size has no curve of its own."""
        key = _app_key(app)
        siblings = [
            other
            for other in self._indexed_apps()
            if other.name == key.name
            and other.owner == key.owner
            and other != key
            and numeric_size(other.size) is not None
        ]
        out: dict[AppKey, list[Observation]] = {}
        for start in range(0, len(siblings), PIPELINE_CHUNK):
            chunk = siblings[start : start + PIPELINE_CHUNK]
            pipe = self.client.pipeline(transaction=False)
            for other in chunk:
                pipe.hgetall(keys.app_observations(other))
            for other, raw in zip(chunk, pipe.execute(), strict=True):
                runs = list(self._observations(other, raw))
                if runs:
                    out[other] = runs
        return out

    def _curve_record(self, app: AppKey, raw: Mapping[str, str]) -> CurveRecord | None:
        if not raw:
            return None
        curve: predictor.Curve | None = None
        error = ""
        if raw.get("curve"):
            try:
                curve = predictor.Curve.from_dict(json.loads(raw["curve"]))
            except CORRUPT_DOCUMENT as exc:
                error = printable(f"{type(exc).__name__}: {exc}")[:200]
        counts = {
            name: _count(raw.get(name)) for name in ("version", "obs_version", "n_observations")
        }
        bad = [name for name, value in counts.items() if value is None]
        if bad and not error:
            error = f"{', '.join(bad)} not a whole number"
        if error:
            self.skipped["curve"] += 1
            log.error("curve_unreadable", app=str(app), error=error)
            curve = None
        return CurveRecord(
            curve=curve,
            version=counts["version"] or 0,
            obs_version=counts["obs_version"] or 0,
            fitted_at=_float(raw.get("fitted_at")),
            n_observations=counts["n_observations"] or 0,
            method=raw.get("method", ""),
            reliable=raw.get("reliable") == "1" and curve is not None,
            note=raw.get("note", ""),
            error=error,
            added_total=_count(raw["added_total"]) if raw.get("added_total") else None,
        )

    @guarded
    def refit_input(self, app: AppKey) -> RefitInput | None:
        """The app's observations and their version in one snapshot (MULTI/EXEC, one slot);
        None when the app has none (never had, or was forgotten)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(keys.app_observations(app))
        pipe.hmget(keys.app_state(app), ["obs_version", "added_total"])
        raw, (version, added) = pipe.execute()
        if version is None:
            return None
        return RefitInput(app, tuple(self._observations(app, raw)), int(version), int(added or 0))

    @guarded
    def added_since(self, app: AppKey, added_total: int) -> tuple[int, list[int]]:
        """The runs added to the app since its state's added_total was `added_total`, and
        the sizes of as many of its newest runs by end time (at most the retention's cap):
        what the refit cadence asks (policies/refit_cadence.py). Two reads, not atomic: a
        run added in between is counted at the next round."""
        now = _count(self.client.hget(keys.app_state(app), "added_total")) or 0
        added = max(0, now - added_total)
        newest = min(added, self.retention.max_observations)
        if newest == 0:
            return added, []
        ids = self.client.zrange(keys.app_runs(app), -newest, -1)
        docs = self.client.hmget(keys.app_observations(app), ids) if ids else []
        sizes = []
        for job_id, text in zip(ids, docs, strict=True):
            if text is None:
                continue
            try:
                sizes.append(Observation.from_json(app, job_id, text).nodes)
            except CORRUPT_DOCUMENT:
                self.skipped["observation"] += 1
        return added, sizes

    @guarded
    def save_curve(
        self,
        app: AppKey,
        curve: predictor.Curve | None,
        obs_version: int,
        *,
        n_observations: int,
        method: str,
        note: str = "",
        fitted_at: float | None = None,
        node_type: str | None = None,
        added_total: int | None = None,
    ) -> SaveResult:
        """Store a refit's result unless one from newer observations is stored (CAS).

        With `node_type`, the curve fitted from the app's runs on that type alone; save
        those before the all-runs curve, whose save clears the dirty mark. `added_total`:
        the app's RefitInput.added_total, kept for the refit cadence (None: not kept).
        """
        curve_key = (
            keys.app_curve(app) if node_type is None else keys.app_type_curve(app, node_type)
        )
        status, version, fitted = self._save(
            keys=[curve_key, keys.app_state(app), keys.app_node_types(app)],
            args=[
                obs_version,
                "" if curve is None else json.dumps(curve.to_dict(), separators=(",", ":")),
                repr(self.clock() if fitted_at is None else fitted_at),
                n_observations,
                method,
                "1" if curve is not None and curve.reliable else "0",
                note,
                node_type or "",
                "" if added_total is None else added_total,
            ],
        )
        if int(fitted) >= 0:
            self._clear_dirty(keys=[keys.DIRTY, keys.DIRTY_VERSION], args=[str(app), fitted])
        names = {1: "written", 0: "stale", -1: "forgotten"}
        return SaveResult(names[int(status)], int(version))

    @guarded
    def dirty_apps(
        self, ready_before: float | None = None, limit: int | None = None
    ) -> list[AppKey]:
        """Apps needing a refit, longest waiting first; only those dirty since `ready_before`."""
        top = "+inf" if ready_before is None else repr(ready_before)
        members = self.client.zrangebyscore(
            keys.DIRTY, "-inf", top, start=0 if limit else None, num=limit
        )
        return _parse_apps(members)

    # --- apps -------------------------------------------------------------------------------

    @guarded
    def apps(self) -> list[AppSummary]:
        """Every app with its observation count, last run, curve and dirty flag, by name."""
        pairs = []
        for member, score in self.client.zrange(keys.APPS, 0, -1, withscores=True):
            parsed = _parse_apps([member])
            if parsed:
                pairs.append((parsed[0], float(score)))
        return self._summaries(sorted(pairs, key=lambda p: str(p[0])))

    @guarded
    def summary(self, app: AppKey | str) -> AppSummary | None:
        key = _app_key(app)
        score = self.client.zscore(keys.APPS, str(key))
        if score is None:
            return None
        return self._summaries([(key, float(score))])[0]

    def _summaries(self, pairs: Sequence[tuple[AppKey, float]]) -> list[AppSummary]:
        out: list[AppSummary] = []
        for start in range(0, len(pairs), PIPELINE_CHUNK):
            chunk = pairs[start : start + PIPELINE_CHUNK]
            pipe = self.client.pipeline(transaction=False)
            for app, _ in chunk:
                pipe.hlen(keys.app_observations(app))
                pipe.hgetall(keys.app_curve(app))
                pipe.zscore(keys.DIRTY, str(app))
            replies = pipe.execute()
            for i, (app, last) in enumerate(chunk):
                count, raw_curve, dirty = replies[3 * i : 3 * i + 3]
                out.append(
                    AppSummary(
                        app=app,
                        observations=int(count),
                        last_run=last or None,
                        curve=self._curve_record(app, raw_curve),
                        dirty=dirty is not None,
                    )
                )
        return out

    @guarded
    def forget(self, app: AppKey | str) -> bool:
        """Remove everything of one app; False when the store did not know it.

        Its runs that ended before now are not counted again for FORGET_TOMBSTONE_S (the
        learner re-reads recent finished jobs); new runs are learned as usual.
        """
        key = _app_key(app)
        types = self.node_types(key)
        removed, *ids = self._forget(
            keys=[
                *keys.app_keys(key),
                keys.app_forgotten(key),
                keys.app_node_types(key),
                *(keys.app_type_curve(key, t) for t in types),
            ],
            args=[repr(self.clock()), FORGET_TOMBSTONE_S],
        )
        indexed = 0
        for start in range(0, max(len(ids), 1), 10_000):  # the index's half, in bounded calls
            indexed += int(
                self._forget_index(
                    keys=[keys.APPS, keys.DIRTY, keys.DIRTY_VERSION, keys.JOBS],
                    args=[str(key), *ids[start : start + 10_000]],
                )
            )
        return int(removed) + indexed > 0

    # --- decisions --------------------------------------------------------------------------

    @guarded
    def record_decision(self, record: DecisionRecord) -> str:
        """Append one decision (its app is validated) to the capped stream; the entry id."""
        app_text = "" if record.app in (None, "") else str(_app_key(str(record.app)))
        text = json.dumps(record.to_dict(), separators=(",", ":"), default=str)
        if len(text.encode("utf-8")) > MAX_DECISION_BYTES:
            raise StoreError(f"decision document is larger than {MAX_DECISION_BYTES:,} bytes")
        entry_id = self.client.xadd(
            keys.DECISIONS,
            {"app": app_text, "job_id": str(record.job_id), "doc": text},
            maxlen=self.decisions_maxlen,
            approximate=True,
        )
        return str(entry_id)

    @guarded
    def decisions(self, app: AppKey | str | None = None, count: int = 20) -> list[StoredDecision]:
        """The newest `count` decisions (of one app when given), newest first. One that cannot
        be read (not JSON, an unknown version, a field of the wrong type) is skipped, logged
        and counted in ``skipped["decision"]``."""
        wanted = None if app is None else str(_app_key(app))
        out: list[StoredDecision] = []
        upper = "+"
        while len(out) < count:
            page = self.client.xrevrange(keys.DECISIONS, max=upper, min="-", count=200)
            for entry_id, fields in page:
                if wanted is None or fields.get("app") == wanted:
                    try:
                        doc = json.loads(fields.get("doc", "{}"))
                        record = DecisionRecord.from_dict(doc) if isinstance(doc, dict) else None
                    except CORRUPT_DOCUMENT as exc:
                        record, why = None, printable(str(exc))[:200]
                    else:
                        why = "not a JSON object"
                    if record is None:
                        self.skipped["decision"] += 1
                        log.error(
                            "decision_unreadable", id=printable(str(entry_id))[:40], error=why
                        )
                        continue
                    out.append(StoredDecision(str(entry_id), record))
                    if len(out) == count:
                        break
            if len(page) < 200:
                break
            upper = "(" + page[-1][0]
        return out

    # --- learner watermarks and import checkpoints -------------------------------------------

    @guarded
    def watermark(self, source: str) -> float | None:
        """Up to which end time the learner has read `source` (sacct/squeue), or None."""
        return _float(self.client.hget(keys.learner(source), "watermark"))

    @guarded
    def advance_watermark(self, source: str, value: float) -> float:
        """Raise the watermark to `value` (never lowers it); returns the stored one."""
        stored = self._set_max(
            keys=[keys.learner(source)], args=["watermark", repr(value), repr(self.clock())]
        )
        return float(stored)

    @guarded
    def checkpoint(self, import_id: str) -> dict[str, str]:
        """An import's checkpoint (done_until, counters), empty when it never ran."""
        return dict(self.client.hgetall(keys.import_checkpoint(import_id)))

    @guarded
    def save_checkpoint(self, import_id: str, done_until: float, counts: Mapping[str, int]) -> None:
        """Record that an import got to `done_until` and add `counts` to its counters."""
        key = keys.import_checkpoint(import_id)
        pipe = self.client.pipeline(transaction=True)
        for name, value in counts.items():
            pipe.hincrby(key, name, int(value))
        args = ["done_until", repr(done_until), repr(self.clock())]
        scripts.queue(pipe, self._set_max, [key], args, by_text=True)  # a MULTI: never NOSCRIPT
        pipe.execute()

    @guarded
    def reset_checkpoint(self, import_id: str) -> None:
        self.client.delete(keys.import_checkpoint(import_id))

    # --- consistency ------------------------------------------------------------------------

    @guarded
    def check(self, app: AppKey) -> list[str]:
        """Problems in one app's stored state (empty when consistent); for tests and admins."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(keys.app_observations(app))
        pipe.zrange(keys.app_runs(app), 0, -1)
        pipe.hgetall(keys.app_curve(app))
        pipe.hget(keys.app_state(app), "obs_version")
        obs, runs, curve, version = pipe.execute()
        indexed = self.client.zscore(keys.APPS, str(app))  # another slot: read after
        problems = []
        if set(obs) != set(runs):
            problems.append(f"observations and runs differ ({len(obs)} vs {len(runs)} job ids)")
        if obs:
            owners = self.client.hmget(keys.JOBS, list(obs))
            stray = [j for j, owner in zip(obs, owners, strict=True) if owner != str(app)]
            if stray:
                problems.append(f"{len(stray)} job ids not owned by the app in the job index")
            if indexed is None:
                problems.append("observations but no entry in the app index")
        if curve:
            if curve.get("curve"):
                try:
                    predictor.Curve.from_dict(json.loads(curve["curve"]))
                except (ValueError, TypeError) as exc:
                    problems.append(f"curve unreadable: {printable(str(exc))[:120]}")
            if not curve.get("version") or curve.get("obs_version") is None:
                problems.append("curve without version metadata")
            elif int(curve["obs_version"]) > int(version or 0):
                problems.append("curve newer than the observations it was fitted from")
        return problems

    # --- the kill guard and censored runs (plugin/daemon/guard.py, plugin/learning/learner.py) ---

    @guarded
    def guard_watches(self) -> dict[str, str]:
        """The kill guard's watched jobs: job id -> watch JSON."""
        return dict(self.client.hgetall(keys.GUARD_WATCH))

    @guarded
    def save_guard_watch(self, job_id: int, doc: Mapping[str, Any]) -> None:
        self.client.hset(keys.GUARD_WATCH, str(int(job_id)), json.dumps(doc, separators=(",", ":")))

    @guarded
    def drop_guard_watch(self, job_id: int) -> None:
        self.client.hdel(keys.GUARD_WATCH, str(int(job_id)))

    @guarded
    def record_limit_raise(
        self, app: AppKey | None, doc: Mapping[str, Any], growth: float, cap: float
    ) -> float | None:
        """Append one raise to the capped stream; for an app, count it and grow the app's
        limit safety, ``safety <- min(cap, safety * growth)``. The new safety (None: no app)."""
        text = json.dumps(doc, separators=(",", ":"), default=str)
        fields = {"app": "" if app is None else str(app), "doc": text}
        self.client.xadd(keys.GUARD_RAISES, fields, maxlen=self.decisions_maxlen, approximate=True)
        if app is None:
            return None
        key = keys.app_guard(app)
        safety = min(cap, self.limit_safety(app) * growth)
        pipe = self.client.pipeline(transaction=True)
        pipe.hincrby(key, "raised", 1)
        pipe.hset(key, "safety", repr(safety))
        pipe.execute()
        return safety

    @guarded
    def count_for_guard(self, app: AppKey, field: str, by: int = 1) -> None:
        """Add to one of an app's guard counts: ``killed`` (at a limit adaptalloc set) or
        ``censored`` (runs stopped at a limit or preempted: lower bounds)."""
        if field not in ("killed", "censored"):
            raise ValueError(f"unknown guard count {field!r}")
        self.client.hincrby(keys.app_guard(app), field, int(by))

    @guarded
    def add_censored(self, groups: Mapping[AppKey, Sequence[Observation]]) -> int:
        """Store runs stopped before they finished (TIMEOUT, PREEMPTED) as lower bounds, in
        ``app:<app>:censored``, apart from the observations: `refit_input` never reads them, so
        no fit takes one for a completed run. A job counts once (its first record wins) and
        adds to the app's ``censored`` count; each app keeps its newest MAX_CENSORED.
        Returns how many were new."""
        added = 0
        for app, runs in groups.items():
            key = keys.app_censored(app)
            pipe = self.client.pipeline(transaction=False)
            for run in runs:
                pipe.hsetnx(key, run.job_id, run.to_json())
            pipe.hlen(key)
            *flags, size = pipe.execute()
            new = sum(int(flag) for flag in flags)
            if new:
                self.client.hincrby(keys.app_guard(app), "censored", new)
            if int(size) > MAX_CENSORED:
                kept = sorted(self.censored_runs(app), key=lambda r: r.end_time)
                drop = [r.job_id for r in kept[: len(kept) - MAX_CENSORED]]
                if drop:
                    self.client.hdel(key, *drop)
            added += new
        return added

    @guarded
    def censored_runs(self, app: AppKey | str) -> list[Observation]:
        """The app's censored runs (runtime: at least this long), oldest first."""
        key = _app_key(app)
        out = []
        for job_id, text in self.client.hgetall(keys.app_censored(key)).items():
            try:
                out.append(Observation.from_json(key, job_id, text))
            except (ValueError, KeyError, TypeError):
                log.error("censored_run_unreadable", app=str(key), job_id=printable(job_id)[:64])
        return sorted(out, key=lambda r: (r.end_time, r.job_id))

    @guarded
    def limit_safety(self, app: AppKey) -> float:
        """The app's time-limit safety factor (>= 1; 1 when never raised or unreadable)."""
        value = _float(self.client.hget(keys.app_guard(app), "safety"))
        return value if value is not None and math.isfinite(value) and value >= 1.0 else 1.0

    @guarded
    def guard_counts(self, app: AppKey | str) -> dict[str, Any]:
        """``{"limits_raised", "killed_at_our_limit", "censored_runs", "limit_safety"}``."""
        raw = self.client.hgetall(keys.app_guard(_app_key(app)))

        def count(name: str) -> int:
            value = _float(raw.get(name))
            return int(value) if value is not None and math.isfinite(value) else 0

        safety = _float(raw.get("safety"))
        ok = safety is not None and math.isfinite(safety) and safety >= 1.0
        return {
            "limits_raised": count("raised"),
            "killed_at_our_limit": count("killed"),
            "censored_runs": count("censored"),
            "limit_safety": round(safety, 4) if ok and safety is not None else 1.0,
        }


def _app_key(app: AppKey | str) -> AppKey:
    return app if isinstance(app, AppKey) else AppKey.parse(app)


def _parse_apps(members: Iterable[str]) -> list[AppKey]:
    out = []
    for member in members:
        try:
            out.append(AppKey.parse(member))
        except AppKeyError:
            log.error("index_member_invalid", member=printable(member)[:80])
    return out


def _row_chunks(
    items: Sequence[tuple[AppKey, Sequence[Observation]]], rows: int, apps: int
) -> Iterator[list[tuple[AppKey, Sequence[Observation]]]]:
    """`items` in order, cut into chunks of at most `rows` observations and `apps` apps; an
    app whose observations do not fit in what is left of a chunk continues in the next
    (each app at most once per chunk)."""
    chunk: list[tuple[AppKey, Sequence[Observation]]] = []
    room = rows
    for app, obs in items:
        start = 0
        while start < len(obs):
            if room == 0 or len(chunk) == apps:
                yield chunk
                chunk, room = [], rows
            part = obs[start : start + room]
            chunk.append((app, part))
            room -= len(part)
            start += len(part)
    if chunk:
        yield chunk
