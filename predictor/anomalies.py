"""ADEPT's anomaly detection (section VIII): the fluctuation metric, anomalous points, decline.

Fluctuation metric (section VIII.A), over consecutive observations sorted by size:

    R_i = ((t_i n_i / n_{i+1}) / t_{i+1}) · (1 + (n_{i+1} - n_i)/n_{i+1})

the ratio of the runtime ideal relative speedup would give to the measured one, adjusted for
the spacing of the sizes. It needs no T(1). Along a normal curve R does not rise; a rise
R_{i+1} > (1 + ε) R_i flags observations i+1 and i+2 (the pair R_{i+1} is made of) as anomaly
candidates. ε is the sensitivity (paper: 0.1).

Individual anomalous points (section VIII.B, at least four observations): removing an
anomalous point calms the R curve far more than removing a normal one. Each candidate is
removed in turn and the fluctuation F (the summed excess of every rise over ε) recomputed; the
candidate whose removal leaves the least fluctuation is the anomalous point when it at least
halves F. Its deviation magnitude is D = (R_{j+1} - R_j)/ε at the rise that flagged it, and
its weight in curve fitting becomes W' = max(0, W·(θ - min(φ, D))/φ) (paper: φ = 10, θ = 5).
A rise that no removal calms is not a point but a step (patterns.py).

Beyond noise. A rise of R is a ratio of runtimes, t_{i+1}²/(t_i t_{i+2}) times
spacing terms, so independent relative noise η on each runtime moves log(R_{i+1}/R_i) by
η·√6: at η = 5% that is 12%, and ε = 0.1 is crossed by noise alone in ~20% of triples (measured
on seed 17, 5-6 evenly spaced sizes at 5% noise: 17-31% of fits flagged an anomalous point).
So a point is only confirmed when it deviates beyond what noise η0 explains: its log runtime
minus the straight line in (log n, log t) through its two neighbours (the two nearest at an
end), d = log t_k - (w_i log t_i + w_j log t_j), must exceed z·η0·√(1 + w_i² + w_j²), the
noise's standard deviation of d, with z the two-sided normal quantile at level `alpha`; and a
step needs log(R_{i+1}/R_i) > z·η0·√6. The Figure 7 anomalies (20-33%) pass at η0 = 5%; η0 and
α are the search's knee_noise and parsimony_alpha (adept.py; η0 chosen on seeds 17-18), no new
constant. `noise = 0` turns the test off (the paper's behaviour). The declining tail likewise
needs its points above the peak by more than the noise of a difference of two runtimes,
exp(z·η0·√2) - 1 (14% at η0 = 5%), when that exceeds decline_tol: at 5% noise a flat top's last
point rose 5% above the minimum in 6-9% of fits and was excluded as an ambiguous decline.

Declining phase (section VIII.A and thesis 6.6): observations after the speedup peak (the
smallest runtime) whose runtimes all exceed it by more than `decline_tol` are past the peak;
the Downey model has no declining piece and they damage the fit, so they are excluded. A
single such final point may be the decline or an anomaly, which no black-box method can tell
apart: it is reported as ambiguous and excluded too, as the paper chooses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from predictor.downey import BoolArray, FloatArray, IntArray


@dataclass(frozen=True)
class AnomalySettings:
    """ADEPT's anomaly parameters (paper defaults) and this module's own tolerances.

    epsilon: R sensitivity ε. phi, theta: φ and θ of the weight reduction (1 ≤ θ ≤ φ).
    decline_tol: how far above the smallest runtime a later point must lie to be past the peak.
    noise, alpha: η0 and the level of the "beyond noise" test above (SearchSettings'
        knee_noise and parsimony_alpha); noise = 0 disables it.
    """

    epsilon: float = 0.1
    phi: float = 10.0
    theta: float = 5.0
    decline_tol: float = 0.05
    noise: float = 0.05
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if not self.epsilon > 0:
            raise ValueError(f"epsilon must be positive, got {self.epsilon}")
        if not 1.0 <= self.theta <= self.phi:
            raise ValueError(f"theta must lie in [1, phi], got theta={self.theta}, phi={self.phi}")
        if not self.decline_tol >= 0:
            raise ValueError(f"decline_tol must be non-negative, got {self.decline_tol}")


def fluctuation_metric(n: FloatArray, t: FloatArray) -> FloatArray:
    """R_i for consecutive observations (sizes ascending): shape (M-1,)."""
    ideal = t[:-1] * n[:-1] / n[1:]
    out: FloatArray = ideal / t[1:] * (1.0 + (n[1:] - n[:-1]) / n[1:])
    return out


def rises(R: FloatArray, epsilon: float) -> IntArray:
    """Indices i with R_{i+1} > (1 + ε) R_i."""
    out: IntArray = np.flatnonzero(R[1:] > (1.0 + epsilon) * R[:-1])
    return out


def fluctuation(n: FloatArray, t: FloatArray, epsilon: float) -> float:
    """F: the summed relative excess of every rise of R over ε (0 for a calm curve)."""
    if n.size < 3:
        return 0.0
    R = fluctuation_metric(n, t)
    excess = R[1:] / R[:-1] - 1.0 - epsilon
    return float(np.maximum(excess, 0.0).sum())


def candidates(n: FloatArray, t: FloatArray, epsilon: float) -> IntArray:
    """Anomaly candidates: observations i+1 and i+2 for every rise at i, ascending, unique."""
    if n.size < 3:
        return np.zeros(0, dtype=np.int64)
    i = rises(fluctuation_metric(n, t), epsilon)
    out: IntArray = np.unique(np.concatenate([i + 1, i + 2]))
    return out


@dataclass(frozen=True)
class PointAnomaly:
    """An anomalous observation: its index, deviation magnitude D and weight factor W'/W."""

    index: int
    deviation: float
    weight: float


