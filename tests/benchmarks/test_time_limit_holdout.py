"""Time limits on held-out sizes: how often a rescaled limit would kill a job, and how much it
cuts, under three rules, on every real strong-scaling CSV in tests/data/scaling.

For each study and each hold-out of its largest 1 or 2 sizes, the curve is fitted on the
remaining runs; then each held-out size h is the chosen size and the limit is derived for it.
The true runtime at h is the median of its runs: a limit below it would have killed the job.
The interior benchmark does the same for each interior size left out (inside the data).

The rules compared, all through `policies.time_limit` except the first:

* before: the original rule, L·T(h)/T(ref)·safety raised to the floor and to the
  predicted runtime × safety (possibly above L), transcribed here;
* margin: the first rule with a margin, T·(1±m) with the fit error m (the same code, on the curve
  with its residual removed, which is how time_limit treats a curve stored without one);
* interval: the fit's own 90% prediction interval (`Curve.runtime_interval`), the default.

Past the largest observed size every rule but "before" keeps the user's limit; the held-out
benchmark also prints what the interval's upper end would have given there (the interval
past the data, floored at the flat bound L·T(N)/T(ref)), the evidence for keeping L.

Synthetic assumptions (printed with the figures): runtimes are rescaled so that the study's
smallest size runs 40 min, and the user's limit is 60 min (a 1.5x margin) written for that
size. No constant is chosen by this benchmark: it scores the defaults (safety 1.2, floor 5,
max_fit_error 0.10) and the predictor's interval constants (chosen on synthetic curves,
predictor/intervals.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import predictor
from policies import DEFAULTS, ClusterState, Request
from policies.profile import RuntimeProfile
from policies.time_limit import time_limit, untrusted_because

from .results import ResultTable, record

DATA = Path(__file__).resolve().parents[1] / "data" / "scaling"
REF_MINUTES = 40.0
USER_LIMIT = 60
RULES = ("before", "margin", "interval")


def _before(profile: RuntimeProfile, chosen: int, ref: int) -> int:
    """The original rule, for comparison (no pessimism, no trust check, no ceiling)."""
    safety, floor = DEFAULTS.time_limit_safety_factor, DEFAULTS.time_limit_floor_min
    t_chosen = profile.at(chosen)
    minutes = max(1, math.ceil(USER_LIMIT * t_chosen / profile.at(ref) * safety - 1e-9))
    if chosen >= ref:
        minutes = min(minutes, USER_LIMIT)
    predicted = max(1, math.ceil(t_chosen / 60.0 * safety - 1e-9))
    return max(minutes, floor if floor >= predicted else minutes, predicted)


def _limit(request: Request, curve: predictor.Curve, lo: int, hi: int, h: int) -> int:
    got = time_limit(request, RuntimeProfile.of(curve, lo, hi), h, ClusterState(), DEFAULTS)
    return USER_LIMIT if got.minutes is None else got.minutes


def _limits(curve: predictor.Curve, ref: int, top: int, h: int) -> dict[str, int]:
    request = Request(ref, top, USER_LIMIT)
    return {
        "before": _before(RuntimeProfile.of(curve, ref, top), h, ref),
        "margin": _limit(request, replace(curve, residual=0.0), ref, top, h),
        "interval": _limit(request, curve, ref, top, h),
    }


def _interval_past_the_data(curve: predictor.Curve, ref: int, h: int) -> int:
    """What the interval's upper end past the data would give (floored at the flat bound),
    when the curve is trusted; the user's limit otherwise."""
    if untrusted_because(curve, DEFAULTS):
        return USER_LIMIT
    safety = DEFAULTS.time_limit_safety_factor
    low, high = curve.runtime_interval(np.array([float(ref), float(h)]))
    flat = float(curve.runtime(np.array([float(curve.largest_observed)]))[0])
    ratio = max(float(high[1]), flat) / float(low[0])
    minutes = max(1, math.ceil(USER_LIMIT * ratio * safety - 1e-9))
    predicted = max(1, math.ceil(max(float(high[1]), flat) / 60.0 * safety - 1e-9))
    return min(USER_LIMIT, max(minutes, DEFAULTS.time_limit_floor_min, predicted))


@dataclass(frozen=True)
class Case:
    study: str
    dropped: int
    h: int
    true_min: float
    limits: dict[str, int]
    past: int = USER_LIMIT


def _studies() -> Iterator[tuple[str, NDArray[np.float64], NDArray[np.float64], float]]:
    for path in sorted(DATA.glob("*.csv")):
        runs = np.loadtxt(path, delimiter=",", skiprows=1)
        n, t = runs[:, 0].astype(int), runs[:, 1]
        ref = int(np.unique(n)[0])
        yield path.stem, n, t, REF_MINUTES * 60.0 / float(np.median(t[n == ref]))


def _fitted(n: NDArray[np.float64], t: NDArray[np.float64]) -> predictor.Curve | None:
    fit = predictor.fit(n, t)
    return predictor.Curve.from_fit(fit) if fit.status == "ok" else None


ASSUMED = "synthetic: smallest size rescaled to 40 min, user limit 60 min for it"
COLUMNS = (
    "rule",
    "killed where the user's limit would not have",
    "limits cut below 60 min",
    "mean cut limit (min)",
    "limits above 60 min",
    "mean limit (min)",
)


