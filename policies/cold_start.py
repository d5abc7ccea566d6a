"""Cold start: what an app without a usable curve needs before its curve can size jobs.

An app with no curve, or with a curve the policy gate refuses (decide.py,
`unusable_because`), is left as submitted (the fallback, Slurm's greedy choice). `advise`
says why, and how many more runs at which node counts would make the curve usable, or that
no number of runs will. It reads only what the store already holds: the runs' sizes and
runtimes, the stored curve (never refitted) or the store's "no curve" note, the policy
settings and the largest size the app's jobs asked for. The conditions, in the order they
are judged, each taken from the code that imposes it:

1. No curve, runs at fewer than MIN_SIZES distinct sizes: the predictor fits nothing on
   fewer (predictor/observations.py, `validate`). Runs at the missing sizes are asked.
2. No curve otherwise: with the note "not fitted yet" or an unreadable curve the learner's
   next refit decides (no runs asked); a fit that failed asks runs at one more size.
3. A problem the gate distrusts that runs cannot mend (`NOT_BY_RUNS`): user_influence (one
   user's runs moved a shared curve: a sharing rule decides, plugin/learning/sharing.py),
   shape_misfit (the shape misses the size means by more than the noise: the key may mix
   codes), and, for a curve of plain runs, mixed_sizes (tag ``size=`` in the job comment).
4. A curve of heterogeneous runs (predictor/covariate.py) not yet judged by its noise
   (predictor/heterogeneous.py, `judged_by_noise`): its raw fit error, which holds the
   inputs' variation, is judged. The noise needs N − m ≥ MIN_NOISE_DF (repeats at observed
   sizes) and the shape MIN_IDENTIFYING runs on another size than their limit was written
   for; a repeat that runs on another size than its limit's counts for both, so
   max(MIN_NOISE_DF − (N − m), MIN_IDENTIFYING − identifying) runs are asked.
5. runner_up (another curve fits as well): one run at the reliability judgment's
   suggested size, within the asked range.
6. A fitting error above max_fit_error: the observed sizes whose mean runtime deviates from
   the stored curve by more than max_fit_error are the suspects; a size with OUTLIER_MIN_RUNS
   runs has an obvious outlier dropped and the rest averaged (observations.py,
   `outlier_mask`), so each suspect is brought to that many runs. Where they all have as
   many already, the code deviates from the model and runs cannot help.

Besides the gate, a heterogeneous curve's limit-use bound (covariate.py, `limit_use`), by
which the size check reads users' limits, needs ⌈USE_LEVEL·(N+1)⌉ ≤ N runs (`use_runs`);
fewer leave the check on the prediction interval, and the advice says so in `also`.

New sizes are spread geometrically beyond the observed ones: doubling from the largest
observed size up to the largest size asked, then halving from the smallest one, whole
sizes only (`new_sizes`). Scaling information lies in log n (observations.py, `thin`), and
runs beyond the observed range find the knee that runs within it leave open (ADEPT Table 3).

Pure: no I/O, no logging, no global state.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.config import PolicySettings
from policies.decide import DISTRUSTING, MAX_NODES, unusable_because
from predictor import Curve
from predictor.covariate import MIN_IDENTIFYING, MIN_NOISE_DF, USE_LEVEL, Covariate, limit_use
from predictor.heterogeneous import judged_by_noise
from predictor.observations import MIN_SIZES, OUTLIER_MIN_RUNS

__all__ = [
    "NOT_BY_RUNS",
    "Advice",
    "advise",
    "new_sizes",
    "use_runs",
]

#: The factor between suggested new sizes (log-even spacing, as `thin` keeps sizes).
STEP = 2
#: Distrusted problems that more runs cannot mend, and what can. mixed_sizes is mended by
#: runs for heterogeneous curves (the noise test replaces it) and only there.
NOT_BY_RUNS = {
    "user_influence": (
        "one user's runs moved this shared curve: more runs of others only dilute it; an "
        "admin's sharing rule (max_user_influence) or per-user keys decide"
    ),
    "shape_misfit": (
        "the Downey shape misses the runs' size means by more than their noise explains: "
        "the app key may mix codes; give each code its own key"
    ),
    "mixed_sizes": (
        "runs at one size differ more than run-to-run noise explains: the key mixes "
        "problem sizes; tag size= in the job comment so each gets its own curve"
    ),
}


@dataclass(frozen=True)
class Advice:
    """What an app needs for a usable curve.

    condition: the condition that fails ("usable", "min_sizes", "refit_due", "fit_failed",
    "not_by_runs", "heterogeneous", "runner_up", "fit_error", "unknown"). runs: how many
    more runs (0 when none are needed or none would help). sizes: where to run them;
    choose: at how many distinct ones of `sizes` (0: the runs go to `sizes` as listed,
    repeats included). helps: whether more runs can make the curve usable. reason: why,
    citing the condition. also: a further need that does not block the gate.
    observed_runs, observed_sizes: what the app has.
    """

    condition: str
    runs: int
    sizes: tuple[int, ...]
    choose: int
    helps: bool
    reason: str
    observed_runs: int
    observed_sizes: tuple[int, ...]
    also: str = ""

    @property
    def usable(self) -> bool:
        return self.condition == "usable"

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "runs": self.runs,
            "sizes": list(self.sizes),
            "choose": self.choose,
            "helps": self.helps,
            "reason": self.reason,
            "also": self.also,
            "observed_runs": self.observed_runs,
            "observed_sizes": list(self.observed_sizes),
            "text": self.text(),
        }

    def text(self) -> str:
        """One line: what the app has, what it needs, why."""
        k = len(self.observed_sizes)
        have = (
            f"{self.observed_runs} run{_s(self.observed_runs)} at {k} size{_s(k)} "
            f"({', '.join(str(n) for n in self.observed_sizes)})"
            if k
            else "no runs"
        )
        if self.usable:
            need = "the curve is usable"
        elif not self.helps:
            need = "more runs cannot help"
        elif self.runs == 0:
            need = "no more runs needed"
        elif self.choose:
            need = (
                f"a curve needs runs at {self.choose} more size{_s(self.choose)}: "
                f"{_either(self.sizes)} nodes"
            )
        else:
            spots = Counter(self.sizes)
            where = ", ".join(f"{c} at {n}" for n, c in sorted(spots.items()))
            need = f"a usable curve needs {self.runs} more run{_s(self.runs)}: {where} nodes"
        tail = f" ({self.reason})" if self.reason else ""
        also = f"; {self.also}" if self.also else ""
        return f"{have}; {need}{tail}{also}"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _either(sizes: Sequence[int]) -> str:
    names = [str(n) for n in sizes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def new_sizes(observed: Sequence[int], largest: int | None, count: int) -> tuple[int, ...]:
    """Up to `count` node counts not in `observed`: STEP·max, STEP²·max, ... up to `largest`
    (the largest itself when no power fits and it lies above), then max/STEP, ... down to 1
    below the smallest observed. No runs: 1, STEP, STEP², ... up to `largest`."""
    top = MAX_NODES if largest is None else max(1, min(int(largest), MAX_NODES))
    seen = set(observed)
    if not seen:
        ups = [STEP**j for j in range(int(math.log(top, STEP)) + 1)]
        return tuple(n for n in ups if n <= top)[:count]
    hi, lo = max(seen), min(seen)
    above = [hi * STEP**j for j in range(1, int(math.log(max(top / hi, 1.0), STEP)) + 1)]
    if top > hi and top not in above and len(above) < count:
        above.append(top)
    below = [lo // STEP**j for j in range(1, int(math.log(lo, STEP)) + 1)]
    out = [n for n in [*above, *below] if n not in seen and 1 <= n <= top]
    return tuple(dict.fromkeys(out))[:count]


def use_runs(level: float = USE_LEVEL) -> int:
    """The fewest runs N for which the limit-use bound exists, ⌈level·(N+1)⌉ ≤ N: asked of
    covariate.py's `limit_use` itself, from N = ⌈level/(1 − level)⌉ − 1 up."""
    n = max(1, math.ceil(level / (1.0 - level)) - 1)
    while limit_use(np.ones(n), np.ones(n), np.ones(n), level) is None:
        n += 1
    return n


