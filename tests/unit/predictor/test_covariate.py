"""Curves from heterogeneous runs (predictor/covariate.py, heterogeneous.py): the closed-form
covariate, the noise from repeated sizes, the lack-of-fit test, and the curve they make."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import f as f_dist

import predictor
from predictor.covariate import (
    LOF_ALPHA,
    NOISE_FLOOR,
    USE_LEVEL,
    Censored,
    Covariate,
    adjust,
    grid,
    lack_of_fit,
    limit_use,
    profile,
    pure_error,
)
from predictor.downey import BoolArray, FloatArray, IntArray, relative_runtime, sigma_to_s
from predictor.heterogeneous import fit_heterogeneous, judged_by_noise

SIZES = np.array([1, 2, 4, 8, 16, 32, 64])


def runs(
    seed: int,
    count: int = 140,
    beta: float = 0.8,
    noise: float = 0.15,
    A: float = 24.0,
    sigma: float = 0.8,
    together: float = 0.0,
) -> tuple[IntArray, FloatArray, FloatArray]:
    """Synthetic heterogeneous runs: sizes from SIZES, limits lognormal (log-SD 1.2) and, with
    `together`, larger for larger sizes (users ask more nodes for bigger inputs), run times
    1000·(L/3600)^β·τ(n)·LogNormal(0, noise)."""
    rng = np.random.default_rng(seed)
    n = rng.choice(SIZES, count)
    limit = np.exp(np.log(3600.0) + together * np.log(n) + rng.normal(0.0, 1.2, count))
    t = (
        1000.0
        * (limit / 3600.0) ** beta
        * relative_runtime(n.astype(float), A, sigma)
        * np.exp(rng.normal(0.0, noise, count))
    )
    return n, t, limit


def test_profile_solves_the_covariate_exactly_at_the_true_instance() -> None:
    """Noiseless runs: at the true (A, s) the closed form gives β, c exactly and RSS 0."""
    n, t, limit = runs(1, noise=0.0)
    x = np.log(limit) - np.log(limit).mean()
    A = np.array([24.0, 10.0])
    s = sigma_to_s(np.array([0.8, 0.8]))
    found = profile(n, np.log(t), x, A, s)
    assert found.beta[0] == pytest.approx(0.8, abs=1e-12)
    # c: log T(1) of a job asking the geometric-mean limit L_ref.
    reference = np.exp(np.log(limit).mean())
    assert found.c[0] == pytest.approx(np.log(1000.0 * (reference / 3600.0) ** 0.8), abs=1e-9)
    assert found.rss[0] == pytest.approx(0.0, abs=1e-18)
    assert found.rss[1] > 1e-3  # a wrong shape leaves a residual


def test_profile_of_runs_that_all_asked_the_same_limit_has_no_covariate() -> None:
    n, t, _ = runs(2, noise=0.0)
    A, s = grid()
    found = profile(n, np.log(t), np.zeros(n.size), A, s)
    assert np.all(found.beta == 0.0)


def test_pure_error_of_a_known_case() -> None:
    """Size 0: y = 0, 2 (mean 1, SS 2); size 1: y = 1, 1, 1 (SS 0): SS 2 on 5 - 2 = 3 df."""
    y = np.array([0.0, 2.0, 1.0, 1.0, 1.0])
    group = np.array([0, 0, 1, 1, 1])
    assert pure_error(y, group, 2) == (2.0, 3)


def test_lack_of_fit_of_a_known_case() -> None:
    """Four sizes, two runs each, ±0.1 around means (0, 0, 0, 0.3) against a curve at 0:
    SS_PE = 8·0.01 = 0.08 on 4 df, SS_LOF = 2·0.09 = 0.18 on 4 - 3 = 1 df, F = 9."""
    y = np.array([-0.1, 0.1, -0.1, 0.1, -0.1, 0.1, 0.2, 0.4])
    group = np.repeat(np.arange(4), 2)
    misfit, p, noise, df = lack_of_fit(y, group, np.zeros(4), 4)
    assert df == 4
    assert noise == pytest.approx(np.sqrt(0.08 / 4))
    assert misfit == pytest.approx(np.sqrt(0.18 / 8))
    assert p == pytest.approx(f_dist.sf(9.0, 1, 4))


def test_a_misfit_within_timing_noise_is_not_rejected_by_exact_repeats() -> None:
    """Runs repeated without noise (a simulator, an idle rerun) have pure error 0; a shape
    0.3% off their means is no misfit for sizing: the test takes the noise at NOISE_FLOOR at
    least, so it passes, while a 10% miss is still rejected."""
    group = np.repeat(np.arange(4), 2)
    for gap, rejected in ((0.003, False), (0.1, True)):
        y = np.repeat(np.array([0.0, 0.0, 0.0, gap]), 2)
        misfit, p, noise, _ = lack_of_fit(y, group, np.zeros(4), 4)
        assert noise == 0.0
        assert misfit == pytest.approx(gap / 2.0)  # sqrt(2·gap² / 8 runs)
        f = (2 * gap**2) / NOISE_FLOOR**2
        assert p == pytest.approx(f_dist.sf(f, 1, 4))
        assert (p < LOF_ALPHA) is rejected


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_the_fit_recovers_beta_noise_and_the_shape(seed: int) -> None:
    n, t, limit = runs(seed, count=200, beta=0.8, noise=0.15, together=0.5)
    curve = fit_heterogeneous(n, t, limit)
    assert curve is not None
    assert curve.covariate is not None
    cov = curve.covariate
    assert cov.beta == pytest.approx(0.8, abs=0.05)
    assert cov.noise == pytest.approx(0.15, rel=0.2)
    assert not cov.shape_rejected
    assert judged_by_noise(curve)
    # The relative speedup over the sizes is recovered within a few percent.
    at = np.arange(1, 65, dtype=float)
    true = 1.0 / relative_runtime(at, 24.0, 0.8)
    got = curve.runtime(1.0) / curve.runtime(at)
    assert np.max(np.abs(np.log(got / true))) < 0.12
    # The residual (the interval's r) holds the noise.
    assert curve.residual >= 0.9 * cov.noise


def test_the_plain_fit_of_the_same_runs_is_off_and_refused() -> None:
    """The failure this module removes: size and input move together, and the plain fit reads
    the input's growth as a worse speedup; and its runs at one size differ so much that the
    reliability judgement says the key mixes problem sizes (a problem the gate refuses)."""
    n, t, _limit = runs(3, count=200, beta=0.8, noise=0.15, together=0.5)
    plain = predictor.Curve.from_fit(predictor.fit(n, t))
    at = np.arange(1, 65, dtype=float)
    true = 1.0 / relative_runtime(at, 24.0, 0.8)
    got = plain.runtime(1.0) / plain.runtime(at)
    assert np.max(np.abs(np.log(got / true))) > 0.3
    assert "mixed_sizes" in {p.problem for p in plain.diagnostics.reliability}


def test_the_misfit_test_flags_a_shape_the_downey_model_cannot_take() -> None:
    """Run times that halve, double, halve again with size (no Downey curve does that), with
    little noise, are rejected; the same noise around a Downey curve is not."""
    rng = np.random.default_rng(7)
    sizes = np.repeat(np.array([1, 2, 4, 8, 16, 32]), 6)
    zigzag = np.array([1.0, 0.5, 1.0, 0.25, 0.6, 0.2])
    limit = np.exp(rng.normal(np.log(3600.0), 1.0, sizes.size))
    noise = np.exp(rng.normal(0.0, 0.05, sizes.size))
    t = 500.0 * (limit / 3600.0) * np.repeat(zigzag, 6) * noise
    bad = fit_heterogeneous(sizes, t, limit)
    assert bad is not None
    assert bad.covariate is not None
    assert bad.covariate.shape_rejected
    assert "shape_misfit" in {p.problem for p in bad.diagnostics.reliability}
    good_t = 500.0 * (limit / 3600.0) * relative_runtime(sizes.astype(float), 12.0, 0.5) * noise
    good = fit_heterogeneous(sizes, good_t, limit)
    assert good is not None
    assert good.covariate is not None
    assert not good.covariate.shape_rejected
    assert "shape_misfit" not in {p.problem for p in good.diagnostics.reliability}


def test_a_significant_misfit_smaller_than_the_noise_keeps_the_shape() -> None:
    """Many runs make a small misfit significant: a Downey curve bent by ±0.15 in log at
    alternate sizes, under a run noise of 0.5, fails the lack-of-fit test, but its size
    means stray less than one run's noise, so the shape is not rejected; the same bend under
    a noise of 0.05 is."""
    rng = np.random.default_rng(11)
    sizes = np.repeat(np.array([1, 2, 4, 8, 16, 32]), 120)
    bend = np.repeat(np.exp(np.array([0.15, -0.15, 0.15, -0.15, 0.15, -0.15])), 120)
    limit = np.exp(rng.normal(np.log(3600.0), 1.0, sizes.size))
    shape = relative_runtime(sizes.astype(float), 12.0, 0.5) * bend

    def fitted(noise_sd: float) -> Covariate:
        t = 500.0 * (limit / 3600.0) * shape * np.exp(rng.normal(0.0, noise_sd, sizes.size))
        curve = fit_heterogeneous(sizes, t, limit)
        assert curve is not None
        assert curve.covariate is not None
        return curve.covariate

    noisy = fitted(0.5)
    assert noisy.lof_p < LOF_ALPHA  # significant ...
    assert noisy.misfit < noisy.noise  # ... but within one run's noise
    assert not noisy.shape_rejected
    quiet = fitted(0.05)
    assert quiet.lof_p < LOF_ALPHA
    assert quiet.misfit > quiet.noise
    assert quiet.shape_rejected


def test_runs_without_repeated_sizes_keep_adepts_judgement() -> None:
    """No size run twice: no pure error, no noise estimate, the fit error gate stays."""
    n = np.array([1, 2, 4, 8, 16])
    limit = np.array([600.0, 1200.0, 900.0, 3000.0, 2000.0])
    t = 100.0 * limit / 1000.0 * relative_runtime(n.astype(float), 8.0, 0.5)
    curve = fit_heterogeneous(n, t, limit)
    assert curve is not None
    assert curve.covariate is not None
    assert curve.covariate.noise_df == 0
    assert not judged_by_noise(curve)


def test_a_job_is_predicted_with_its_own_limit() -> None:
    n, t, limit = runs(8, noise=0.0)
    curve = fit_heterogeneous(n, t, limit)
    assert curve is not None
    assert curve.covariate is not None
    at = np.array([1.0, 8.0, 64.0])
    mine = curve.for_limit(4.0 * curve.covariate.reference)
    k = 4.0**curve.covariate.beta
    np.testing.assert_allclose(mine.runtime(at), k * curve.runtime(at), rtol=1e-12)
    np.testing.assert_allclose(mine.speedup(at), curve.speedup(at), rtol=1e-12)
    # The job's own scale: a job that asked 7200 s runs ~1000·2^0.8 s on one node.
    assert float(curve.for_limit(7200.0).runtime(1.0)) == pytest.approx(1000.0 * 2**0.8, rel=0.05)
    assert curve.for_limit(None) is curve


def test_the_curve_round_trips_with_its_covariate() -> None:
    n, t, limit = runs(9)
    curve = fit_heterogeneous(n, t, limit)
    assert curve is not None
    back = predictor.Curve.from_dict(curve.to_dict())
    assert back == curve
    doc = curve.to_dict()
    doc["covariate"] = {**doc["covariate"], "reference": -1.0}
    with pytest.raises(ValueError, match="covariate"):
        predictor.Curve.from_dict(doc)


def test_bad_limits_are_refused() -> None:
    n, t, limit = runs(10)
    with pytest.raises(ValueError, match="limit"):
        adjust(n, t, limit[:-1])
    with pytest.raises(ValueError, match="limit"):
        adjust(n, t, np.where(np.arange(n.size) == 0, -1.0, limit))


def test_covariate_document_is_checked() -> None:
    good = Covariate(0.5, 3600.0, 0.2, 10, 0.05, 0.4)
    assert Covariate.from_dict(good.to_dict()) == good
    with pytest.raises(ValueError, match="out of range"):
        Covariate.from_dict({**good.to_dict(), "lof_p": 2.0})


def moldable_runs(seed: int, moldable: bool) -> tuple[IntArray, FloatArray, FloatArray, IntArray]:
    """Runs whose users write limits from the run time they expect at the size they ask
    (L = 2·T(r)·input·over-ask), run on the size asked or its neighbour (`moldable`)."""
    rng = np.random.default_rng(seed)
    count = 150
    asked_rank = rng.integers(0, SIZES.size, count)
    u = rng.normal(0.0, 1.0, count)
    true = 1000.0 * relative_runtime(SIZES.astype(float), 24.0, 0.8)
    limit = 2.0 * true[asked_rank] * np.exp(u + rng.normal(0.0, 0.3, count))
    step = rng.integers(-1, 2, count) if moldable else np.zeros(count, dtype=int)
    ran = np.clip(asked_rank + step, 0, SIZES.size - 1)
    t = true[ran] * np.exp(u + rng.normal(0.0, 0.05, count))
    return SIZES[ran], t, limit, SIZES[asked_rank]


def test_limits_written_for_the_size_asked_are_deflated_by_the_shape_there() -> None:
    """Moldable runs: the covariate x = log L − log τ(r) recovers the shape within a few
    percent; the same runs with the covariate log L alone read part of the shape as input."""
    n, t, limit, asked = moldable_runs(12, moldable=True)
    at = SIZES.astype(float)
    true = 1.0 / relative_runtime(at, 24.0, 0.8)
    deflated = fit_heterogeneous(n, t, limit, asked)
    assert deflated is not None
    assert deflated.covariate is not None
    assert judged_by_noise(deflated)
    got = deflated.runtime(1.0) / deflated.runtime(at)
    assert np.max(np.abs(np.log(got / true))) < 0.15
    raw = fit_heterogeneous(n, t, limit)
    assert raw is not None
    raw_got = raw.runtime(1.0) / raw.runtime(at)
    assert np.max(np.abs(np.log(raw_got / true))) > 0.5


def test_rigid_runs_whose_limits_hold_the_shape_are_not_judged_by_noise() -> None:
    n, t, limit, asked = moldable_runs(13, moldable=False)
    curve = fit_heterogeneous(n, t, limit, asked)
    assert curve is not None
    assert curve.covariate is not None
    assert curve.covariate.identifying == 0
    assert not judged_by_noise(curve)


def test_limit_use_is_the_conformal_quantile_of_the_runs_use() -> None:
    # u_i = log(t/L) − log(ratio): 0.1·i/… ; with N = 19 at 0.95, ⌈0.95·20⌉ = 19: the largest.
    t = np.linspace(10.0, 100.0, 19)
    limit = np.full(19, 200.0)
    assert limit_use(t, limit, np.ones(19)) == pytest.approx(np.log(100.0 / 200.0))
    # The size ratio is taken out: a run on twice the speed of its limit's size used half.
    assert limit_use(t, limit, np.full(19, 0.5)) == pytest.approx(np.log(100.0 / 100.0))
    # One run fewer and the quantile does not exist (⌈0.95·19⌉ = 19 > 18).
    assert limit_use(t[:18], limit[:18], np.ones(18)) is None
    # At 0.5 the median-ish: the ⌈0.5·20⌉ = 10th smallest.
    assert limit_use(t, limit, np.ones(19), level=0.5) == pytest.approx(np.log(t[9] / 200.0))


def test_the_limit_use_bound_holds_for_new_runs_at_its_level() -> None:
    """Runs whose users wrote L = T(r)·input·over-ask for the size r they asked and that ran
    elsewhere in the range: of new runs of the same kind, about 1 − USE_LEVEL run past
    L·e^(u_q)·T(n)/T(r) (150 new runs: 6.7% at 0.95)."""
    n, t, limit, asked = moldable_runs(21, moldable=True)
    curve = fit_heterogeneous(n, t, limit, asked)
    assert curve is not None
    assert curve.covariate is not None
    use = curve.covariate.use
    assert use is not None
    new_n, new_t, new_limit, new_asked = moldable_runs(22, moldable=True)
    ratio = curve.runtime(new_n.astype(float)) / curve.runtime(new_asked.astype(float))
    bound = new_limit * np.exp(use) * ratio
    over = float(np.mean(new_t > bound))
    assert over <= 1.0 - USE_LEVEL + 0.05
    assert over > 0.0  # a bound, not a wall: some runs of the tail do pass it
    # Without the sizes the limits were written for, the bound is not kept.
    plain = fit_heterogeneous(n, t, limit)
    assert plain is not None
    assert plain.covariate is not None
    assert plain.covariate.use is None


def test_the_limit_use_round_trips_and_older_documents_read_as_unknown() -> None:
    good = Covariate(0.5, 3600.0, 0.2, 10, 0.05, 0.4, use=-0.3)
    assert Covariate.from_dict(good.to_dict()) == good
    older = {k: v for k, v in good.to_dict().items() if k != "use"}
    assert Covariate.from_dict(older).use is None
    with pytest.raises(ValueError, match="use"):
        Covariate.from_dict({**good.to_dict(), "use": float("nan")})


def test_the_stopped_size_round_trips_and_older_documents_read_as_none() -> None:
    good = Covariate(0.5, 3600.0, 0.2, 10, 0.05, 0.4, use=-0.3, stopped_n=16)
    assert Covariate.from_dict(good.to_dict()) == good
    older = {k: v for k, v in good.to_dict().items() if k != "stopped_n"}
    assert Covariate.from_dict(older).stopped_n is None
    with pytest.raises(ValueError, match="stopped_n"):
        Covariate.from_dict({**good.to_dict(), "stopped_n": 0})


def production_runs(
    seed: int, A: float, count: int = 60
) -> tuple[IntArray, FloatArray, FloatArray, IntArray]:
    """Runs as a production log holds them: each job asks r nodes in [16, 31] and runs on a
    size in its moldable range [r/2, 2r]; inputs scale run times by a log-SD of 1.2, users
    over-ask by a log-factor |N(0, 1)| over the run time at r; σ = 1, 5% run noise."""
    rng = np.random.default_rng(seed)
    asked = rng.integers(16, 32, count)
    ran = rng.integers(np.ceil(asked / 2).astype(int), 2 * asked + 1)
    at_asked = np.exp(rng.normal(np.log(3600.0), 1.2, count))
    tau = relative_runtime(ran.astype(float), A, 1.0) / relative_runtime(
        asked.astype(float), A, 1.0
    )
    t = at_asked * tau * np.exp(rng.normal(0.0, 0.05, count))
    limit = at_asked * np.exp(np.abs(rng.normal(0.0, 1.0, count)))
    return ran, t, limit, asked


def shape_error(curve: predictor.Curve, A: float, at: FloatArray) -> float:
    """The largest |log| error of the curve's runtimes relative to its first size's, against
    the true shape (A, σ = 1) of `production_runs`."""
    got = curve.runtime(at) / curve.runtime(at[:1])
    true = relative_runtime(at, A, 1.0) / relative_runtime(at[:1], A, 1.0)
    return float(np.max(np.abs(np.log(got / true))))


def adepts_curve(n: IntArray, t: FloatArray, limit: FloatArray, asked: IntArray) -> predictor.Curve:
    """ADEPT's curve of the runs adjusted for their limits, as fit_heterogeneous fits it."""
    adjusted = adjust(n, t, limit, asked)
    fit = predictor.fit_observations(predictor.prepare(adjusted.n, adjusted.runtime))
    return replace(predictor.Curve.from_fit(fit), speaker=None)


