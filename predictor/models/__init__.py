"""Performance models beside the Downey model, and choosing one per application.

    from predictor.models import MODELS, choose
    MODELS["sevcik"].fit(n, t, w, None).runtime([64])

strong.py: Amdahl, Dowdy, Chiang, geometric, Sevcik, Hockney (fitted on nodes and runtimes,
competing with ADEPT in selection.py). sized.py: models that need a problem size or task
figures (N-T/P-T polynomials, Gustafson's scaled speedup, the master-worker optimum and the
knee of a master-worker speedup). roofline.py: the roofline model (attainable performance from
peak compute, memory bandwidth and operational intensity) and the intensity two machines'
performance ratio implies.
"""

from predictor.models import strong
from predictor.models.base import MODELS, ModelFit, ModelSpec
from predictor.models.roofline import (
    IntensityEstimate,
    attainable,
    intensity_from_ratio,
    performance_ratio,
    ridge_point,
)
from predictor.models.selection import Choice, ModelScore, SelectionSettings, choose
from predictor.models.sized import (
    GustafsonFit,
    NTModel,
    PTModel,
    fit_gustafson,
    fit_nt,
    fit_pt,
    master_worker_optimum,
    master_worker_phase,
    saturation_knee,
)

parallel_fraction_from_speedup = strong.parallel_fraction_from_speedup

__all__ = [
    "MODELS",
    "Choice",
    "GustafsonFit",
    "IntensityEstimate",
    "ModelFit",
    "ModelScore",
    "ModelSpec",
    "NTModel",
    "PTModel",
    "SelectionSettings",
    "attainable",
    "choose",
    "fit_gustafson",
    "fit_nt",
    "fit_pt",
    "intensity_from_ratio",
    "master_worker_optimum",
    "master_worker_phase",
    "parallel_fraction_from_speedup",
    "performance_ratio",
    "ridge_point",
    "saturation_knee",
]