def advise(  # noqa: PLR0911 - one return per condition, in the module doc's order
    sizes: Sequence[int],
    runtimes: Sequence[float],
    curve: Curve | None,
    note: str,
    settings: PolicySettings,
    largest: int | None,
) -> Advice:
    """What the app of runs (`sizes[i]` nodes, `runtimes[i]` seconds) needs for a usable
    curve (module doc). curve: the stored one, or None with the store's `note`; largest: the
    largest size its jobs asked for, or the cluster's size (None: unknown)."""
    counts = Counter(int(n) for n in sizes)
    observed = tuple(sorted(counts))
    seen = _Observed(len(sizes), observed)
    advice = seen.advice
    if curve is None:
        return _no_curve(seen, note, largest)
    why = unusable_because(curve, settings)
    if not why:
        return advice("usable", 0, (), 0, True, "")
    also = _use_note(curve, seen.runs)
    problems = {p.problem: p for p in curve.diagnostics.reliability}
    heterogeneous = curve.covariate is not None and not judged_by_noise(curve)
    for name, what in NOT_BY_RUNS.items():
        if (
            name in problems
            and name in DISTRUSTING
            and not (heterogeneous and name == "mixed_sizes")
        ):
            return advice("not_by_runs", 0, (), 0, False, f"{name}: {what}", also)
    if not all(math.isfinite(x) for x in (curve.A, curve.sigma, curve.t1)):
        return advice("fit_failed", 1, new_sizes(observed, largest, 2), 1, True, why, also)
    if curve.covariate is not None and heterogeneous:
        return _heterogeneous(curve.covariate, counts, seen, also)
    if "runner_up" in problems:
        k = problems["runner_up"].suggest_n
        top = MAX_NODES if largest is None else largest
        where = (min(k, top),) if k is not None else new_sizes(observed, largest, 1)
        return advice(
            "runner_up",
            1,
            where,
            0,
            True,
            "another curve fits the runs as well (runner_up); a run where the two "
            "disagree tells them apart",
            also,
        )
    if "high_fit_error" in problems or not curve.fit_error <= settings.max_fit_error:
        return _fit_error(sizes, runtimes, curve, counts, settings, seen, also)
    return advice("unknown", 0, (), 0, False, why, also)


