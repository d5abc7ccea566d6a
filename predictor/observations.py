"""Observations: validated (n, runtime) pairs, repeated sizes reduced to one value each.

ADEPT section V.B: "Multiple inputs per job size are handled by dropping obvious outliers and
otherwise averaging inputs to avoid an overly high weight for the repeated job size."

An obvious outlier is a run, at a size with at least OUTLIER_MIN_RUNS (three) runs, whose
runtime lies further from the size's median than max(k·1.4826·MAD, r·median): the
Iglewicz-Hoaglin modified z-score with k = 3.5, floored at a relative deviation r (default 10%)
so that sizes whose runs are nearly identical do not flag ordinary jitter.

Bounded work on user input. ADEPT's envelope compares every pair of range pairs, so its
memory and time grow with about the 4th power of the number of distinct sizes (250 sizes:
21 GB). `thin` keeps at most MAX_SIZES sizes for ADEPT: the smallest and the largest, and
between them the sizes nearest to MAX_SIZES points evenly spaced in log n (where the scaling
information is); the sizes left out are named in `Observations.thinned` and reported. Sizes are
capped at MAX_NODES, beyond any machine, so no array over sizes can be asked for that is not
bounded by design.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import BoolArray, FloatArray, IntArray

#: Distinct sizes a speedup curve needs: `validate` refuses runs at fewer. Two sizes are the
#: least from which any scaling is seen (runs at one size say nothing of how the runtime
#: changes with n); how well they pin the shape is the reliability judgement's to say.
MIN_SIZES = 2
#: Runs at one size from which `outlier_mask` can drop an obvious outlier. Two runs lie as far
#: from their median as each other, at their MAD, a modified z-score of 1/1.4826 < OUTLIER_Z:
#: the rule cannot tell which is odd, so both are averaged; a third run can tell.
OUTLIER_MIN_RUNS = 3
MAD_TO_SIGMA = 1.4826
OUTLIER_Z = 3.5
OUTLIER_MIN_REL = 0.10
# The smallest normal double: below it runtimes lose precision (any unit is fine above it).
MIN_RUNTIME = float(np.finfo(float).tiny)
# The largest runtime: a runtime times MAX_NODES² (2^48) stays a finite double (near
# 1e308 the fit overflowed into a silent nonsense curve). Any unit is fine below it; the
# plugin's readers refuse absurd seconds long before (plugin/formats/observations_csv.py).
MAX_RUNTIME = float(np.finfo(float).max) / 2.0**48
# Distinct sizes ADEPT fits on: 32 sizes take ~0.1 s and ~60 MB (tests/unit/predictor/
# test_bounded_work.py measures the bound); real curves have 3-12 (tests/data/scaling).
MAX_SIZES = 32
# Node counts above this are refused: 2^24 ≈ 16.8 M nodes, beyond any machine (the largest has
# ~160 k nodes), and small enough that every quantity over sizes stays exact in a double.
MAX_NODES = 2**24


@dataclass(frozen=True)
class Observations:
    """One value per distinct size, ascending.

    Attributes
    ----------
    n : (M,) int array of distinct sizes, ascending.
    runtime : (M,) float array, the mean runtime at each size after outliers are dropped.
    runs : (M,) int array, how many runs were averaged at each size.
    dropped : tuple of (n, runtime) runs dropped as obvious outliers.
    thinned : sizes left out to bound the work (see `thin`); empty unless thinned.
    spread : (M,) float array, max/min of all runs at each size, outliers included (1.0 at a
        size with one run), for the mixed-problem-size check (reliability.mixed_sizes); None
        when not known.
    """

    n: IntArray
    runtime: FloatArray
    runs: IntArray
    dropped: tuple[tuple[int, float], ...]
    thinned: tuple[int, ...] = ()
    spread: FloatArray | None = None

    @property
    def t1_known(self) -> bool:
        """Whether a run on one node was observed, i.e. the serial runtime T(1) is known."""
        return bool(self.n[0] == 1)

    def __len__(self) -> int:
        return int(self.n.size)


def _as_vector(values: ArrayLike, name: str) -> FloatArray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numbers") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def validate(n: ArrayLike, runtime: ArrayLike) -> tuple[IntArray, FloatArray]:
    """Check raw observations; raise ValueError naming the offending argument."""
    nv = _as_vector(n, "n")
    tv = _as_vector(runtime, "runtime")
    if nv.shape != tv.shape:
        raise ValueError(f"n and runtime differ in length ({nv.size} vs {tv.size})")
    if nv.size == 0:
        raise ValueError("no observations")
    if np.any(nv != np.round(nv)):
        raise ValueError("n must be whole numbers of nodes")
    if np.any(nv < 1):
        raise ValueError("n must be at least 1")
    if np.any(nv > MAX_NODES):
        raise ValueError(f"n must be at most {MAX_NODES:,} nodes")
    if np.any(tv <= 0):
        raise ValueError("runtime must be positive")
    if np.any(tv < MIN_RUNTIME):
        raise ValueError(f"runtime must be at least {MIN_RUNTIME:g}")
    if np.any(tv > MAX_RUNTIME):
        raise ValueError(f"runtime must be at most {MAX_RUNTIME:.3g}")
    sizes = np.unique(nv)
    if sizes.size < MIN_SIZES:
        raise ValueError("need runs at two or more distinct sizes to fit a speedup curve")
    return nv.astype(np.int64), tv


def outlier_mask(runtime: FloatArray, group: IntArray) -> BoolArray:
    """True for runs that are obvious outliers within their group (see the module docstring).

    `group` holds, per run, the index of its size; groups with fewer than OUTLIER_MIN_RUNS
    runs keep all.
    """
    order = np.argsort(group, kind="stable")
    g = group[order]
    t = runtime[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    counts = np.diff(np.r_[starts, g.size])
    med = _group_median(t, starts, counts)
    mad = _group_median(np.abs(t - np.repeat(med, counts)), starts, counts)
    limit = np.maximum(OUTLIER_Z * MAD_TO_SIGMA * mad, OUTLIER_MIN_REL * med)
    far = np.abs(t - np.repeat(med, counts)) > np.repeat(limit, counts)
    far &= np.repeat(counts >= OUTLIER_MIN_RUNS, counts)
    mask: BoolArray = np.empty_like(far)
    mask[order] = far
    return mask


def _group_median(sorted_by_group: FloatArray, starts: IntArray, counts: IntArray) -> FloatArray:
    """Median of each contiguous group, vectorized: sort within groups by a lexsort."""
    gid = np.repeat(np.arange(starts.size), counts)
    within = np.lexsort((sorted_by_group, gid))
    vals = sorted_by_group[within]
    lo = starts + (counts - 1) // 2
    hi = starts + counts // 2
    out: FloatArray = 0.5 * (vals[lo] + vals[hi])
    return out


def prepare(n: ArrayLike, runtime: ArrayLike) -> Observations:
    """Validate runs, drop obvious outliers at repeated sizes, average the rest per size."""
    nv, tv = validate(n, runtime)
    sizes, group = np.unique(nv, return_inverse=True)
    drop = outlier_mask(tv, group)
    keep = ~drop
    sums = np.bincount(group[keep], weights=tv[keep], minlength=sizes.size)
    runs = np.bincount(group[keep], minlength=sizes.size)
    dropped = tuple((int(a), float(b)) for a, b in zip(nv[drop], tv[drop], strict=True))
    return Observations(
        n=sizes,
        runtime=sums / runs,
        runs=runs.astype(np.int64),
        dropped=dropped,
        spread=size_spread(tv, group, sizes.size),
    )


def size_spread(runtime: FloatArray, group: IntArray, sizes: int) -> FloatArray:
    """max(t)/min(t) over all runs of each size (group index per run), outliers included.

    Computed before outliers are dropped: a run of another problem size is exactly the kind of
    run the outlier rule would remove, and the mixed-size check must still see it.
    """
    hi = np.full(sizes, -np.inf)
    lo = np.full(sizes, np.inf)
    np.maximum.at(hi, group, runtime)
    np.minimum.at(lo, group, runtime)
    out: FloatArray = hi / lo
    return out


def thin(obs: Observations, limit: int = MAX_SIZES) -> Observations:
    """At most `limit` sizes: the ends and those nearest to log-even points (module docstring).

    For limit ≥ 2. Picks i_k = argmin |log n - log g_k| over g = geomspace(n_min, n_max, limit);
    repeated picks leave fewer than `limit` sizes, never more. Observations within the limit
    come back unchanged.
    """
    if len(obs) <= limit:
        return obs
    logn = np.log(obs.n.astype(float))
    grid = np.linspace(logn[0], logn[-1], limit)
    # Nearest size per grid point by bisection: O(limit log M), no (limit, M) array.
    right = np.clip(np.searchsorted(logn, grid), 1, logn.size - 1)
    left = right - 1
    pick = np.where(grid - logn[left] <= logn[right] - grid, left, right)
    keep = np.zeros(len(obs), dtype=bool)
    keep[pick] = True
    keep[[0, -1]] = True
    return Observations(
        n=obs.n[keep],
        runtime=obs.runtime[keep],
        runs=obs.runs[keep],
        dropped=obs.dropped,
        thinned=obs.thinned + tuple(int(k) for k in obs.n[~keep]),
        spread=None if obs.spread is None else obs.spread[keep],
    )
