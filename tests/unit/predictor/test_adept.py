"""ADEPT fitting: the published cases, the search against the paper's granularity, its parts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

import predictor
from predictor.adept import (
    FAST,
    PAPER,
    SearchSettings,
    anchors,
    one_dimensional_pass,
    search,
)
from predictor.downey import FloatArray, relative_runtime, relative_runtime_s, s_to_sigma
from predictor.envelope import Domain
from predictor.lm import fit_lm

DATA = Path(__file__).resolve().parents[2] / "data" / "scaling"


def thesis_example() -> tuple[FloatArray, FloatArray]:
    """Table 5.1 of the thesis: NAS LU class W, runtime relative to T(1) = 1."""
    d = np.loadtxt(DATA / "lan_thesis_npb_lu_W.csv", delimiter=",", skiprows=1)
    return d[:, 0], d[:, 1]


# --- Thesis example 5.1 ---------------------------------------------------------------------


def test_thesis_example_fits_land_on_the_published_parameters() -> None:
    """With T(1) = 1 fixed (the thesis' speedups), ADEPT and LM both give A ≈ 24.70, σ ≈ 0.74.

    The thesis fixes the scale at T(1); ADEPT now treats T(1) as an observation with the
    others' noise by default (adept.py, fix_t1), so the thesis' convention is asked for."""
    n, t = thesis_example()
    n1, t1 = np.r_[1.0, n], np.r_[1.0, t]
    thesis = predictor.SearchSettings(fix_t1=True)
    for method in ("adept", "lm"):
        f = predictor.fit(n1, t1, method=method, settings=thesis)
        assert f.status == "ok"
        assert 24.6 <= f.A <= 24.9, method
        assert 0.72 <= f.sigma <= 0.81, method
        assert f.mode == "low"
        assert f.t1 == 1.0
        assert f.t1_known
    lm = predictor.fit(n1, t1, method="lm")
    # The thesis prints its LM prediction at 64 nodes as 24.70 = A.
    assert lm.speedup(64) == pytest.approx(24.70, abs=0.02)


def test_thesis_example_per_target_predictions_within_0_3_of_measured() -> None:
    """ADEPT's one-instance-per-target predictions follow the measured speedups closely.

    No single Downey instance gets within 0.3 at every size (the best one misses by 0.34, the
    thesis' own fit by 0.54 at 32 nodes), which is what per-target fitting is for.
    """
    n, t = thesis_example()
    measured = 1.0 / t
    for n_in, t_in in ((np.r_[1.0, n], np.r_[1.0, t]), (n, t)):  # with and without T(1)
        runtime = predictor.predict(n_in, t_in, n)
        assert np.abs(1.0 / runtime - measured).max() < 0.3


# --- ADEPT's Table 2 set-up ---------------------------------------------------------------------

SIZES = np.array([16, 32, 64, 128, 256, 512, 1024, 2048, 3072, 4096])
INPUTS = [1, 4, 6, 9]  # 32, 256, 1024 and 4096 nodes given; the other six predicted
SETS = {"low": ((400.0, 1000.0), (0.0, 1.0)), "high": ((400.0, 2000.0), (1.1, 12.0))}


def table2_instances(which: str, count: int = 50) -> list[tuple[float, float]]:
    rng = np.random.default_rng(2009 if which == "low" else 2010)
    (a_lo, a_hi), (s_lo, s_hi) = SETS[which]
    return [(rng.uniform(a_lo, a_hi), rng.uniform(s_lo, s_hi)) for _ in range(count)]


def within_one_percent(pred: FloatArray, truth: FloatArray) -> bool:
    return bool(np.all(np.abs(pred / truth - 1) <= 0.01))


@pytest.mark.parametrize("which", ["low", "high"])
def test_table2_adept_predicts_the_other_six_within_one_percent(which: str) -> None:
    """Ten exact points, four given, T(1) unknown: ≥ 95% of instances within 1% at all six."""
    held_out = np.setdiff1d(np.arange(SIZES.size), INPUTS)
    good = []
    for A, sigma in table2_instances(which):
        t = 1000.0 * relative_runtime(SIZES, A, sigma)
        pred = predictor.predict(SIZES[INPUTS], t[INPUTS], SIZES[held_out])
        good.append(within_one_percent(pred, t[held_out]))
    assert np.mean(good) >= 0.95


def test_table2_lm_from_an_arbitrary_start_goes_wrong() -> None:
    """The paper's Figure 4: LM is very sensitive to its initial guess; ADEPT needs none."""
    held_out = np.setdiff1d(np.arange(SIZES.size), INPUTS)
    lm_good = []
    for A, sigma in table2_instances("low", 20) + table2_instances("high", 20):
        t = 1000.0 * relative_runtime(SIZES, A, sigma)
        res = fit_lm(SIZES[INPUTS].astype(float), t[INPUTS], start=(1.0, 1.0))
        pred = res.scale * relative_runtime(SIZES[held_out], res.A, res.sigma)
        lm_good.append(within_one_percent(pred, t[held_out]))
    assert np.mean(lm_good) <= 0.25


# --- The default search against the paper's granularity ------------------------------------


def random_problems(count: int, seed: int) -> list[tuple[FloatArray, FloatArray, FloatArray]]:
    rng = np.random.default_rng(seed)
    out: list[tuple[FloatArray, FloatArray, FloatArray]] = []
    while len(out) < count:
        A = rng.uniform(4, 800)
        sigma = rng.uniform(0, 1) if rng.random() < 0.5 else rng.uniform(1, 12)
        n = np.unique(np.round(np.exp(rng.uniform(0, np.log(3 * A), rng.integers(3, 9)))))
        if n.size < 2:
            continue
        noise = 0.0 if len(out) % 2 else 0.03
        t = 1000 * relative_runtime(n, A, sigma) * np.exp(rng.normal(0, noise, n.size))
        out.append((n, t, np.array([float(rng.integers(1, int(4 * A) + 2))])))
    return out


@pytest.mark.slow
def test_fast_search_finds_the_paper_granularity_optimum_or_a_better_one() -> None:
    """FAST vs the paper's 5,000-value pass and 500 × 500 grid, same objective.

    "Same optimum" up to 1% of the WSSRE plus 1e-6 (an RMS relative error of 0.1%, below any
    runtime measurement). Where predictions differ by more than 0.5%, FAST must be the one
    with the lower WSSRE: the paper's fixed ±15% window can stop on its own edge.
    """
    paper = dataclasses.replace(PAPER, q=FAST.q)
    same, worse_and_different = 0, []
    problems = random_problems(40, seed=11)
    for n, t, target in problems:
        fast, ref = search(n, t, target, FAST), search(n, t, target, paper)
        same += bool(fast.wssre[0] <= ref.wssre[0] * 1.01 + 1e-6)
        p_fast = fast.scale[0] * relative_runtime_s(target, fast.A, fast.s)[0]
        p_ref = ref.scale[0] * relative_runtime_s(target, ref.A, ref.s)[0]
        if abs(p_fast / p_ref - 1) > 0.005 and fast.wssre[0] > ref.wssre[0]:
            worse_and_different.append((n, target))
    assert same >= 0.95 * len(problems)
    assert worse_and_different == []


# --- Parts of the search -----------------------------------------------------------------------


def test_anchors_are_the_closest_observation_and_t1_or_the_next_closest() -> None:
    n = np.array([1.0, 4.0, 16.0, 64.0])
    a, b = anchors(n, np.array([50.0, 2.0, 10.0]), t1_known=True)
    assert n[a].tolist() == [64.0, 1.0, 16.0]
    assert n[b].tolist() == [1.0, 4.0, 1.0]
    a, b = anchors(n[1:], np.array([50.0, 10.0]), t1_known=False)
    assert n[1:][a].tolist() == [64.0, 16.0]  # 10 is as far from 4 as from 16: the larger wins
    assert n[1:][b].tolist() == [16.0, 4.0]


def test_one_dimensional_pass_goes_exactly_through_both_anchors() -> None:
    rng = np.random.default_rng(4)
    for _ in range(30):
        n = np.unique(np.round(np.exp(rng.uniform(0, 7, 5))))
        t = (
            100
            * relative_runtime(n, rng.uniform(2, 500), rng.uniform(0, 8))
            * rng.uniform(0.9, 1.1, n.size)
        )
        a, b = anchors(n, np.array([n[-1] * 1.5]), t1_known=bool(n[0] == 1))
        grid = np.exp(np.linspace(0, np.log(1e4), 300))
        A, s = one_dimensional_pass(n, t, a, b, grid, 1.998)
        ok = np.isfinite(s)
        ratio = relative_runtime_s(n[a][0], A[ok], s[ok]) / relative_runtime_s(
            n[b][0], A[ok], s[ok]
        )
        assert_allclose(ratio, t[a][0] / t[b][0], rtol=1e-9)


def test_all_observations_on_the_first_piece_leave_a_and_sigma_unidentified() -> None:
    """ADEPT's Figure 9 (right): A = 700, σ = 3, inputs 16..81 are all before the knee."""
    n = np.array([16.0, 25.0, 36.0, 81.0])
    t = 5000 * relative_runtime(n, 700.0, 3.0)
    f = predictor.fit(n, t)
    assert not f.identified
    assert f.fit_error < 1e-6
    # The serial fraction s/(2A) is what the data determine: 1.5/1400 here.
    s = 2 * f.sigma / (f.sigma + 1) if f.sigma > 1 else f.sigma
    assert s / (2 * f.A) == pytest.approx(1.5 / 1400, rel=1e-3)
    # The "far" representative continues Amdahl's law: exact up to the true knee (2797).
    assert_allclose(
        f.runtime([225, 400, 1000]),
        5000 * relative_runtime([225, 400, 1000], 700.0, 3.0),
        rtol=1e-3,
    )


def test_valley_rules_place_the_representative_where_documented() -> None:
    n = np.array([16.0, 25.0, 36.0, 81.0])
    t = 5000 * relative_runtime(n, 700.0, 3.0)
    f_val = 1.5 / 1400
    far = search(n, t, None, SearchSettings(valley="far"))
    assert float(s_to_sigma(far.s[0])) == pytest.approx(1000.0, rel=1e-6)
    one = search(n, t, None, SearchSettings(valley="sigma1"))
    assert one.s[0] == pytest.approx(1.0)
    assert one.A[0] == pytest.approx(1 / (2 * f_val), rel=1e-3)
    near = search(n, t, None, SearchSettings(valley="near"))
    assert near.A[0] == pytest.approx(81.0, rel=1e-3)  # knee right after the data
    later = search(n, t, None, SearchSettings(valley="near", valley_knee=2.0))
    assert later.A[0] == pytest.approx(162.0, rel=1e-3)  # knee at twice the largest size
    assert later.s[0] == pytest.approx(2 * f_val * 162.0, rel=1e-3)
    assert not (far.identified[0])
    assert not (one.identified[0])
    assert not (near.identified[0])


def test_a_valley_that_needs_a_high_variance_ends_after_the_data() -> None:
    """Amdahl's law with f·n_max = 4.2 at the largest size: still before the knee only if
    σ > 4.2, so the valley ends right after the data (adept.py, near_above = 3)."""
    n = np.array([8.0, 16.0, 32.0, 64.0, 100.0])
    t = 50 * relative_runtime(n, 20.0, 5.0)  # knee at 20 + 19·5 = 115
    at = np.array([200.0, 400.0])
    truth = 50 * relative_runtime(at, 20.0, 5.0)
    fit = search(n, t, None)
    assert not fit.identified[0]
    assert fit.A[0] + (fit.A[0] - 1) * float(s_to_sigma(fit.s[0])) == pytest.approx(100.0, rel=1e-3)
    near = np.abs(predictor.predict(n, t, at) / truth - 1)
    far = np.abs(
        predictor.predict(n, t, at, settings=SearchSettings(near_above=np.inf)) / truth - 1
    )
    assert near.max() < 0.03  # flat from 100 on, the truth's knee at 115
    assert far.min() > 0.07  # Amdahl's law continued
    # Below the threshold the shipped far end stays: f·n_max = 2.1 at n_max = 50.
    assert search(n[:4], t[:4], None).s[0] == pytest.approx(Domain().s_max)


def test_three_noisy_sizes_do_not_invent_a_knee() -> None:
    """Thesis data on 2, 4, 8 (T(1) unknown), predicting 16, 32, 64: three parameters fit a
    knee through the noise right after 8 nodes (errors of 70-220%); Amdahl explains the three
    within 2% and extrapolates within 20%."""
    n, t = thesis_example()
    error = np.abs(predictor.predict(n[:3], t[:3], n[3:]) / t[3:] - 1)
    assert error.max() < 0.20
    knee = predictor.predict(n[:3], t[:3], n[3:], settings=SearchSettings(parsimony_tol=0))
    assert np.all(np.abs(knee / t[3:] - 1) > 0.5)


def test_a_knee_the_data_show_is_kept() -> None:
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    t = 100 * relative_runtime(n, 20.0, 0.4)
    f = predictor.fit(n, t)
    assert f.identified
    assert f.A == pytest.approx(20.0, rel=1e-3)
    assert f.sigma == pytest.approx(0.4, abs=1e-3)


def test_exact_data_spanning_the_pieces_are_reproduced_at_the_observed_sizes() -> None:
    rng = np.random.default_rng(9)
    for _ in range(20):
        A, sigma = rng.uniform(10, 300), rng.choice([rng.uniform(0, 1), rng.uniform(1, 6)])
        n = np.unique(np.round(np.exp(np.linspace(0.5, np.log(4 * A * (1 + sigma)), 6))))
        t = 77 * relative_runtime(n, A, sigma)
        assert_allclose(predictor.predict(n, t, n), t, rtol=2e-3)


def test_batched_targets_equal_one_at_a_time() -> None:
    n = np.array([2.0, 8.0, 32.0, 100.0])
    t = 10 * relative_runtime(n, 60.0, 1.7) * np.array([1.0, 1.02, 0.99, 1.01])
    targets = np.array([4.0, 50.0, 300.0])
    together = search(n, t, targets)
    for k, target in enumerate(targets):
        alone = search(n, t, np.array([target]))
        assert together.wssre[k] == pytest.approx(alone.wssre[0], rel=1e-12)
        assert together.A[k] == pytest.approx(alone.A[0], rel=1e-12)


def test_search_settings_are_validated() -> None:
    for bad in (
        {"q": 0.5},
        {"v": 0.0},
        {"grid_2d": 2},
        {"branches": 0},
        {"valley": "middle"},
        {"parsimony_tol": 1.5},
        {"parsimony_alpha": 0.0},
        {"valley_knee": 0.5},
        {"near_above": 0.0},
        {"polish_steps": -1},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            SearchSettings(**bad)


def test_an_observed_t1_is_one_observation_not_a_fixed_scale() -> None:
    """A slow T(1) run (15% off) no longer drags every prediction with it (seen on NPB CG).

    Failed before (T(1) fixed the scale): 13%, 11% and 6% error at 3, 6 and 12 nodes."""
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    t = 100 * relative_runtime(n, 40.0, 0.6)
    t[0] *= 1.15
    at = np.array([3.0, 6.0, 12.0, 24.0])
    error = np.abs(predictor.predict(n, t, at) / (100 * relative_runtime(at, 40.0, 0.6)) - 1)
    assert error.max() < 0.05
    assert predictor.fit(n, t).t1_known


def test_three_sizes_keep_a_knee_only_beyond_the_parsimony_tolerance() -> None:
    """Three sizes, T(1) unknown: the F-test has no degree of freedom, so the rule is the
    tolerance alone. A knee that leaves Amdahl's law 2% or more off some point is kept and
    identified (flat past A = 40 at 128 nodes); one Amdahl explains within 2% (A = 100 at 128
    nodes, just past the knee) is not claimed: the fit stays unidentified. Measured alternative:
    the chi-square test at η0 = 5% instead of the tolerance, on seeds 17-18,
    10 three-size cases per (position, noise): median extrapolation error 4.7% -> 7.8% (P90
    35.9% -> 30.2%), so the tolerance stays."""
    n = np.array([8.0, 32.0, 128.0])
    at = np.array([256.0, 512.0])
    clear = 100 * relative_runtime(n, 40.0, 0.2)
    f = predictor.fit(n, clear)
    assert f.identified
    assert f.A == pytest.approx(40.0, rel=1e-3)
    assert_allclose(predictor.predict(n, clear, at), 100 * relative_runtime(at, 40.0, 0.2), 1e-3)
    hidden = 100 * relative_runtime(n, 100.0, 0.5)
    assert not predictor.fit(n, hidden).identified
    assert predictor.fit(n, hidden).max_useful_n is None


def test_an_unidentified_search_returns_both_ends_of_the_valley_as_plausible() -> None:
    n = np.array([16.0, 25.0, 36.0, 81.0])
    t = 5000 * relative_runtime(n, 700.0, 3.0)  # all before the knee (A + (A-1)σ = 2797)
    found = search(n, t, np.array([160.0, 320.0]))
    assert not found.identified.any()
    A, s = found.plausible.A, found.plausible.s
    assert A.shape == (2, 6)
    assert_allclose(A[:, 0], found.A)  # the chosen instance is the first
    assert np.any(np.isclose(A, 81.0, rtol=1e-3), axis=1).all()  # knee right after the data
    assert (s_to_sigma(s).max(axis=1) > 999.0).all()  # Amdahl's law continued
    # Every plausible instance explains the data alike: the first piece is the same.
    tau = relative_runtime(n[None, None, :], A[..., None], s_to_sigma(s)[..., None])
    model = found.plausible.scale[..., None] * tau
    assert np.max(np.abs(model / t - 1.0)) < 0.01


def test_an_identified_search_has_its_instance_as_the_only_plausible_one() -> None:
    n = np.array([4.0, 8.0, 16.0, 32.0, 64.0, 128.0])
    t = 100 * relative_runtime(n, 20.0, 0.5)
    found = search(n, t, np.array([48.0, 256.0]))
    assert found.identified.all()
    assert found.plausible.A.shape == (2, 1)
    assert_allclose(found.plausible.A[:, 0], found.A)
    assert_allclose(found.plausible.s[:, 0], found.s)
    assert_allclose(found.plausible.scale[:, 0], found.scale)