@dataclass(frozen=True)
class _Observed:
    """What the app has: its run count and distinct sizes, which every advice repeats."""

    runs: int
    sizes: tuple[int, ...]

    def advice(
        self,
        condition: str,
        runs: int,
        where: Sequence[int],
        choose: int,
        helps: bool,
        reason: str,
        also: str = "",
    ) -> Advice:
        """The advice for these runs (Advice's fields, `where` as the sizes)."""
        return Advice(
            condition, runs, tuple(where), choose, helps, reason, self.runs, self.sizes, also
        )


def _no_curve(seen: _Observed, note: str, largest: int | None) -> Advice:
    observed, advice = seen.sizes, seen.advice
    said = f"; the store says: {note}" if note else ""
    if len(observed) < MIN_SIZES:
        k = MIN_SIZES - len(observed)
        return advice(
            "min_sizes",
            k,
            new_sizes(observed, largest, k + 1),
            k,
            True,
            f"the predictor fits a speedup curve only on runs at {MIN_SIZES} or more "
            f"distinct sizes{said}",
        )
    if note in ("", "not fitted yet") or "unreadable" in note:
        return advice(
            "refit_due", 0, (), 0, True, f"the learner's next refit fits the stored runs{said}"
        )
    return advice(
        "fit_failed",
        1,
        new_sizes(observed, largest, 2),
        1,
        True,
        f"the stored runs gave no curve{said}",
    )


def _heterogeneous(cov: Covariate, counts: Counter[int], seen: _Observed, also: str) -> Advice:
    advice = seen.advice
    repeats = max(0, MIN_NOISE_DF - cov.noise_df)
    identifying = max(0, MIN_IDENTIFYING - cov.identifying)
    runs = max(repeats, identifying)
    # Repeats go to the observed sizes with the fewest runs, largest first (nearest the knee).
    order = sorted(counts, key=lambda n: (counts[n], -n))
    where = [order[i % len(order)] for i in range(runs)]
    return advice(
        "heterogeneous",
        runs,
        where,
        0,
        True,
        f"the runs' inputs vary, and the gate judges such a curve by its noise only with "
        f"{MIN_NOISE_DF} repeats beyond one run per size (has {cov.noise_df}) and "
        f"{MIN_IDENTIFYING} runs on another size than their limit was written for (has "
        f"{cov.identifying}): submit these as ranges (--nodes MIN-MAX) so they run on "
        "another size than their limit was written for",
        also,
    )


def _fit_error(
    sizes: Sequence[int],
    runtimes: Sequence[float],
    curve: Curve,
    counts: Counter[int],
    settings: PolicySettings,
    seen: _Observed,
    also: str,
) -> Advice:
    advice = seen.advice
    n = np.asarray(sizes, dtype=np.int64)
    t = np.asarray(runtimes, dtype=float)
    at, group = np.unique(n, return_inverse=True)
    mean = np.bincount(group, weights=t) / np.bincount(group)
    deviation = np.abs(mean - curve.runtime(at.astype(float))) / mean
    suspect = deviation > settings.max_fit_error
    if not suspect.any():
        suspect = deviation == deviation.max()
    where = [int(k) for k in at[suspect] for _ in range(OUTLIER_MIN_RUNS - counts[int(k)])]
    worst = int(at[np.argmax(deviation)])
    said = (
        f"the runs deviate from the curve by up to {100.0 * float(deviation.max()):.0f}% "
        f"(at {worst} nodes), above max_fit_error {100.0 * settings.max_fit_error:.0f}%"
    )
    if not where:
        return advice(
            "fit_error",
            0,
            (),
            0,
            False,
            f"{said}, though each such size has {OUTLIER_MIN_RUNS} runs or more: the code "
            "deviates from the Downey model, or the key mixes codes",
            also,
        )
    return advice(
        "fit_error",
        len(where),
        where,
        0,
        True,
        f"{said}; with {OUTLIER_MIN_RUNS} runs at a size an obvious outlier is dropped and "
        "the rest averaged (if the repeats differ as much, the key mixes problem sizes)",
        also,
    )


def _use_note(curve: Curve, runs: int) -> str:
    cov = curve.covariate
    need = use_runs()
    if cov is None or cov.use is not None or runs >= need:
        return ""
    return (
        f"the limit-use bound needs ⌈{USE_LEVEL:g}·(N+1)⌉ ≤ N, {need} runs ({need - runs} "
        "more); until then the size check reads the prediction interval"
    )