@pytest.mark.parametrize(("A", "share"), [(8.0, 0.5), (100.0, 0.75)])
def test_noisy_runs_get_the_least_squares_shape_not_adepts(A: float, share: float) -> None:
    """Runs spread thin over sizes 8-62 with inputs far noisier than the shape (a knee at
    2A − 1 = 15 inside their sizes, or at 199 beyond them): the curve's shape is the
    least-squares one, whose error over the runs' sizes is a fraction of what ADEPT's local
    fits of the same adjusted runs make (they read noise as shape)."""
    at = np.arange(8, 63, dtype=float)
    ours, adepts = [], []
    for seed in range(1, 7):
        n, t, limit, asked = production_runs(seed, A, count=200)
        curve = fit_heterogeneous(n, t, limit, asked)
        assert curve is not None
        assert judged_by_noise(curve)
        assert curve.segments == ()
        assert "runner_up" not in {p.problem for p in curve.diagnostics.reliability}
        # Its fit error is its own: the largest relative error at the mean runtimes of the
        # sizes ADEPT's fit kept (as ADEPT's fit error is), not ADEPT's curve's.
        adjusted = adjust(n, t, limit, asked)
        kept = predictor.fit_observations(
            predictor.prepare(adjusted.n, adjusted.runtime)
        ).observations
        own = np.max(np.abs(curve.runtime(kept.n.astype(float)) / kept.runtime - 1.0))
        assert curve.fit_error == pytest.approx(own)
        ours.append(shape_error(curve, A, at))
        adepts.append(shape_error(adepts_curve(n, t, limit, asked), A, at))
    assert np.mean(ours) < share * np.mean(adepts)
    assert max(ours) < 0.6


