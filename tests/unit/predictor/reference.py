"""Independent scalar transcriptions of the published formulas, for the tests to check against.

Deliberately written the slow, obvious way from the thesis (eqs. 3.5 and 3.7) so that the
vectorized code in predictor/ is compared with the text, not with itself.
"""

from __future__ import annotations

import numpy as np


def speedup_low(n: float, A: float, sigma: float) -> float:
    """Thesis eq. 3.5, low-variance speedup."""
    if n <= A:
        return A * n / (A + sigma / 2 * (n - 1))
    if n <= 2 * A - 1:
        return A * n / (sigma * (A - 0.5) + n * (1 - sigma / 2))
    return A


def speedup_high(n: float, A: float, sigma: float) -> float:
    """Thesis eq. 3.7, high-variance speedup."""
    if n <= A + A * sigma - sigma:
        return n * A * (sigma + 1) / (sigma * (n + A - 1) + A)
    return A


def speedup_table(n: float, A: float, sigma: float) -> float:
    """The mode σ selects: low for σ ≤ 1, high otherwise."""
    return speedup_low(n, A, sigma) if sigma <= 1 else speedup_high(n, A, sigma)


def pws_brute_force(speedup_of_n: list[float]) -> int:
    """Smallest n (1-based) maximising S(n)²/n over the given speedups S(1), S(2), ..."""
    s = np.asarray(speedup_of_n)
    n = np.arange(1, s.size + 1)
    eta = s * s / n
    return int(n[np.argmax(eta >= eta.max() * (1 - 1e-12))])
