"""Cold start from sibling problem sizes: the runtime T(N, P) of a problem size N never run.

An application run at several problem sizes N_1 … N_K (NPB classes, mesh sizes) has a
speedup curve per size. For a size N* without runs of its own, four models of T(N, P) borrow
from the siblings:

* ``nt_pt``, Kishimoto and Ichikawa's N-T and P-T models (models/sized.py, eqs. 1-2): a
  polynomial g(N) of degree min(3, K-1) scaled over processors,
  T(N, P) = g(N)·(k4·P + k5/P) + k6, fitted to every run at once (`fit_nt_pt`);
* ``power_law``, the N-T model with a power law in place of the cubic: log T(N, P) =
  a(P) + b·log N, one exponent for all P (`fit_power_law`; it follows each measured node
  count, slowdowns included, and T ∝ N is b = 1);
* ``nearest_scaled``, the runs of the sibling nearest in log N times N*/N (work proportional
  to the problem size; needs the target, so only `fit_sizes(..., target=...)` fits it);
* ``downey_interp``, the Downey family per size: each size's own Downey fit (A, σ, T(1)),
  with log A, the shape s(σ) (downey.sigma_to_s) and log T(1) each a least-squares line in
  log N, evaluated at N* (a plain line through two sizes, a regression through more).

`fit_sizes` fits all four and chooses by leave-one-size-out error: each sibling size in turn is
left out, every model is fitted on the others and predicts its runs; the mean relative
runtime error |T̂/T - 1| over those runs scores the model. Only the sizes in the target's
position are left out: the interior ones for a target inside the range of sizes (an
interpolation), the end on its side for one beyond it (an extrapolation), since a model
that interpolates well can extrapolate badly (a polynomial in N, the paper warns). The model
with the smaller score is used (``downey_interp`` on a tie, or when no model could be
scored, because its per-size curves are the product's own model). With two sizes only
``nearest_scaled`` can be scored (each size predicted from the other), so it is chosen.
`borrow_curve` turns the prediction at N* into a `Curve` flagged as borrowed, so that no
policy cuts a time limit on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from predictor.curve import Curve
from predictor.diagnostics import Diagnostics, ReliabilityProblem
from predictor.downey import FloatArray, relative_runtime_s, s_to_sigma, sigma_to_s
from predictor.fitting import fit
from predictor.models.sized import NTPTModel, fit_nt_pt

__all__ = [
    "METHODS",
    "DowneyInterp",
    "DowneyParameters",
    "NearestScaled",
    "PowerLaw",
    "SizeFits",
    "borrow_curve",
    "fit_downey_interp",
    "fit_nearest_scaled",
    "fit_power_law",
    "fit_sizes",
]

#: The models of T(N, P), in the order a tie is broken.
METHODS = ("downey_interp", "nt_pt", "power_law", "nearest_scaled")
#: Largest shape s the interpolation returns (s < 2 is σ < ∞).
_S_MAX = 1.999


@dataclass(frozen=True)
class DowneyInterp:
    """Downey parameters per size, each a line in log N (module docstring).

    Attributes
    ----------
    sizes : (K,) the fitted problem sizes, ascending.
    log_a, s, log_t1 : (K,) each size's fitted log A, shape s and log T(1).
    shaped : (K,) whether that size's fit is identified (its runs show the knee); only those
        place the lines of log A and s, since an unidentified fit's A and σ are any point of
        a valley (adept.py). Every size places the line of log T(1).
    """

    sizes: FloatArray
    log_a: FloatArray
    s: FloatArray
    log_t1: FloatArray
    shaped: npt.NDArray[np.bool_]

    def _line(self, values: FloatArray, size: float, use: npt.NDArray[np.bool_]) -> float:
        if not np.any(use):
            use = np.ones_like(use)
        x = np.log(self.sizes[use])
        if x.size == 1:
            return float(values[use][0])
        slope, intercept = np.polyfit(x, values[use], 1)
        return float(slope * np.log(size) + intercept)

    def parameters(self, size: float) -> tuple[float, float, float]:
        """(A, σ, T(1)) at problem size `size`; A ≥ 1, 0 ≤ s ≤ 1.999."""
        every = np.ones_like(self.shaped)
        A = max(1.0, float(np.exp(self._line(self.log_a, size, self.shaped))))
        s = min(max(self._line(self.s, size, self.shaped), 0.0), _S_MAX)
        return A, float(s_to_sigma(s)), float(np.exp(self._line(self.log_t1, size, every)))

    def runtime(self, size: ArrayLike, n: ArrayLike) -> FloatArray:
        """T(N, n) = T1(N)·τ(n; A(N), s(N)) (downey.relative_runtime_s); broadcast."""
        sizes, nv = np.broadcast_arrays(np.asarray(size, float), np.asarray(n, float))
        out = np.empty(sizes.shape)
        for value in np.unique(sizes):
            A, sigma, t1 = self.parameters(float(value))
            mask = sizes == value
            out[mask] = t1 * relative_runtime_s(nv[mask], A, sigma_to_s(sigma))
        return out


class DowneyParameters(Protocol):
    """What the interpolation reads of a size's curve (a Fit or a stored Curve has it)."""

    @property
    def A(self) -> float: ...  # noqa: N802 - the model's name for it
    @property
    def sigma(self) -> float: ...
    @property
    def t1(self) -> float: ...
    @property
    def identified(self) -> bool: ...


