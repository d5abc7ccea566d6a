"""High availability: the lease in Redis that lets one daemon of several decide, with a
fencing token on every write (``[daemon] ha = true``; off by default).

The lease is the key ``adaptalloc:v2:{global}:daemon:lease`` (plugin/store/keys.py) holding
``"<token> <holder>"`` with a TTL (``[daemon] lease_ttl_s``, default 10 s). It is taken
when free (SET NX PX, checked and set in one script), the token being the next value of an
INCR'd counter, renewed with PEXPIRE and given up with DEL, each only while the key still
holds the holder's own value (plugin/store/lua/lease.lua). A holder (``host:pid``) that
stepped down while its lease was still in the key (a Redis blip) takes it again at once,
with a new token. Tokens only grow, so a daemon that lost the lease holds a
token that is smaller than the new holder's, and the key no longer holds its value.

Times, with T = the TTL: the holder renews every T/3 (every T/10 after a failed renewal)
from a thread of its own, so a slow Slurm command in the loop cannot make it miss one.
It counts the lease as its own only until T/2 after the *start* of its last successful
renewal (`valid`); Redis keeps the key until T after it *processed* that renewal, which is
later. So a daemon that cannot renew (Redis gone, the process stopped and resumed, a
partition) stops deciding at least T/2 before another can take the lease over, and
clocks may drift by less than that. The standby tries to take the lease every `poll_s`
(at most 1 s), so it takes over at most T + 1 s after the holder's last renewal.

Every write carries or checks the token:

* Redis: `watch` starts a transaction (WATCH on the lease key, the value compared, then
  MULTI): EXEC writes nothing if the lease changed hands in between (redis-py raises
  WatchError), so a stale holder's decision records are refused by Redis itself;
* Slurm (which knows no tokens): `check` just before each write, a GET compared with the
  holder's value, after `valid`. What is left is the time between the check and the
  write reaching slurmctld, which must stay below T/2 (a Slurm command hangs at most
  ``slurm_timeout_s``; the check comes after the previous command returned).

Without Redis nobody can hold the lease: see plugin/daemon/loop.py (the state directory's
lock keeps a second daemon out, as without HA).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis
import structlog

from plugin.errors import AdaptallocError, printable
from plugin.store import keys

__all__ = ["Grant", "Lease", "LeaseKeeper", "LeaseLost", "holder_name"]

log = structlog.get_logger("adaptalloc.daemon")

#: The holder stops counting the lease as its own this fraction of the TTL after the start
#: of its last successful renewal (module docstring) ...
VALID_FRACTION = 0.5
#: ... renews every this fraction of the TTL ...
RENEW_FRACTION = 1.0 / 3.0
#: ... and, after a failed renewal, tries again every this fraction.
RETRY_FRACTION = 0.1
#: The longest a standby waits between two attempts to take the lease.
MAX_POLL_S = 1.0

#: Redis errors that mean "the lease cannot be known now" (as against "someone has it").
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError, OSError)


class LeaseLost(AdaptallocError):  # noqa: N818 - names what happened, as StoreUnavailable
    """This daemon does not hold the lease (any more): it must not write."""


@dataclass(frozen=True)
class Grant:
    """A lease this daemon was granted: its fencing token and the key's value."""

    token: int
    holder: str

    @property
    def value(self) -> str:
        return f"{self.token} {self.holder}"


def holder_name() -> str:
    """``host:pid``: who holds the lease, for logs and for the other daemon."""
    return f"{socket.gethostname()}:{os.getpid()}"


def parse_value(value: str | None) -> Grant | None:
    """The grant a lease value (``"<token> <holder>"``) names, or None."""
    if not value:
        return None
    token, _, holder = value.partition(" ")
    return Grant(int(token), holder) if token.isdigit() else None


