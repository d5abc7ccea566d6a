"""Gauss-Newton polish of the pattern search's best instance (seen on noise-free data).

The 2-D pattern search (adept.py, `_refine`) stops after a fixed number of rounds, each of
which can move an instance only a few of its shrinking steps. Where the WSSRE's minimum lies
in a long curved valley of (A, s) (small σ in low mode, data ending at the knee) it stops
short of the minimum: on exact Downey data whose last size is near the knee the fit kept a
WSSRE of 1e-11..2e-8 instead of 0 and extrapolated with 0.01-0.07% error where LM was exact
(tests/benchmarks/test_synthetic_accuracy.py, "at / uneven / 0%"). Four more rounds of the
search cure it at +11% CPU per predict; one Gauss-Newton step brings the error to ~1e-10
(relative) at +1.7-2.4% (a second step, to 1e-16, cost +2.5-3.7%; 2 shared cores, load 3-10).

Each step is a Gauss-Newton step with variable projection on x = (log A, s): the residuals
r_i = sqrt(w_i)·(1 - c·τ(n_i; A, s)/t_i), with c the profiled scale Σ w ρ / Σ w ρ² (ρ = τ/t) or
the fixed one, their Jacobian J in closed form (the active piece's derivatives, the profiled
scale's included), δ = -(JᵀJ + λ·diag JᵀJ)⁻¹ Jᵀ r (the 2 × 2 system in closed form, λ a small
Marquardt damping). Forward differences gave the same steps but let a 1e-16 change of the
data (the runtime unit) move the result by 1e-9. A step is kept only where it lowers the
WSSRE, stays inside the envelope and out of the valley (first piece reaching the largest
size, adept.py "the unidentified valley"), and instances in the valley are not moved: the
polish sharpens an identified instance, it never changes which kind of instance the search
found, nor the valley rule's choice.
"""

from __future__ import annotations

import numpy as np

from predictor.downey import FloatArray, first_piece_end, relative_runtime_s
from predictor.envelope import Domain, Envelope
from predictor.grids import clip

# The Marquardt damping of JᵀJ's diagonal (keeps the 2 × 2 solve defined where J's columns
# are nearly parallel; small enough not to slow the step where they are not).
DAMPING = 1e-9


