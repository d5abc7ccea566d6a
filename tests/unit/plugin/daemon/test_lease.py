"""plugin.daemon.lease against a real redis-server (the `private_redis` fixture): the lease
is exclusive, its fencing tokens only grow, a holder that lost it is refused by Redis on
renewal, on the check before a Slurm write and on a fenced decision record."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from plugin.daemon.lease import Lease, LeaseKeeper, LeaseLost, parse_value
from plugin.daemon.record import DecisionRecorder
from plugin.store import keys
from plugin.store.decisions import DecisionRecord

#: A short TTL so that expiries happen within the test (the daemon's default is 10 s).
TTL_S = 1.0
#: The keeper test's TTL: its renewal thread must run on time for the lease to stay valid
#: (T/2 after a renewal, renewed every T/3), so with T = 1 s a 0.17 s stall of a loaded
#: machine lapses it; at 3 s the thread may be late by 0.5 s.
KEEPER_TTL_S = 3.0
RECORD = json.loads(
    '{"job_id":4711,"app":"lulesh","user":"alice","account":"physics",'
    '"partition":"batch","min_nodes":2,"max_nodes":8,"time_limit_min":60,"action":"resize",'
    '"nodes":4,"nodes_upto":4,"new_time_limit_min":25,"rule":"efficiency",'
    '"reason":"efficiency stays above 50% up to 4 nodes","time_limit_reason":"scaled",'
    '"fail_open":null,"status":"released","curve_version":3,"curve_model":"downey",'
    '"idle_nodes":8,"pending_nodes":0,"total_nodes":8,"policy":"default",'
    '"budget":{"explore":0},"submit_time":1700000000,"decided_at":1700000123.456,'
    '"latency_s":0.042,"recovered":false,"released_at":1700000123.5}'
)


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client(private_redis: Any) -> redis.Redis:
    private_redis.start()
    return redis.Redis.from_url(private_redis.url, decode_responses=True)


def lease_of(
    client: redis.Redis,
    holder: str,
    clock: Callable[[], float] = time.monotonic,
    ttl_s: float = TTL_S,
) -> Lease:
    return Lease(lambda: client, ttl_s, holder, clock)


def expire_now(client: redis.Redis) -> None:
    """What the TTL does once it runs out (without waiting for it)."""
    client.delete(keys.LEASE)


def test_the_lease_keys_are_exact() -> None:
    assert keys.LEASE == "adaptalloc:v2:{global}:daemon:lease"
    assert keys.LEASE_TOKEN == "adaptalloc:v2:{global}:daemon:lease:token"  # noqa: S105 - a key name


def test_one_holder_at_a_time_and_tokens_only_grow(client: redis.Redis) -> None:
    first, second = lease_of(client, "a:1"), lease_of(client, "b:2")
    assert first.acquire()
    assert not second.acquire()
    assert not second.acquire()  # a refused attempt uses no token
    assert parse_value(str(client.get(keys.LEASE))) == first.grant
    assert 0 < client.pttl(keys.LEASE) <= TTL_S * 1000
    expire_now(client)
    assert second.acquire()
    assert first.token is not None
    assert second.token is not None
    assert second.token == first.token + 1
    assert client.get(keys.LEASE) == f"{second.token} b:2"


def test_the_lease_expires_by_its_ttl(client: redis.Redis) -> None:
    first, second = lease_of(client, "a:1"), lease_of(client, "b:2")
    assert first.acquire()
    time.sleep(TTL_S + 0.2)
    assert second.acquire()


def test_a_holder_that_lost_the_lease_is_refused_everywhere(client: redis.Redis) -> None:
    clock = Clock()
    stale, fresh = lease_of(client, "a:1", clock), lease_of(client, "b:2")
    assert stale.acquire()
    expire_now(client)  # as if `stale` had been stopped for longer than the TTL
    assert fresh.acquire()
    old = stale.grant
    # Its local view still says valid (no time passed on its clock): Redis refuses it.
    assert stale.valid()
    with pytest.raises(LeaseLost, match=rf"token {old.token} refused"):  # type: ignore[union-attr]
        stale.check()
    assert stale.acquire() is False
    stale.grant = old  # as it was before the check dropped it
    assert stale.renew() is False
    assert stale.grant is None
    assert client.get(keys.LEASE) == fresh.grant.value  # type: ignore[union-attr]
    stale.grant = old
    stale.release()  # gives up only its own lease: the new holder's stays
    assert client.get(keys.LEASE) == fresh.grant.value  # type: ignore[union-attr]
    assert fresh.check() == fresh.grant


def test_a_holder_stops_counting_on_the_lease_half_a_ttl_after_renewing(
    client: redis.Redis,
) -> None:
    clock = Clock()
    lease = lease_of(client, "a:1", clock)
    assert lease.acquire()
    clock.now += TTL_S * 0.49
    assert lease.valid()
    lease.check()
    clock.now += TTL_S * 0.02
    assert not lease.valid()  # Redis still holds it for another half TTL: the margin
    assert client.get(keys.LEASE) == lease.grant.value  # type: ignore[union-attr]
    with pytest.raises(LeaseLost, match="not renewed in time"):
        lease.check()
    assert lease.renew()  # still ours in Redis: renewed, valid again
    assert lease.valid()


def test_release_frees_the_lease_for_the_next_at_once(client: redis.Redis) -> None:
    first, second = lease_of(client, "a:1"), lease_of(client, "b:2")
    assert first.acquire()
    first.release()
    assert first.grant is None
    assert second.acquire()


def test_the_keeper_renews_and_reports_a_lapse_once(client: redis.Redis) -> None:
    lease = lease_of(client, "a:1", ttl_s=KEEPER_TTL_S)
    lost: list[float] = []
    keeper = LeaseKeeper(lease, lambda: lost.append(time.monotonic()))
    assert lease.acquire()
    keeper.start()
    try:
        time.sleep(KEEPER_TTL_S * 1.2)  # past the TTL: only renewals keep it
        assert lease.valid()
        assert client.get(keys.LEASE) == lease.grant.value  # type: ignore[union-attr]
        assert lost == []
        client.set(keys.LEASE, "999 someone:else", px=int(KEEPER_TTL_S * 1000))
        deadline = time.monotonic() + KEEPER_TTL_S * 3
        while not lost and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        keeper.close()
    assert len(lost) == 1
    assert lease.grant is None


def recorder(client: redis.Redis, fence: Lease | None) -> DecisionRecorder:
    made = DecisionRecorder(lambda: client)
    made.fence = fence
    return made


def test_a_fenced_record_is_written_by_the_holder_only(client: redis.Redis) -> None:
    clock = Clock()
    stale, fresh = lease_of(client, "a:1", clock), lease_of(client, "b:2")
    assert stale.acquire()
    expire_now(client)
    assert fresh.acquire()
    doc = DecisionRecord.from_dict(RECORD)
    assert recorder(client, stale).record([doc]) == 0  # refused: nothing written
    assert client.xlen(keys.DECISIONS) == 0
    assert client.exists(keys.decided(4711, 1700000000)) == 0
    assert recorder(client, fresh).record([doc]) == 1
    assert client.xlen(keys.DECISIONS) == 1
    assert recorder(client, fresh).record([doc]) == 0  # the once-guard still holds


def test_a_fenced_transaction_is_void_when_the_lease_changes_before_exec(
    client: redis.Redis,
) -> None:
    lease = lease_of(client, "a:1")
    assert lease.acquire()
    with client.pipeline(transaction=True) as pipe:
        lease.watch(pipe)
        pipe.set("adaptalloc:test:written", "1")
        client.set(keys.LEASE, "999 someone:else")  # taken over between WATCH and EXEC
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert client.exists("adaptalloc:test:written") == 0


def test_a_holder_that_stepped_down_on_a_blip_takes_its_own_lease_back(
    client: redis.Redis,
) -> None:
    first, second = lease_of(client, "a:1"), lease_of(client, "b:2")
    assert first.acquire()
    old = first.grant
    first.drop()  # stepped down: Redis did not answer one check in time
    assert not second.acquire()
    assert first.acquire()  # still its value in the key: no wait for the TTL
    assert old is not None
    assert first.token == old.token + 1
    stale = lease_of(client, "a:1")
    stale.grant, stale.valid_until = old, time.monotonic() + 10
    with pytest.raises(LeaseLost, match=f"token {old.token} refused"):
        stale.check()  # the old token is refused from now on
