"""Query: what the store holds about one app, or about every app, as `AppInputs`.

The only module of the report that talks to Redis (through `plugin.store.curves.CurveStore`, so
every failure is a `StoreError`). One app: its summary (curve record, dirty flag), its runs,
its decisions and its scores (live accuracy, plugin/store/scores.py). The fleet: every app's
summary in pipelined round trips, the decision stream and the score stream read once and
split by app (reading them once per app would scan them thousands of times), then each
app's runs as the caller iterates, so that memory holds one app's runs at a time.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import replace

from plugin.appkey import AppKey, AppKeyError
from plugin.report.model import AppInputs, GuardCounts, Run
from plugin.store.curves import AppSummary, CurveRecord, CurveStore, Observation
from plugin.store.decisions import StoredDecision
from plugin.store.score_stream import ScoreStore
from plugin.store.scores import Score

__all__ = ["DEFAULT_MAX_DECISIONS", "app_inputs", "fleet_inputs", "fleet_scores"]

#: Most decisions read (per app, or in all for the fleet); the stream is capped near this.
DEFAULT_MAX_DECISIONS = 100_000


def _run(o: Observation) -> Run:
    return Run(job_id=o.job_id, nodes=o.nodes, runtime_s=o.runtime_s, end_time=o.end_time)


def _curve_note(record: CurveRecord | None) -> str:
    if record is None:
        return "not fitted yet"
    if record.error:
        return "the stored curve is unreadable (the next refit replaces it)"
    if record.curve is None:
        return record.note or "no curve could be fitted"
    return ""


def _inputs(
    summary: AppSummary,
    observations: list[Observation],
    decisions: tuple[StoredDecision, ...],
) -> AppInputs:
    record = summary.curve
    return AppInputs(
        app=str(summary.app),
        runs=tuple(_run(o) for o in observations),
        curve=None if record is None else record.curve,
        curve_note=_curve_note(record),
        curve_version=None if record is None else record.version,
        fitted_at=None if record is None else record.fitted_at,
        refit_due=summary.dirty,
        decisions=decisions,
    )


def app_inputs(
    store: CurveStore, app: AppKey, max_decisions: int = DEFAULT_MAX_DECISIONS
) -> AppInputs | None:
    """One app's inputs, or None when the store does not know the app."""
    summary = store.summary(app)
    if summary is None:
        return None
    decisions = tuple(store.decisions(app, max_decisions)) if max_decisions else ()
    guard = GuardCounts.from_dict(store.guard_counts(app))
    scores = tuple(ScoreStore(store.client).read(app=str(app)))
    return replace(
        _inputs(summary, store.observations(app), decisions),
        guard=guard,
        scores=scores,
        now=time.time(),
    )


def fleet_scores(store: CurveStore) -> list[Score]:
    """Every kept score of every app, newest scored first (the fleet's live accuracy)."""
    return ScoreStore(store.client).read()


def _app_of(stored: StoredDecision) -> str | None:
    value = stored.record.app
    if value is None:
        return None
    try:
        return str(AppKey.parse(value))
    except AppKeyError:
        return None


def fleet_inputs(
    store: CurveStore,
    max_decisions: int = DEFAULT_MAX_DECISIONS,
    scores: Sequence[Score] | None = None,
) -> tuple[int, Iterator[AppInputs]]:
    """The number of apps and an iterator over their inputs, in the store's order (by name).
    `scores`: the fleet's (`fleet_scores`), when the caller read them already."""
    summaries = store.apps()
    now = time.time()
    by_key: dict[str, list[Score]] = defaultdict(list)
    for score in fleet_scores(store) if scores is None else scores:
        by_key[score.app].append(score)
    by_app: dict[str, list[StoredDecision]] = defaultdict(list)
    if max_decisions:
        for doc in store.decisions(None, max_decisions):
            name = _app_of(doc)
            if name is not None:
                by_app[name].append(doc)

    def generate() -> Iterator[AppInputs]:
        for summary in summaries:
            docs = tuple(by_app.get(str(summary.app), ()))
            guard = GuardCounts.from_dict(store.guard_counts(summary.app))
            yield replace(
                _inputs(summary, store.observations(summary.app), docs),
                guard=guard,
                scores=tuple(by_key.get(str(summary.app), ())),
                now=now,
            )

    return len(summaries), generate()
