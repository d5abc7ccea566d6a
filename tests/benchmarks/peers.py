"""The predictor's peers in the benchmarks: the LM baseline and Extra-P, behind one signature.

Each peer takes training runs (n, runtime) and target sizes and returns predicted runtimes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

import predictor
from predictor.downey import FloatArray, relative_runtime
from predictor.models import MODELS
from predictor.models.selection import model_predictor

Predict = Callable[[FloatArray, FloatArray, FloatArray], FloatArray]


def adept(n: FloatArray, t: FloatArray, at: FloatArray) -> FloatArray:
    return predictor.predict(n, t, at, method="adept")


def adept_plain(n: FloatArray, t: FloatArray, at: FloatArray) -> FloatArray:
    """ADEPT without its anomaly and pattern handling (sections VIII-IX)."""
    plain = predictor.DiagnosisSettings(handle=False)
    return predictor.predict(n, t, at, method="adept", diagnosis=plain)


def lm(n: FloatArray, t: FloatArray, at: FloatArray) -> FloatArray:
    return predictor.predict(n, t, at, method="lm")


# Starts of the multi-start LM: A0 = k × the largest observed speedup, σ0; besides the
# thesis' start. Fixed, so the fit is deterministic.
MULTI_START_A = (1.0, 4.0, 16.0)
MULTI_START_SIGMA = (0.0, 1.0, 4.0)


def lm_multistart_fit(n: FloatArray, t: FloatArray) -> tuple[float, float, float, float]:
    """(A, σ, T(1), cost): plain multi-start Levenberg-Marquardt on Σ (1 - c τ(n_i; A, σ)/t_i)²
    with the scale c free (an observed n = 1 is one more point), from the thesis' start and
    every (k·S_max, σ0) of MULTI_START_A × MULTI_START_SIGMA; the start with the lowest cost
    wins. The peer of the outside measurement ("relative runtime error, free scale").
    """
    from scipy.optimize import least_squares  # noqa: PLC0415

    obs = predictor.prepare(n, t)
    nv, unit = obs.n.astype(float), float(np.exp(np.mean(np.log(obs.runtime))))
    tv = obs.runtime / unit
    c0 = float(tv[0]) if nv[0] == 1 else float(nv[0] * tv[0])
    top = float(np.max(c0 / tv))

    def residuals(p: FloatArray) -> FloatArray:
        tau = relative_runtime(nv, max(float(p[0]), 1.0), abs(float(p[1])))
        out: FloatArray = 1.0 - np.exp(p[2]) * tau / tv
        return out

    starts = [(top, 0.0)] + [(k * top, s) for k in MULTI_START_A for s in MULTI_START_SIGMA]
    # LM needs as many residuals as parameters; two sizes (extrapolating a 4-size curve)
    # leave the fit underdetermined, which the trust-region method accepts.
    method = "lm" if nv.size >= 3 else "trf"
    best = None
    for A0, s0 in dict.fromkeys(starts):
        with np.errstate(all="ignore"):
            res = least_squares(residuals, [A0, s0, np.log(c0)], method=method, max_nfev=2000)
        if np.all(np.isfinite(res.x)) and (best is None or res.cost < best.cost):
            best = res
    assert best is not None
    A, sigma = max(float(best.x[0]), 1.0), abs(float(best.x[1]))
    return A, sigma, float(np.exp(best.x[2])) * unit, 2.0 * float(best.cost)


def lm_multistart(n: FloatArray, t: FloatArray, at: FloatArray) -> FloatArray:
    A, sigma, t1, _ = lm_multistart_fit(n, t)
    out: FloatArray = t1 * relative_runtime(np.asarray(at, dtype=float), A, sigma)
    return out


def extrap(n: FloatArray, t: FloatArray, at: FloatArray) -> FloatArray:
    """Extra-P's basic single-parameter modeler (PMNF) on cost = runtime × n, as its authors
    suggest for strong scaling; runtime = cost(n)/n.

    Extra-P asks for five sizes by default; the interpolation protocol gives three, so the
    minimum is lowered to what each protocol provides. Repeated sizes are averaged first, as
    for the other methods.
    """
    # Imported on first use: Extra-P pulls in PySide6 and matplotlib, a second of start-up.
    from extrap.entities.callpath import Callpath  # noqa: PLC0415
    from extrap.entities.coordinate import Coordinate  # noqa: PLC0415
    from extrap.entities.measurement import Measurement  # noqa: PLC0415
    from extrap.entities.metric import Metric  # noqa: PLC0415
    from extrap.modelers.single_parameter.basic import SingleParameterModeler  # noqa: PLC0415

    obs = predictor.prepare(n, t)
    modeler = SingleParameterModeler()
    modeler.min_measurement_points = min(5, len(obs))
    measurements = [
        Measurement(Coordinate(float(k)), Callpath("app"), Metric("time"), float(k * r))
        for k, r in zip(obs.n, obs.runtime, strict=True)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        function = modeler.model([measurements])[0].hypothesis.function
    return np.array([function.evaluate(float(k)) / k for k in at])


def selected(n: FloatArray, t: FloatArray, at: FloatArray) -> FloatArray:
    """Model selection: ADEPT unless cross-validation finds a clearly better model."""
    choice = predictor.choose_model(predictor.prepare(n, t))
    if choice.fit is None:
        return adept(n, t, at)
    return choice.fit.runtime(at)


def chosen_model(n: FloatArray, t: FloatArray) -> str:
    return predictor.choose_model(predictor.prepare(n, t)).model


#: Every model of predictor.models on its own, fitted with uniform weights.
MODEL_PEERS: dict[str, Predict] = {name: model_predictor(name) for name in MODELS}

PEERS: dict[str, Predict] = {
    "ADEPT": adept,
    "ADEPT w/o VIII-IX": adept_plain,
    "LM": lm,
    "Extra-P": extrap,
}
