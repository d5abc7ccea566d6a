"""Placement (Ntagiou's separable speedup tree) and weak scaling (Gustafson), on exact data
from the thesis' equations."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from predictor.downey import FloatArray
from predictor.placement import fit_placement, tasks_per_node
from predictor.weak import fit_weak, largest_efficient

T0 = 1000.0


def memory_bound_f(p: FloatArray) -> FloatArray:
    """Speedup of p processes in one clone that share its memory bus: f(p) = p / (1 + 0.3 (p-1))
    (synthetic, shaped as the thesis' Figure 4.5 for working sets larger than the cache)."""
    return p / (1.0 + 0.3 * (p - 1.0))


def network_g(c: FloatArray) -> FloatArray:
    """Speedup of c clones with one process each: g(c) = c / (1 + 0.02 (c-1)) (synthetic)."""
    return c / (1.0 + 0.02 * (c - 1.0))


def tree_runtime(c: FloatArray, p: FloatArray) -> FloatArray:
    """T(c, p) = T0 / (g(c) f(p)): the right-father rule S(c,2p) = S(c,p) f(2p)/f(p) unrolled."""
    return T0 / (network_g(c) * memory_bound_f(p))


def test_outer_measurements_predict_every_inner_node_exactly() -> None:
    # The thesis' leading measurements: one clone with 1..8 processes, 1..16 clones with one.
    p_outer = np.arange(1, 9, dtype=float)
    c_outer = np.arange(2, 17, dtype=float)
    c = np.concatenate([np.ones_like(p_outer), c_outer])
    p = np.concatenate([p_outer, np.ones_like(c_outer)])
    model = fit_placement(c, p, tree_runtime(c, p))
    cc, pp = np.meshgrid(np.arange(1, 17.0), np.arange(1, 9.0))
    assert_allclose(model.runtime(cc.ravel(), pp.ravel()), tree_runtime(cc, pp).ravel(), rtol=1e-9)
    assert model.runs == 23
    assert model.placements == 23
    assert model.rms_log_residual < 1e-12


def test_right_father_rule_holds_on_the_fit() -> None:
    c = np.array([1, 1, 1, 4, 8], dtype=float)
    p = np.array([1, 2, 4, 1, 1], dtype=float)
    model = fit_placement(c, p, tree_runtime(c, p))
    # S(8, 4) = S(8, 2) · f(4)/f(2)  ⇔  T(8, 4) = T(8, 2) · f(2)/f(4)
    t82, t84 = model.runtime([8, 8], [2, 4])
    f = memory_bound_f(np.array([2.0, 4.0]))
    assert_allclose(t84, t82 * f[0] / f[1], rtol=1e-12)


def test_unconnected_or_unseen_placements_are_not_guessed() -> None:
    # Two disconnected pieces: {(1,1),(2,1)} and {(4,4),(8,4)}: (2,4) links a node count of the
    # first piece to a tasks-per-node of the second, which no run relates.
    c = np.array([1, 2, 4, 8], dtype=float)
    p = np.array([1, 1, 4, 4], dtype=float)
    model = fit_placement(c, p, tree_runtime(c, p))
    got = model.runtime([2, 8, 16, 8], [4, 4, 1, 2])
    assert np.isnan(got[0])  # both factors seen, but in different pieces
    assert_allclose(got[1], tree_runtime(np.array(8.0), np.array(4.0)), rtol=1e-9)
    assert np.isnan(got[2])
    assert np.isnan(got[3])


def test_repeated_runs_average_in_log_space() -> None:
    model = fit_placement([1, 1, 2, 2], [2, 2, 1, 1], [100.0, 400.0, 50.0, 50.0])
    assert_allclose(model.runtime(1, 2), 200.0, rtol=1e-12)
    assert model.placements == 2


@pytest.mark.parametrize(
    ("c", "p", "t", "what"),
    [
        ([1, 2], [1], [1.0, 2.0], "same length"),
        ([0], [1], [1.0], "nodes"),
        ([1.5], [1], [1.0], "nodes"),
        ([1], [0], [1.0], "tasks_per_node"),
        ([1], [1], [-1.0], "runtime"),
        ([1], [1], [np.nan], "runtime"),
        ([], [], [], "runtime"),
    ],
)
def test_fit_placement_rejects_bad_input(
    c: list[float], p: list[float], t: list[float], what: str
) -> None:
    with pytest.raises(ValueError, match=what):
        fit_placement(c, p, t)


def test_tasks_per_node_is_the_busiest_node() -> None:
    assert_allclose(tasks_per_node(64, [4, 5, 16, 64]), [16, 13, 4, 1])


def gustafson_runs(a: float, k: float, n: FloatArray, s: FloatArray) -> FloatArray:
    """T(n, s) = a + k s / n (Gustafson's decomposition, thesis 4.6.2)."""
    return a + k * s / n


def test_weak_fit_recovers_the_decomposition_and_alpha_exactly() -> None:
    n = np.array([1, 2, 4, 8, 16, 1, 2, 4, 8, 16], dtype=float)
    s = np.concatenate([100.0 * n[:5], 200.0 * n[5:]])  # two per-node work levels
    t = gustafson_runs(5.0, 0.45, n, s)
    fit = fit_weak(n, s, t)
    assert_allclose([fit.serial_s, fit.per_work_s], [5.0, 0.45], rtol=1e-9)
    assert fit.fit_error < 1e-12
    # α by Gustafson's least squares over the runs: S_i = (a + k s_i) / T_i.
    serial = 5.0 + 0.45 * s
    x = n - 1.0
    alpha = np.sum((n - serial / t) * x) / np.sum(x * x)
    assert_allclose(fit.alpha, alpha, rtol=1e-9)
    # Between the two levels' own α = a / (a + k w): 5/50 and 5/95.
    assert 5.0 / 95.0 < fit.alpha < 5.0 / 50.0


def test_weak_fit_with_one_work_level_is_refused() -> None:
    n = np.array([1, 2, 4], dtype=float)
    with pytest.raises(ValueError, match="size"):
        fit_weak(n, 100.0 * n, gustafson_runs(5.0, 0.45, n, 100.0 * n))


def test_scaled_speedup_and_efficiency_follow_gustafson() -> None:
    n = np.array([1.0, 2.0, 4.0, 8.0])
    s = np.array([100.0, 100.0, 800.0, 800.0])
    fit = fit_weak(n, s, gustafson_runs(10.0, 1.0, n, s))
    assert_allclose(fit.scaled_speedup(n), n - fit.alpha * (n - 1), rtol=1e-12)
    assert_allclose(fit.efficiency(n), 1 - fit.alpha * (n - 1) / n, rtol=1e-12)
    assert np.all(np.diff(fit.efficiency(n)) <= 0)


@pytest.mark.parametrize(
    ("alpha", "theta", "lo", "hi", "want"),
    [
        (0.2, 0.8, 1, 64, 64),  # α ≤ 1 − θ: E never drops below θ
        (0.5, 0.6, 1, 64, 5),  # α/(α − 0.4) = 5: E(5) = 0.6 exactly, E(6) < 0.6
        (0.5, 0.6, 8, 64, 8),  # the bound is below the range: the user's minimum
        (0.9, 0.5, 1, 3, 2),  # 0.9/0.4 = 2.25: E(2) = 0.55, E(3) = 0.4
    ],
)
def test_largest_efficient_under_gustafson(
    alpha: float, theta: float, lo: int, hi: int, want: int
) -> None:
    got = largest_efficient(alpha, theta, lo, hi)
    assert got == want
    e = 1 - alpha * (got - 1) / got
    assert e >= theta - 1e-12 or got == lo
    if got < hi:
        assert 1 - alpha * got / (got + 1) < theta
