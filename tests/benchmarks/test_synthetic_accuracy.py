"""ADEPT vs LM on synthetic curves with known truth: error, false "identified", coverage.

SYNTHETIC ASSUMPTION (printed with the table): exact Downey curves × lognormal noise, drawn by
tests/benchmarks/synthetic.py with seed SEED, which chose nothing: the knee test's η0 (adept.py)
was chosen on seeds 17-18, the interval's floor and distance term (intervals.py) on seed 101;
its conformal multipliers and the weight of the plausible instances are chosen on the real
curves (tests/benchmarks/test_predictor_real.py), and the interval over-covers here (95.8%
on seed 2026, 2026-11-28): exact Downey curves miss by less than real ones.

Per (where the data end relative to the knee, spacing, noise) cell, PER_CELL cases: median
|relative error| of the runtime at interpolation and at 1.5-4x extrapolation targets for shipped
ADEPT, ADEPT without sections VIII-IX and the LM baseline; the share of cases whose knee the data
do not reach that the fit still calls identified; the share of targets whose truth lies in the
90% prediction interval.

"same valley": the share of the cell's cases whose ADEPT fit is unidentified while LM's fit
has the same mean squared relative error within 1% (both on Amdahl's line s = 2fA, which fits
the data equally well along its length) and a knee inside 2x the largest size: the two differ
only in where they end the line, ADEPT at its far end (adept.py, "the unidentified valley"),
LM near the data, where its start (the largest observed speedup) leaves it. The data cannot
tell the ends apart, so an unidentified fit keeps its plausible instances (adept.py,
"Plausible instances"), whose weight in the interval is chosen on the real curves (0 today);
the coverage line prints it with and without the alternatives' distance D (intervals.py).
Which end is the better point estimate depends on where knees lie beyond the data, which the
suite's positions assume: tests/benchmarks/test_valley_choice.py measures the candidates, and
choosing between them by leave-one-out over sizes, on seeds 17-18.

"aim missed": the cells where ADEPT's median error exceeds LM's (beyond the printed rounding)
or, where the knee is out of reach ("before"), is not below it, each with the two-sided p of a
paired Wilcoxon signed-rank test on the cases' median errors (ADEPT against LM): the aim
is none. With 6 cases per cell (the earlier setting) 8 of 18 cells missed, mostly by 0.1-0.8
points that no test separates from another seed's draw; 16 cases per cell (about a minute).
"multi-start LM" (peers.lm_multistart, 10 starts, free scale) is the lowest-cost Downey fit,
printed to tell a better fit from a luckier start.

Measured 2026-11-23, seed 2026, 16 cases per cell: 7 cells miss, 3 beyond noise (p < 0.05),
all extrapolation where the data end at the knee ("at"): even 2% 7.6 vs LM 3.7, uneven 2%
14.0 vs 3.2, uneven 0% 0.1 vs 0.0. Mechanism: there the knee test and the parsimony rule
(adept.py) keep Amdahl's law continued (the valley's far end) where the knee lies just past
the data; LM's start (the largest observed speedup) ends the valley near the data, which
this position rewards; ending it there ("near", test_valley_choice.py) gives 2.8 and 2.1 in
those two cells but 28-61% in the "before" cells (ADEPT 0-22%, LM 29-45%) and 4.8x the error
on the real curves, and σ = 1 ("sigma1") loses both. No point estimate wins both positions
from data that cannot tell them apart; the interval spans both ends instead (coverage 83-95%
in those cells). Every "before" cell meets the aim (ADEPT 3.2-21.5% against LM 29-45%);
false identified 0.8% of 128 hidden-knee cases; 90% coverage 93.8% (LM 90.1%; 92.8% before
the misfit term for fits on 3 sizes, intervals.py).

Measured 2026-11-26 after the Gauss-Newton polish (predictor/polish.py) and the valley's near
end where f·n_max > 3 (adept.py, "A valley that needs a high variance"), seed 2026, 16 cases
per cell: 5 cells miss, 1 beyond noise. at / uneven / 0% extrap 0.1 -> 0.0 (LM 0.0; the
pattern search had stopped short of the exact fit), at / even / 2% 7.6 -> 3.7 (LM 3.7), at /
even / 5% 5.2 -> 4.9 (LM 3.5, p=0.56); every "before" and "past" cell as before. Still
missed beyond noise: at / uneven / 2%, 14.0 vs LM 3.2 (p=0.01): tests/benchmarks/
test_valley_choice.py measures the rules tried for it (a bend test at the data's end, the
knee at 1.5x the largest size, averaging by leave-last-out error), none of which wins there
without losing the "before" cells or the real curves. Coverage 93.9%, false identified 0.8%.
tests/benchmarks/test_knee_diagnosis.py takes that cell case by case: the parsimony rule
costs the most (three Downey fits with the knee just inside the data replaced by Amdahl's law
continued), and no level of its F-test separates those knees from the noise knees it removes
before the knee.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table
from scipy.stats import wilcoxon

import predictor
from predictor import DiagnosisSettings
from predictor.downey import FloatArray
from predictor.intervals import interval

from .peers import lm_multistart
from .synthetic import LABEL, NOISES, POSITIONS, SPACINGS, Case, suite

SEED = 2026
# 16 cases per cell: with 6, cells differed by 0.1-0.8 points that no test could tell from
# noise; the paired test below says which differences the cases support.
PER_CELL = 16
# A cell's miss counts as shown when the paired signed-rank test of ADEPT's against LM's
# per-case median errors rejects equality at this level (two-sided).
SHOWN = 0.05
VARIANTS = {
    "ADEPT": {"method": "adept"},
    "ADEPT w/o VIII-IX": {"method": "adept", "diagnosis": DiagnosisSettings(handle=False)},
    "LM": {"method": "lm"},
}


MULTI_START = "multi-start LM"
COLUMNS = (*VARIANTS, MULTI_START)

# Per variant: |relative errors| at the interpolation and extrapolation sizes, which sizes
# the 90% interval covered, and which the interval without the alternatives' distance D
# covered.
Evaluation = dict[str, tuple[FloatArray, FloatArray, NDArray[np.bool_], NDArray[np.bool_]]]


def evaluate(case: Case) -> Evaluation:
    """Per variant: (|errors| interp, |errors| extrap, covered, covered without D)."""
    at = np.r_[case.interp, case.extrap]
    truth = case.truth(at)
    obs = predictor.prepare(case.n, case.t)
    out: Evaluation = {}
    for name, kwargs in VARIANTS.items():
        p = predictor.predict_observations(obs, at, **kwargs)  # type: ignore[arg-type]
        err = np.abs(p.runtime / truth - 1.0)
        assert p.lower is not None
        assert p.upper is not None
        assert p.residual is not None
        covered = (p.lower <= truth) & (truth <= p.upper)
        method = "lm" if name == "LM" else "adept"
        ends = (float(obs.n[0]), float(obs.n[-1]))
        lo, hi = interval(p.runtime, at, p.residual, *ends, method, sizes=len(obs))
        unspanned = (lo <= truth) & (truth <= hi)
        out[name] = (err[: case.interp.size], err[case.interp.size :], covered, unspanned)
    err = np.abs(lm_multistart(case.n, case.t, at) / truth - 1.0)
    none = np.zeros(0, dtype=bool)
    out[MULTI_START] = (err[: case.interp.size], err[case.interp.size :], none, none)
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


# Printed values have one decimal: a cell misses the aim when ADEPT's median exceeds LM's by
# more than that rounding.
ROUNDING = 0.05


def paired_p(adept: Sequence[FloatArray], lm: Sequence[FloatArray]) -> float:
    """Two-sided p of the Wilcoxon signed-rank test on the cases' paired median errors
    (ADEPT's against LM's); 1 when the two agree on every case or no case has targets."""
    pairs = [
        (float(np.median(a)), float(np.median(b))) for a, b in zip(adept, lm, strict=True) if a.size
    ]
    diff = np.array([a - b for a, b in pairs])
    if not np.any(np.abs(diff) > 1e-12):
        return 1.0
    return float(wilcoxon(diff, zero_method="zsplit").pvalue)


def aim_missed(
    position: str, adept: tuple[float, float], lm: tuple[float, float], p: tuple[float, float]
) -> list[str]:
    """Which of the error aims a cell misses: ADEPT's median (interp, extrap) no worse
    than LM's everywhere, and better where the knee is out of reach ("before"); each with the
    paired test's p (a miss with p ≥ SHOWN is within what the cases can tell from noise)."""
    missed = [
        f"{kind} {a:.1f} > LM {b:.1f} (p={pk:.2f})"
        for kind, a, b, pk in zip(("interp", "extrap"), adept, lm, p, strict=True)
        if a > b + ROUNDING
    ]
    if position == "before" and not adept[1] < lm[1] - ROUNDING and lm[1] > ROUNDING:
        missed.append(f"extrap {adept[1]:.1f} not below LM {lm[1]:.1f} (unidentifiable)")
    return missed


