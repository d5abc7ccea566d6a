"""Strong-scaling runtime models from the literature, each fitted with relative errors.

Amdahl's family (three names, one curve). Amdahl: S(n) = 1/((1-P) + P/n) with parallel
fraction P (the large-scale thesis, 4.6.1, which also estimates P from one measured speedup
SU on NP processors: P = (1/SU - 1)/(1/NP - 1)). Dowdy: T(n) = c1 + c2/n (Downey thesis,
eq. 3.1). Chiang: S(n) = (1+β)n/(n+β) (eq. 3.2). All three are τ(n) = f + (1-f)/n with
f = 1-P = c1/(c1+c2) = 1/(1+β); they differ in what they take as known: Amdahl keeps an
observed T(1), Dowdy's two coefficients are always free, Chiang's β is Amdahl's f renamed.
The fit is amdahl.py's closed form.

Geometric (eq. 3.3): S(n) = (1 - rⁿ)/(1 - r), 0 ≤ r < 1: linear for r → 1, no speedup at
r = 0. Fitted by a search over r (on u = -log10(1 - r)), the scale profiled out.

Communication terms (Sevcik 1994, and the Hockney view of collectives in the large-scale
thesis, 4.6.4): T(n) = a/n + b + c·n and T(n) = a/n + b + c·log2(n), a, b, c ≥ 0 (a = φW the
divided work, b = α the fixed part, c = β the per-node or per-level communication). Both can
rise again past n* (√(a/c) for the first): the declining speedup Downey cannot express. Linear
in (a, b, c), so a non-negative least-squares problem in relative errors.
"""

from __future__ import annotations

import numpy as np

from predictor.amdahl import fit_amdahl
from predictor.downey import FloatArray
from predictor.models.base import ModelFit, ModelSpec, register, relative_wssre


def parallel_fraction_from_speedup(speedup: float, processors: float) -> float:
    """P = (1/SU - 1)/(1/NP - 1): Amdahl's parallel fraction from one measured speedup."""
    if processors <= 1 or speedup <= 0:
        raise ValueError("need a speedup > 0 measured on more than one processor")
    return (1.0 / speedup - 1.0) / (1.0 / processors - 1.0)


def _amdahl_runtime(p: dict[str, float], n: FloatArray) -> FloatArray:
    out: FloatArray = p["t1"] * ((1.0 - p["P"]) + p["P"] / n)
    return out


def _fit_amdahl_model(n: FloatArray, t: FloatArray, w: FloatArray, t1: float | None) -> ModelFit:
    found = fit_amdahl(n, t, w, t1)
    params = {"P": float(1.0 - found.f), "t1": float(found.c)}
    return ModelFit("amdahl", params, float(found.wssre), float(n[-1]))


def _dowdy_runtime(p: dict[str, float], n: FloatArray) -> FloatArray:
    out: FloatArray = p["c1"] + p["c2"] / n
    return out


def _fit_dowdy(n: FloatArray, t: FloatArray, w: FloatArray, t1: float | None) -> ModelFit:
    del t1  # both coefficients are free in Dowdy's form
    found = fit_amdahl(n, t, w, None)
    params = {"c1": float(found.c * found.f), "c2": float(found.c * (1.0 - found.f))}
    return ModelFit("dowdy", params, float(found.wssre), float(n[-1]))


def _chiang_runtime(p: dict[str, float], n: FloatArray) -> FloatArray:
    beta = p["beta"]
    out: FloatArray = p["t1"] * (n + beta) / ((1.0 + beta) * n)
    return out


def _fit_chiang(n: FloatArray, t: FloatArray, w: FloatArray, t1: float | None) -> ModelFit:
    found = fit_amdahl(n, t, w, t1)
    f = max(float(found.f), 1e-12)  # f = 0 is β = ∞, perfect scaling: kept finite
    params = {"beta": (1.0 - f) / f, "t1": float(found.c)}
    return ModelFit("chiang", params, float(found.wssre), float(n[-1]))


def _geometric_tau(u: FloatArray, n: FloatArray) -> FloatArray:
    """τ = (1 - r)/(1 - rⁿ) with 1 - r = 10^-u, evaluated without cancellation."""
    one_minus_r = 10.0 ** (-u)
    out: FloatArray = one_minus_r / -np.expm1(n * np.log1p(-one_minus_r))
    return out


def _geometric_runtime(p: dict[str, float], n: FloatArray) -> FloatArray:
    return p["t1"] * _geometric_tau(np.asarray(-np.log10(1.0 - p["r"])), n)


