"""ADEPT vs LM on synthetic curves with known truth (issue 17): error, false "identified", coverage.

SYNTHETIC ASSUMPTION (printed with the table): exact Downey curves × lognormal noise, drawn by
tests/benchmarks/synthetic.py with seed SEED, which chose nothing: the knee test's η0 (adept.py)
was chosen on seeds 17-18 and the interval constants (intervals.py) on seed 101.

Per (where the data end relative to the knee, spacing, noise) cell, PER_CELL cases: median
|relative error| of the runtime at interpolation and at 1.5-4x extrapolation targets for shipped
ADEPT, ADEPT without sections VIII-IX and the LM baseline; the share of cases whose knee the data
do not reach that the fit still calls identified; the share of targets whose truth lies in the
90% prediction interval.

"same valley": the share of the cell's cases whose ADEPT fit is unidentified while LM's fit
has the same mean squared relative error within 1% (both on Amdahl's line s = 2fA, which fits
the data equally well along its length) and a knee inside 2x the largest size: the two differ
only in where they end the line, ADEPT at its far end (adept.py, "the unidentified valley"),
LM near the data, where its start (the largest observed speedup) leaves it. Measured on seeds
17-18 (10 per cell and seed, median extrapolation error at 5% noise, ADEPT / LM): "at" even
13.2 / 5.5, uneven 20.2 / 8.9; "past" even 3.8 / 3.4, uneven 3.0 / 3.4; "before" even 20.9 /
36.1, uneven 13.2 / 35.4. Not sections VIII-IX (w/o VIII-IX gives the same errors in those
cells), not the distance weights (q = inf: 11.8, 19.9 in "at"), not a missed optimum (ADEPT's
uniform WSSRE within 5% of LM's in 236 of 240 cases); ending the valley near the data instead
("near") gives 2.8 / 7.4 in "at" but 34.3 / 43.9 in "before": the data cannot tell the two
ends apart, so which is right depends on where knees lie beyond data, which the suite's
positions assume and nothing measured here can choose. The "past / uneven / 5%" gap on seed
2026 (0.8 points, 6 cases) is not this mechanism (0% same valley) and reverses on seeds 17-18.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table

import predictor
from predictor import DiagnosisSettings
from predictor.downey import FloatArray

from .synthetic import LABEL, NOISES, POSITIONS, SPACINGS, Case, suite

SEED = 2026
PER_CELL = 6
VARIANTS = {
    "ADEPT": {"method": "adept"},
    "ADEPT w/o VIII-IX": {"method": "adept", "diagnosis": DiagnosisSettings(handle=False)},
    "LM": {"method": "lm"},
}


# Per variant: |relative errors| at the interpolation and extrapolation sizes, and which
# sizes the 90% interval covered.
Evaluation = dict[str, tuple[FloatArray, FloatArray, NDArray[np.bool_]]]


def evaluate(case: Case) -> Evaluation:
    """Per variant: (|errors| interp, |errors| extrap, covered by the 90% interval)."""
    at = np.r_[case.interp, case.extrap]
    truth = case.truth(at)
    obs = predictor.prepare(case.n, case.t)
    out: Evaluation = {}
    for name, kwargs in VARIANTS.items():
        p = predictor.predict_observations(obs, at, **kwargs)  # type: ignore[arg-type]
        err = np.abs(p.runtime / truth - 1.0)
        assert p.lower is not None
        assert p.upper is not None
        covered = (p.lower <= truth) & (truth <= p.upper)
        out[name] = (err[: case.interp.size], err[case.interp.size :], covered)
    return out


def mean_squared_relative_error(fit: predictor.Fit, n: FloatArray, t: FloatArray) -> float:
    return float(np.mean((1.0 - fit.runtime(n) / t) ** 2))


def same_valley(case: Case, adept: predictor.Fit) -> bool:
    """ADEPT unidentified, LM as good within 1% with a knee inside 2x the largest size."""
    lm = predictor.fit(case.n, case.t, method="lm")
    mine = mean_squared_relative_error(adept, case.n, case.t)
    theirs = mean_squared_relative_error(lm, case.n, case.t)
    knee = lm.A if lm.sigma <= 1 else lm.A + (lm.A - 1) * lm.sigma
    tied = abs(mine - theirs) <= 0.01 * max(mine, theirs) + 1e-12
    return (not adept.identified) and tied and knee <= 2 * case.n[-1]


@pytest.mark.benchmark
def test_synthetic_suite(capsys: pytest.CaptureFixture[str]) -> None:
    cases = suite(PER_CELL, SEED)
    cells: dict[tuple[str, str, float], list[tuple[Case, Evaluation, bool]]] = {}
    valley: dict[tuple[str, str, float], list[bool]] = {}
    for case in cases:
        fitted = predictor.fit(case.n, case.t)
        key = (case.position, case.spacing, case.noise)
        cells.setdefault(key, []).append((case, evaluate(case), fitted.identified))
        valley.setdefault(key, []).append(same_valley(case, fitted))

    def pct(values: Sequence[FloatArray]) -> float:
        joined = np.concatenate(values) if values else np.zeros(0)
        return 100.0 * float(np.median(joined)) if joined.size else float("nan")

    view = Table(title=f"Median |error| %, interp / extrap; {LABEL}, seed {SEED}")
    view.add_column("data end / spacing / noise")
    for name in VARIANTS:
        view.add_column(name, justify="right")
    view.add_column("false identified", justify="right")
    view.add_column("90% covers (ADEPT / LM)", justify="right")
    view.add_column("same valley", justify="right")
    hidden_identified: list[bool] = []
    covered: dict[str, list[NDArray[np.bool_]]] = {"ADEPT": [], "LM": []}
    worse_cells = []
    for position in POSITIONS:
        for spacing in SPACINGS:
            for noise in NOISES:
                rows = cells[(position, spacing, noise)]
                medians = {}
                for name in VARIANTS:
                    medians[name] = (
                        pct([r[1][name][0] for r in rows]),
                        pct([r[1][name][1] for r in rows]),
                    )
                hidden = [ident for case, _, ident in rows if not case.visible]
                hidden_identified += hidden
                cov = {m: np.concatenate([r[1][m][2] for r in rows]) for m in covered}
                for m, collected in covered.items():
                    collected.append(cov[m])
                if medians["ADEPT"][1] > medians["LM"][1] + 0.5:
                    worse_cells.append((position, spacing, noise))
                view.add_row(
                    f"{position} / {spacing} / {noise:.0%}",
                    *(f"{i:.1f} / {e:.1f}" for i, e in medians.values()),
                    f"{np.mean(hidden):.0%} of {len(hidden)}" if hidden else "-",
                    f"{cov['ADEPT'].mean():.0%} / {cov['LM'].mean():.0%}",
                    f"{np.mean(valley[(position, spacing, noise)]):.0%}",
                )
    false_rate = float(np.mean(hidden_identified))
    coverage = {m: float(np.concatenate(v).mean()) for m, v in covered.items()}
    with capsys.disabled():
        Console(width=160).print(view)
        print(
            f"false identified over all hidden-knee cases: {false_rate:.1%} "
            f"({len(hidden_identified)} cases); 90% interval coverage: ADEPT "
            f"{coverage['ADEPT']:.1%}, LM {coverage['LM']:.1%}; cells where ADEPT's median "
            f"extrapolation error exceeds LM's by > 0.5 points: {worse_cells or 'none'}"
        )
    # The aims of issue 17 that this suite measures (seeded, so deterministic).
    assert false_rate <= 0.05
    assert 0.85 <= coverage["ADEPT"] <= 0.95
    assert len(hidden_identified) >= PER_CELL * len(SPACINGS) * len(NOISES)
