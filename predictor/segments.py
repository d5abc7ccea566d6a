"""Multi-phase curves (ADEPT section VIII.C): one Downey instance per phase of observed sizes.

A prediction at n uses the phase of the observation closest to n. A curve with one phase is
an ordinary single instance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import FloatArray, relative_runtime


@dataclass(frozen=True)
class Segment:
    """One phase: its observed sizes and its instance (A, σ, model T(1))."""

    sizes: tuple[int, ...]
    A: float
    sigma: float
    t1: float
    identified: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "sizes": list(self.sizes),
            "A": self.A,
            "sigma": self.sigma,
            "t1": self.t1,
            "identified": self.identified,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Segment:
        return cls(
            sizes=tuple(int(k) for k in doc["sizes"]),
            A=float(doc["A"]),
            sigma=float(doc["sigma"]),
            t1=float(doc["t1"]),
            identified=bool(doc["identified"]),
        )


def segment_of(segments: tuple[Segment, ...], n: FloatArray) -> FloatArray:
    """Index of the segment holding the observed size closest to each n (ties: the larger)."""
    sizes = np.concatenate([np.asarray(s.sizes, dtype=float) for s in segments])
    owner = np.concatenate([np.full(len(s.sizes), k) for k, s in enumerate(segments)])
    dist = np.abs(n[..., None] - sizes)
    # Prefer the larger size on ties, like the 1-D pass's anchors.
    closest = (dist.shape[-1] - 1) - np.argmin(dist[..., ::-1], axis=-1)
    out: FloatArray = owner[closest]
    return out


def segment_runtime(segments: tuple[Segment, ...], n: ArrayLike) -> FloatArray:
    """Runtime at n from the phase of the closest observation."""
    nv = np.asarray(n, dtype=float)
    if len(segments) == 1:
        only = segments[0]
        one: FloatArray = only.t1 * relative_runtime(nv, only.A, only.sigma)
        return one
    k = segment_of(segments, nv).astype(int)
    A = np.array([s.A for s in segments])[k]
    sigma = np.array([s.sigma for s in segments])[k]
    t1 = np.array([s.t1 for s in segments])[k]
    out: FloatArray = t1 * relative_runtime(nv, A, sigma)
    return out
