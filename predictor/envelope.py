"""ADEPT envelope derivation: constraints on (A, σ) from pairs of observations (section V.A).

Each observation may deviate from the true model instance by at most δ:
T_model(n) ∈ [t(n)(1-δ), t(n)(1+δ)]. For every pair of observations (n_i < n_j) and every piece
of the model both could lie in, a closed form bounds the parameters; each bound is a *range pair*
([A_min, A_max], [σ_min, σ_max]). The envelope is the union of the range pairs that are not
contained in another one. δ grows until some instance in the envelope explains every
observation within δ.

Derivation. Every piece has relative runtime τ(n) = α + β/n (see downey.py). The scale T(1) is
unknown in general, so a pair determines only the runtime ratio x = t_j/t_i, and, within a piece,

    x = (1 + g/n_j) / (1 + g/n_i),   g = β/α ≥ 0,   i.e.   g = n_i n_j (1 - x) / (n_j x - n_i).

g falls as x rises, from ∞ at perfect scaling (x = n_i/n_j) to 0 at no speedup (x = 1). With δ,
x ∈ [x(1-δ)/(1+δ), x(1+δ)/(1-δ)] gives g ∈ [g_lo, g_hi]. Then, with s the shape coordinate
(s = σ in low mode, 2σ/(σ+1) in high mode):

1. First piece, low mode (n_j ≤ A, σ ≤ 1): f = s/(2A), g = (1-f)/f, so s/A = κ = 2/(g+1):
   A ∈ [n_j, 1/κ_lo], σ ∈ [κ_lo n_j, κ_hi A_max] ∩ [0, 1].
   (With T(1) = A in the thesis' units this is the paper's eqs. (1)-(4):
   σ = 2a, A = n_i t_i - σ(n_i-1)/2.)
2. Second piece, low mode (A ≤ n_i, n_j ≤ 2A-1): α = (1-σ/2)/A, β = σ(A-1/2)/A, so
   g = σ(2A-1)/(2-σ), σ = 2g/(2A-1+g): A ∈ [(n_j+1)/2, n_i], σ between the corners.
3. Flat piece, low mode (n_i ≥ 2A-1): g = 0, needs x = 1 within δ; A ≤ (n_i+1)/2, σ ∈ [0, 1].
4. First piece, high mode (n_j ≤ A + Aσ - σ, σ ≥ 1): the same Amdahl form as 1 with s ∈ [1, 2):
   A = s/κ ∈ [1/κ_hi, s_max/κ_lo], and the knee A + (A-1)σ ≥ n_j bounds A and σ from below.
5. Flat piece, high mode (A + Aσ - σ ≤ n_i): g = 0, needs x = 1 within δ; A ≤ (n_i+1)/2, σ ≥ 1.

The paper counts at most four range pairs per observation pair; the two flat pieces add up to
one more each, and most of those are discarded as redundant.

Choosing δ. Instances on a pair's exact curve (δ = 0, x clamped to the feasible range when
noise pushes it outside) lie in that pair's range pair for every δ at which the range pair exists,
and that δ has a closed form (the δ at which the clamped x comes within reach). So the smallest
feasible δ is min over sampled curve instances c of max(err(c), δ_enter(c)), where err is the
minimax relative error; it is then rounded up the geometric ladder δ0·growth^k, which is what
growing δ step by step until the test passes would return. The curves are sampled every ~20%
in A and then resampled, twice, around the most promising samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from predictor.downey import (
    BoolArray,
    FloatArray,
    IntArray,
    relative_runtime_s,
    s_to_sigma,
    sigma_to_s,
)
from predictor.grids import linspace
from predictor.objective import minimax_relative_error

PIECES = ("low-1", "low-2", "low-flat", "high-1", "high-flat")
ZOOM_ROUNDS, ZOOM_CURVES, ZOOM_SAMPLES = 2, 8, 17
LOW1, LOW2, LOWFLAT, HIGH1, HIGHFLAT = range(5)


@dataclass(frozen=True)
class Domain:
    """Bounds of the search space: A ∈ [1, a_max], σ ∈ [0, sigma_max]."""

    a_max: float = 1e5
    sigma_max: float = 1e3

    @property
    def s_max(self) -> float:
        """The shape coordinate of sigma_max, 2σ/(σ+1) (σ_max ≥ 1)."""
        return 2.0 * self.sigma_max / (self.sigma_max + 1.0)

    def __post_init__(self) -> None:
        if not self.a_max > 1.0:
            raise ValueError(f"a_max must exceed 1, got {self.a_max}")
        if not self.sigma_max >= 1.0:
            raise ValueError(f"sigma_max must be at least 1, got {self.sigma_max}")


@dataclass(frozen=True)
class Envelope:
    """Union of non-redundant range pairs, in (A, s) coordinates.

    Attributes
    ----------
    delta : the deviation bound δ the envelope was derived for.
    a_lo, a_hi, s_lo, s_hi : (K,) bounds of each range pair.
    piece : (K,) index into PIECES of the piece each range pair assumes.
    pair : (K, 2) sizes (n_i, n_j) of the observation pair each range pair comes from.
    bounded : False when no δ up to the ladder's top made the envelope explain the data and
        the envelope is the whole domain instead.
    """

    delta: float
    a_lo: FloatArray
    a_hi: FloatArray
    s_lo: FloatArray
    s_hi: FloatArray
    piece: IntArray
    pair: IntArray
    bounded: bool

    def contains(self, A: FloatArray, s: FloatArray) -> BoolArray:
        """Whether each instance (A, s) lies in some range pair; broadcasts A with s."""
        Ab = np.asarray(A, dtype=float)[..., None]
        sb = np.asarray(s, dtype=float)[..., None]
        a_lo, a_hi, s_lo, s_hi = self._tolerant
        inside = (Ab >= a_lo) & (Ab <= a_hi) & (sb >= s_lo) & (sb <= s_hi)
        return np.asarray(inside.any(axis=-1))

    def contains_grid(self, A: FloatArray, s: FloatArray) -> BoolArray:
        """`contains` on the grid A[..., :, None] × s[..., None, :]: A (..., g), s (..., h).

        An instance is inside when some range pair holds its A and its s:
        any_k a_in[i, k]·s_in[j, k], a matrix product of the two indicator matrices, which
        costs (g + h)·K comparisons instead of g·h·K.
        """
        a_lo, a_hi, s_lo, s_hi = self._tolerant
        Ab = np.asarray(A, dtype=float)[..., None]
        sb = np.asarray(s, dtype=float)[..., None]
        a_in = ((Ab >= a_lo) & (Ab <= a_hi)).astype(float)
        s_in = ((sb >= s_lo) & (sb <= s_hi)).astype(float)
        return np.asarray((a_in @ np.swapaxes(s_in, -1, -2)) > 0.5)

    @cached_property
    def _tolerant(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """The bounds `contains` tests, widened by a relative 1e-9 in A and 1e-9 in s; once
        per envelope, which the search tests a few dozen times."""
        tol = 1e-9
        return (
            self.a_lo * (1 - tol),
            self.a_hi * (1 + tol),
            self.s_lo - tol,
            self.s_hi + tol,
        )

    @property
    def sigma_lo(self) -> FloatArray:
        return s_to_sigma(self.s_lo)

    @property
    def sigma_hi(self) -> FloatArray:
        return s_to_sigma(self.s_hi)

    @property
    def a_range(self) -> tuple[float, float]:
        return float(self.a_lo.min()), float(self.a_hi.max())


def ratio_to_g(ni: FloatArray, nj: FloatArray, x: FloatArray) -> FloatArray:
    """g = β/α of the piece through a pair with runtime ratio x = t_j/t_i, clamped to [0, ∞]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        g = ni * nj * (1.0 - x) / (nj * x - ni)
    g = np.where(x >= 1.0, 0.0, g)
    out: FloatArray = np.where(x * nj <= ni, np.inf, g)
    return out


