"""ADEPT envelope: every range-pair formula against the model, redundancy, δ growth."""

from __future__ import annotations

import numpy as np
import pytest

from predictor.downey import max_useful_size, relative_runtime, sigma_to_s
from predictor.envelope import (
    _FEW_PAIRS,
    HIGH1,
    HIGHFLAT,
    LOW1,
    LOW2,
    LOWFLAT,
    PIECES,
    Domain,
    _drop_redundant_all,
    delta_ladder,
    derive_envelope,
    drop_redundant,
    envelope_at,
    range_pairs,
    ratio_to_g,
)

RNG = np.random.default_rng(2010)
DOMAIN = Domain()


def pair_in_piece(piece: int) -> tuple[float, float, float, float] | None:
    """A random true instance (A, σ) and two whole sizes n_i < n_j on the given piece."""
    low = piece in (LOW1, LOW2, LOWFLAT)
    A = float(np.exp(RNG.uniform(np.log(3), np.log(3000))))
    sigma = float(RNG.uniform(0.0, 0.999)) if low else float(np.exp(RNG.uniform(0.01, np.log(500))))
    end = float(max_useful_size(A, sigma))
    lo, hi = {
        LOW1: (1.0, A),
        LOW2: (A, 2 * A - 1),
        LOWFLAT: (2 * A - 1, 4 * A),
        HIGH1: (1.0, end),
        HIGHFLAT: (end, 3 * end),
    }[piece]
    sizes = np.unique(np.floor(np.exp(RNG.uniform(np.log(max(lo, 1.0)), np.log(hi), 2))))
    sizes = sizes[(sizes >= lo) & (sizes <= hi)]
    if sizes.size < 2 or min(hi, DOMAIN.a_max) < 1:
        return None
    return A, sigma, float(sizes[0]), float(sizes[1])


def truth_inside(piece: int, A: float, sigma: float, ni: float, nj: float, noise: float) -> bool:
    c = float(RNG.uniform(1, 1e4))  # unknown T(1): only the ratio may matter
    t = c * relative_runtime(np.array([ni, nj]), A, sigma)
    if noise:
        t = t / (1 + RNG.uniform(-noise, noise, 2))  # true runtime within t(1±δ)
    a_lo, a_hi, s_lo, s_hi, valid = range_pairs(
        np.array([ni]), np.array([nj]), np.array([t[1] / t[0]]), noise, DOMAIN
    )
    s = float(sigma_to_s(sigma))
    tol = 1e-9
    return bool(
        valid[0, piece]
        and a_lo[0, piece] * (1 - tol) <= A <= a_hi[0, piece] * (1 + tol)
        and s_lo[0, piece] - tol <= s <= s_hi[0, piece] + tol
    )


@pytest.mark.parametrize("piece", range(len(PIECES)), ids=PIECES)
@pytest.mark.parametrize("noise", [0.0, 0.05], ids=["exact", "within-5pct"])
def test_each_range_pair_formula_contains_the_true_instance(piece: int, noise: float) -> None:
    checked = 0
    while checked < 300:
        drawn = pair_in_piece(piece)
        if drawn is None:
            continue
        A, sigma, ni, nj = drawn
        assert truth_inside(piece, A, sigma, ni, nj, noise), (PIECES[piece], A, sigma, ni, nj)
        checked += 1


def test_second_piece_closed_form_recovers_sigma_exactly() -> None:
    """Low-variance second piece: σ = 2g/(2A-1+g) with g from the pair's runtime ratio."""
    for _ in range(200):
        drawn = pair_in_piece(LOW2)
        if drawn is None:
            continue
        A, sigma, ni, nj = drawn
        x = float(relative_runtime(nj, A, sigma) / relative_runtime(ni, A, sigma))
        g = float(ratio_to_g(np.array(ni), np.array(nj), np.array(x)))
        assert 2 * g / (2 * A - 1 + g) == pytest.approx(sigma, abs=1e-9)


