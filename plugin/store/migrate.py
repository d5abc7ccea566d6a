"""Copy the v1 key schema (``adaptalloc:v1:``) to v2 (``adaptalloc:v2:``, plugin/store/keys.py).

v2 holds the same values as v1 under new names, each with a Redis Cluster hash tag: the
per-app keys their app's (``adaptalloc:v1:app:lulesh:obs`` ->
``adaptalloc:v2:app:{lulesh}:obs``), every other key the global one
(``adaptalloc:v1:apps`` -> ``adaptalloc:v2:{global}:apps``). So a key is migrated by
copying it whole (DUMP and RESTORE: type, members and time to live kept): in Redis with
`migrate_key.lua` on a single Redis; on Redis Cluster, where a v1 key and its v2 name lie in
two slots, from the client (DUMP, then RESTORE, which refuses to overwrite a v2 key that
exists, so the rules below hold there too). The v1 -> v2 dirty mark's version
(``{global}:dirty:version``) is new in v2 and starts empty: a dirty app is refitted and its
mark cleared as usual.

* **Idempotent and resumable.** A v2 key that exists is never overwritten, so running it
  again, or after a crash halfway, copies only what is missing. The record
  ``adaptalloc:v2:{global}:migration`` says ``running`` from the first copy and ``done`` at the end.
* **v1 is never dropped.** The v1 keys stay where they are; an admin deletes them once the
  v2 store has been checked (``redis-cli --scan --pattern 'adaptalloc:v1:*'``). A v1 key
  whose name cannot be mapped (an app part that is not a valid app key) is left in v1,
  counted as ``unmapped`` and logged, never silently lost.
* **Automatic** (`migrate_if_needed`, called by the daemon at start, before its first
  decision, with or without its learner, and by the learner): when v1 keys exist and v2
  holds nothing yet (no app index, no migration record), or a migration is ``running``.
  When both schemas hold data and no migration ran, it only logs a warning: run
  ``adaptalloc store migrate``, which copies the v1 keys v2 lacks.
* **Safe when several start at once** (two HA daemons): each one that migrates makes a
  whole pass and copies only what v2 lacks (one atomic check-and-copy per key), so every v1
  key is in v2 when either returns, copied once; a start that sees v2's index before the
  record (another pass began between its two reads) reads the record again and joins the
  pass instead of taking v2 for data no migration wrote.

Stop v1 daemons and learners before migrating: a v1 write after its key was copied stays in
v1 only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis
import structlog

from plugin.appkey import AppKey, AppKeyError
from plugin.errors import printable
from plugin.store import keys
from plugin.store.connection import guarded, is_cluster

__all__ = ["MigrationResult", "migrate", "migrate_if_needed", "v1_keys", "v2_name"]

log = structlog.get_logger("adaptalloc.store")

#: Keys per pipeline round trip.
BATCH = 500
#: Called after each batch: (keys handled, keys in all).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class MigrationResult:
    """What a migration did: v1 keys found, copied, skipped (v2 had them), gone (expired
    meanwhile), unmapped (left in v1, see the module docstring)."""

    found: int = 0
    copied: int = 0
    skipped: int = 0
    gone: int = 0
    unmapped: int = 0
    state: str = "done"

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": keys.V1_PREFIX,
            "to": keys.PREFIX,
            "state": self.state,
            "found": self.found,
            "copied": self.copied,
            "skipped": self.skipped,
            "gone": self.gone,
            "unmapped": self.unmapped,
            "v1_kept": True,
        }


def v2_name(v1_key: str) -> str | None:
    """The v2 name of a v1 key, or None when it is no key adaptalloc wrote (unmapped)."""
    if not v1_key.startswith(keys.V1_PREFIX):
        return None
    rest = v1_key[len(keys.V1_PREFIX) :]
    if rest.startswith("app:"):
        app_text, sep, tail = rest[len("app:") :].partition(":")
        try:
            app = AppKey.parse(app_text)
        except AppKeyError:
            return None
        if not sep or not tail or str(app) != app_text:
            return None
        return f"{keys.PREFIX}app:{{{app}}}:{tail}"
    if not rest or "{" in rest or "}" in rest:
        return None
    return keys.GLOBAL + rest


def v1_keys(client: Any) -> list[str]:
    """Every v1 key, sorted (SCAN, never KEYS: the server keeps answering others)."""
    return sorted(client.scan_iter(match=keys.V1_PREFIX + "*", count=1000))


def _has_v1(client: Any) -> bool:
    for _ in client.scan_iter(match=keys.V1_PREFIX + "*", count=1000):
        return True
    return False


@guarded
def migrate(
    client: redis.Redis, progress: Progress | None = None, clock: Callable[[], float] = time.time
) -> MigrationResult:
    """Copy every v1 key v2 lacks (module docstring); returns the counts."""
    conn: Any = client
    script = conn.register_script(
        (resources.files("plugin.store") / "lua" / "migrate_key.lua").read_text("utf-8")
    )
    copy = _copy_across_slots if is_cluster(conn) else None
    names = v1_keys(conn)
    conn.hset(keys.MIGRATION, mapping={"state": "running", "started_at": repr(clock())})
    copied = skipped = gone = unmapped = 0
    for start in range(0, len(names), BATCH):
        batch = names[start : start + BATCH]
        pipe = conn.pipeline(transaction=False)
        pairs = []
        for name in batch:
            target = v2_name(name)
            if target is None:
                unmapped += 1
                log.warning("migration_key_unmapped", key=printable(name)[:200])
                continue
            pairs.append((name, target))
            if copy is None:
                script(keys=[name, target], client=pipe)
        on_server = pipe.execute() if pairs and copy is None else []
        replies = copy(conn, pairs) if copy is not None else on_server
        for reply in replies:
            copied += int(reply) == 1
            skipped += int(reply) == 0
            gone += int(reply) == -1
        if progress is not None:
            progress(start + len(batch), len(names))
    result = MigrationResult(len(names), copied, skipped, gone, unmapped)
    conn.hset(
        keys.MIGRATION,
        mapping={
            "state": "done",
            "finished_at": repr(clock()),
            **{k: str(v) for k, v in result.to_dict().items() if isinstance(v, int)},
        },
    )
    log.info("store_migrated", **result.to_dict())
    return result


def _copy_across_slots(conn: Any, pairs: list[tuple[str, str]]) -> list[int]:
    """migrate_key.lua's replies for `pairs` (v1 name, v2 name) on Redis Cluster: DUMP and
    PTTL of the v1 keys in one pipeline, then RESTORE of each (no REPLACE: an existing v2
    key answers BUSYKEY, counted as skipped, so a v2 write is never overwritten)."""
    pipe = conn.pipeline(transaction=False)
    for old, _ in pairs:
        pipe.dump(old)
        pipe.pttl(old)
    dumped = pipe.execute()
    replies = []
    for i, (_, new) in enumerate(pairs):
        payload, ttl = dumped[2 * i], dumped[2 * i + 1]
        if payload is None or ttl == -2:
            replies.append(-1)
            continue
        try:
            conn.restore(new, max(int(ttl), 0), payload)
        except redis.ResponseError as exc:
            if "BUSYKEY" not in str(exc):
                raise
            replies.append(0)
        else:
            replies.append(1)
    return replies


@guarded
def migrate_if_needed(
    client: redis.Redis, progress: Progress | None = None
) -> MigrationResult | None:
    """Migrate when v1 keys exist and v2 holds nothing yet, or a migration is unfinished;
    None when nothing was to do (module docstring)."""
    conn: Any = client
    state = conn.hget(keys.MIGRATION, "state")
    if state == "done":
        return None
    if not _has_v1(conn):
        if state is None:  # nothing to migrate: record it, so no later start scans again
            conn.hset(keys.MIGRATION, mapping={"state": "done", "found": "0"})
        return None
    if state != "running" and conn.exists(keys.APPS):
        # Another process (a second daemon starting at the same time, a learner) may have
        # begun since the first read: its record says "running" before its first copy, so a
        # v2 index seen now with the record still empty is v2 data no migration wrote.
        state = conn.hget(keys.MIGRATION, "state")
        if state == "done":
            return None
        if state != "running":
            log.warning(
                "store_v1_not_migrated",
                detail="the store holds v1 and v2 data; run `adaptalloc store migrate`",
            )
            return None
    return migrate(client, progress)