def range_pairs(
    ni: FloatArray, nj: FloatArray, x: FloatArray, delta: float, domain: Domain
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, BoolArray]:
    """Range pairs of every observation pair for every piece, formulas 1-5 of the module docstring.

    Parameters: sizes ni < nj and ratios x = t_j/t_i, each of shape (P,).
    Returns a_lo, a_hi, s_lo, s_hi of shape (P, 5) and a validity mask of the same shape.
    """
    a_max, s_max, sig_max = domain.a_max, domain.s_max, domain.sigma_max
    x_lo = x * (1 - delta) / (1 + delta)
    x_hi = x * (1 + delta) / (1 - delta)
    g_lo = ratio_to_g(ni, nj, np.minimum(x_hi, 1.0))
    g_hi = ratio_to_g(ni, nj, x_lo)
    slopes_ok = x_lo <= 1.0  # some decreasing runtime is within δ of the pair
    flat_ok = (x_lo <= 1.0) & (x_hi >= 1.0)
    with np.errstate(divide="ignore"):
        k_lo = 2.0 / (g_hi + 1.0)  # 0 when g_hi = ∞
        k_hi = 2.0 / (g_lo + 1.0)
        inv_k_lo = np.where(k_lo > 0, 1.0 / np.where(k_lo > 0, k_lo, 1.0), np.inf)

    shape = (ni.size, len(PIECES))
    a_lo, a_hi = np.empty(shape), np.empty(shape)
    s_lo, s_hi = np.empty(shape), np.empty(shape)

    # 1. low-1
    a_lo[:, LOW1] = nj
    a_hi[:, LOW1] = np.minimum(a_max, inv_k_lo)
    s_lo[:, LOW1] = k_lo * nj
    s_hi[:, LOW1] = np.minimum(1.0, k_hi * a_hi[:, LOW1])

    # 2. low-2
    a2_lo = np.maximum((nj + 1.0) / 2.0, 1.0)
    a2_hi = np.minimum(ni, a_max)
    a_lo[:, LOW2], a_hi[:, LOW2] = a2_lo, a2_hi
    with np.errstate(invalid="ignore"):
        s_lo[:, LOW2] = 2.0 * g_lo / (2.0 * a2_hi - 1.0 + g_lo)
        s_hi[:, LOW2] = np.where(
            np.isinf(g_hi),
            2.0,
            2.0 * g_hi / (2.0 * a2_lo - 1.0 + np.where(np.isinf(g_hi), 0, g_hi)),
        )
    s_hi[:, LOW2] = np.minimum(s_hi[:, LOW2], 1.0)

    # 3. low-flat
    a_lo[:, LOWFLAT] = 1.0
    a_hi[:, LOWFLAT] = np.minimum(a_max, (ni + 1.0) / 2.0)
    s_lo[:, LOWFLAT], s_hi[:, LOWFLAT] = 0.0, 1.0

    # 4. high-1
    with np.errstate(divide="ignore"):
        a4_lo = np.maximum(np.maximum(1.0, 1.0 / k_hi), (nj + sig_max) / (1.0 + sig_max))
    a4_hi = np.minimum(a_max, s_max * inv_k_lo)
    a_lo[:, HIGH1], a_hi[:, HIGH1] = a4_lo, a4_hi
    with np.errstate(divide="ignore", invalid="ignore"):
        knee_sigma = np.where(a4_hi > 1.0, (nj - a4_hi) / (a4_hi - 1.0), np.inf)
    s_lo[:, HIGH1] = np.maximum(
        np.maximum(1.0, k_lo * a4_lo), sigma_to_s(np.maximum(knee_sigma, 1.0))
    )
    s_hi[:, HIGH1] = np.minimum(s_max, k_hi * a4_hi)

    # 5. high-flat
    a_lo[:, HIGHFLAT] = 1.0
    a_hi[:, HIGHFLAT] = np.minimum(a_max, (ni + 1.0) / 2.0)
    s_lo[:, HIGHFLAT], s_hi[:, HIGHFLAT] = 1.0, s_max

    valid = (a_lo <= a_hi) & (s_lo <= s_hi)
    valid[:, [LOW1, LOW2, HIGH1]] &= slopes_ok[:, None]
    valid[:, [LOWFLAT, HIGHFLAT]] &= flat_ok[:, None]
    valid[:, LOW2] &= a2_lo <= a2_hi
    return a_lo, a_hi, s_lo, s_hi, valid


