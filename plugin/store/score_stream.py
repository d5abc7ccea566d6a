"""Live accuracy in Redis: the score stream, and the join from a finished job to its decision.

`ScoreStore` keeps scores (plugin/store/scores.py) in one capped stream,
``adaptalloc:v2:{global}:scores`` (fields ``app``, the key whose curve decided, ``job_id``
and ``doc``, the score's compact JSON), written once per job behind a guard key
(record_score.lua), and finds a finished job's decision record through the daemon's own
once-guard, which holds the record's entry id (record_decision.lua).

One stream for the fleet rather than a key per app: every reader wants the newest scores
first (the rolling windows of the metrics and the doctor, the report's newest points), a
fleet's window is one read, and the global slot holds the decisions the scores join. The
cap (`SCORES_MAXLEN`, about 250 bytes a score) keeps the newest 50,000 jobs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import structlog

from plugin.errors import printable
from plugin.store import keys, scripts
from plugin.store.connection import client_location, guarded
from plugin.store.scores import Score

__all__ = ["SCORED", "SCORED_TTL_S", "SCORES_MAXLEN", "ScoreStore"]

log = structlog.get_logger("adaptalloc.store")

#: Approximate cap of the score stream (XADD MAXLEN ~).
SCORES_MAXLEN = 50_000
#: How long the score-once guard lives: the learner re-reads minutes of finished jobs.
SCORED_TTL_S = 7 * 86400
#: Jobs per pipeline round trip.
CHUNK = 500
#: Entries per XREVRANGE page.
PAGE = 1000
#: What `ScoreStore.decisions_of` gives for a job scored before.
SCORED = "scored"


def _chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class ScoreStore:
    """The score stream and the join to the decisions (module docstring) on one client
    (``decode_responses=True``); Redis errors surface as StoreError, as the CurveStore's."""

    def __init__(self, client: Any, maxlen: int = SCORES_MAXLEN, ttl_s: int = SCORED_TTL_S) -> None:
        self.client = client
        self.maxlen = maxlen
        self.ttl_s = int(max(ttl_s, 1))
        self.where = client_location(client)
        #: Stored scores `read` could not read (corrupt entries), skipped and logged.
        self.skipped = 0
        self._record = scripts.load(client, "record_score.lua")

    @guarded
    def decisions_of(self, jobs: Sequence[tuple[int, int]]) -> list[dict[str, Any] | str | None]:
        """For each (job id, submit time), the decision document the daemon recorded for it;
        `SCORED` when the job was scored already; None when no decision is found (none was
        recorded, its guard expired or was written before guards held entry ids, or its
        entry was trimmed from the stream). Two pipelined round trips, in chunks."""
        docs: list[dict[str, Any] | str | None] = [None] * len(jobs)
        wanted: list[tuple[int, str]] = []  # (position, the decision's entry id)
        for offset in range(0, len(jobs), CHUNK):
            chunk = jobs[offset : offset + CHUNK]
            pipe = self.client.pipeline(transaction=False)
            for job_id, submit in chunk:
                pipe.get(keys.decided(job_id, submit))
                pipe.exists(keys.scored(job_id, submit))
            replies = pipe.execute()
            for at in range(len(chunk)):
                entry, done = replies[2 * at], replies[2 * at + 1]
                if done:
                    docs[offset + at] = SCORED
                elif isinstance(entry, str) and "-" in entry:  # an older guard holds "1"
                    wanted.append((offset + at, entry))
        for chunk in _chunks(wanted):
            pipe = self.client.pipeline(transaction=False)
            for _, entry in chunk:
                pipe.xrange(keys.DECISIONS, min=entry, max=entry, count=1)
            for (at, _), found in zip(chunk, pipe.execute(), strict=True):
                if found:
                    docs[at] = _document(found[0][1].get("doc", ""))
        return docs

    @guarded
    def add(self, scores: Sequence[Score]) -> list[bool]:
        """Append `scores`, each at most once per job; for each, whether it was new (the
        learner re-reads a window of jobs, and two learners may score one at once)."""
        added: list[bool] = []
        for chunk in _chunks(scores):
            pipe = self.client.pipeline(transaction=False)
            for score in chunk:
                scripts.queue(
                    pipe,
                    self._record,
                    [keys.scored(score.job_id, score.submit_time), keys.SCORES],
                    [self.ttl_s, self.maxlen, score.app, score.job_id, score.to_json()],
                    by_text=True,
                )
            added += [bool(reply) for reply in pipe.execute()]
        return added

    @guarded
    def read(
        self, since: float | None = None, app: str | None = None, count: int | None = None
    ) -> list[Score]:
        """Stored scores, newest scored first: those of jobs that ended at or after `since`
        (Unix s; None: all kept), of the key `app` (None: every key), at most `count`."""
        out: list[Score] = []
        # An entry's id is when it was scored, never before its job ended.
        lowest = "-" if since is None else str(max(int(since * 1000.0), 0))
        upper = "+"
        while count is None or len(out) < count:
            page = self.client.xrevrange(keys.SCORES, max=upper, min=lowest, count=PAGE)
            for entry_id, fields in page:
                key = fields.get("app", "")
                if app is not None and key != app:
                    continue
                try:
                    score = Score.from_json(key, fields.get("doc", ""))
                except ValueError as exc:
                    self.skipped += 1
                    log.error(
                        "score_unreadable",
                        id=printable(str(entry_id))[:40],
                        error=printable(str(exc))[:200],
                    )
                    continue
                if since is None or score.end_time >= since:
                    out.append(score)
                    if count is not None and len(out) == count:
                        break
            if len(page) < PAGE:
                break
            upper = "(" + page[-1][0]
        return out


def _document(text: str) -> dict[str, Any] | None:
    """A stored decision document as a dict, None when it is not one."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None
