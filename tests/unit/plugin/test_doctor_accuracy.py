"""The doctor's live-accuracy verdicts over scores (no Redis): coverage outside 80-97% with
enough jobs warns, too few jobs give no verdict, and an app whose error grew is named."""

from __future__ import annotations

from typing import Any

import numpy as np

from plugin.doctor import OK, WARN
from plugin.doctor.accuracy import COVERAGE, DRIFT, verdicts
from plugin.store.scores import Score

NOW = 1_800_000_000.0


def scores(app: str, count: int, inside: float, start: int = 0, miss: float = 0.02) -> list[Score]:
    """`count` scores of `app`, a share `inside` of them inside the interval [80, 125] s;
    the others 60% above it; the inside ones miss the prediction (100 s) by about `miss`."""
    rng = np.random.default_rng(start)
    out = []
    for k in range(count):
        hit = k < round(inside * count)
        runtime = 100.0 * (1.0 + miss * rng.uniform(0.5, 1.5)) if hit else 200.0
        out.append(
            Score(app, start + k, 1, NOW - 60.0 * (start + k), 4, runtime, 100.0, 80.0, 125.0)
        )
    return out


def by_name(**kwargs: Any) -> dict[str, Any]:
    return {c.name: c for c in verdicts(**kwargs)}


def test_a_calibrated_fleet_passes_and_a_narrow_one_warns_naming_the_apps() -> None:
    good = by_name(scores=scores("lu", 300, 0.9), now=NOW)
    assert good[COVERAGE].status == OK
    assert "90.0% of 300 finished jobs" in good[COVERAGE].detail
    bad = by_name(scores=scores("lu", 150, 0.95) + scores("cg", 150, 0.5, start=1000), now=NOW)
    assert bad[COVERAGE].status == WARN
    assert "too narrow" in bad[COVERAGE].detail
    assert "cg 50.0%" in bad[COVERAGE].detail.split("by app:")[1].split(",")[0]
    assert "adaptalloc report" in bad[COVERAGE].fix


def test_too_wide_intervals_warn_and_few_jobs_give_no_verdict() -> None:
    wide = by_name(scores=scores("lu", 100, 1.0), now=NOW)
    assert wide[COVERAGE].status == WARN
    assert "wider than they need be" in wide[COVERAGE].detail
    few = by_name(scores=scores("lu", 20, 0.2), now=NOW)
    assert few[COVERAGE].status == OK
    assert "a verdict needs 30" in few[COVERAGE].detail
    old = [Score("lu", k, 1, NOW - 30 * 86400.0, 4, 200.0, 100.0, 80.0, 125.0) for k in range(100)]
    assert by_name(scores=old, now=NOW)[COVERAGE].status == OK  # a month old: out of the window


def test_an_app_whose_error_grew_is_named() -> None:
    # The newest 200 runs miss by about 40%, the 200 before them by about 2%.
    lu = scores("lu", 200, 1.0, miss=0.4) + scores("lu", 200, 1.0, start=200)
    steady = scores("cg", 400, 1.0, start=5000, miss=0.1)
    got = by_name(scores=lu + steady, now=NOW)
    assert got[DRIFT].status == WARN
    assert "lu: median error" in got[DRIFT].detail
    assert "cg" not in got[DRIFT].detail
    assert by_name(scores=steady, now=NOW)[DRIFT].status == OK