def drop_redundant(
    a_lo: FloatArray, a_hi: FloatArray, s_lo: FloatArray, s_hi: FloatArray
) -> BoolArray:
    """Mask of range pairs to keep: a pair contained in another one is redundant (section V.A).

    Of several identical range pairs the first is kept. Identical pairs are common (the flat
    pieces' bounds depend on n_i only), so the K² containment test runs on the distinct
    pairs: a pair is kept when it is the first of its kind and no other distinct pair
    contains it (two distinct pairs cannot contain each other).
    """
    k = a_lo.size
    if k <= _FEW_PAIRS:
        return _drop_redundant_all(a_lo, a_hi, s_lo, s_hi)
    order = np.lexsort((s_hi, s_lo, a_hi, a_lo))  # stable: a kind's first pair leads it
    bounds = np.stack([a_lo, a_hi, s_lo, s_hi], axis=1)[order]
    new = np.ones(k, dtype=bool)
    new[1:] = (bounds[1:] != bounds[:-1]).any(axis=1)
    lo_a, hi_a, lo_s, hi_s = bounds[new].T
    inside = (
        (lo_a[None, :] <= lo_a[:, None])
        & (hi_a[:, None] <= hi_a[None, :])
        & (lo_s[None, :] <= lo_s[:, None])
        & (hi_s[:, None] <= hi_s[None, :])
    )  # inside[l, j]: distinct pair l lies within distinct pair j (or is j)
    np.fill_diagonal(inside, False)
    keep = np.zeros(k, dtype=bool)
    keep[order[new][~inside.any(axis=1)]] = True
    return keep


