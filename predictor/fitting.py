"""The predictor's public entry points: fit a curve, predict runtimes, one result type.

`fit` returns the Downey curve for all sizes: ADEPT with uniform weights, after its analysis
of the observations (analysis.py: specially optimized sizes, the declining tail, anomalous
points, stepwise phases; one instance per phase) and with its reliability judgment; or the LM
baseline, which fits the observations as they are. `predict` follows ADEPT and fits one
instance per target size with distance weights (section V.B), on the phase of the observation
closest to the target; with method="lm" it evaluates the single LM instance.

Where the runs show a shape the Downey model cannot express (shape.py: the runtime rising
after a minimum, or the last step scaling better than the one before), ADEPT's fit says so
(`Fit.speaker`, a pattern in its diagnostics) and another model of the zoo speaks at the sizes
concerned; the Downey prediction stays in the interval as an alternative (intervals.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from predictor.adept import FAST, SearchSettings, search
from predictor.analysis import Analysis, DiagnosisSettings, analyze, untouched
from predictor.diagnostics import Diagnostics, Pattern
from predictor.downey import (
    FloatArray,
    IntArray,
    max_useful_size,
    processor_working_set,
    relative_runtime,
    s_to_sigma,
)
from predictor.envelope import Domain, Envelope
from predictor.intervals import LEVEL, half_width, spread
from predictor.lm import fit_lm
from predictor.models import Choice, SelectionSettings, choose
from predictor.objective import max_relative_error
from predictor.observations import MAX_SIZES, Observations, prepare, thin
from predictor.reliability import Instance, judge, mixed_sizes
from predictor.segments import Segment, segment_runtime
from predictor.shape import SHAPES, ShapeSettings, Speaker, speaker

METHODS = ("adept", "lm")
# Targets per search call in predict: bounds memory (a search holds ~10^4 instances per target).
TARGET_BATCH = 256
# Columns of adept.SearchResult's plausible instances.
PLAUSIBLE = 6
DIAGNOSE = DiagnosisSettings()


@dataclass(frozen=True)
class Fit:
    """A fitted Downey curve and its diagnostics.

    A, sigma and identified describe the instance of the last phase (the largest sizes, the
    one that matters for scaling decisions); `segments` holds every phase's instance and
    `runtime` evaluates the phase of the closest observation. t1 is the observed serial
    runtime when t1_known, else the last phase's model T(1). fit_error is the largest relative
    runtime error at the observed sizes the model is meant to explain (not the ones found
    anomalous; ADEPT Table 3).
    `identified` is False when the observations only determine the serial fraction (adept.py,
    "the unidentified valley"). status is "ok" or "failed"; a failed fit keeps its last
    parameters and a message. `plausible`: where the last phase is not identified, the
    instances of that phase the data cannot tell from it (adept.py, "Plausible instances"),
    which prediction intervals reckon with; empty where it is identified. `speaker`: the model
    that speaks where the runs show a shape the Downey model cannot express (shape.py), or None.
    """

    method: str
    A: float
    sigma: float
    t1: float
    t1_known: bool
    fit_error: float
    identified: bool
    status: str
    message: str
    observations: Observations
    segments: tuple[Segment, ...]
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    envelope: Envelope | None = field(default=None, repr=False)
    model: str = "downey"
    plausible: tuple[Segment, ...] = ()
    speaker: Speaker | None = None

    @property
    def mode(self) -> str:
        """ "low" for σ ≤ 1, "high" otherwise (the two agree at σ = 1)."""
        return "low" if self.sigma <= 1.0 else "high"

    @property
    def max_useful_n(self) -> int | None:
        """Smallest whole size at which the speedup reaches A: ⌈2A-1⌉ or ⌈A+Aσ-σ⌉.

        None when the fit is not identified: the observations show no knee, and the
        representative's A says nothing about where one is.
        """
        if not self.identified:
            return None
        return int(np.ceil(max_useful_size(self.A, self.sigma) - 1e-9))

    @property
    def pws_n(self) -> int:
        """Processor working set size, the smallest n maximising S(n)²/n."""
        return int(processor_working_set(self.A, self.sigma))

    def runtime(self, n: ArrayLike) -> FloatArray:
        """Predicted runtime (the observations' unit) from the phase of the closest observation."""
        return segment_runtime(self.segments, n)

    def speedup(self, n: ArrayLike) -> FloatArray:
        """T(1)/T(n) relative to the last phase's T(1)."""
        out: FloatArray = self.t1 / self.runtime(n)
        return out

    def efficiency(self, n: ArrayLike) -> FloatArray:
        out: FloatArray = self.speedup(n) / np.asarray(n, dtype=float)
        return out


@dataclass(frozen=True)
class Predictions:
    """Per-target predictions; every array has the targets' length.

    runtime: the Downey instance's, or the speaker's where one speaks (shape.py).
    speedup is relative to each target instance's T(1), efficiency = speedup / n.
    A, sigma: each target's Downey instance (also where a speaker gives the runtime).
    residual: RMS of log(T_model/t) of each target's instance over the observations.
    lower, upper: the runtime's prediction interval at `level`, runtime·exp(∓q·spread)
    (intervals.py); spread is s(n), which with ADEPT reckons with the Downey instance's
    runtime where a speaker gives the prediction and with the plausible instances of an
    unidentified fit (adept.py, "Plausible instances") as much as PLAUSIBLE_WEIGHT says.
    speaker: its reason ("accelerating", "rising") per target where it speaks, "" elsewhere;
    None with LM.
    """

    n: IntArray
    runtime: FloatArray
    speedup: FloatArray
    efficiency: FloatArray
    A: FloatArray
    sigma: FloatArray
    residual: FloatArray | None = None
    lower: FloatArray | None = None
    upper: FloatArray | None = None
    level: float = LEVEL
    spread: FloatArray | None = None
    speaker: tuple[str, ...] | None = None


def residual_rms(obs: Observations, A: FloatArray, sigma: FloatArray, t1: FloatArray) -> FloatArray:
    """Per target, the RMS of log(T_model(n_i)/t_i) over the observations, for its instance."""
    model = t1[:, None] * relative_runtime(obs.n[None, :].astype(float), A[:, None], sigma[:, None])
    squared = np.log(model / obs.runtime[None, :]) ** 2
    # np.mean's arithmetic (add.reduce, then divide by the count) without its Python wrapper.
    out: FloatArray = np.sqrt(np.add.reduce(squared, axis=1) / squared.shape[1])
    return out


def _normalised(obs: Observations) -> tuple[FloatArray, FloatArray, float]:
    """Sizes, runtimes divided by their geometric mean, and that mean.

    Every objective uses relative errors, so the fit does not depend on the unit; dividing
    keeps runtimes near 1 whatever unit they came in (1e-9 s or 1e9 s alike).
    """
    unit = float(np.exp(np.mean(np.log(obs.runtime))))
    return obs.n.astype(float), obs.runtime / unit, unit


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


def _targets(at: ArrayLike) -> IntArray:
    arr = np.atleast_1d(np.asarray(at, dtype=float))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("at must be a non-empty list of sizes")
    if not np.all(np.isfinite(arr)) or np.any(arr < 1) or np.any(arr != np.round(arr)):
        raise ValueError("at must hold whole sizes of at least 1")
    out: IntArray = arr.astype(np.int64)
    return out


def _analysis(obs: Observations, method: str, diagnosis: DiagnosisSettings) -> Analysis:
    """ADEPT's analysis of the observations; LM and `handle=False` use them as they are."""
    if method == "lm" or not diagnosis.handle:
        return untouched(len(obs))
    return analyze(obs, diagnosis.anomalies)


def thinned_note(obs: Observations) -> str:
    """The note that says the fit used a subset of the sizes (observations.thin), or ""."""
    if not obs.thinned:
        return ""
    return (
        f"fitted on {len(obs)} of {len(obs) + len(obs.thinned)} distinct sizes (at most "
        f"{MAX_SIZES}, spread evenly in log n: ADEPT's work grows with the 4th power of sizes)"
    )


def _fit_lm(obs: Observations) -> Fit:
    n, t, unit = _normalised(obs)
    res = fit_lm(n, t)
    segment = Segment(tuple(int(k) for k in obs.n), res.A, res.sigma, res.scale * unit, True)
    return Fit(
        method="lm",
        A=res.A,
        sigma=res.sigma,
        t1=segment.t1,
        t1_known=obs.t1_known,
        fit_error=max_relative_error(res.scale * relative_runtime(n, res.A, res.sigma), t),
        identified=True,
        status="ok" if res.converged else "failed",
        message=res.message,
        observations=obs,
        segments=(segment,),
    )


def shape_speaker(obs: Observations, analysis: Analysis, shapes: ShapeSettings) -> Speaker | None:
    """The model that speaks for ADEPT's analysed observations (shape.py), or None.

    Acceleration is read from the last phase's full-weight points, a rise from the analysis'
    declining tail; the rise's model is fitted to every point but individual anomalous ones
    and points left out as not among an optimized code's sizes."""
    tail = [a.n for a in analysis.anomalies if a.kind in ("decline", "ambiguous_final")]
    is_tail = np.isin(obs.n, tail)
    usable = (analysis.keep | is_tail) & (analysis.weight > 0)
    last = np.zeros(len(obs), dtype=bool)
    last[analysis.phases[-1]] = True
    normal = last & analysis.keep & (analysis.weight >= 1.0)
    tail_kept = bool(np.all(analysis.keep[is_tail]))
    return speaker(obs.n.astype(float), obs.runtime, normal, usable, bool(tail), tail_kept, shapes)


def speaker_pattern(spoken: Speaker | None) -> tuple[Pattern, ...]:
    """The pattern that says which shape beyond the Downey model the runs show."""
    if spoken is None:
        return ()
    return (Pattern(kind=spoken.reason, phases=(spoken.sizes,)),)


def fit_observations(
    obs: Observations,
    method: str = "adept",
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
    diagnosis: DiagnosisSettings = DIAGNOSE,
    shapes: ShapeSettings = SHAPES,
) -> Fit:
    """Fit prepared observations (see `fit`)."""
    _check_method(method)
    if method == "lm":
        return _fit_lm(obs)
    domain = domain or Domain()
    # Judged on every size, before thinning leaves some out.
    mixed = mixed_sizes(obs.n, obs.spread, diagnosis.reliability) if diagnosis.handle else None
    obs = thin(obs)
    analysis = _analysis(obs, method, diagnosis)
    n, t, unit = _normalised(obs)
    phases = [
        (idx, search(n[idx], t[idx], None, settings, domain, analysis.weight[idx]))
        for idx in analysis.phases
    ]
    fitted = tuple(
        Segment(
            sizes=tuple(int(k) for k in obs.n[idx]),
            A=float(found.A[0]),
            sigma=float(s_to_sigma(found.s[0])),
            t1=float(found.scale[0]) * unit,
            identified=bool(found.identified[0]),
        )
        for idx, found in phases
    )
    main_idx, main = phases[-1]  # the last phase: the largest sizes
    explained = analysis.keep & (analysis.weight >= 1.0)
    fit_error = max_relative_error(
        segment_runtime(fitted, obs.n[explained]), obs.runtime[explained]
    )
    reliability = (
        judge(
            n[main_idx],
            t[main_idx],
            analysis.weight[main_idx] / analysis.weight[main_idx].sum(),
            Instance(float(main.A[0]), float(main.s[0]), float(main.scale[0])),
            bool(main.identified[0]),
            fit_error,
            float(t[main_idx][0]) if n[main_idx][0] == 1 else None,
            diagnosis.reliability,
            domain,
        )
        if diagnosis.handle
        else ()
    ) + ((mixed,) if mixed is not None else ())
    head = fitted[-1]
    plausible = (
        ()
        if head.identified
        else tuple(
            Segment(head.sizes, float(A), float(s_to_sigma(s)), float(c) * unit, False)
            for A, s, c in _distinct(
                main.plausible.A[0], main.plausible.s[0], main.plausible.scale[0]
            )
        )
    )
    spoken = shape_speaker(obs, analysis, shapes)
    return Fit(
        method="adept",
        A=head.A,
        sigma=head.sigma,
        # Observed T(1) when there is one (with several phases the last one's model T(1) is
        # not a runtime anybody measured).
        t1=float(obs.runtime[0]) if obs.t1_known else head.t1,
        t1_known=obs.t1_known,
        fit_error=fit_error,
        identified=head.identified,
        status="ok",
        message=thinned_note(obs),
        observations=obs,
        segments=fitted,
        diagnostics=Diagnostics(
            analysis.anomalies, analysis.patterns + speaker_pattern(spoken), reliability
        ),
        envelope=main.envelope,
        plausible=plausible,
        speaker=spoken,
    )


def _distinct(A: FloatArray, s: FloatArray, c: FloatArray) -> list[tuple[float, float, float]]:
    """The distinct (A, s, scale) triples, in order."""
    out: list[tuple[float, float, float]] = []
    for triple in zip(A.tolist(), s.tolist(), c.tolist(), strict=True):
        if triple not in out:
            out.append(triple)
    return out


def fit(
    n: ArrayLike,
    runtime: ArrayLike,
    method: str = "adept",
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
    diagnosis: DiagnosisSettings = DIAGNOSE,
    shapes: ShapeSettings = SHAPES,
) -> Fit:
    """The Downey curve of runs (n, runtime); repeated n are averaged.

    Raises ValueError for unusable input (see observations.validate); a fit that does not
    converge is returned with status "failed".
    """
    _check_method(method)
    return fit_observations(prepare(n, runtime), method, settings, domain, diagnosis, shapes)


@dataclass(frozen=True)
class TargetFits:
    """ADEPT's Downey instance per target before any other model speaks (`predict`'s first
    half; `finish` is the second). obs: the thinned observations; plausible: (T, PLAUSIBLE)
    runtimes of each target's plausible instances (the instance itself where identified)."""

    obs: Observations
    analysis: Analysis
    targets: IntArray
    A: FloatArray
    sigma: FloatArray
    scale: FloatArray
    plausible: FloatArray


def target_fits(
    obs: Observations,
    at: ArrayLike,
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
    diagnosis: DiagnosisSettings = DIAGNOSE,
) -> TargetFits:
    """ADEPT's search for every target (section V.B): each distinct size once, on the phase
    of its closest observation, in batches that bound memory."""
    targets = _targets(at)
    obs = thin(obs)
    analysis = _analysis(obs, "adept", diagnosis)
    n, t, unit = _normalised(obs)
    distinct, back = np.unique(targets, return_inverse=True)
    phase_of = analysis.phase_of_closest(n, distinct.astype(float))
    A_d, s_d, c_d = np.empty(distinct.size), np.empty(distinct.size), np.empty(distinct.size)
    alt_A, alt_s, alt_c = (np.empty((distinct.size, PLAUSIBLE)) for _ in range(3))
    for idx in analysis.phases:
        mine = np.flatnonzero(phase_of == analysis.phase[idx[0]])
        for chunk in np.array_split(mine, -(-mine.size // TARGET_BATCH)) if mine.size else []:
            found = search(
                n[idx],
                t[idx],
                distinct[chunk].astype(float),
                settings,
                domain,
                analysis.weight[idx],
            )
            A_d[chunk], s_d[chunk], c_d[chunk] = found.A, found.s, found.scale
            alt_A[chunk], alt_s[chunk] = found.plausible.A, found.plausible.s
            alt_c[chunk] = found.plausible.scale
    plausible = (
        alt_c[back]
        * unit
        * relative_runtime(targets[:, None], alt_A[back], s_to_sigma(alt_s[back]))
    )
    return TargetFits(
        obs, analysis, targets, A_d[back], s_to_sigma(s_d)[back], c_d[back] * unit, plausible
    )


def finish(fits: TargetFits, shapes: ShapeSettings = SHAPES, level: float = LEVEL) -> Predictions:
    """ADEPT's predictions from its per-target instances: another model speaks where the runs
    show a shape the Downey model cannot express (shape.py), and every target gets its
    interval (intervals.py)."""
    spoken = shape_speaker(fits.obs, fits.analysis, shapes)
    alternatives = None
    runtime = fits.scale * relative_runtime(fits.targets, fits.A, fits.sigma)
    reason = ("",) * fits.targets.size
    if spoken is not None:
        speaks = spoken.speaks(fits.targets)
        # The Downey instance's runtime becomes an alternative where the speaker speaks.
        alternatives = runtime[:, None]
        runtime = spoken.over(fits.targets, runtime)
        reason = tuple(spoken.reason if k else "" for k in speaks)
    return _predictions(
        fits.obs, fits.targets, runtime, fits, "adept", alternatives, level, reason, fits.plausible
    )


def _predictions(
    obs: Observations,
    targets: IntArray,
    runtime: FloatArray,
    instance: TargetFits | Fit,
    method: str,
    alternatives: FloatArray | None,
    level: float,
    reason: tuple[str, ...] | None,
    plausible: FloatArray | None = None,
) -> Predictions:
    """Predictions with their spread and interval (intervals.py)."""
    if isinstance(instance, TargetFits):
        A, sigma, scale = instance.A, instance.sigma, instance.scale
    else:
        A = np.full(targets.size, instance.A)
        sigma = np.full(targets.size, instance.sigma)
        scale = np.full(targets.size, instance.t1)
    fitted = thin(obs)
    residual = residual_rms(fitted, A, sigma, scale)
    at = targets.astype(float)
    ends = (float(obs.n[0]), float(obs.n[-1]))
    s_n = spread(at, residual, *ends, method, len(fitted), runtime, alternatives, plausible)
    half = half_width(
        at, residual, *ends, method, level, len(fitted), runtime, alternatives, plausible
    )
    return Predictions(
        n=targets,
        runtime=runtime,
        speedup=scale / runtime,
        efficiency=scale / (runtime * targets),
        A=A,
        sigma=sigma,
        residual=residual,
        lower=runtime * np.exp(-half),
        upper=runtime * np.exp(half),
        level=level,
        spread=s_n,
        speaker=reason,
    )


def predict_observations(
    obs: Observations,
    at: ArrayLike,
    method: str = "adept",
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
    diagnosis: DiagnosisSettings = DIAGNOSE,
    shapes: ShapeSettings = SHAPES,
) -> Predictions:
    """Predictions at sizes `at` from prepared observations (see `predict`)."""
    _check_method(method)
    if method == "lm":
        targets = _targets(at)
        single = _fit_lm(obs)
        runtime = single.t1 * relative_runtime(targets, single.A, single.sigma)
        return _predictions(obs, targets, runtime, single, "lm", None, LEVEL, None)
    return finish(target_fits(obs, at, settings, domain, diagnosis), shapes)


def predict(
    n: ArrayLike,
    runtime: ArrayLike,
    at: ArrayLike,
    method: str = "adept",
    settings: SearchSettings = FAST,
    domain: Domain | None = None,
    diagnosis: DiagnosisSettings = DIAGNOSE,
    shapes: ShapeSettings = SHAPES,
) -> FloatArray:
    """Predicted runtimes at sizes `at`; ADEPT fits one instance per target (section V.B),
    and another model speaks where the runs show a shape the Downey model cannot express
    (shape.py)."""
    return predict_observations(
        prepare(n, runtime), at, method, settings, domain, diagnosis, shapes
    ).runtime


def choose_model(
    obs: Observations,
    settings: SelectionSettings | None = None,
    search_settings: SearchSettings = FAST,
    diagnosis: DiagnosisSettings = DIAGNOSE,
) -> Choice:
    """Cross-validate ADEPT and the other models on prepared observations (models/selection.py).

    ADEPT takes part with its per-target predictions, as `predict` makes them.
    """

    def adept(n: FloatArray, t: FloatArray, at: FloatArray) -> FloatArray:
        return predict(n, t, at, "adept", search_settings, None, diagnosis)

    return choose(thin(obs), adept, settings)