def shown(missed: list[str]) -> bool:
    """Whether any of a cell's misses is beyond noise (p < SHOWN, or unidentifiable)."""
    return any(
        "unidentifiable" in m or float(m.rsplit("p=", 1)[1].rstrip(")")) < SHOWN for m in missed
    )


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
    for name in COLUMNS:
        view.add_column(name, justify="right")
    view.add_column("false identified", justify="right")
    view.add_column("90% covers (ADEPT / LM)", justify="right")
    view.add_column("same valley", justify="right")
    view.add_column("aim missed")
    hidden_identified: list[bool] = []
    covered: dict[str, list[NDArray[np.bool_]]] = {"ADEPT": [], "LM": []}
    by_identified: dict[bool, list[tuple[NDArray[np.bool_], NDArray[np.bool_]]]] = {
        True: [],
        False: [],
    }
    missed_cells = []
    for position in POSITIONS:
        for spacing in SPACINGS:
            for noise in NOISES:
                rows = cells[(position, spacing, noise)]
                medians = {}
                for name in COLUMNS:
                    medians[name] = (
                        pct([r[1][name][0] for r in rows]),
                        pct([r[1][name][1] for r in rows]),
                    )
                hidden = [ident for case, _, ident in rows if not case.visible]
                hidden_identified += hidden
                cov = {m: np.concatenate([r[1][m][2] for r in rows]) for m in covered}
                for m, collected in covered.items():
                    collected.append(cov[m])
                for _, ev, ident in rows:
                    by_identified[ident].append((ev["ADEPT"][2], ev["ADEPT"][3]))
                p_interp, p_extrap = (
                    paired_p(
                        [np.asarray(r[1]["ADEPT"][k], dtype=float) for r in rows],
                        [np.asarray(r[1]["LM"][k], dtype=float) for r in rows],
                    )
                    for k in (0, 1)
                )
                missed = aim_missed(position, medians["ADEPT"], medians["LM"], (p_interp, p_extrap))
                if missed:
                    missed_cells.append((position, spacing, noise, missed))
                view.add_row(
                    f"{position} / {spacing} / {noise:.0%}",
                    *(f"{i:.1f} / {e:.1f}" for i, e in medians.values()),
                    f"{np.mean(hidden):.0%} of {len(hidden)}" if hidden else "-",
                    f"{cov['ADEPT'].mean():.0%} / {cov['LM'].mean():.0%}",
                    f"{np.mean(valley[(position, spacing, noise)]):.0%}",
                    "; ".join(missed),
                )
    false_rate = float(np.mean(hidden_identified))
    coverage = {m: float(np.concatenate(v).mean()) for m, v in covered.items()}

    def split(ident: bool, column: int) -> str:
        pairs = by_identified[ident]
        if not pairs:
            return "-"
        return f"{np.concatenate([p[column] for p in pairs]).mean():.1%}"

    with capsys.disabled():
        Console(width=190).print(view)
        print(
            f"false identified over all hidden-knee cases: {false_rate:.1%} "
            f"({len(hidden_identified)} cases); 90% interval coverage: ADEPT "
            f"{coverage['ADEPT']:.1%}, LM {coverage['LM']:.1%}. ADEPT's coverage on "
            f"identified fits {split(True, 0)} (without the alternatives' distance D "
            f"{split(True, 1)}), on unidentified fits {split(False, 0)} (without D "
            f"{split(False, 1)})"
        )
        beyond = [m for m in missed_cells if shown(m[3])]
        print(
            f"cells that miss the error aim ({len(missed_cells)} of {len(cells)}; "
            f"{len(beyond)} beyond noise, paired signed-rank p < {SHOWN}, {PER_CELL} cases "
            f"per cell):"
        )
        for position, spacing, noise, missed in missed_cells:
            print(f"  {position} / {spacing} / {noise:.0%}: {'; '.join(missed)}")
    # The accuracy aims that this suite measures (seeded, so deterministic). The intervals are
    # calibrated on the real curves (test_predictor_real.py: 85-95% held out), which deviate
    # from the Downey model more than exact Downey curves with noise: here they over-cover
    # (95.8% on seed 2026, 93.9% before), and only the lower end is an aim.
    assert false_rate <= 0.05
    assert coverage["ADEPT"] >= 0.85
    assert len(hidden_identified) >= PER_CELL * len(SPACINGS) * len(NOISES)