#: Up to this many range pairs `drop_redundant` compares them all (fewer numpy calls).
_FEW_PAIRS = 24


def _drop_redundant_all(
    a_lo: FloatArray, a_hi: FloatArray, s_lo: FloatArray, s_hi: FloatArray
) -> BoolArray:
    """`drop_redundant` by comparing every pair with every other one."""
    inside = (
        (a_lo[None, :] <= a_lo[:, None])
        & (a_hi[:, None] <= a_hi[None, :])
        & (s_lo[None, :] <= s_lo[:, None])
        & (s_hi[:, None] <= s_hi[None, :])
    )  # inside[l, j]: range pair l lies within range pair j
    k = a_lo.size
    identical = inside & inside.T
    earlier = np.tri(k, k, -1, dtype=bool)  # earlier[l, j] = j < l
    covered = (inside & ~identical) | (identical & earlier)
    keep: BoolArray = ~covered.any(axis=1)
    return keep


Pairs = tuple[FloatArray, FloatArray, FloatArray]


def pairs_of(n: FloatArray, t: FloatArray) -> Pairs:
    """All pairs i < j of observations, row by row (np.triu_indices' order): sizes n_i, n_j
    and runtime ratios t_j/t_i."""
    index = np.arange(n.size)
    i, j = np.nonzero(index[:, None] < index[None, :])
    return n[i], n[j], t[j] / t[i]


def envelope_at(
    n: FloatArray, t: FloatArray, delta: float, domain: Domain, pairs: Pairs | None = None
) -> Envelope:
    """The envelope for a given δ: all valid, non-redundant range pairs (`pairs`: pairs_of(n,
    t) when the caller has it)."""
    ni, nj, x = pairs if pairs is not None else pairs_of(n, t)
    a_lo, a_hi, s_lo, s_hi, valid = range_pairs(ni, nj, x, delta, domain)
    piece = np.broadcast_to(np.arange(len(PIECES)), valid.shape)
    pair = np.stack(
        [np.broadcast_to(ni[:, None], valid.shape), np.broadcast_to(nj[:, None], valid.shape)], -1
    )
    a_lo, a_hi, s_lo, s_hi = a_lo[valid], a_hi[valid], s_lo[valid], s_hi[valid]
    piece, pair = piece[valid], pair[valid]
    keep = drop_redundant(a_lo, a_hi, s_lo, s_hi)
    return Envelope(
        delta=delta,
        a_lo=a_lo[keep],
        a_hi=a_hi[keep],
        s_lo=s_lo[keep],
        s_hi=s_hi[keep],
        piece=piece[keep].astype(np.int64),
        pair=pair[keep].astype(np.int64),
        bounded=True,
    )


def whole_domain(domain: Domain, delta: float) -> Envelope:
    """The unconstrained search space, used when no δ on the ladder explains the data."""
    return Envelope(
        delta=delta,
        a_lo=np.array([1.0]),
        a_hi=np.array([domain.a_max]),
        s_lo=np.array([0.0]),
        s_hi=np.array([domain.s_max]),
        piece=np.array([-1], dtype=np.int64),
        pair=np.zeros((1, 2), dtype=np.int64),
        bounded=False,
    )


FIRST, SECOND, FLAT = 0, 1, 2