def test_noisy_runs_before_the_knee_leave_it_unknown() -> None:
    """A knee (2A − 1 = 199) beyond every run's size: the curve says it is not identified, so
    the policies cap it at the largest size seen, and the problem says where to look."""
    n, t, limit, asked = production_runs(1, A=100.0, count=200)
    curve = fit_heterogeneous(n, t, limit, asked)
    assert curve is not None
    assert judged_by_noise(curve)
    assert curve.max_useful_n is None
    assert not curve.identified
    problems = {p.problem: p for p in curve.diagnostics.reliability}
    assert str(curve.largest_observed) in problems["first_piece_only"].action


def test_runs_over_a_narrow_span_of_sizes_keep_adepts_curve() -> None:
    """Sizes within a factor MIN_SPAN cannot place a knee: ADEPT's curve stays."""
    n, t, limit, asked = production_runs(1, A=8.0, count=200)
    narrow = n <= 1.9 * n.min()
    curve = fit_heterogeneous(n[narrow], t[narrow], limit[narrow], asked[narrow])
    adept = adepts_curve(n[narrow], t[narrow], limit[narrow], asked[narrow])
    assert curve is not None
    assert judged_by_noise(curve)
    assert (curve.A, curve.sigma) == (adept.A, adept.sigma)


def test_killed_runs_raise_the_limit_use_bound_and_change_nothing_else() -> None:
    """Runs stopped at their limits count in the limit-use bound at their lower bounds (they
    used at least all of it); the shape, β and noise are the completed runs' alone."""
    n, t, limit, asked = moldable_runs(12, moldable=True)
    plain = fit_heterogeneous(n, t, limit, asked)
    assert plain is not None
    assert plain.covariate is not None
    assert plain.covariate.use is not None
    assert plain.covariate.use < 0.0  # limits are generous: the runs use less than all of them
    # A tenth as many runs again, each killed where its user's limit was written for.
    k = n.size // 10
    killed = Censored.of(asked[:k], limit[:k], limit[:k], asked[:k])
    counted = fit_heterogeneous(n, t, limit, asked, censored=killed)
    assert counted is not None
    assert counted.covariate is not None
    assert counted.covariate.use is not None
    assert counted.covariate.use >= 0.0  # more than 5% of the runs used their whole limit
    assert (counted.A, counted.sigma, counted.covariate.beta) == (
        plain.A,
        plain.sigma,
        plain.covariate.beta,
    )
    # The largest size a run was stopped at is kept for the policy (rules.refused_top).
    assert plain.covariate.stopped_n is None
    assert counted.covariate.stopped_n == int(asked[:k].max())


