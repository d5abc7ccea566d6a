"""Speedup curves for adaptalloc: the Downey model fitted the ADEPT way. Pure numpy/scipy.

import predictor
f = predictor.fit(n, runtime)              # one instance: f.A, f.sigma, f.pws_n, ...
predictor.predict(n, runtime, at=[16, 32])  # ADEPT: one instance per target size
"""

from predictor.adept import FAST, PAPER, SearchSettings
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

__all__ = [
    "FAST",
    "METHODS",
    "PAPER",
    "Anomaly",
    "Curve",
    "Diagnostics",
    "Domain",
    "Envelope",
    "Fit",
    "Observations",
    "Pattern",
    "Predictions",
    "ReliabilityProblem",
    "SearchSettings",
    "fit",
    "fit_observations",
    "predict",
    "predict_observations",
    "prepare",
]