def _score(cases: list[Case], title: str) -> ResultTable:
    """Print the per-rule figures and return them as the docs' table."""
    print()
    print(f"{title} ({ASSUMED})")
    print(f"  cases {len(cases)}")
    rows = []
    for rule in RULES:
        got = [c.limits[rule] for c in cases]
        killed = sum(1 for c in cases if c.limits[rule] < c.true_min <= USER_LIMIT)
        above = sum(1 for g in got if g > USER_LIMIT)
        cut = [g for g in got if g < USER_LIMIT]
        mean_cut = float(np.mean(cut)) if cut else math.nan
        print(
            f"  {rule:9s} killed where the user's limit would not have {killed:3d}; limits cut "
            f"below 60 in {len(cut):3d} (mean {mean_cut:5.1f} min); "
            f"above 60 in {above:3d}; mean limit {np.mean(got):5.1f} min"
        )
        shown = f"{mean_cut:.1f}" if cut else "-"
        rows.append([rule, killed, len(cut), shown, above, f"{np.mean(got):.1f}"])
    return ResultTable(f"{title}: {len(cases)} cases", COLUMNS, rows)


NOTES = (
    "Data: every real strong-scaling study in tests/data/scaling (scored, nothing chosen "
    "here: the defaults safety 1.2, floor 5 min, max_fit_error 0.10 and the predictor's "
    "interval constants, chosen on synthetic curves).",
    f"Assumed: {ASSUMED}; the true runtime at a size is the median of its runs.",
    "Rules: before, the original rule (no pessimism, no trust check); margin, T·(1±m) with "
    "the fit error m; interval, the fit's 90% prediction interval (the default).",
)


@pytest.mark.benchmark
def test_held_out_sizes_are_not_killed() -> None:
    cases = []
    for name, n, t, scale in _studies():
        sizes = np.unique(n)
        for dropped in (1, 2):
            if sizes.size - dropped < 3:
                continue
            keep = n <= sizes[-dropped - 1]
            curve = _fitted(n[keep], t[keep] * scale)
            if curve is None:
                continue
            for h in sizes[-dropped:]:
                true_min = float(np.median(t[n == h])) * scale / 60.0
                limits = _limits(curve, int(sizes[0]), int(sizes[-1]), int(h))
                past = _interval_past_the_data(curve, int(sizes[0]), int(h))
                cases.append(Case(name, dropped, int(h), true_min, limits, past))
    assert cases
    for c in cases:
        print(
            f"  {c.study:28s} drop {c.dropped} n={c.h:4d} true {c.true_min:7.1f} min  "
            + "  ".join(f"{r} {c.limits[r]:4d}" for r in RULES)
            + f"  interval-past-data {c.past:4d}"
        )
    table = _score(cases, "time limits at held-out largest sizes")
    past_killed = [c for c in cases if c.past < c.true_min <= USER_LIMIT]
    past_note = (
        f"Had the interval's upper end (floored flat) been used past the data: killed "
        f"{len(past_killed)} ({', '.join(f'{c.study} n={c.h}' for c in past_killed) or '-'}), "
        f"cut in {sum(1 for c in cases if c.past < USER_LIMIT)}; so the user's limit stands "
        "past the largest observed size."
    )
    print(f"  {past_note}")
    record(
        "time-limit-holdout",
        title="Time limits on held-out sizes",
        source=__file__,
        full=True,
        tables=[table],
        notes=[*NOTES, "Held out: the largest 1 or 2 sizes of each study.", past_note],
        section="Beyond the data: the largest sizes held out",
    )
    # The rule's promise, not a figure: never above the user's limit, and never a kill the
    # user's own limit would not also have made.
    for rule in ("margin", "interval"):
        assert all(c.limits[rule] <= USER_LIMIT for c in cases)
        assert all(c.true_min > USER_LIMIT for c in cases if c.limits[rule] < c.true_min)


@pytest.mark.benchmark
def test_interior_sizes_left_out_are_not_killed() -> None:
    """Inside the data: each interior size h (neither the smallest nor the largest) is left
    out, the curve fitted on the rest, and the limit derived for h. Scores how often a limit
    cut within the observed range would kill, and how much it saves, per rule."""
    cases = []
    for name, n, t, scale in _studies():
        sizes = np.unique(n)
        if sizes.size < 4:
            continue
        for h in sizes[1:-1]:
            keep = n != h
            curve = _fitted(n[keep], t[keep] * scale)
            if curve is None:
                continue
            true_min = float(np.median(t[n == h])) * scale / 60.0
            limits = _limits(curve, int(sizes[0]), int(sizes[-1]), int(h))
            cases.append(Case(name, 0, int(h), true_min, limits))
    assert cases
    table = _score(cases, "interior sizes left out")
    record(
        "time-limit-holdout",
        title="Time limits on held-out sizes",
        source=__file__,
        full=True,
        tables=[table],
        notes=[*NOTES, "Held out: each interior size in turn (4 or more sizes)."],
        section="Inside the data: each interior size left out",
    )
    for c in cases:
        for rule in ("margin", "interval"):
            if c.limits[rule] < c.true_min <= USER_LIMIT:
                got = c.limits[rule]
                print(f"  KILLED ({rule}) {c.study} n={c.h} true {c.true_min:.1f}, limit {got}")
    for rule in ("margin", "interval"):
        assert all(c.limits[rule] <= USER_LIMIT for c in cases)
    assert not [c for c in cases if c.limits["interval"] < c.true_min <= USER_LIMIT]
