"""Everything ADEPT does to the observations before fitting (section VIII), in one pass.

Order matters: specially optimized sizes first (they decide which points are valid at all),
then individual anomalous points (whose calming leaves the steps that split the data into
phases), then the declining tail among the points that are not anomalous: a fast anomalous
point would otherwise pose as the speedup peak, while a real tail makes R fall and so raises
no anomaly candidates. An exclusion is
only applied while at least MIN_KEPT sizes remain to fit; otherwise it is reported but the
points stay. With two sizes left the excluded point would be the only evidence about the
rest of the curve, and a compromise fit through all three predicts better (the BFS curve
fitted on 1, 16 and 256 nodes: 7.7% median error kept, 20.6% excluded).

Gate on few or irregular points. The fluctuation metric R compares the
speedups of neighbouring pairs, so it reads noise and spacing as rises: on 4-point exact Downey
data with 5% noise 21% of fits flagged an anomalous point, and noise-free data with a jump in
the spacing ([2, 4, 32, 64, 128]; [1, 2, 4, 32, 64]) got false anomalies and false steps.
Individual anomalies and steps are therefore looked for only with at least MIN_POINT_SIZES sizes
whose spacing is regular: consecutive gaps in log n differ by at most a factor
MAX_GAP_RATIO (1, 2, ..., 8 and 16, 25, 36, ... are regular; 4 → 32 between gaps of 2 is not;
n = 1 is not counted). On the real curves (leave-one-out, tests/benchmarks/
test_predictor_accuracy.py) the gate changes the median error over curves from 4.5% to 4.3%
(cs267 4.9 → 6.6%, spm 4.1 → 3.6%, the others unchanged). The sensitivity ε stays the paper's
0.1: ε = 0.2 would cut false flags at 5% noise and 6 sizes from 38% to 11% but misses the
paper's Figure 7 anomalies, and the real curves do not tell 0.1, 0.15 and 0.2 apart.
The declining tail does not use R and is not gated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from predictor.anomalies import (
    AnomalySettings,
    anomalous_points,
    decline_threshold,
    declining_tail,
)
from predictor.diagnostics import Anomaly, Pattern
from predictor.downey import BoolArray, FloatArray, IntArray
from predictor.observations import Observations
from predictor.patterns import optimized_sizes, phases_from_steps
from predictor.reliability import ReliabilitySettings

MIN_KEPT = 3
MIN_POINT_SIZES = 5
MAX_GAP_RATIO = 2.0


def regular_spacing(n: FloatArray) -> bool:
    """Whether consecutive gaps in log n differ by at most a factor MAX_GAP_RATIO.

    n = 1 (T(1)) is left out of the check: it is commonly far below the other sizes, and the
    paper's Figure 7 finds anomalies with it (1, 16, 25, ..., 121).
    """
    nv = np.asarray(n, dtype=float)
    gaps = np.diff(np.log(nv[nv > 1]))
    if gaps.size < 2:
        return True
    ratio = gaps[1:] / gaps[:-1]
    return bool(np.all((ratio <= MAX_GAP_RATIO) & (ratio >= 1.0 / MAX_GAP_RATIO)))


@dataclass(frozen=True)
class DiagnosisSettings:
    """Anomaly handling and reliability judgment; `handle=False` fits observations as they are."""

    anomalies: AnomalySettings = field(default_factory=AnomalySettings)
    reliability: ReliabilitySettings = field(default_factory=ReliabilitySettings)
    handle: bool = True


@dataclass(frozen=True)
class Analysis:
    """Per observation (sizes ascending): kept for fitting, weight factor W'/W, phase."""

    keep: BoolArray
    weight: FloatArray
    phase: IntArray
    anomalies: tuple[Anomaly, ...] = ()
    patterns: tuple[Pattern, ...] = ()

    @property
    def phases(self) -> list[IntArray]:
        """Indices of the kept observations of each phase, in size order."""
        kept = np.flatnonzero(self.keep)
        return [kept[self.phase[kept] == p] for p in np.unique(self.phase[kept])]

    def phase_of_closest(self, n: FloatArray, targets: FloatArray) -> IntArray:
        """For each target, the phase of the kept observation closest to it."""
        kept = np.flatnonzero(self.keep)
        dist = np.abs(targets[:, None] - n[kept][None, :])
        out: IntArray = self.phase[kept][np.argmin(dist, axis=1)]
        return out


def untouched(size: int) -> Analysis:
    return Analysis(
        keep=np.ones(size, dtype=bool),
        weight=np.ones(size),
        phase=np.zeros(size, dtype=np.int64),
    )


def analyze(obs: Observations, settings: AnomalySettings) -> Analysis:
    """Optimized sizes, decline, anomalous points and phases of prepared observations."""
    n, t = obs.n, obs.runtime
    keep = np.ones(n.size, dtype=bool)
    weight = np.ones(n.size)
    anomalies: list[Anomaly] = []
    patterns: list[Pattern] = []

    special = optimized_sizes(n, t)
    if special is not None and special.keep.sum() >= 2:
        keep &= special.keep
        patterns.append(Pattern(kind="optimized_sizes", feasible=special.rule))

    kept = np.flatnonzero(keep)
    if kept.size >= MIN_POINT_SIZES and regular_spacing(n[kept].astype(float)):
        points, steps = anomalous_points(n[kept].astype(float), t[kept], settings)
    else:
        points, steps = [], []
    step_sizes = [int(n[kept[s]]) for s in steps]
    for p in points:
        i = kept[p.index]
        weight[i] = p.weight
        anomalies.append(Anomaly(int(n[i]), float(t[i]), "point", p.deviation, p.weight))

    # The tail is judged among the points that are not anomalous: a fast anomaly would
    # otherwise pose as the peak. A real tail makes R fall, so it raises no candidates above.
    normal = kept[weight[kept] >= 1.0]
    tail = declining_tail(t[normal], decline_threshold(settings))
    if tail.indices.size:
        kind = "ambiguous_final" if tail.ambiguous else "decline"
        idx = normal[tail.indices]
        anomalies += [Anomaly(int(n[i]), float(t[i]), kind) for i in idx]
        if (keep & (weight > 0)).sum() - idx.size >= MIN_KEPT:
            keep[idx] = False

    dropped = np.flatnonzero(weight == 0.0)
    if (keep & (weight > 0)).sum() >= MIN_KEPT:
        keep[dropped] = False

    kept = np.flatnonzero(keep)
    phase = np.zeros(n.size, dtype=np.int64)
    phase[kept] = phases_from_steps(n[kept], step_sizes)
    # Observations not kept take the phase of the kept neighbour before them (for display).
    phase[~keep] = phase[kept][np.clip(np.searchsorted(kept, np.flatnonzero(~keep)) - 1, 0, None)]
    if phase[kept].max() > 0:
        patterns.append(
            Pattern(
                kind="stepwise",
                phases=tuple(
                    tuple(int(k) for k in n[kept][phase[kept] == p]) for p in np.unique(phase[kept])
                ),
            )
        )
    anomalies.sort(key=lambda a: a.n)
    return Analysis(keep, weight, phase, tuple(anomalies), tuple(patterns))
