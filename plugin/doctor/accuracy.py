"""Checks of live accuracy: how the curves' predictions held on the finished jobs they
decided (plugin/learning/accuracy.py defines every figure; the metrics and the report show
the same ones).

* accuracy_coverage: over the fleet's rolling window (the newest 1,000 scored jobs of the
  last 7 days), the share of runtimes inside the 90% interval of the curve that decided
  them. Warns outside 80-97% once 30 jobs or more are known against the interval: below,
  the intervals are too narrow (time limits, which read their upper end, are tighter than
  the curves can vouch for); above, too wide (limits longer than they need be). Fewer jobs
  give no verdict, and the check says how many there are.
* accuracy_drift: the apps whose error grew: an app's window against the 200 jobs before
  it (accuracy.drift: the median error half again as large and 5 points above, and a
  Mann-Whitney U test at p < 0.01).

The scores are read from Redis with the doctor's Redis settings; when Redis cannot be read
the checks warn and leave the reason to the redis check.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from plugin.doctor.check import OK, WARN, Check
from plugin.doctor.settings import DoctorSettings
from plugin.errors import printable
from plugin.learning import accuracy
from plugin.report.numbers import format_percent
from plugin.store.connection import StoreError, connect
from plugin.store.score_stream import ScoreStore
from plugin.store.scores import Score

__all__ = ["COVERAGE", "DRIFT", "accuracy_checks", "verdicts"]

COVERAGE = "accuracy_coverage"
DRIFT = "accuracy_drift"
#: Apps named in a warning's detail (the report lists them all).
NAMED = 5


def accuracy_checks(settings: DoctorSettings, now: float | None = None) -> list[Check]:
    """Both checks over the scores in the store the doctor's settings name."""
    try:
        client = connect(settings.redis_url, settings.redis)
        try:
            scores = ScoreStore(client).read()
        finally:
            client.close()
    except StoreError as exc:
        why = f"the scores cannot be read: {printable(str(exc))[:200]}"
        fix = "see the redis check"
        return [Check(COVERAGE, WARN, why, fix), Check(DRIFT, WARN, why, fix)]
    return verdicts(scores, time.time() if now is None else now)


def verdicts(scores: Sequence[Score], now: float) -> list[Check]:
    """The two checks over `scores` (module docstring)."""
    return [_coverage(scores, now), _drift(scores, now)]


def _coverage(scores: Sequence[Score], now: float) -> Check:
    fleet, _ = accuracy.window(scores, now, accuracy.FLEET_WINDOW_JOBS)
    s = accuracy.summarize(fleet)
    if s.judged < accuracy.MIN_JOBS or s.coverage is None:
        return Check(
            COVERAGE,
            OK,
            f"{s.judged} finished jobs of the last {accuracy.WINDOW_DAYS:g} days are scored "
            f"against their 90% interval; a verdict needs {accuracy.MIN_JOBS}",
        )
    seen = (
        f"{format_percent(s.coverage, 3)} of {s.judged:,} finished jobs (the newest of the last "
        f"{accuracy.WINDOW_DAYS:g} days) ran within the 90% interval of the curve that decided "
        f"them; median error {format_percent(s.error_median or 0.0, 3)}"
    )
    low, high = accuracy.COVERAGE_LOW, accuracy.COVERAGE_HIGH
    if low <= s.coverage <= high:
        return Check(COVERAGE, OK, seen)
    worst = _worst_apps(fleet, now, too_narrow=s.coverage < low)
    if s.coverage < low:
        return Check(
            COVERAGE,
            WARN,
            f"{seen}: below {format_percent(low)}, the intervals are too narrow, and time "
            f"limits, which read their upper end, are tighter than the curves vouch for{worst}",
            "see which apps miss in `adaptalloc report --all` (Live accuracy) and "
            "`adaptalloc report APP`; a changed input or build wants its own app key "
            "(the tag's size=), or `adaptalloc forget APP` to learn it afresh",
        )
    return Check(
        COVERAGE,
        WARN,
        f"{seen}: above {format_percent(high)}, the intervals are wider than they need be, "
        f"and so are the time limits that read them{worst}",
        "nothing breaks; see `adaptalloc report --all` (Live accuracy) for the apps whose "
        "intervals are widest",
    )


def _worst_apps(fleet: Sequence[Score], now: float, too_narrow: bool) -> str:
    """The apps furthest from the interval's promise, in a clause (empty when none has a
    verdict of its own)."""
    rows = []
    for app, mine in accuracy.by_app(fleet).items():
        s = accuracy.summarize(accuracy.window(mine, now)[0])
        if s.judged >= accuracy.MIN_JOBS and s.coverage is not None:
            rows.append((s.coverage if too_narrow else -s.coverage, app, s.coverage))
    if not rows:
        return ""
    named = ", ".join(
        f"{printable(app)[:64]} {format_percent(c, 3)}" for _, app, c in sorted(rows)[:NAMED]
    )
    return f" (by app: {named})"


def _drift(scores: Sequence[Score], now: float) -> Check:
    judged = 0
    grown = []
    for app, mine in accuracy.by_app(scores).items():
        d = accuracy.drift(mine, now)
        if d.p_value is not None:
            judged += 1
        if d.grew:
            grown.append((app, d))
    if not grown:
        return Check(
            DRIFT,
            OK,
            f"no app's error grew ({judged} apps have {accuracy.MIN_JOBS} scored jobs or more "
            "in their window and before it to compare)",
        )
    named = "; ".join(
        f"{printable(app)[:64]}: median error {format_percent(d.previous.error_median or 0.0, 3)}"
        f" -> {format_percent(d.latest.error_median or 0.0, 3)}"
        for app, d in sorted(grown)[:NAMED]
    )
    more = f" and {len(grown) - NAMED} more" if len(grown) > NAMED else ""
    return Check(
        DRIFT,
        WARN,
        f"the error of {len(grown)} apps' predictions grew ({named}{more})",
        "`adaptalloc report APP` shows the runs against the curve: a changed input, build or "
        "machine wants its own app key (the tag's size=), or `adaptalloc forget APP` to "
        "learn it afresh",
    )