class Lease:
    """One daemon's side of the lease (module docstring).

    Parameters
    ----------
    client : callable returning redis.Redis
        Called once per connection (short timeouts: the daemon's decision-path client).
    ttl_s : float
        The lease's TTL, T.
    holder : str
        This daemon's name (`holder_name`).
    clock : callable
        Monotonic seconds (injected by tests).
    """

    def __init__(
        self,
        client: Callable[[], redis.Redis],
        ttl_s: float,
        holder: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_factory = client
        self._client: redis.Redis | None = None
        self._script: Any = None
        self.ttl_s = ttl_s
        self.holder = holder or holder_name()
        self.clock = clock
        self.grant: Grant | None = None
        #: The last grant this daemon held, kept after it is lost (for the logs).
        self.last_grant: Grant | None = None
        self.valid_until = -1e18
        self._lock = threading.Lock()

    @property
    def ttl_ms(self) -> int:
        return max(int(self.ttl_s * 1000), 1)

    @property
    def renew_every_s(self) -> float:
        return self.ttl_s * RENEW_FRACTION

    @property
    def retry_s(self) -> float:
        return self.ttl_s * RETRY_FRACTION

    @property
    def poll_s(self) -> float:
        return min(MAX_POLL_S, self.ttl_s * RETRY_FRACTION * 2)

    def _ready(self) -> redis.Redis:
        if self._client is None:
            client = self._client_factory()
            text = (resources.files("plugin.store") / "lua" / "lease.lua").read_text("utf-8")
            self._script = client.register_script(text)
            self._client = client
        return self._client

    def _call(self, op: str, arg: str) -> Any:
        """lease.lua's `op` (its KEYS and ARGV are documented there)."""
        self._ready()
        return self._script(keys=[keys.LEASE, keys.LEASE_TOKEN], args=[op, arg, self.ttl_ms])

    def reset(self, client: Callable[[], redis.Redis]) -> None:
        """Use another connection from now on (SIGHUP changed [redis])."""
        self._client_factory = client
        self._client = None

    # --- the holder's state (read by the loop, written by the keeper thread too) ---------

    @property
    def token(self) -> int | None:
        grant = self.grant
        return None if grant is None else grant.token

    def valid(self) -> bool:
        """This daemon may decide: it holds a grant renewed less than T/2 ago."""
        with self._lock:
            return self.grant is not None and self.clock() < self.valid_until

    def _granted(self, grant: Grant, started: float) -> None:
        with self._lock:
            self.grant = self.last_grant = grant
            self.valid_until = started + self.ttl_s * VALID_FRACTION

    def drop(self) -> Grant | None:
        """Forget the grant (lost or given up); the grant it was."""
        with self._lock:
            grant, self.grant = self.grant, None
            self.valid_until = -1e18
            return grant

    # --- Redis ---------------------------------------------------------------------------

    def acquire(self) -> bool:
        """Take the lease if nobody holds it (SET NX PX, a new token); True when taken.

        Raises the redis-py error when Redis cannot be reached (the caller tells "cannot
        know" from "someone else has it").
        """
        started = self.clock()
        token = self._call("acquire", self.holder)
        if not token:
            return False
        self._granted(Grant(int(token), self.holder), started)
        return True

    def renew(self) -> bool:
        """PEXPIRE the lease if it still holds our value; True when renewed.

        False when the renewal failed: Redis said the lease is no longer ours (the grant is
        dropped: lost for good), or could not be reached (the grant is kept and lapses at
        `valid_until` unless a retry succeeds first).
        """
        grant = self.grant
        if grant is None:
            return False
        started = self.clock()
        try:
            ok = self._call("renew", grant.value)
        except redis.RedisError as exc:
            log.warning("lease_renew_failed", token=grant.token, error=printable(str(exc))[:200])
            return False
        if not ok:
            if self.drop() is not None:
                log.error("lease_refused", token=grant.token, holder_now=self.current_holder())
            return False
        if self.grant == grant:
            self._granted(grant, started)
        return True

    def release(self) -> None:
        """Give the lease up (DEL, only if it is still ours), so a standby takes over at
        once instead of after the TTL. Never raises."""
        grant = self.drop()
        if grant is None:
            return
        try:
            self._call("release", grant.value)
        except redis.RedisError as exc:
            log.warning("lease_release_failed", token=grant.token, error=printable(str(exc))[:200])
            return
        log.info("lease_released", token=grant.token)

    def current_holder(self) -> str | None:
        """The lease's value now (``"<token> <holder>"``), None when free or unknown."""
        try:
            value = self._ready().get(keys.LEASE)
        except redis.RedisError:
            return None
        return None if value is None else printable(str(value))[:200]

    def check(self) -> Grant:
        """Just before a Slurm write: the grant, if it is valid and Redis still holds our
        value; LeaseLost otherwise (Redis unreachable included: no write without it)."""
        grant = self.grant
        if grant is None or not self.valid():
            raise LeaseLost(
                "the lease was not renewed in time"
                if grant is not None
                else "this daemon holds no lease"
            )
        try:
            value = self._ready().get(keys.LEASE)
        except redis.RedisError as exc:
            raise LeaseLost(f"cannot check the lease: {printable(str(exc))[:200]}") from exc
        if value != grant.value:
            self.drop()
            raise LeaseLost(
                f"token {grant.token} refused: the lease is now "
                f"{printable(str(value))[:100] if value else 'free'}"
            )
        return grant

    def watch(self, pipe: Any) -> Grant:
        """Begin a fenced transaction on `pipe` (a ``pipeline(transaction=True)``): WATCH
        the lease, compare its value with ours, MULTI. Queue the writes and EXEC: redis-py
        raises WatchError, and nothing is written, if the lease changed in between.
        LeaseLost when it is not ours already."""
        grant = self.grant
        if grant is None or not self.valid():
            raise LeaseLost("the lease was not renewed in time")
        pipe.watch(keys.LEASE)
        value = pipe.get(keys.LEASE)
        if value != grant.value and _demoted(pipe):
            # A pooled connection to a master Sentinel has since demoted reads the replica's
            # copy, which may lag our grant; only writes fail there. Reconnect (the Sentinel
            # pool asks for the master again) and read once more.
            pipe.reset()
            pipe.connection_pool.disconnect()
            pipe.watch(keys.LEASE)
            value = pipe.get(keys.LEASE)
        if value != grant.value:
            pipe.reset()
            self.drop()
            raise LeaseLost(f"token {grant.token} refused by Redis (fenced write)")
        pipe.multi()
        return grant


def _demoted(pipe: Any) -> bool:
    """Whether the connection `pipe` watches on is to a replica (ROLE), False when unknown."""
    try:
        role = pipe.execute_command("ROLE")
    except redis.RedisError:  # a client without ROLE (Cluster): nothing to learn
        return False
    return bool(role) and str(role[0]) != "master"


class LeaseKeeper:
    """The thread that renews the lease while it is held (module docstring), and calls
    `on_lost` once when it lapses or is refused, without waiting for the loop."""

    def __init__(self, lease: Lease, on_lost: Callable[[], None]) -> None:
        self.lease = lease
        self.on_lost = on_lost
        self.stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        held = False
        wait = self.lease.renew_every_s
        while not self.stop.wait(wait):
            if self.lease.grant is None:  # not held, or dropped by the loop: nothing to renew
                held = False
                wait = self.lease.retry_s
                continue
            ok = self.lease.renew()
            wait = self.lease.renew_every_s if ok else self.lease.retry_s
            now_valid = self.lease.valid()
            if held and not now_valid:
                self.lease.drop()  # lapsed: lost for good, even if a late renewal would work
                self.on_lost()
            held = now_valid
