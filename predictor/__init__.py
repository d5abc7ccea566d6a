"""Speedup curves for adaptalloc: the Downey model fitted the ADEPT way. Pure numpy/scipy.

import predictor
f = predictor.fit(n, runtime)              # one instance: f.A, f.sigma, f.pws_n, ...
predictor.predict(n, runtime, at=[16, 32])  # ADEPT: one instance per target size
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
    fit,
    fit_observations,
    predict,
    predict_observations,
)
from predictor.observations import Observations, prepare
from predictor.reliability import ReliabilitySettings
from predictor.segments import Segment

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
    "fit",
    "fit_observations",
    "predict",
    "predict_observations",
    "prepare",
]