def tau_and_gradient(
    n: FloatArray, A: FloatArray, s: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """τ(n; A, s) (downey.relative_runtime_s) and its derivatives in log A and in s, each
    (T, M) for sizes n (M,) and instances A, s (T,): the derivatives of the piece that holds
    the maximum (on a tie, the first of first piece, second piece, flat piece).

    first  = f + (1-f)/n, f = s/(2A):     ∂/∂A = -(1-1/n)·s/(2A²),   ∂/∂s = (1-1/n)/(2A)
    second = (1-u/2)/A + u(A-1/2)/(A n):  ∂/∂A = -(1-u/2)/A² + u/(2nA²),
                                          ∂/∂s = (A-1/2)/(A n) - 1/(2A) where s < 1 (u = s)
    flat   = 1/A:                         ∂/∂A = -1/A²
    """
    Ac, sc = A[:, None], s[:, None]
    inv_n = 1.0 / n
    lead = 1.0 - inv_n
    inv_A = 1.0 / Ac
    f = 0.5 * sc * inv_A
    first = f + (1.0 - f) * inv_n
    u = np.minimum(sc, 1.0)
    second = ((1.0 - 0.5 * u) + u * (Ac - 0.5) * inv_n) * inv_A
    tau = np.maximum(np.maximum(first, second), inv_A)
    on_first = first >= tau
    on_second = ~on_first & (second >= tau)
    # ∂/∂log A = A·∂/∂A.
    d_first_A = -lead * f
    d_second_A = (-(1.0 - 0.5 * u) + 0.5 * u * inv_n) * inv_A
    d_log_A = np.where(on_first, d_first_A, np.where(on_second, d_second_A, -inv_A))
    d_first_s = 0.5 * lead * inv_A
    d_second_s = np.where(sc < 1.0, (Ac - 0.5) * inv_A * inv_n - 0.5 * inv_A, 0.0)
    d_s = np.where(on_first, d_first_s, np.where(on_second, d_second_s, 0.0))
    return tau, d_log_A, d_s


def _wssre(
    n: FloatArray, t: FloatArray, w: FloatArray, A: FloatArray, s: FloatArray, scale: float | None
) -> tuple[FloatArray, FloatArray]:
    """WSSRE (T,) at the profiled (or fixed) scale, and that scale (objective.py's formula)."""
    rho = relative_runtime_s(n, A[:, None], s[:, None]) / t
    if scale is None:
        c = np.add.reduce(w * rho, axis=-1) / np.add.reduce(w * rho * rho, axis=-1)
    else:
        c = np.full(rho.shape[:-1], scale)
    err = 1.0 - c[:, None] * rho
    return np.add.reduce(w * err * err, axis=-1), c


def gauss_newton_step(
    n: FloatArray,
    t: FloatArray,
    w: FloatArray,
    A: FloatArray,
    s: FloatArray,
    scale: float | None,
    domain: Domain,
) -> tuple[FloatArray, FloatArray]:
    """One step from (A, s) (T,) as in the module docstring, clipped to the domain; an
    instance where JᵀJ is singular stays where it is.

    Residuals e_i = 1 - c·ρ_i, ρ = τ/t, weights w; with c profiled, c = Σwρ/Σwρ² and
    ∂e/∂x = -(c·∂ρ/∂x + ρ·∂c/∂x), ∂c/∂x = (Σw∂ρ/∂x - 2c·Σwρ∂ρ/∂x)/Σwρ².
    """
    tau, d_log_A, d_s = tau_and_gradient(n, A, s)
    rho, r_A, r_s = tau / t, d_log_A / t, d_s / t
    if scale is None:
        wr = w * rho
        srr = np.add.reduce(wr * rho, axis=-1)
        c = np.add.reduce(wr, axis=-1) / srr
        c_A = (np.add.reduce(w * r_A, axis=-1) - 2.0 * c * np.add.reduce(wr * r_A, axis=-1)) / srr
        c_s = (np.add.reduce(w * r_s, axis=-1) - 2.0 * c * np.add.reduce(wr * r_s, axis=-1)) / srr
        J0 = -(c[:, None] * r_A + rho * c_A[:, None])
        J1 = -(c[:, None] * r_s + rho * c_s[:, None])
    else:
        c = np.full(A.shape, scale)
        J0, J1 = -scale * r_A, -scale * r_s
    e = 1.0 - c[:, None] * rho
    wJ0, wJ1 = w * J0, w * J1
    a = np.add.reduce(wJ0 * J0, axis=-1) * (1.0 + DAMPING)
    b = np.add.reduce(wJ0 * J1, axis=-1)
    d = np.add.reduce(wJ1 * J1, axis=-1) * (1.0 + DAMPING)
    g0 = np.add.reduce(wJ0 * e, axis=-1)
    g1 = np.add.reduce(wJ1 * e, axis=-1)
    det = a * d - b * b
    solvable = det > 0.0
    det = np.where(solvable, det, 1.0)
    step_log_A = np.where(solvable, (d * g0 - b * g1) / det, 0.0)
    step_s = np.where(solvable, (a * g1 - b * g0) / det, 0.0)
    # A step of e^50 leaves every envelope; bounded so that exp cannot overflow.
    new_A = clip(A * np.exp(-clip(step_log_A, -50.0, 50.0)), 1.0, domain.a_max)
    new_s = clip(s - step_s, 0.0, domain.s_max)
    return new_A, new_s


def polish(
    n: FloatArray,
    t: FloatArray,
    w: FloatArray,
    best: tuple[FloatArray, FloatArray, FloatArray, FloatArray],
    env: Envelope,
    domain: Domain,
    scale: float | None,
    steps: int,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(wssre, A, s, scale) per target after up to `steps` Gauss-Newton steps from `best`
    (the same tuple, each (T,)); see the module docstring. w: (T, M) weights.

    Instances in the valley (first piece reaching the largest size) are left as they are:
    along the valley's line the WSSRE is flat and the search's choice there is the valley
    rule's business (adept.py).
    """
    err, A, s, c = best
    n_max = float(n[-1]) * (1 - 1e-9)
    movable = first_piece_end(A, s) < n_max
    if steps == 0 or not movable.any():
        return best
    for _ in range(steps):
        new_A, new_s = gauss_newton_step(n, t, w, A, s, scale, domain)
        new_err, new_c = _wssre(n, t, w, new_A, new_s, scale)
        keep = movable & (new_err < err) & (first_piece_end(new_A, new_s) < n_max)
        keep &= env.contains(new_A, new_s)
        err = np.where(keep, new_err, err)
        A, s, c = np.where(keep, new_A, A), np.where(keep, new_s, s), np.where(keep, new_c, c)
        movable = keep
    return err, A, s, c