@dataclass(frozen=True)
class PowerLaw:
    """log T(N, P) = a(P) + b·log N: one exponent b for every processor count, an intercept
    a(P) per observed P (interpolated linearly in log P between them, held at the ends).

    The N-T model of Kishimoto and Ichikawa with a power law in N in place of the cubic, which
    cannot go negative and extrapolates in N as runtimes scale with work (b = 1: T ∝ N).
    """

    P: FloatArray
    a: FloatArray
    b: float

    def runtime(self, size: ArrayLike, n: ArrayLike) -> FloatArray:
        nv = np.asarray(n, dtype=float)
        a = np.interp(np.log(nv), np.log(self.P), self.a)
        out: FloatArray = np.exp(a + self.b * np.log(np.asarray(size, dtype=float)))
        return out


def fit_power_law(size: ArrayLike, n: ArrayLike, runtime: ArrayLike) -> PowerLaw:
    """Least squares in log T over every run: one column per distinct P and one for log N.
    ValueError unless some P was run at two or more sizes."""
    sv, nv, tv = _checked(size, n, runtime)
    P, column = np.unique(nv, return_inverse=True)
    shared = [np.unique(sv[column == j]).size >= 2 for j in range(P.size)]
    if not any(shared):
        raise ValueError("the power law needs one node count run at two or more sizes")
    X = np.zeros((tv.size, P.size + 1))
    X[np.arange(tv.size), column] = 1.0
    X[:, -1] = np.log(sv)
    theta, *_ = np.linalg.lstsq(X, np.log(tv), rcond=None)
    return PowerLaw(P=P, a=theta[:-1], b=float(theta[-1]))


@dataclass(frozen=True)
class NearestScaled:
    """T(N, P) = T(N_near, P)·N/N_near: the runs of the sibling nearest in log N, scaled by the
    ratio of sizes (work proportional to N at every P; between its node counts, log T is
    interpolated in log P, held at the ends)."""

    size: float
    P: FloatArray
    log_t: FloatArray

    def runtime(self, size: ArrayLike, n: ArrayLike) -> FloatArray:
        base = np.exp(np.interp(np.log(np.asarray(n, dtype=float)), np.log(self.P), self.log_t))
        out: FloatArray = base * np.asarray(size, dtype=float) / self.size
        return out


def fit_nearest_scaled(
    size: ArrayLike, n: ArrayLike, runtime: ArrayLike, target: float
) -> NearestScaled:
    """The nearest size to `target` (in log N) with runs at two or more node counts, its
    repeated node counts averaged in log T; ValueError when there is none."""
    sv, nv, tv = _checked(size, n, runtime)
    usable = [v for v in np.unique(sv) if np.unique(nv[sv == v]).size >= 2]
    if not usable:
        raise ValueError("no size has runs at two or more node counts")
    near = float(min(usable, key=lambda v: (abs(np.log(v / target)), v)))
    P, column = np.unique(nv[sv == near], return_inverse=True)
    log_t = np.bincount(column, np.log(tv[sv == near])) / np.bincount(column)
    return NearestScaled(near, P, log_t)


def _per_size_fits(
    size: FloatArray,
    n: FloatArray,
    t: FloatArray,
    known: Mapping[float, DowneyParameters] | None = None,
) -> dict[float, DowneyParameters]:
    """Each problem size's Downey curve: the one in `known` (e.g. the stored curve), else a
    fit (ADEPT) when the size has runs at two or more node counts."""
    fits: dict[float, DowneyParameters] = dict(known or {})
    for value in np.unique(size):
        mask = size == value
        if float(value) not in fits and np.unique(n[mask]).size >= 2:
            fits[float(value)] = fit(n[mask], t[mask])
    return fits


