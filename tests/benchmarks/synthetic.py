"""A synthetic strong-scaling suite with known truth (an evaluation that cannot overfit).

SYNTHETIC ASSUMPTION, printed with every figure drawn from it: runtimes follow a Downey curve
exactly, T(n) = T(1)/S(n; A, σ), times independent lognormal noise of the cell's level.

Per case, drawn from a seeded generator:
* A log-uniform on [10, 2000], σ uniform on [0, 1] (low mode) or [1, 5] (high mode), half each;
* where the data end relative to the knee k = first-piece end (A in low mode, A + (A-1)σ in
  high mode): "before" (n_max = 0.25-0.5 k: the knee cannot be seen, the case is
  unidentifiable), "at" (0.8-1.5 k) or "past" (2-4 k);
* 3-6 sizes (T(1) not counted), spread over [n_max/32, n_max]: "even" geometric spacing or
  "uneven" (the smaller half clustered at the bottom, then a jump, as [2, 4, 32, 64, 128]);
* T(1) known (n = 1 observed as well) in half the cases;
* noise 0, 2 or 5% (lognormal σ of the runtime).
Targets: "interp" sizes halfway (geometrically) between observed sizes, not themselves observed;
"extrap" 1.5x, 2x, 3x and 4x the largest observed size. Error = |predicted/true - 1| against the
noise-free truth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from predictor.downey import FloatArray, relative_runtime

POSITIONS = {"before": (0.25, 0.5), "at": (0.8, 1.5), "past": (2.0, 4.0)}
SPACINGS = ("even", "uneven")
NOISES = (0.0, 0.02, 0.05)
EXTRAPOLATE = np.array([1.5, 2.0, 3.0, 4.0])
LABEL = "SYNTHETIC: exact Downey curves x lognormal noise (known truth)"


@dataclass(frozen=True)
class Case:
    A: float
    sigma: float
    position: str
    spacing: str
    noise: float
    t1_known: bool
    n: FloatArray
    t: FloatArray
    interp: FloatArray
    extrap: FloatArray

    @property
    def knee(self) -> float:
        """End of the first piece of the truth: A (σ ≤ 1) or A + (A-1)σ."""
        return self.A if self.sigma <= 1 else self.A + (self.A - 1) * self.sigma

    @property
    def visible(self) -> bool:
        """Whether the data reach the knee (so A and σ can be identified)."""
        return bool(self.n[-1] >= self.knee)

    def truth(self, at: FloatArray) -> FloatArray:
        out: FloatArray = 100.0 * relative_runtime(at, self.A, self.sigma)
        return out


def _sizes(rng: np.random.Generator, n_max: float, count: int, spacing: str) -> FloatArray:
    lo = max(n_max / 32.0, 2.0)
    if spacing == "even":
        raw = np.geomspace(lo, n_max, count)
    else:
        low = count // 2
        top = np.geomspace(n_max / 4.0, n_max, count - low)
        raw = np.r_[lo * 2.0 ** np.arange(low), top]
    sizes: FloatArray = np.unique(np.maximum(np.round(raw), 2.0))
    return sizes


def draw(
    rng: np.random.Generator, position: str, spacing: str, noise: float, t1_known: bool
) -> Case | None:
    """One case of a cell, or None when rounding leaves fewer than 3 distinct sizes."""
    A = float(np.exp(rng.uniform(np.log(10.0), np.log(2000.0))))
    sigma = float(rng.uniform(0.0, 1.0) if rng.random() < 0.5 else rng.uniform(1.0, 5.0))
    knee = A if sigma <= 1 else A + (A - 1) * sigma
    lo, hi = POSITIONS[position]
    n_max = float(np.round(knee * rng.uniform(lo, hi)))
    n = _sizes(rng, n_max, int(rng.integers(3, 7)), spacing)
    if n.size < 3:
        return None
    if t1_known:
        n = np.r_[1.0, n]
    t = 100.0 * relative_runtime(n, A, sigma) * np.exp(rng.normal(0.0, noise, n.size))
    mids = np.round(np.sqrt(n[1:] * n[:-1]))
    interp = np.setdiff1d(mids, n)
    extrap = np.round(n[-1] * EXTRAPOLATE)
    return Case(A, sigma, position, spacing, noise, t1_known, n, t, interp, extrap)


def suite(per_cell: int, seed: int) -> list[Case]:
    """per_cell cases for every (position, spacing, noise) cell, T(1) known in half of them."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    for position in POSITIONS:
        for spacing in SPACINGS:
            for noise in NOISES:
                made = 0
                while made < per_cell:
                    case = draw(rng, position, spacing, noise, made % 2 == 0)
                    if case is not None:
                        cases.append(case)
                        made += 1
    return cases