@dataclass(frozen=True)
class CurveInstances:
    """Instances on the pairs' exact curves and what is needed to move along each curve.

    A, s: the instances. delta_enter: the δ from which each lies in the envelope. kind: FIRST
    (s = κA), SECOND (σ = 2g/(2A-1+g)) or FLAT (s fixed); param: κ, g or s accordingly;
    ni, nj: the pair's sizes, which bound the curve's valid A range.
    """

    A: FloatArray
    s: FloatArray
    delta_enter: FloatArray
    kind: IntArray
    param: FloatArray
    ni: FloatArray
    nj: FloatArray

    def moved_to(self, A: FloatArray, domain: Domain) -> CurveInstances:
        """The same curves at new A values (broadcast with the candidates); invalid ones dropped."""
        A = np.broadcast_to(A, np.broadcast(self.kind[:, None], A).shape)
        s, ok = curve_shape(
            self.kind[:, None], self.param[:, None], A, self.ni[:, None], self.nj[:, None], domain
        )
        # Row-major like a boolean mask over the broadcast arrays, without broadcasting them.
        row, col = np.nonzero(ok)
        return CurveInstances(
            A=A[row, col],
            s=s[row, col],
            delta_enter=self.delta_enter[row],
            kind=self.kind[row],
            param=self.param[row],
            ni=self.ni[row],
            nj=self.nj[row],
        )

    def concat(self, other: CurveInstances) -> CurveInstances:
        return CurveInstances(
            *(
                np.concatenate([a, b])
                for a, b in zip(
                    (self.A, self.s, self.delta_enter, self.kind, self.param, self.ni, self.nj),
                    (
                        other.A,
                        other.s,
                        other.delta_enter,
                        other.kind,
                        other.param,
                        other.ni,
                        other.nj,
                    ),
                    strict=True,
                )
            )
        )


def curve_shape(
    kind: IntArray, param: FloatArray, A: FloatArray, ni: FloatArray, nj: FloatArray, domain: Domain
) -> tuple[FloatArray, BoolArray]:
    """s on each pair curve at A, and whether the instance really has the pair on that piece.

    FIRST: s = κA, valid while s ≤ s_max and n_j is still on the first piece (n_j ≤ A in low
    mode, n_j ≤ A + (A-1)σ in high mode). SECOND: σ = 2g/(2A-1+g) (2 for g = ∞), valid for
    (n_j+1)/2 ≤ A ≤ n_i and σ ≤ 1. FLAT: s as given, valid for A ≤ (n_i+1)/2.
    """
    infinite_g = np.isinf(param)
    finite_g = np.where(infinite_g, 0.0, param)
    s_second = np.where(infinite_g, 2.0, 2.0 * finite_g / (2.0 * A - 1.0 + finite_g))
    first, second = kind == FIRST, kind == SECOND
    s = np.where(first, param * A, np.where(second, s_second, param))
    # s_to_sigma inlined (no 2 - s = 0 to guard against: s ≤ s_max < 2 here).
    capped = np.minimum(s, domain.s_max)
    sigma = np.where(capped <= 1.0, capped, capped / (2.0 - capped))
    low = s <= 1.0
    end_first = np.where(low, A, A + (A - 1.0) * sigma)
    ok_first = (s <= domain.s_max) & (end_first >= nj)
    ok_second = ((nj + 1.0) / 2.0 <= A) & (A <= ni) & low
    ok_flat = A <= (ni + 1.0) / 2.0
    ok = np.where(first, ok_first, np.where(second, ok_second, ok_flat))
    ok &= (A >= 1.0) & (A <= domain.a_max)
    return s, ok