def test_ratio_to_g_inverts_the_piece_ratio() -> None:
    ni, nj = np.array([3.0]), np.array([40.0])
    for g in (0.0, 0.5, 7.0, 300.0):
        x = (1 + g / nj) / (1 + g / ni)
        assert ratio_to_g(ni, nj, x)[0] == pytest.approx(g, abs=1e-9)
    assert ratio_to_g(ni, nj, ni / nj)[0] == np.inf  # perfect scaling
    assert ratio_to_g(ni, nj, np.array([1.3]))[0] == 0.0  # runtime rose: clamped


def test_redundant_range_pairs_are_dropped_without_changing_the_union() -> None:
    a_lo = np.array([1.0, 2.0, 1.0, 5.0, 2.0])
    a_hi = np.array([10.0, 5.0, 10.0, 50.0, 5.0])
    s_lo = np.array([0.0, 0.2, 0.0, 0.5, 0.2])
    s_hi = np.array([1.0, 0.8, 1.0, 1.5, 0.8])
    keep = drop_redundant(a_lo, a_hi, s_lo, s_hi)
    # 1 and 4 lie in 0; 2 is identical to 0 (the first copy is kept); 3 stands alone.
    assert keep.tolist() == [True, False, False, True, False]


def test_redundant_range_pairs_on_many_copies_match_every_pair_compared() -> None:
    """Past _FEW_PAIRS, drop_redundant compares the distinct range pairs only; on bounds
    drawn from few values (many identical pairs, ±0.0 among them) it keeps exactly what
    comparing every pair with every other one keeps."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        k = int(rng.integers(_FEW_PAIRS + 1, 120))
        v = rng.integers(0, 4, (k, 4)).astype(float)
        v[:, 2] = np.where((v[:, 2] == 0) & (rng.random(k) < 0.5), -0.0, v[:, 2])
        a_lo, a_hi = np.minimum(v[:, 0], v[:, 1]), np.maximum(v[:, 0], v[:, 1])
        s_lo, s_hi = np.minimum(v[:, 2], v[:, 3]), np.maximum(v[:, 2], v[:, 3])
        keep = drop_redundant(a_lo, a_hi, s_lo, s_hi)
        assert np.array_equal(keep, _drop_redundant_all(a_lo, a_hi, s_lo, s_hi))
        assert keep.any()
        assert keep.sum() < k  # bounds from four values: some pair is a copy or covered


def test_envelope_grows_with_delta() -> None:
    n = np.array([2.0, 8.0, 32.0, 128.0])
    t = 50 * relative_runtime(n, 60.0, 0.7) * np.array([1.0, 1.03, 0.97, 1.02])
    A = np.exp(RNG.uniform(0, np.log(1e4), 5000))
    s = RNG.uniform(0, 2, 5000)
    previous = np.zeros(5000, dtype=bool)
    for delta in (0.01, 0.03, 0.1, 0.3):
        inside = envelope_at(n, t, delta, DOMAIN).contains(A, s)
        assert np.all(inside[previous])
        previous = inside
    assert previous.any()


def test_exact_data_needs_the_smallest_delta_and_keeps_the_truth() -> None:
    for A, sigma in [(24.7, 0.74), (700.0, 3.0), (150.0, 0.2), (40.0, 12.0)]:
        n = np.array([4.0, 16.0, 64.0, 256.0])
        t = 1000 * relative_runtime(n, A, sigma)
        env, _, _ = derive_envelope(n, t, DOMAIN)
        assert env.bounded
        assert env.delta == pytest.approx(delta_ladder(0.005, 1.25, 0.9)[0])
        assert env.contains(np.array(A), np.array(float(sigma_to_s(sigma))))


def test_delta_grows_with_the_deviation_from_the_model() -> None:
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    base = 100 * relative_runtime(n, 20.0, 0.5)
    deltas = []
    for amplitude in (0.0, 0.05, 0.2):
        wiggle = 1 + amplitude * np.array([0, 1, -1, 1, -1])
        env, _, _ = derive_envelope(n, base * wiggle, DOMAIN)
        deltas.append(env.delta)
    assert deltas[0] < deltas[1] < deltas[2]