def _interp_from(fits: Mapping[float, DowneyParameters], keep: list[float]) -> DowneyInterp:
    chosen = [fits[k] for k in keep]
    return DowneyInterp(
        sizes=np.asarray(keep, dtype=float),
        log_a=np.log([f.A for f in chosen]),
        s=np.asarray(sigma_to_s([f.sigma for f in chosen]), dtype=float),
        log_t1=np.log([f.t1 for f in chosen]),
        shaped=np.asarray([f.identified for f in chosen], dtype=bool),
    )


def fit_downey_interp(size: ArrayLike, n: ArrayLike, runtime: ArrayLike) -> DowneyInterp:
    """The Downey family per size, interpolated in log N; ValueError when no size has runs
    at two node counts."""
    sv, nv, tv = _checked(size, n, runtime)
    fits = _per_size_fits(sv, nv, tv)
    if not fits:
        raise ValueError("no problem size has runs at two or more node counts")
    return _interp_from(fits, sorted(fits))


@dataclass(frozen=True)
class SizeFits:
    """Both models of T(N, P) fitted on every sibling size, and the chosen one.

    Attributes
    ----------
    sizes : the problem sizes the runs were at, ascending.
    method : "downey_interp" or "nt_pt": the model `runtime` uses.
    loso_error : per model, its mean relative error over the runs of each size left out in
        turn (None: the model could not be cross-validated, e.g. fewer than three sizes).
    downey : the Downey family per size (None when no size has two node counts).
    nt_pt : the N-T/P-T model (None when it cannot be fitted).
    power_law : the power law in N per node count (None when it cannot be fitted).
    """

    sizes: tuple[float, ...]
    method: str
    loso_error: dict[str, float | None] = field(default_factory=dict)
    downey: DowneyInterp | None = None
    nt_pt: NTPTModel | None = None
    power_law: PowerLaw | None = None
    nearest_scaled: NearestScaled | None = None

    def runtime(self, size: ArrayLike, n: ArrayLike) -> FloatArray:
        """Predicted runtime at problem size `size` on `n` nodes, from the chosen model."""
        models = {
            "downey_interp": self.downey,
            "nt_pt": self.nt_pt,
            "power_law": self.power_law,
            "nearest_scaled": self.nearest_scaled,
        }
        model = models[self.method]
        if model is None:  # pragma: no cover - fit_sizes never chooses a missing model
            raise ValueError(f"model {self.method} was not fitted")
        return model.runtime(size, n)


def _checked(size: ArrayLike, n: ArrayLike, runtime: ArrayLike) -> tuple[FloatArray, ...]:
    sv, nv, tv = (np.asarray(v, dtype=float).ravel() for v in (size, n, runtime))
    if not sv.size == nv.size == tv.size:
        raise ValueError("size, n and runtime must have the same length")
    for name, values in (("size", sv), ("n", nv), ("runtime", tv)):
        if not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError(f"{name} must be finite and > 0")
    return sv, nv, tv


def _mean_error(predicted: FloatArray, observed: FloatArray) -> float:
    return float(np.mean(np.abs(predicted / observed - 1.0)))


def _scored_sizes(distinct: list[float], target: float | None) -> list[float]:
    """The sizes whose leave-one-out error scores the models for `target`: the interior ones
    when the target lies inside the runs' range, the end on its side when beyond it (every
    size when no target is given or no size matches)."""
    if target is None or len(distinct) < 3:
        return distinct
    if target < distinct[0]:
        return distinct[:1]
    if target > distinct[-1]:
        return distinct[-1:]
    return distinct[1:-1]


def _fit_or_none(fitter: Callable[..., Any], *args: Any) -> Any:
    try:
        return fitter(*args)
    except ValueError:
        return None


