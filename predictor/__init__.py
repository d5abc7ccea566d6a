"""Speedup curves for adaptalloc: the Downey model fitted the ADEPT way. Pure numpy/scipy.

Usage::

    import predictor

    f = predictor.fit(n, runtime)                # the curve: f.A, f.sigma, f.pws_n, f.diagnostics
    predictor.predict(n, runtime, at=[16, 32])    # ADEPT: one instance per target size
    choice = predictor.choose_model(f.observations)  # ADEPT or a clearly better model
    f.speaker                                    # the zoo model that speaks where the runs
                                                 # show a shape Downey cannot (shape.py)
    curve = predictor.Curve.from_fit(f, choice=choice)  # what the store keeps, policies read
"""

from predictor.adept import FAST, PAPER, SearchSettings
from predictor.analysis import DiagnosisSettings
from predictor.anomalies import AnomalySettings
from predictor.curve import Curve
from predictor.diagnostics import Anomaly, Diagnostics, Pattern, ReliabilityProblem
from predictor.envelope import Domain, Envelope
from predictor.fitting import (
    METHODS,
    Fit,
    Predictions,
    choose_model,
    fit,
    fit_observations,
    predict,
    predict_observations,
)
from predictor.observations import Observations, prepare
from predictor.reliability import ReliabilitySettings
from predictor.segments import Segment
from predictor.shape import ShapeSettings, Speaker

__all__ = [
    "FAST",
    "METHODS",
    "PAPER",
    "Anomaly",
    "AnomalySettings",
    "Curve",
    "DiagnosisSettings",
    "Diagnostics",
    "Domain",
    "Envelope",
    "Fit",
    "Observations",
    "Pattern",
    "Predictions",
    "ReliabilityProblem",
    "ReliabilitySettings",
    "SearchSettings",
    "Segment",
    "ShapeSettings",
    "Speaker",
    "choose_model",
    "fit",
    "fit_observations",
    "predict",
    "predict_observations",
    "prepare",
]
