"""The predictor's peers in the benchmarks: the LM baseline and Extra-P, behind one signature.

Each peer takes training runs (n, runtime) and target sizes and returns predicted runtimes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

import predictor
from predictor.downey import FloatArray
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
    """Model selection (issue 10): ADEPT unless cross-validation finds a clearly better model."""
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
