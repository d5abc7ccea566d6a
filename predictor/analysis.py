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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from predictor.anomalies import AnomalySettings, anomalous_points, declining_tail
from predictor.diagnostics import Anomaly, Pattern
from predictor.downey import BoolArray, FloatArray, IntArray
from predictor.observations import Observations
from predictor.patterns import optimized_sizes, phases_from_steps
from predictor.reliability import ReliabilitySettings

MIN_KEPT = 3


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
    points, steps = anomalous_points(n[kept].astype(float), t[kept], settings)
    step_sizes = [int(n[kept[s]]) for s in steps]
    for p in points:
        i = kept[p.index]
        weight[i] = p.weight
        anomalies.append(Anomaly(int(n[i]), float(t[i]), "point", p.deviation, p.weight))

    # The tail is judged among the points that are not anomalous: a fast anomaly would
    # otherwise pose as the peak. A real tail makes R fall, so it raises no candidates above.
    normal = kept[weight[kept] >= 1.0]
    tail = declining_tail(t[normal], settings.decline_tol)
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
