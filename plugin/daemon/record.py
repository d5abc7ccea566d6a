"""Decision records: the Redis stream entry (once per job) and the ``decision`` log event.

The record is `plugin.store.decisions.DecisionRecord`; the stream entry has the layout
`plugin.store.curves.CurveStore.record_decision` writes (fields ``app``, ``job_id``, ``doc``:
the record's `to_dict`), so ``adaptalloc app KEY --decisions`` and the reports read both. It
is written by plugin/store/lua/record_decision.lua behind a once-guard key
(``adaptalloc:v2:{global}:decided:<job>-<submit>``, plugin/store/keys.py), so a job recovered
after a crash is never recorded twice. Redis trouble never blocks a job: the record is
skipped, counted and the log line (which carries every field) stays the source of truth.

With HA (`fence` set, plugin/daemon/lease.py) each chunk is one fenced transaction: WATCH
on the lease, our token compared, MULTI, the scripts, EXEC; a daemon that lost the lease
has its records refused by Redis (logged ``decisions_refused``, nothing written).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis
import structlog

from plugin.daemon.decider import RELEASE, Outcome
from plugin.daemon.lease import Lease, LeaseLost
from plugin.errors import printable
from plugin.store import keys, scripts
from plugin.store.decisions import DecisionRecord

__all__ = ["DecisionRecorder", "decision_record"]

log = structlog.get_logger("adaptalloc.daemon")
#: Entries per pipeline round trip.
CHUNK = 500


def decision_record(
    outcome: Outcome,
    status: str,
    latency_s: float | None,
    released_at: float | None = None,
    mode: str = "enforce",
) -> DecisionRecord:
    """Everything needed to replay the decision (and to report on it); `released_at`: when
    the release returned (Unix seconds, rounded to ms), for a released job; `mode`: "advise"
    for a decision only recorded (plugin/daemon/advise.py)."""
    job = outcome.job
    cluster = outcome.cluster
    # A release's resize only puts the submitted range back (the watchdog): no size chosen.
    resize = None if outcome.action == RELEASE else outcome.resize
    return DecisionRecord(
        job_id=job.job_id,
        app=None if outcome.app is None else str(outcome.app),
        user=printable(job.user)[:64],
        account=printable(job.account)[:64],
        partition=printable(job.partition)[:64],
        min_nodes=job.nodes_min,
        max_nodes=job.nodes_max,
        time_limit_min=job.time_limit_min,
        action=outcome.action,
        nodes=None if resize is None else resize.min_nodes,
        nodes_upto=None if resize is None else resize.max_nodes,
        new_time_limit_min=None if resize is None else resize.time_limit_min,
        rule=outcome.rule,
        reason=outcome.reason,
        time_limit_reason=outcome.time_limit_reason,
        fail_open=outcome.fail_open,
        status=status,
        curve_version=outcome.curve_version,
        curve_model=outcome.curve_model,
        idle_nodes=cluster.idle_nodes if cluster is not None else None,
        pending_nodes=cluster.pending_demand_nodes if cluster is not None else None,
        total_nodes=cluster.total_nodes if cluster is not None else None,
        policy=outcome.policy,
        budget=outcome.budget,
        submit_time=job.submit_time,
        decided_at=round(time.time(), 3),
        latency_s=None if latency_s is None else round(latency_s, 3),
        recovered=outcome.recovered,
        released_at=None if released_at is None else round(released_at, 3),
        tasks=outcome.tasks,
        tasks_per_node=outcome.tasks_per_node,
        scaling=outcome.scaling,
        new_partition=None if resize is None else resize.partition,
        placement=outcome.placement,
        curve_app=None if outcome.curve_app is None else str(outcome.curve_app),
        curve_doc=None if resize is None else outcome.curve_doc,
        mode=mode,
    )


class DecisionRecorder:
    """Writes decision documents to the stream, pipelined, each at most once per job."""

    def __init__(
        self,
        client: Callable[[], redis.Redis],
        maxlen: int = 100_000,
        ttl_s: float = 7 * 86400.0,
        retry_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self._client_factory = client
        self._client: Any = None
        self._script: Any = None
        self.maxlen = maxlen
        self.ttl_s = int(max(ttl_s, 1))
        self.retry_s = retry_s
        self.clock = clock
        self._down_until = -1e18
        self._on_failure = on_failure
        #: The HA lease every write is fenced with (None: HA off).
        self.fence: Lease | None = None

    def _ready(self) -> Any:
        if self._client is None:
            self._client = self._client_factory()
            self._script = scripts.load(self._client, "record_decision.lua")
        return self._client

    def reset(self, client: Callable[[], redis.Redis]) -> None:
        self._client_factory = client
        self._client = None
        self._down_until = -1e18

    def record(
        self, docs: Sequence[DecisionRecord], rendered: Sequence[dict[str, Any]] | None = None
    ) -> int:
        """Write `docs` (from decision_record); returns how many were new. Never raises.
        `rendered`: the docs' `to_dict`, when the caller has them already (in order)."""
        if not docs or self.clock() < self._down_until:
            if docs:
                self._failed(len(docs), "Redis marked unavailable")
            return 0
        written = 0
        try:
            client = self._ready()
            for start in range(0, len(docs), CHUNK):
                with client.pipeline(transaction=self.fence is not None) as pipe:
                    if self.fence is not None:
                        self.fence.watch(pipe)
                    for at in range(start, min(start + CHUNK, len(docs))):
                        doc = docs[at]
                        guard = keys.decided(doc.job_id, doc.submit_time or 0)
                        fields = doc.to_dict() if rendered is None else rendered[at]
                        text = json.dumps(fields, separators=(",", ":"), default=str)
                        scripts.queue(  # a plain or a Redis Cluster pipeline
                            pipe,
                            self._script,
                            [guard, keys.DECISIONS],
                            [self.ttl_s, self.maxlen, doc.app or "", doc.job_id, text],
                            by_text=True,  # this pipeline is not retried on NOSCRIPT
                        )
                    written += sum(1 for reply in pipe.execute() if reply)
        except (LeaseLost, redis.WatchError) as exc:
            token = None if self.fence is None else self.fence.token
            log.error(
                "decisions_refused",
                jobs=len(docs) - written,
                token=token,
                error=printable(str(exc) or "the lease changed hands")[:200],
            )
        except (redis.RedisError, OSError) as exc:
            self._down_until = self.clock() + self.retry_s
            self._failed(len(docs) - written, printable(str(exc))[:200])
        return written

    def _failed(self, count: int, why: str) -> None:
        if self._on_failure is not None:
            self._on_failure("record")
        log.warning("decisions_not_recorded", jobs=count, error=why)