def _loso(
    sv: FloatArray,
    nv: FloatArray,
    tv: FloatArray,
    fits: Mapping[float, DowneyParameters],
    scored_sizes: list[float],
) -> dict[str, float | None]:
    """Each model's mean error over the runs of each size in `scored_sizes` left out in turn
    (None when a model cannot be fitted without one of them)."""
    errors: dict[str, list[float]] = {name: [] for name in METHODS}
    for out in scored_sizes:
        held = sv == out
        rest = [k for k in sorted(fits) if k != out]
        models = {
            "downey_interp": _interp_from(fits, rest) if len(rest) >= 2 else None,
            "nt_pt": _fit_or_none(fit_nt_pt, sv[~held], nv[~held], tv[~held]),
            "power_law": _fit_or_none(fit_power_law, sv[~held], nv[~held], tv[~held]),
            "nearest_scaled": _fit_or_none(
                fit_nearest_scaled, sv[~held], nv[~held], tv[~held], out
            ),
        }
        for name, model in models.items():
            if model is None:
                errors[name].append(np.nan)
            else:
                errors[name].append(_mean_error(model.runtime(out, nv[held]), tv[held]))
    return {
        name: None if not values or np.isnan(values).any() else float(np.mean(values))
        for name, values in errors.items()
    }


def fit_sizes(
    size: ArrayLike,
    n: ArrayLike,
    runtime: ArrayLike,
    target: float | None = None,
    known: Mapping[float, DowneyParameters] | None = None,
) -> SizeFits:
    """Fit T(N, P) to runs (problem size, nodes, runtime) and choose the model for problem
    size `target` (module docstring): each sibling size in the target's position (inside the
    range of sizes, or beyond it on the target's side) is left out in turn, every model is
    fitted on the others and predicts its runs; the smallest mean |T̂/T - 1| wins.

    `known` gives sizes' Downey curves already fitted (the store's, so the decision path
    fits nothing it has); the others are fitted here.

    Raises ValueError with fewer than two distinct problem sizes or unusable values.
    """
    sv, nv, tv = _checked(size, n, runtime)
    distinct = [float(v) for v in np.unique(sv)]
    if len(distinct) < 2:
        raise ValueError("borrowing a curve needs runs at two or more problem sizes")
    if target is not None and not (np.isfinite(target) and target > 0):
        raise ValueError("the target problem size must be finite and > 0")
    fits = _per_size_fits(sv, nv, tv, {k: v for k, v in (known or {}).items() if k in distinct})
    models = {
        "downey_interp": _interp_from(fits, sorted(fits)) if fits else None,
        "nt_pt": _fit_or_none(fit_nt_pt, sv, nv, tv),
        "power_law": _fit_or_none(fit_power_law, sv, nv, tv),
        "nearest_scaled": (
            None if target is None else _fit_or_none(fit_nearest_scaled, sv, nv, tv, target)
        ),
    }
    loso = _loso(sv, nv, tv, fits, _scored_sizes(distinct, target))
    fitted = [m for m in METHODS if models[m] is not None]
    if not fitted:
        raise ValueError("no model of T(N, P) can be fitted to these runs")
    scored = [m for m in fitted if loso[m] is not None]
    # None scored: the first fitted in METHODS order (the Downey family, the product's model).
    method = min(scored, key=lambda m: (loso[m], METHODS.index(m))) if scored else fitted[0]
    return SizeFits(
        tuple(distinct),
        method,
        loso,
        models["downey_interp"],
        models["nt_pt"],
        models["power_law"],
        models["nearest_scaled"],
    )


def borrow_curve(fits: SizeFits, size: float, n: ArrayLike) -> Curve:
    """The curve of problem size `size` borrowed from its siblings: the Downey fit (ADEPT)
    of the chosen model's runtimes at node counts `n` (the siblings' observed ones).

    It carries a reliability problem ``borrowed``, so that no policy shortens a time limit
    on it (a guess until the size has runs of its own).
    """
    nv = np.unique(np.asarray(n, dtype=float))
    if nv.size < 2:
        raise ValueError("a borrowed curve needs two or more node counts")
    result = fit(nv, fits.runtime(size, nv))
    curve = Curve.from_fit(result)
    score = fits.loso_error.get(fits.method)
    problem = ReliabilityProblem(
        problem=(
            f"curve borrowed from problem sizes {', '.join(f'{s:.12g}' for s in fits.sizes)} "
            f"({fits.method})"
        ),
        action="run this problem size to learn its own curve",
        suggest_n=None,
        detail={} if score is None else {"loso_error": score},
    )
    diagnostics = Diagnostics(
        curve.diagnostics.anomalies,
        curve.diagnostics.patterns,
        (*curve.diagnostics.reliability, problem),
    )
    return Curve.from_fit(result, diagnostics=diagnostics)
