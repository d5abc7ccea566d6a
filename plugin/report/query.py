"""Query: what the store holds about one app, or about every app, as `AppInputs`.

The only module of the report that talks to Redis (through `plugin.store.curves.CurveStore`, so
every failure is a `StoreError`). One app: its summary (curve record, dirty flag), its runs
and its decisions. The fleet: every app's summary in pipelined round trips, the decision
stream read once and split by app (reading it once per app would scan it thousands of
times), then each app's runs as the caller iterates, so that memory holds one app's runs
at a time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace

from plugin.appkey import AppKey, AppKeyError
from plugin.report.model import AppInputs, GuardCounts, Run
from plugin.store.curves import AppSummary, CurveRecord, CurveStore, Observation
from plugin.store.decisions import StoredDecision

__all__ = ["DEFAULT_MAX_DECISIONS", "app_inputs", "fleet_inputs"]

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
    return replace(_inputs(summary, store.observations(app), decisions), guard=guard)


def _app_of(stored: StoredDecision) -> str | None:
    value = stored.record.app
    if value is None:
        return None
    try:
        return str(AppKey.parse(value))
    except AppKeyError:
        return None


def fleet_inputs(
    store: CurveStore, max_decisions: int = DEFAULT_MAX_DECISIONS
) -> tuple[int, Iterator[AppInputs]]:
    """The number of apps and an iterator over their inputs, in the store's order (by name)."""
    summaries = store.apps()
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
            yield replace(_inputs(summary, store.observations(summary.app), docs), guard=guard)

    return len(summaries), generate()