def test_a_preempted_run_counts_in_the_limit_use_but_sets_no_stopped_size() -> None:
    """A preempted run's time is a lower bound as a killed run's is, so it counts in the
    limit-use bound alike; but it was stopped by another job, not by its limit, so the
    largest size a run was killed at (the refused curve's range cut reads it) is the killed
    runs' alone."""
    n, t, limit, asked = moldable_runs(12, moldable=True)
    k = n.size // 10
    sizes = asked[:k].copy()
    sizes[0] = 4 * sizes.max()  # one run stopped far above the others
    stopped = (sizes, limit[:k], limit[:k], asked[:k])
    first = np.arange(k) == 0

    def fitted(preempted: BoolArray | None) -> Covariate:
        curve = fit_heterogeneous(n, t, limit, asked, censored=Censored.of(*stopped, preempted))
        assert curve is not None
        assert curve.covariate is not None
        return curve.covariate

    killed, mixed, everyone = fitted(None), fitted(first), fitted(np.ones(k, bool))
    assert [c.stopped_n for c in (killed, mixed, everyone)] == [
        int(sizes[0]),
        int(sizes[1:].max()),
        None,
    ]
    assert killed.use == mixed.use == everyone.use


def test_censored_runs_are_checked() -> None:
    with pytest.raises(ValueError, match="limit"):
        Censored.of([4], [-1.0], [60.0], [4])
    with pytest.raises(ValueError, match="preempted"):
        Censored.of([4, 8], [60.0, 60.0], [60.0, 60.0], [4, 8], [True])
    with pytest.raises(ValueError, match="preempted"):
        Censored.of([4], [60.0], [60.0], [4], [1])
    assert Censored.of([], [], [], [], []).stopped_at_limit.size == 0  # no runs, no flags
    with pytest.raises(ValueError, match="written_for"):
        Censored.of([4], [60.0], [60.0], [0])
    with pytest.raises(ValueError, match="one value per run"):
        Censored.of([4, 8], [60.0], [60.0, 60.0], [4, 8])
    with pytest.raises(ValueError, match=r"^n must"):
        Censored.of([0], [60.0], [60.0], [4])
