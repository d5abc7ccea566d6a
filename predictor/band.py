"""The ADEPT envelope as a band around the speedup curve.

What the band means. ADEPT (section V.A) allows every observation to deviate from the true
model instance by at most δ, and grows δ until some Downey instance explains *every*
observation within δ; the envelope is the union of the closed-form range pairs in (A, s)
that the observation pairs allow at that δ. The band drawn here is the range of speedups,
size by size, of the instances in the envelope that explain every observation of the
curve's last phase within δ (anomalous runs excluded, as in the fit) — the curves the data
cannot tell apart at the fit's own tolerance — plus the fitted instance itself. It is *not*
a confidence interval: there is no probability attached, only "consistent with all runs
within δ". Where the runs stop, the band usually widens: that is how much the data leave
open about larger sizes.

How it is computed. The range pairs are loose boxes (a superlinear pair allows A up to the
domain's limit), so the band is not taken over the boxes themselves: a log-A × s lattice over
the envelope's bounding box is filtered to the instances inside some range pair that explain
the runs within δ (minimax relative error with the best T(1), or with the observed T(1) when
the fit fixes it); a second, finer lattice around the survivors refines it. Speedups are 1/τ(n)
of each instance (relative to the instance's own T(1), as the curve's are), evaluated with
`predictor.downey.relative_runtime_s` on the whole lattice at once, in chunks.

Pure: the report (plugin/report/assemble.py) calls it and draws the result.

Only Downey curves get a band: when model selection chose another model the envelope does
not describe the curve shown, and the report says so instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import predictor
from predictor.downey import FloatArray, relative_runtime_s, sigma_to_s
from predictor.objective import minimax_relative_error

__all__ = ["Band", "envelope_band"]

#: Lattice of the first pass (A values × s values) and of the refining pass.
COARSE = (121, 101)
FINE = (81, 81)
#: Instances evaluated on the size grid at once (bounds memory: CHUNK × sizes floats).
CHUNK = 4096
#: Relative slack on δ, for rounding in the error computation.
SLACK = 1e-9


@dataclass(frozen=True)
class Band:
    """The ADEPT envelope drawn as a band: min and max speedup per size (the module docstring
    explains it).

    Covers the sizes `n` (the grid from the last phase's smallest size on); delta is the
    envelope's δ; instances is how many model instances the band was taken over.
    """

    n: tuple[int, ...]
    speedup_lo: tuple[float, ...]
    speedup_hi: tuple[float, ...]
    delta: float
    instances: int

    @property
    def efficiency_lo(self) -> tuple[float, ...]:
        return tuple(s / k for s, k in zip(self.speedup_lo, self.n, strict=True))

    @property
    def efficiency_hi(self) -> tuple[float, ...]:
        return tuple(s / k for s, k in zip(self.speedup_hi, self.n, strict=True))


def _lattice(
    a_lo: float, a_hi: float, s_lo: float, s_hi: float, shape: tuple[int, int]
) -> tuple[FloatArray, FloatArray]:
    A = np.exp(np.linspace(np.log(a_lo), np.log(max(a_hi, a_lo)), shape[0]))
    s = np.linspace(s_lo, max(s_hi, s_lo), shape[1])
    grid_A, grid_s = np.meshgrid(A, s, indexing="ij")
    return grid_A.ravel(), grid_s.ravel()


def _explaining(
    env: predictor.Envelope,
    n: FloatArray,
    t: FloatArray,
    scale: float | None,
    A: FloatArray,
    s: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """The instances (A, s) inside the envelope that explain every run within δ."""
    inside = env.contains(A, s)
    A, s = A[inside], s[inside]
    if A.size == 0:
        return A, s
    tau = relative_runtime_s(n[None, :], A[:, None], s[:, None])
    ok = minimax_relative_error(tau, t[None, :], scale) <= env.delta * (1 + SLACK)
    return A[ok], s[ok]


def envelope_band(
    runs_n: Sequence[int], runs_t: Sequence[float], grid: Sequence[int]
) -> tuple[Band | None, str]:
    """The band over `grid` for the runs (n, runtime) as the store holds them.

    Refits the runs with ADEPT (`predictor.fit`, the learner's settings) to get the
    envelope. Returns the band and "", or None and a sentence saying why there is none.
    The band covers the grid's sizes from the last phase's smallest observed size on.
    """
    try:
        fit = predictor.fit(np.asarray(runs_n, dtype=float), np.asarray(runs_t, dtype=float))
    except ValueError as exc:
        return None, f"no envelope: {exc}"
    env = fit.envelope
    if fit.status != "ok" or env is None:
        return None, "no envelope: the ADEPT fit did not converge"
    if not env.bounded:
        return None, (
            "no envelope band: no δ up to ADEPT's limit explains every run, so the envelope "
            "is the whole parameter domain"
        )
    obs = fit.observations
    phase = np.asarray(fit.segments[-1].sizes, dtype=float)
    excluded = np.asarray([a.n for a in fit.diagnostics.anomalies], dtype=float)
    use = np.isin(obs.n, phase) & ~np.isin(obs.n, excluded)
    if use.sum() < 2:
        use = np.isin(obs.n, phase)
    n, t = obs.n[use].astype(float), obs.runtime[use].astype(float)
    # The fit's own convention (predictor/adept.py): an observed T(1) fixes the scale only
    # with fix_t1; otherwise it is one more observation and the scale is profiled out.
    scale = float(t[0]) if n[0] == 1 and predictor.FAST.fix_t1 else None

    a_lo, a_hi = float(env.a_lo.min()), float(env.a_hi.max())
    s_lo, s_hi = float(env.s_lo.min()), float(env.s_hi.max())
    A1, s1 = _explaining(env, n, t, scale, *_lattice(a_lo, a_hi, s_lo, s_hi, COARSE))
    fitted_A, fitted_s = fit.segments[-1].A, float(sigma_to_s(fit.segments[-1].sigma))
    # Refine around the survivors (or around the fitted instance when none survived).
    keep_A = np.r_[A1, fitted_A]
    keep_s = np.r_[s1, fitted_s]
    step_A = (a_hi / a_lo) ** (1.0 / (COARSE[0] - 1))
    step_s = (s_hi - s_lo) / (COARSE[1] - 1)
    A2, s2 = _explaining(
        env,
        n,
        t,
        scale,
        *_lattice(
            max(a_lo, float(keep_A.min()) / step_A),
            min(a_hi, float(keep_A.max()) * step_A),
            max(s_lo, float(keep_s.min()) - step_s),
            min(s_hi, float(keep_s.max()) + step_s),
            FINE,
        ),
    )
    A = np.r_[A1, A2, fitted_A]
    s = np.r_[s1, s2, fitted_s]

    sizes = np.asarray([k for k in grid if k >= phase[0]], dtype=float)
    lo = np.full(sizes.size, np.inf)
    hi = np.zeros(sizes.size)
    for start in range(0, A.size, CHUNK):
        speedup = 1.0 / relative_runtime_s(
            sizes[None, :], A[start : start + CHUNK, None], s[start : start + CHUNK, None]
        )
        lo = np.minimum(lo, speedup.min(axis=0))
        hi = np.maximum(hi, speedup.max(axis=0))
    band = Band(
        n=tuple(int(k) for k in sizes),
        speedup_lo=tuple(float(v) for v in lo),
        speedup_hi=tuple(float(v) for v in hi),
        delta=float(env.delta),
        instances=int(A.size),
    )
    return band, ""