def removal_fluctuations(n: FloatArray, t: FloatArray, idx: IntArray, epsilon: float) -> FloatArray:
    """F of the observations with each of `idx` removed in turn (one value per index)."""
    keep = np.ones((idx.size, n.size), dtype=bool)
    keep[np.arange(idx.size), idx] = False
    reduced_n = np.broadcast_to(n, keep.shape)[keep].reshape(idx.size, n.size - 1)
    reduced_t = np.broadcast_to(t, keep.shape)[keep].reshape(idx.size, n.size - 1)
    R = reduced_n[:, :-1] * reduced_t[:, :-1] / (reduced_n[:, 1:] * reduced_t[:, 1:])
    R = R * (2.0 - reduced_n[:, :-1] / reduced_n[:, 1:])
    excess = R[:, 1:] / R[:, :-1] - 1.0 - epsilon
    out: FloatArray = np.maximum(excess, 0.0).sum(axis=1)
    return out


def noise_quantile(settings: AnomalySettings) -> float:
    """z·η0 of the "beyond noise" test: the two-sided normal quantile at alpha times η0."""
    return float(ndtri(1.0 - settings.alpha / 2.0)) * settings.noise


def interpolation_deviation(n: FloatArray, t: FloatArray, k: int) -> tuple[float, float]:
    """(d, g): log t_k minus the line through its neighbours in (log n, log t), and the factor
    g = √(1 + w_i² + w_j²) that turns per-point noise η into d's standard deviation η·g."""
    x, y = np.log(n), np.log(t)
    i, j = (1, 2) if k == 0 else (k - 2, k - 1) if k == n.size - 1 else (k - 1, k + 1)
    w_j = float((x[k] - x[i]) / (x[j] - x[i]))
    w_i = 1.0 - w_j
    return float(y[k] - (w_i * y[i] + w_j * y[j])), float(np.sqrt(1.0 + w_i**2 + w_j**2))


def decline_threshold(settings: AnomalySettings) -> float:
    """The tolerance the declining tail uses: decline_tol, raised to the noise of a difference
    of two runtimes, exp(z·η0·√2) - 1, when the "beyond noise" test is on."""
    if settings.noise <= 0:
        return settings.decline_tol
    return max(settings.decline_tol, float(np.expm1(noise_quantile(settings) * np.sqrt(2.0))))


def weight_factor(deviation: float, settings: AnomalySettings) -> float:
    """W'/W = max(0, (θ - min(φ, D))/φ) (section VIII.B)."""
    return max(0.0, (settings.theta - min(settings.phi, deviation)) / settings.phi)


def anomalous_points(
    n: FloatArray, t: FloatArray, settings: AnomalySettings
) -> tuple[list[PointAnomaly], list[int]]:
    """Identify anomalous points one at a time; return them and the rises no removal calms.

    After each identified point its removal is kept and the search repeats, so two separate
    anomalies are both found. The second list holds, for every remaining rise (at i, among the
    observations left), the index of observation i+2: where a step would start a new phase.
    """
    alive = np.arange(n.size)
    found: list[PointAnomaly] = []
    while alive.size >= 4:
        nn, tt = n[alive], t[alive]
        base = fluctuation(nn, tt, settings.epsilon)
        cand = candidates(nn, tt, settings.epsilon)
        if base == 0.0 or cand.size == 0:
            break
        after = removal_fluctuations(nn, tt, cand, settings.epsilon)
        best = int(np.argmin(after))
        if after[best] > 0.5 * base:
            break
        k = int(cand[best])
        if settings.noise > 0:
            d, g = interpolation_deviation(nn, tt, k)
            if abs(d) <= noise_quantile(settings) * g:
                break  # within what noise explains: not a point anomaly
        R = fluctuation_metric(nn, tt)
        # The rise that flagged k: at k-2 (k is the second point of the pair) or k-1.
        flagging = [
            i
            for i in (k - 2, k - 1)
            if 0 <= i < R.size - 1 and R[i + 1] > (1 + settings.epsilon) * R[i]
        ]
        j = flagging[-1] if flagging else max(min(k - 1, R.size - 2), 0)
        deviation = float((R[j + 1] - R[j]) / settings.epsilon)
        found.append(PointAnomaly(int(alive[k]), deviation, weight_factor(deviation, settings)))
        alive = np.delete(alive, k)
    if alive.size < 3:
        return found, []
    R = fluctuation_metric(n[alive], t[alive])
    remaining = rises(R, settings.epsilon)
    if settings.noise > 0:
        beyond = np.log(R[remaining + 1] / R[remaining]) > noise_quantile(settings) * np.sqrt(6.0)
        remaining = remaining[beyond]
    return found, [int(alive[i + 2]) for i in remaining]


@dataclass(frozen=True)
class Decline:
    """Observations past the speedup peak (indices), and whether it is a lone final point."""

    indices: IntArray
    ambiguous: bool


def declining_tail(t: FloatArray, decline_tol: float) -> Decline:
    """The points after the smallest runtime that all exceed it by more than decline_tol.

    Only the maximal such suffix counts: a point just above the minimum (noise on a flat
    top) keeps everything before it in the fit.
    """
    peak = int(np.argmin(t))
    above = t > t[peak] * (1.0 + decline_tol)
    tail_start = t.size
    while tail_start - 1 > peak and above[tail_start - 1]:
        tail_start -= 1
    idx = np.arange(tail_start, t.size)
    return Decline(indices=idx, ambiguous=bool(idx.size == 1 and idx[0] == t.size - 1))


def excluded_mask(size: int, idx: IntArray) -> BoolArray:
    mask = np.zeros(size, dtype=bool)
    mask[idx] = True
    return mask
