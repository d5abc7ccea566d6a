"""Models for jobs that report more than (nodes, runtime): a problem size, or task figures.

N-T and P-T models (Kishimoto and Ichikawa, "An execution-time estimation model for
heterogeneous clusters", eqs. 1-2): for a fixed processor configuration the runtime is a cubic
in the problem size N,

    T(N) = k0 N³ + k1 N² + k2 N + k3            (N-T; needs four or more sizes N),

and over P processors the N-T curve of the base configuration is scaled,

    T(N, P) = k4 P T(N) + k5 T(N)/P + k6          (P-T; needs three or more P).

Both are linear least squares; here in relative errors, with N scaled to its largest value so
the cubic stays well conditioned. The paper warns that too narrow a range of N breaks the
cubic (negative runtimes outside it); fits keep their coefficients as they come, and
`goes_negative` tells where a fitted cubic is unusable.

Gustafson's scaled speedup (the large-scale thesis, 4.6.2) for weak-scaling jobs, whose
problem grows with n: S(n) = n - α(n - 1), α the serial fraction of the parallel runtime.
Given the runtime T(n) of the scaled problem on n nodes and the serial runtime of the same
scaled problem, S = T_serial/T, and α is the least-squares slope of n - S against n - 1.

Master-worker (Costa et al., dynamic tuning on grids): with task compute time Tc, input and
output volume per task vi and vo and transfer time λ per unit, the master keeps
N_opt = Tc / (max(vi, vo)·λ) workers busy; more only wait. Start-up and finalization take
tl + v·λ·(N_w + 1)/2 with latency tl. Where the task figures are unknown, the same model says
where the runs' speedup bends: S(n) = E0·n while every worker is busy, S = S_max once the
master is saturated, so the knee n* = S_max / E0 is where N_opt workers are reached
(`saturation_knee`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import FloatArray


def _relative_lstsq(columns: FloatArray, t: FloatArray) -> FloatArray:
    """min Σ (1 - columns·θ / t)² (unconstrained)."""
    theta, *_ = np.linalg.lstsq(columns / t[:, None], np.ones_like(t), rcond=None)
    out: FloatArray = theta
    return out


@dataclass(frozen=True)
class NTModel:
    """T(N) = k0 N³ + k1 N² + k2 N + k3 for one processor configuration."""

    k: tuple[float, float, float, float]

    def runtime(self, N: ArrayLike) -> FloatArray:
        Nv = np.asarray(N, dtype=float)
        k0, k1, k2, k3 = self.k
        out: FloatArray = ((k0 * Nv + k1) * Nv + k2) * Nv + k3
        return out

    def goes_negative(self, N_max: float) -> bool:
        """Whether the cubic predicts a runtime ≤ 0 somewhere on [1, N_max]: broken there."""
        return bool(np.any(self.runtime(np.geomspace(1.0, N_max, 400)) <= 0))


def fit_nt(N: ArrayLike, runtime: ArrayLike) -> NTModel:
    """Fit the N-T cubic; raises ValueError with fewer than four distinct sizes."""
    Nv, tv = np.asarray(N, dtype=float), np.asarray(runtime, dtype=float)
    if np.unique(Nv).size < 4:
        raise ValueError("the N-T model needs runtimes at four or more problem sizes N")
    if np.any(tv <= 0) or np.any(Nv <= 0):
        raise ValueError("problem sizes and runtimes must be positive")
    scale = Nv.max()
    x = Nv / scale
    q0, q1, q2, q3 = _relative_lstsq(np.stack([x**3, x**2, x, np.ones_like(x)], axis=1), tv)
    return NTModel((q0 / scale**3, q1 / scale**2, q2 / scale, q3))


@dataclass(frozen=True)
class PTModel:
    """T(N, P) = k4 P T(N) + k5 T(N)/P + k6 over the base N-T model."""

    base: NTModel
    k4: float
    k5: float
    k6: float

    def runtime(self, N: ArrayLike, P: ArrayLike) -> FloatArray:
        g = self.base.runtime(N)
        Pv = np.asarray(P, dtype=float)
        out: FloatArray = self.k4 * Pv * g + self.k5 * g / Pv + self.k6
        return out


def fit_pt(N: ArrayLike, P: ArrayLike, runtime: ArrayLike, base: NTModel) -> PTModel:
    """Fit k4, k5, k6; raises ValueError with fewer than three distinct P."""
    Nv, Pv = np.asarray(N, dtype=float), np.asarray(P, dtype=float)
    tv = np.asarray(runtime, dtype=float)
    if np.unique(Pv).size < 3:
        raise ValueError("the P-T model needs runtimes at three or more processor counts P")
    g = base.runtime(Nv)
    k4, k5, k6 = _relative_lstsq(np.stack([Pv * g, g / Pv, np.ones_like(g)], axis=1), tv)
    return PTModel(base, float(k4), float(k5), float(k6))


@dataclass(frozen=True)
class GustafsonFit:
    """Scaled speedup S(n) = n - α(n - 1) of a weak-scaling job."""

    alpha: float

    def scaled_speedup(self, n: ArrayLike) -> FloatArray:
        nv = np.asarray(n, dtype=float)
        out: FloatArray = nv - self.alpha * (nv - 1.0)
        return out


def fit_gustafson(n: ArrayLike, runtime: ArrayLike, serial_runtime: ArrayLike) -> GustafsonFit:
    """α from runs of the scaled problem (n, T(n)) and its serial runtimes, clipped to [0, 1]."""
    nv = np.asarray(n, dtype=float)
    S = np.asarray(serial_runtime, dtype=float) / np.asarray(runtime, dtype=float)
    x = nv - 1.0
    if not np.any(x > 0):
        raise ValueError("Gustafson's α needs runs on more than one node")
    alpha = float(np.sum((nv - S) * x) / np.sum(x * x))
    return GustafsonFit(min(max(alpha, 0.0), 1.0))


def master_worker_optimum(
    task_compute: float, volume_in: float, volume_out: float, transfer_time: float
) -> float:
    """N_opt = Tc / (max(vi, vo)·λ): workers the master can keep busy (Costa et al., the
    performance model's first equation, for one group of workers gi).

    In any consistent units: Tc the compute time of one task on one worker, vi and vo the
    data sent to and returned by a worker per task, λ the transfer time per unit of data
    (seconds per byte: 1 / bandwidth). During one task's Tc the master can serve
    Tc / (max(vi, vo)·λ) workers; with more, some wait for it.
    """
    figures = (task_compute, volume_in, volume_out, transfer_time)
    if not all(math.isfinite(x) for x in figures):
        raise ValueError("task compute time, volumes and transfer time must be finite")
    if task_compute <= 0 or transfer_time <= 0 or min(volume_in, volume_out) < 0:
        raise ValueError("task compute time and transfer time must be positive, volumes ≥ 0")
    if max(volume_in, volume_out) <= 0:
        raise ValueError("one of the volumes (in, out) must be positive")
    held = max(volume_in, volume_out) * transfer_time
    # A product of positive figures that underflows to 0: the master is never held, N_opt ∞.
    return task_compute / held if held > 0 else math.inf


def master_worker_phase(latency: float, volume: float, transfer_time: float, workers: int) -> float:
    """Start-up (volume = vi) or finalization (volume = vo): tl + v·λ·(N_w + 1)/2."""
    return latency + volume * transfer_time * (workers + 1) / 2.0


def saturation_knee(n: ArrayLike, speedup: ArrayLike) -> float:
    """n* = S_max / E0: where a master-worker speedup stops growing (module docstring).

    While every worker is busy the speedup grows as S(n) = E0·n, E0 = S(n0)/n0 the efficiency
    at the smallest size n0; once the master is saturated (N_opt workers, Costa et al.) it
    stays at S_max. The two lines meet at n* = S_max/E0. For S(n) = min(n, N) exactly,
    n* = N.

    Parameters
    ----------
    n : sizes, shape (k,), > 0, in increasing order (the smallest is n0)
    speedup : S at those sizes, shape (k,), > 0
    """
    nv = np.asarray(n, dtype=float)
    sv = np.asarray(speedup, dtype=float)
    if nv.ndim != 1 or nv.shape != sv.shape or nv.size == 0:
        raise ValueError("n and speedup must be 1-D arrays of one length ≥ 1")
    if not (np.all(np.isfinite(sv)) and np.all(sv > 0) and np.all(nv > 0)):
        raise ValueError("sizes and speedups must be finite and > 0")
    if np.any(np.diff(nv) <= 0):
        raise ValueError("sizes must increase")
    e0 = sv[0] / nv[0]
    return float(np.max(sv) / e0)


#: Crossover sizes P_c = sqrt(k5/k4) searched by `fit_nt_pt` (k4 = 0 is tried too).
_CROSSOVERS = np.geomspace(0.5, 1e5, 241)


@dataclass(frozen=True)
class NTPTModel:
    """T(N, P) = g(N)·(k4·P + k5/P) + k6 with g(N) = Σ_j q_j (N/N_max)^j (degree ≤ 3).

    The N-T cubic and the P-T scaling fitted jointly (`fit_nt_pt`); g absorbs k5, so k5 = 1.
    """

    q: tuple[float, ...]
    scale: float
    k4: float
    k6: float

    def g(self, N: ArrayLike) -> FloatArray:
        x = np.asarray(N, dtype=float) / self.scale
        out: FloatArray = np.zeros_like(x)
        for coefficient in reversed(self.q):  # Horner
            out = out * x + coefficient
        return out

    def runtime(self, N: ArrayLike, P: ArrayLike) -> FloatArray:
        """T(N, P); a polynomial extrapolated too far can fall below 0 (the paper's warning):
        clipped to 1e-9 s there, which scores as the miss it is."""
        Pv = np.asarray(P, dtype=float)
        out: FloatArray = np.maximum(self.g(N) * (self.k4 * Pv + 1.0 / Pv) + self.k6, 1e-9)
        return out


def fit_nt_pt(N: ArrayLike, P: ArrayLike, runtime: ArrayLike) -> NTPTModel:
    """Fit T(N, P) = g(N)·(k4·P + 1/P) + k6 in relative errors (Kishimoto and Ichikawa
    eqs. 1-2 fitted at once); g has degree min(3, K-1) for K distinct sizes N.

    For fixed k4 the model is linear in (q, k6); k4 = 1/P_c² is profiled over a grid of
    crossover sizes P_c (and 0), all as one stacked least-squares solve. Raises ValueError
    with fewer than two sizes N, fewer than two P, or fewer runs than parameters.
    """
    Nv, Pv, tv = (np.asarray(v, dtype=float).ravel() for v in (N, P, runtime))
    sizes = np.unique(Nv).size
    if sizes < 2 or np.unique(Pv).size < 2:
        raise ValueError("the N-T/P-T model needs runs at two or more sizes N and P")
    if np.any(tv <= 0) or np.any(Nv <= 0) or np.any(Pv <= 0):
        raise ValueError("problem sizes, processor counts and runtimes must be positive")
    degree = min(3, sizes - 1)
    if tv.size < degree + 2:
        raise ValueError("the N-T/P-T model needs more runs than parameters")
    scale = float(Nv.max())
    powers = (Nv / scale)[:, None] ** np.arange(degree + 1)  # (R, d+1)
    k4 = np.concatenate([[0.0], 1.0 / _CROSSOVERS**2])  # (G,)
    spread = k4[:, None] * Pv[None, :] + 1.0 / Pv[None, :]  # (G, R)
    X = np.concatenate(
        [powers[None, :, :] * spread[:, :, None], np.ones((k4.size, tv.size, 1))], axis=2
    )
    Xr = X / tv[None, :, None]  # relative residuals 1 - X θ / t
    theta = np.einsum("gpr,r->gp", np.linalg.pinv(Xr), np.ones_like(tv))
    sse = np.sum((1.0 - np.einsum("grp,gp->gr", Xr, theta)) ** 2, axis=1)
    best = int(np.argmin(sse))
    return NTPTModel(
        q=tuple(float(v) for v in theta[best, :-1]),
        scale=scale,
        k4=float(k4[best]),
        k6=float(theta[best, -1]),
    )
