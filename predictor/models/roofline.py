"""The roofline model: attainable performance from peak compute, memory bandwidth and intensity.

Williams, Waterman and Patterson's roofline, as the large-scale prediction thesis states it
(section 4.6.3, its one formula):

    P(I) = min(P_peak, B · I)                                              (4.6.3)

with P_peak the peak floating-point performance (GFLOP/s), B the peak memory bandwidth
(GB/s) and I the kernel's operational intensity (floating-point operations per byte of
main-memory traffic). The ridge point I_r = P_peak / B is the smallest intensity at which a
kernel reaches the peak: below it a kernel is memory-bound (P = B·I), above it
compute-bound (P = P_peak). The thesis' example: a kernel of 0.8 flop/byte on a machine
whose ridge is at 0.8 "hits the roof exactly at the ridge point"; one of 8 flop/byte is
compute-bound there.

The roofline bounds *compute* time: it says nothing of communication, I/O or load
imbalance (the thesis: "a rough computation time estimate"). Here it is used for ratios
only: how much faster the same kernel computes on one node type than on another,

    P_y(I) / P_x(I) = min(P_peak,y, B_y·I) / min(P_peak,x, B_x·I),

the peak ratio when the kernel is compute-bound on both types, the bandwidth ratio when it
is memory-bound on both, and in between a ratio that moves with I.

Going the other way, an observed ratio ρ between two types gives the intensity
(`intensity_from_ratio`): between the two ridge points the ratio is strictly monotone in I,
so I is known there; a ratio at (or past) the bandwidth ratio says only that I lies at or
below both ridges, one at (or past) the peak ratio that it lies at or above both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import FloatArray

__all__ = [
    "BOUNDS",
    "IntensityEstimate",
    "attainable",
    "intensity_from_ratio",
    "performance_ratio",
    "ridge_point",
]

#: What an intensity estimate says: the value itself, at most the value (memory-bound on
#: both types), at least the value (compute-bound on both).
BOUNDS = ("exact", "at_most", "at_least")
#: Relative tolerance under which two ratios or two ridge points count as equal.
_TOLERANCE = 1e-9


def _positive(name: str, value: ArrayLike) -> FloatArray:
    v = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(f"{name} must be finite and > 0")
    return v


def attainable(
    peak_gflops: ArrayLike, bandwidth_gbs: ArrayLike, intensity: ArrayLike
) -> FloatArray:
    """P(I) = min(P_peak, B·I) in GFLOP/s (section 4.6.3); broadcasts over its arguments.

    Parameters
    ----------
    peak_gflops : peak floating-point performance, GFLOP/s (> 0)
    bandwidth_gbs : peak memory bandwidth, GB/s (> 0)
    intensity : operational intensity, flop/byte (> 0; ``inf`` reads as compute-bound)
    """
    peak = _positive("peak_gflops", peak_gflops)
    bandwidth = _positive("bandwidth_gbs", bandwidth_gbs)
    i = np.asarray(intensity, dtype=float)
    if np.any(np.isnan(i)) or np.any(i <= 0):
        raise ValueError("intensity must be > 0")
    out: FloatArray = np.minimum(peak, bandwidth * i)
    return out


def ridge_point(peak_gflops: ArrayLike, bandwidth_gbs: ArrayLike) -> FloatArray:
    """I_r = P_peak / B: the least intensity that reaches the peak (flop/byte)."""
    out: FloatArray = _positive("peak_gflops", peak_gflops) / _positive(
        "bandwidth_gbs", bandwidth_gbs
    )
    return out


def performance_ratio(
    peak_from: float, bandwidth_from: float, peak_to: float, bandwidth_to: float, intensity: float
) -> float:
    """P_to(I) / P_from(I): how many times faster a kernel of intensity I computes on the
    second machine than on the first (module docstring)."""
    to = attainable(peak_to, bandwidth_to, intensity)
    return float(to / attainable(peak_from, bandwidth_from, intensity))


@dataclass(frozen=True)
class IntensityEstimate:
    """An operational intensity inferred from two machines' performance ratio.

    value: flop/byte; bound: "exact" (the ratio lies strictly between the bandwidth and the
    peak ratios), "at_most" (memory-bound on both: I ≤ value, the lower ridge point) or
    "at_least" (compute-bound on both: I ≥ value, the higher ridge point).
    """

    value: float
    bound: str

    def __post_init__(self) -> None:
        if self.bound not in BOUNDS:
            raise ValueError(f"bound must be one of {', '.join(BOUNDS)}, got {self.bound!r}")
        if not (math.isfinite(self.value) and self.value > 0):
            raise ValueError(f"an intensity must be finite and > 0, got {self.value!r}")


def intensity_from_ratio(
    peak_a: float, bandwidth_a: float, peak_b: float, bandwidth_b: float, ratio: float
) -> IntensityEstimate | None:
    """The intensity I at which P_b(I)/P_a(I) = `ratio`, or None when the two machines have
    the same ridge point (the ratio is then the same at every I and says nothing of it).

    With ridge points R_a < R_b the ratio is B_b/B_a for I ≤ R_a, B_b·I/P_a between the
    ridges and P_b/P_a for I ≥ R_b (R_a > R_b mirrors it: P_b/(B_a·I) between them). The
    ratio is clipped into [the bandwidth ratio, the peak ratio] first; at either end the
    estimate is that ridge point, as a bound (`IntensityEstimate`).
    """
    for name, value in (
        ("peak_a", peak_a),
        ("bandwidth_a", bandwidth_a),
        ("peak_b", peak_b),
        ("bandwidth_b", bandwidth_b),
        ("ratio", ratio),
    ):
        _positive(name, value)
    ridge_a, ridge_b = peak_a / bandwidth_a, peak_b / bandwidth_b
    if math.isclose(ridge_a, ridge_b, rel_tol=_TOLERANCE):
        return None
    memory, compute = bandwidth_b / bandwidth_a, peak_b / peak_a
    low, high = min(memory, compute), max(memory, compute)
    clipped = min(max(ratio, low), high)
    if math.isclose(clipped, memory, rel_tol=_TOLERANCE):
        return IntensityEstimate(min(ridge_a, ridge_b), "at_most")
    if math.isclose(clipped, compute, rel_tol=_TOLERANCE):
        return IntensityEstimate(max(ridge_a, ridge_b), "at_least")
    if ridge_a < ridge_b:  # a compute-bound, b memory-bound between the ridges
        return IntensityEstimate(clipped * peak_a / bandwidth_b, "exact")
    return IntensityEstimate(peak_b / (bandwidth_a * clipped), "exact")
