"""ADEPT's reliability judgment (section IX, Table 3), with the size to run next.

Problems, each with an action and, where one exists, `suggest_n`:

* first_piece_only: every observation lies on the first (Amdahl) piece, so A and σ are not
  determined separately (Table 3's "observation points all in linear section", generalised
  to both modes: in high mode the first piece is just as uninformative about the knee).
  Action: run once beyond the observed range.
* high_fit_error: max |actual - predicted|/actual over the observations not found anomalous
  exceeds `max_fit_error` (paper: 10%). Action: report; the application deviates from the
  model.
* runner_up: an instance whose A differs by more than a factor `runner_up_factor` (1.5) fits
  with WSSRE < `runner_up_ratio` (1.1) × the best one's. Action: run once outside the range.

* mixed_sizes: at some size, the runs' max/min runtime ratio exceeds `mixed_ratio` (1.5),
  more than run-to-run noise explains, so the app key probably mixes problem sizes (strong
  scaling assumes one). Statistic, per size with k >= 2 runs (outliers included):
  R = max(t)/min(t), i.e. exp of the range of log t. Under lognormal noise of relative size σ
  the range of log t is about σ·d2(k) (d2(2) = 1.13, d2(10) = 3.08, d2(100) = 5.0), so at
  σ = 5% R stays below 1.3 even for 100 runs, while two problem sizes whose runtimes differ
  by a factor 2 give R >= 2 at any size where both ran. 1.5 lies between, near their
  geometric mean √2·1.06; it was chosen from the real repeats in tests/data/scaling
  (gamer_fdm_wave_only: 7 sizes × 4 runs, R <= 1.002) and that noise model, and is scored on
  synthetic data only (tests/benchmarks/test_mixed_sizes.py). Action: tag `size=` in the job
  comment so each problem size gets its own curve.

Suggested sizes. For a runner-up, where the two curves disagree: the smallest size beyond the
largest observation (up to `horizon` times it) at which their runtimes differ by at least
`resolve_difference` (20%, as in the paper's 225-node example); failing that, the size of
their largest difference when it is at least 5%; below the range if not above it.
For first_piece_only, the processor working set of the Amdahl part the data show,
n = 1/f - 1 (f the serial fraction), at most `horizon` times the largest observation: the
largest size worth running even if Amdahl's law holds (efficiency 50%), and in low variance
mode always past the knee (2A/σ - 1 > A), so the run shows the knee if one matters for
allocation. Perfectly linear data (f = 0) suggest twice the largest observation. When the
observations already reach 1/f - 1 the problem is not reported: every size worth running is
determined, and the knee lies where no allocation goes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from predictor.adept import FAST, SearchSettings, _refine
from predictor.diagnostics import ReliabilityProblem
from predictor.downey import FloatArray, IntArray, relative_runtime_s, s_to_sigma
from predictor.envelope import Domain, Envelope
from predictor.grids import geomspace, linspace
from predictor.objective import wssre, wssre_leading

MIN_RESOLVABLE = 0.05
# Candidate sizes scanned on each side of the observed range.
SCAN = 200


@dataclass(frozen=True)
class ReliabilitySettings:
    max_fit_error: float = 0.10
    runner_up_ratio: float = 1.1
    runner_up_factor: float = 1.5
    resolve_difference: float = 0.2
    horizon: float = 16.0
    mixed_ratio: float = 1.5

    def __post_init__(self) -> None:
        if not self.max_fit_error > 0:
            raise ValueError(f"max_fit_error must be positive, got {self.max_fit_error}")
        if not (self.runner_up_ratio >= 1.0 and self.runner_up_factor > 1.0):
            raise ValueError("runner_up_ratio must be at least 1 and runner_up_factor above 1")
        if not (0 < self.resolve_difference < 1 and self.horizon > 1):
            raise ValueError("resolve_difference must lie in (0, 1) and horizon above 1")
        if not self.mixed_ratio > 1.0:
            raise ValueError(f"mixed_ratio must be above 1, got {self.mixed_ratio}")


@dataclass(frozen=True)
class Instance:
    """A Downey instance in (A, s) coordinates with its scale (model T(1))."""

    A: float
    s: float
    scale: float

    def runtime(self, n: FloatArray) -> FloatArray:
        return self.scale * relative_runtime_s(n, self.A, self.s)


def sizes_below(n_min: float) -> FloatArray:
    """Whole sizes in [1, n_min), all of them when there are few, else at most SCAN spread
    evenly in log n: bounded whatever n_min is (np.arange(1, n_min) asked 7.45 GiB at 1e9)."""
    if n_min - 1.0 <= SCAN:
        return np.arange(1.0, n_min)
    out: FloatArray = np.unique(np.round(np.geomspace(1.0, n_min - 1.0, SCAN)))
    return out


def disagreement_size(
    a: Instance, b: Instance, n_min: float, n_max: float, settings: ReliabilitySettings
) -> tuple[int | None, float]:
    """The size to run at to tell a from b, and their relative difference there."""
    top = int(np.ceil(n_max * settings.horizon))
    above = np.unique(np.round(np.geomspace(n_max + 1, max(top, n_max + 2), SCAN))).astype(float)
    below = sizes_below(n_min)
    for sizes in (above, below[::-1]):
        if sizes.size == 0:
            continue
        ta, tb = a.runtime(sizes), b.runtime(sizes)
        diff = np.abs(ta - tb) / np.minimum(ta, tb)
        clear = np.flatnonzero(diff >= settings.resolve_difference)
        if clear.size:
            return int(sizes[clear[0]]), float(diff[clear[0]])
        k = int(np.argmax(diff))
        if diff[k] >= MIN_RESOLVABLE:
            return int(sizes[k]), float(diff[k])
    return None, 0.0


def amdahl_working_set(best: Instance, n_max: float, settings: ReliabilitySettings) -> int | None:
    """1/f - 1 for the serial fraction f = s/(2A), at most horizon·n_max; None when the
    observations already reach it (every size worth running is then determined)."""
    f = best.s / (2.0 * best.A)
    size = round(min(2.0 * n_max if f <= 0 else 1.0 / f - 1.0, settings.horizon * n_max))
    return None if size <= n_max else size


# The runner-up's seed lattice: A values per side region (log-spaced) and s values (even).
LATTICE_A, LATTICE_S = 48, 40


def runner_up(
    n: FloatArray,
    t: FloatArray,
    w: FloatArray,
    best: Instance,
    best_wssre: float,
    scale: float | None,
    settings: ReliabilitySettings,
    domain: Domain,
    search: SearchSettings = FAST,
) -> tuple[Instance, float] | None:
    """The best instance with A outside [A/f, f·A] (f = runner_up_factor) if it fits nearly as well.

    A lattice over the two side regions seeds the same pattern search the fit uses.
    """
    factor = settings.runner_up_factor
    boxes = [(a, b) for a, b in ((1.0, best.A / factor), (best.A * factor, domain.a_max)) if b > a]
    if not boxes:
        return None
    region = Envelope(
        delta=0.0,
        a_lo=np.array([b[0] for b in boxes]),
        a_hi=np.array([b[1] for b in boxes]),
        s_lo=np.zeros(len(boxes)),
        s_hi=np.full(len(boxes), domain.s_max),
        piece=np.full(len(boxes), -1, dtype=np.int64),
        pair=np.zeros((len(boxes), 2), dtype=np.int64),
        bounded=True,
    )
    A = np.concatenate([geomspace(a, b, LATTICE_A) for a, b in boxes])
    s = linspace(0.0, domain.s_max, LATTICE_S)
    # Observations leading (objective.wssre_leading): the same values as the last-axis layout.
    tau = relative_runtime_s(n[:, None, None], A[:, None], s[None, :])
    err, _ = wssre_leading(tau, t, w[:, None, None], scale, overwrite=True)
    order = np.argsort(err.ravel())[:3]
    seed_A, seed_s = A[order // LATTICE_S][None, :], s[order % LATTICE_S][None, :]
    found_err, found_A, found_s, found_c = _refine(
        n, t, w[None, :], seed_A, seed_s, region, search, domain, scale
    )
    floor = 1e-12  # exact data: both are zero up to rounding
    if found_err[0] <= best_wssre * settings.runner_up_ratio + floor:
        return Instance(float(found_A[0]), float(found_s[0]), float(found_c[0])), float(
            found_err[0]
        )
    return None


def judge(
    n: FloatArray,
    t: FloatArray,
    w: FloatArray,
    best: Instance,
    identified: bool,
    fit_error: float,
    scale: float | None,
    settings: ReliabilitySettings,
    domain: Domain,
) -> tuple[ReliabilityProblem, ...]:
    """Table 3 for one fitted instance and the observations it was fitted to (uniform w)."""
    problems: list[ReliabilityProblem] = []
    n_min, n_max = float(n[0]), float(n[-1])
    size = None if identified else amdahl_working_set(best, n_max, settings)
    if size is not None:
        problems.append(
            ReliabilityProblem(
                "first_piece_only",
                "All observations lie before the knee, so A and σ are not known separately; "
                f"run once at {size} nodes to see whether the speedup flattens there.",
                size,
            )
        )
    if fit_error > settings.max_fit_error:
        problems.append(
            ReliabilityProblem(
                "high_fit_error",
                f"The application deviates from the Downey model by up to {fit_error:.0%} at the "
                "observed sizes; predictions are approximate.",
                None,
                {"fit_error": fit_error},
            )
        )
    if identified:
        best_err = float(wssre(relative_runtime_s(n, best.A, best.s), t, w, scale)[0])
        other = runner_up(n, t, w, best, best_err, scale, settings, domain)
        if other is not None:
            rival, _ = other
            size, diff = disagreement_size(best, rival, n_min, n_max, settings)
            where = f"run once at {size} nodes" if size else "run once outside the observed range"
            problems.append(
                ReliabilityProblem(
                    "runner_up",
                    f"A curve with A = {rival.A:.3g} fits nearly as well as the chosen "
                    f"A = {best.A:.3g}; {where}, where they differ by {diff:.0%}.",
                    size,
                    {"runner_up_A": rival.A, "runner_up_sigma": float(s_to_sigma(rival.s))},
                )
            )
    return tuple(problems)


def mixed_sizes(
    n: IntArray, spread: FloatArray | None, settings: ReliabilitySettings
) -> ReliabilityProblem | None:
    """The mixed_sizes problem (module docstring) when max(t)/min(t) at some size exceeds
    `mixed_ratio`; it names the size with the widest spread. `spread` is
    Observations.spread (one ratio per size, 1.0 for single runs; None: not known)."""
    if spread is None or spread.size == 0:
        return None
    k = int(np.argmax(spread))
    ratio = float(spread[k])
    if not ratio > settings.mixed_ratio:
        return None
    size = int(n[k])
    return ReliabilityProblem(
        "mixed_sizes",
        f"Runs at {size} nodes differ by a factor {ratio:.2g} in runtime, more than run-to-run "
        "noise explains (limit "
        f"{settings.mixed_ratio:g}); the app key probably mixes problem sizes. Tag each job "
        'with its size in the comment, e.g. --comment "adaptalloc:v1 app=NAME size=large".',
        None,
        {"spread_n": float(size), "spread_ratio": ratio},
    )