def pair_curve_instances(
    n: FloatArray, t: FloatArray, domain: Domain, samples: int, pairs: Pairs | None = None
) -> CurveInstances:
    """Sample each pair's exact (δ = 0) curve in each piece; see "Choosing δ" above.

    First pieces (both modes): s = κ A with κ = 2/(g+1), A log-spaced on [1, 2 n_max] plus
    a_max (past n_max every observation sits in the first piece and nothing changes).
    Second low piece: σ = 2g/(2A-1+g) for A on [(n_j+1)/2, n_i]. Flat pieces: A on
    [1, (n_i+1)/2] with σ = 0, 1 and σ_max. Samples outside their piece's validity are dropped.
    `pairs`: pairs_of(n, t) when the caller has it.
    """
    ni, nj, x = pairs if pairs is not None else pairs_of(n, t)
    xc = np.minimum(np.maximum(x, ni / nj), 1.0)  # np.clip's arithmetic, ni/nj < 1
    # A pair whose runtime rose (x > 1) has sloped range pairs only once x(1-δ)/(1+δ) ≤ 1.
    # A superlinear pair (x < n_i/n_j) always has them: its g range reaches ∞ (κ_lo = 0).
    enter = np.where(x > 1.0, (x - 1.0) / (x + 1.0), 0.0)
    flat_enter = np.abs(x - 1.0) / (x + 1.0)
    g = ratio_to_g(ni, nj, xc)
    kappa = 2.0 / (np.where(np.isinf(g), np.inf, g) + 1.0)

    u = linspace(0.0, 1.0, samples)
    a_first = np.append(np.exp(u * np.log(2.0 * n.max())), domain.a_max)
    a2_lo, a2_hi = np.maximum((nj + 1.0) / 2.0, 1.0), ni
    a_second = a2_lo[:, None] + u[None, :] * np.maximum(a2_hi - a2_lo, 0.0)[:, None]
    few = max(samples // 8, 2)
    a_flat = np.exp(linspace(0.0, 1.0, few)[None, :] * np.log((ni + 1.0) / 2.0)[:, None])
    s_levels = np.array([0.0, 1.0, domain.s_max])

    P, L = ni.size, s_levels.size
    # The curves in the order first pieces, second pieces, flat pieces, one row of A values
    # each: the instances in the row-major order of one array of rows padded with never-valid
    # NaN to the widest, in two blocks so the flat rows (4 values of 33) are not padded.
    width = max(a_first.size, a_second.shape[1])
    sloped = np.full((2 * P, width), np.nan)
    sloped[:P, : a_first.size] = a_first
    sloped[P:, : a_second.shape[1]] = a_second
    none = np.zeros(0)
    first_second = CurveInstances(
        none,
        none,
        delta_enter=np.concatenate([enter, enter]),
        kind=np.repeat([FIRST, SECOND], P),
        param=np.concatenate([kappa, g]),
        ni=np.concatenate([ni, ni]),
        nj=np.concatenate([nj, nj]),
    )
    flat = CurveInstances(
        none,
        none,
        delta_enter=np.repeat(flat_enter, L),
        kind=np.full(P * L, FLAT),
        param=np.broadcast_to(s_levels, (P, L)).ravel(),
        ni=np.repeat(ni, L),
        nj=np.repeat(nj, L),
    )
    return first_second.moved_to(sloped, domain).concat(
        flat.moved_to(np.repeat(a_flat, L, 0), domain)
    )


def delta_ladder(delta0: float, growth: float, delta_max: float) -> FloatArray:
    """The δ values ADEPT tries in turn: δ0, δ0·growth, ... up to delta_max (< 1)."""
    steps = int(np.ceil(np.log(delta_max / delta0) / np.log(growth)))
    out: FloatArray = np.minimum(delta0 * growth ** np.arange(steps + 1), delta_max)
    return out


def derive_envelope(
    n: FloatArray,
    t: FloatArray,
    domain: Domain,
    *,
    delta0: float = 0.005,
    growth: float = 1.25,
    delta_max: float = 0.9,
    samples: int = 32,
    scale: float | None = None,
) -> tuple[Envelope, CurveInstances, FloatArray]:
    """Grow δ along the ladder until some envelope instance explains all observations within δ.

    `scale` is T(1) when it was observed (then it is not fitted). Returns the envelope, the
    sampled curve instances and their relative runtimes at n (the search reuses them as seeds).
    """
    pairs = pairs_of(n, t)
    cands = pair_curve_instances(n, t, domain, samples, pairs)
    tau = relative_runtime_s(n, cands.A[:, None], cands.s[:, None])
    needed = np.maximum(minimax_relative_error(tau, t, scale), cands.delta_enter)
    taus = [tau]  # joined once at the end: each join copies every candidate's row
    # Zoom along the most promising curves: the first sampling steps ~10% in A.
    half = np.log(2.0 * n.max()) / (samples - 1)
    for _ in range(ZOOM_ROUNDS):
        top = np.argsort(needed)[:ZOOM_CURVES]
        best = CurveInstances(
            *(
                arr[top]
                for arr in (
                    cands.A,
                    cands.s,
                    cands.delta_enter,
                    cands.kind,
                    cands.param,
                    cands.ni,
                    cands.nj,
                )
            )
        )
        near = best.A[:, None] * np.exp(linspace(-half, half, ZOOM_SAMPLES))[None, :]
        more = best.moved_to(near, domain)
        more_tau = relative_runtime_s(n, more.A[:, None], more.s[:, None])
        cands = cands.concat(more)
        taus.append(more_tau)
        needed = np.concatenate(
            [needed, np.maximum(minimax_relative_error(more_tau, t, scale), more.delta_enter)]
        )
        half *= 2.0 / (ZOOM_SAMPLES - 1)
    tau = np.concatenate(taus)
    ladder = delta_ladder(delta0, growth, delta_max)
    feasible = ladder >= needed.min()
    if not feasible.any():
        return whole_domain(domain, float(ladder[-1])), cands, tau
    delta = float(ladder[np.argmax(feasible)])
    return envelope_at(n, t, delta, domain, pairs), cands, tau