def _fit_geometric(n: FloatArray, t: FloatArray, w: FloatArray, t1: float | None) -> ModelFit:
    """Coarse-to-fine search over u = -log10(1-r) ∈ [1e-6, 9], scale profiled or fixed."""
    lo, hi = 1e-6, 9.0
    best_u, best_err, best_c = lo, np.inf, 1.0
    for _ in range(4):
        u = np.linspace(lo, hi, 121)
        tau = _geometric_tau(u[:, None], n[None, :])
        r = tau / t
        c = np.full(u.size, t1) if t1 is not None else (w * r).sum(-1) / (w * r * r).sum(-1)
        err = (w * (1.0 - c[:, None] * r) ** 2).sum(-1)
        k = int(np.argmin(err))
        if err[k] < best_err:
            best_u, best_err, best_c = float(u[k]), float(err[k]), float(c[k])
        step = (hi - lo) / 120
        lo, hi = max(1e-6, best_u - 2 * step), min(9.0, best_u + 2 * step)
    params = {"r": float(1.0 - 10.0 ** (-best_u)), "t1": best_c}
    return ModelFit("geometric", params, best_err, float(n[-1]))


def _nnls_relative(columns: FloatArray, t: FloatArray, w: FloatArray) -> FloatArray:
    """min Σ w (1 - columns·θ / t)² over θ ≥ 0."""
    from scipy.optimize import nnls  # noqa: PLC0415 - 0.3 s import, only these fits use it

    root = np.sqrt(w)
    theta, _ = nnls(root[:, None] * columns / t[:, None], root)
    out: FloatArray = theta
    return out


def _sevcik_runtime(p: dict[str, float], n: FloatArray) -> FloatArray:
    out: FloatArray = p["a"] / n + p["b"] + p["c"] * n
    return out


def _fit_sevcik(n: FloatArray, t: FloatArray, w: FloatArray, t1: float | None) -> ModelFit:
    del t1  # T(1) = a + b + c is just another observation here
    a, b, c = _nnls_relative(np.stack([1.0 / n, np.ones_like(n), n], axis=1), t, w)
    params = {"a": float(a), "b": float(b), "c": float(c)}
    fit = ModelFit("sevcik", params, 0.0, float(n[-1]))
    return ModelFit("sevcik", params, relative_wssre(fit.runtime(n), t, w), float(n[-1]))


def _hockney_runtime(p: dict[str, float], n: FloatArray) -> FloatArray:
    out: FloatArray = p["a"] / n + p["b"] + p["c"] * np.log2(n)
    return out


def _fit_hockney(n: FloatArray, t: FloatArray, w: FloatArray, t1: float | None) -> ModelFit:
    del t1
    a, b, c = _nnls_relative(np.stack([1.0 / n, np.ones_like(n), np.log2(n)], axis=1), t, w)
    params = {"a": float(a), "b": float(b), "c": float(c)}
    fit = ModelFit("hockney", params, 0.0, float(n[-1]))
    return ModelFit("hockney", params, relative_wssre(fit.runtime(n), t, w), float(n[-1]))


AMDAHL = register(
    ModelSpec(
        "amdahl",
        ("P", "t1"),
        _fit_amdahl_model,
        _amdahl_runtime,
        "Amdahl's law, S = 1/((1-P) + P/n)",
    )
)
DOWDY = register(
    ModelSpec("dowdy", ("c1", "c2"), _fit_dowdy, _dowdy_runtime, "Dowdy, T = c1 + c2/n")
)
CHIANG = register(
    ModelSpec("chiang", ("beta", "t1"), _fit_chiang, _chiang_runtime, "Chiang, S = (1+β)n/(n+β)")
)
GEOMETRIC = register(
    ModelSpec(
        "geometric", ("r", "t1"), _fit_geometric, _geometric_runtime, "geometric, S = (1-rⁿ)/(1-r)"
    )
)
SEVCIK = register(
    ModelSpec(
        "sevcik",
        ("a", "b", "c"),
        _fit_sevcik,
        _sevcik_runtime,
        "Sevcik, T = a/n + b + c·n",
        min_sizes=3,
    )
)
HOCKNEY = register(
    ModelSpec(
        "hockney",
        ("a", "b", "c"),
        _fit_hockney,
        _hockney_runtime,
        "Hockney collectives, T = a/n + b + c·log2 n",
        min_sizes=3,
    )
)
