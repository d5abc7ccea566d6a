"""The time limit: rescaled by the pessimistic runtime ratio, bounded by the user's own limit,
the floor, the prediction and the partition's MaxTime. With σ = 0 and n ≤ A the Downey runtime
is T(1)/n, and the curves here have residual 0 and fit_error 0 unless a test sets them, so the
prediction interval inside the observed sizes is T·exp(±q·a) with the predictor's floor a and
its conformal multiplier q for the class (predictor/intervals.py; W below) and every expected
value is plain arithmetic. The real-fit cases use
tests/data/scaling."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import predictor
from policies import DEFAULTS, ClusterState, Request
from policies.profile import RuntimeProfile
from policies.time_limit import (
    fits_below,
    fits_limit,
    pessimistic_bounds,
    pessimistic_runtimes,
    time_limit,
)
from predictor.covariate import Covariate
from predictor.intervals import CALIBRATION, SPREAD

from .curves import make_curve, unreliable
from .reasons import assert_names

DATA = Path(__file__).resolve().parents[2] / "data" / "scaling"
OBSERVED = (4, 8, 16, 32, 64, 80)
# T(n) = 36000/n seconds up to 100 nodes, observed through 80
LINEAR = make_curve(100.0, 0.0, t1=36_000.0, observed=OBSERVED, fit_error=0.0)
SHORT = make_curve(100.0, 0.0, t1=600.0, observed=OBSERVED, fit_error=0.0)  # T(n) = 600/n s
JOB = Request(10, 80, time_limit_min=120)
LINEAR_JOB = RuntimeProfile.of(LINEAR, 10, 80)
SHORT_JOB = RuntimeProfile.of(SHORT, 10, 80)
FREE = ClusterState()
#: q of the 90% interval between the sizes of a curve fitted on more than 3 sizes, and the
#: one-sided widening exp(q·a) of such a curve with residual 0.
Z = CALIBRATION["adept"].inside_many
W = math.exp(Z * SPREAD["adept"].floor)
#: the same for a curve fitted on 3 sizes or fewer, whose interval adds the misfit term.
W_FEW = math.exp(
    CALIBRATION["adept"].inside_few * math.hypot(SPREAD["adept"].floor, SPREAD["adept"].misfit)
)
#: q beyond the observed sizes.
Z_OUT = CALIBRATION["adept"].outside


def _ceil(minutes: float) -> int:
    return math.ceil(minutes - 1e-9)


def _fitted(name: str) -> predictor.Curve:
    runs = np.loadtxt(DATA / name, delimiter=",", skiprows=1)
    return predictor.Curve.from_fit(predictor.fit(runs[:, 0], runs[:, 1]))


def test_rescaled_by_the_runtime_ratio_and_the_safety_factor() -> None:
    got = time_limit(JOB, LINEAR_JOB, 40, FREE, DEFAULTS)
    # 120 · (900 s / 3600 s) · W² · 1.2 = 37.2 -> 38; the prediction, 15 min · W · 1.2, is
    # below it.
    expected = _ceil(120 * 0.25 * W * W * 1.2)
    assert expected == 38
    assert got.minutes == expected
    assert "T⁺(40)/T⁻(10), the ends of the fit's 90% prediction interval" in got.reason
    assert "= 0.258 " in got.reason
    assert got.reason.endswith(f"gives {expected} min")
    assert got.note == ""
    plain = replace(DEFAULTS, time_limit_safety_factor=1.0)
    assert time_limit(JOB, LINEAR_JOB, 40, FREE, plain).minutes == _ceil(120 * 0.25 * W * W)


def test_the_fits_residual_widens_the_interval_and_so_the_limit() -> None:
    # Before the prediction interval the residual was ignored (fit_error 0: 36 min).
    curve = replace(LINEAR, residual=0.05)
    got = time_limit(JOB, RuntimeProfile.of(curve, 10, 80), 40, FREE, DEFAULTS)
    s = math.hypot(SPREAD["adept"].floor, 0.05)
    expected = _ceil(120 * 0.25 * math.exp(2 * Z * s) * 1.2)
    assert expected == 46
    assert got.minutes == expected
    low, high = curve.runtime_interval(np.array([10.0, 40.0]))
    assert got.minutes == _ceil(120 * float(high[1] / low[0]) * 1.2)


def test_a_reference_below_the_observed_sizes_widens_its_lower_end() -> None:
    # Observed from 20 nodes: T⁻(10) is an extrapolation d = log(20/10) below the data, so
    # its interval is wider than the chosen size's (inside the data), and the limit longer.
    inside = time_limit(JOB, LINEAR_JOB, 40, FREE, DEFAULTS).minutes
    curve = replace(LINEAR, observed_n=(20, 32, 64, 80))
    got = time_limit(JOB, RuntimeProfile.of(curve, 10, 80), 40, FREE, DEFAULTS)
    spread = SPREAD["adept"]
    s_ref = math.hypot(spread.floor, spread.per_log_distance * math.log(2.0))
    expected = _ceil(120 * 0.25 * W * math.exp(Z_OUT * s_ref) * 1.2)
    assert got.minutes == expected
    assert inside is not None
    assert got.minutes > inside


def test_a_curve_stored_without_a_residual_falls_back_to_the_fit_error() -> None:
    # residual 0 with a fit error of 5%: stored before the residual was kept, so the interval
    # cannot be had; the ratio is widened by the fit error on both sides instead.
    curve = replace(LINEAR, fit_error=0.05)
    got = time_limit(JOB, RuntimeProfile.of(curve, 10, 80), 40, FREE, DEFAULTS)
    # 120 · 0.25 · 1.05/0.95 · 1.2 = 39.8 -> 40
    assert got.minutes == 40
    assert "m = 5%" in got.reason
    assert "no residual" in got.reason


def test_the_reference_size_can_be_the_range_maximum() -> None:
    settings = replace(DEFAULTS, time_limit_reference="max")
    got = time_limit(JOB, LINEAR_JOB, 40, FREE, settings)
    # 120 · T(40)/T(80) · W² · 1.2 = 294.7 min, but never above the user's own 120.
    assert got.minutes == 120
    assert "T⁺(40)/T⁻(80)" in got.reason
    assert f"gives {_ceil(288 * W * W)} min" in got.reason
    assert "kept at the user's 120 min" in got.reason


def test_no_more_than_the_users_limit_when_the_job_gets_at_least_the_reference_size() -> None:
    got = time_limit(JOB, LINEAR_JOB, 10, FREE, DEFAULTS)  # ratio W² · 1.2 · 120 > 120
    assert got.minutes == 120
    assert f"gives {_ceil(144 * W * W)} min" in got.reason
    assert got.reason.endswith("kept at the user's 120 min: adaptalloc never raises a limit")


def test_never_above_the_users_limit_even_when_the_curve_predicts_more() -> None:
    # A slow application whose curve predicts 600 min at 1 node, a user who
    # asked for 60: the limit was raised to 720 (root's limit skips QOS). Now 60 stands.
    slow = make_curve(1.0, 0.0, t1=36_000.0, observed=(1, 2), t1_known=True, fit_error=0.0)
    job = Request(1, 2, time_limit_min=60)
    got = time_limit(job, RuntimeProfile.of(slow, 1, 2), 1, FREE, DEFAULTS)
    assert got.minutes == 60
    assert f"{_ceil(720 * W_FEW)} min" in got.note  # 600 min · W_FEW · 1.2 (2 sizes)
    assert "60 min" in got.note


def test_never_below_the_floor() -> None:
    job = Request(10, 80, time_limit_min=10)
    got = time_limit(job, SHORT_JOB, 40, FREE, DEFAULTS)  # 10 · 0.25 · W² · 1.2 = 3.07 min
    assert got.minutes == 5
    assert got.reason.endswith("gives 4 min, raised to the floor of 5 min")
    assert (
        time_limit(job, SHORT_JOB, 40, FREE, replace(DEFAULTS, time_limit_floor_min=2)).minutes == 4
    )


def test_never_shorter_than_the_curve_predicts() -> None:
    job = Request(10, 80, time_limit_min=30)
    got = time_limit(job, LINEAR_JOB, 40, FREE, DEFAULTS)  # 9.2 min, but T⁺(40) = 15.2 min
    predicted = _ceil(15 * W * 1.2)
    assert predicted == 19
    assert got.minutes == predicted
    assert got.reason.endswith(
        f", raised to the pessimistic runtime 15.2 min × safety 1.2 = {predicted} min"
    )


def test_a_limit_above_the_jobs_maximum_is_left_as_written() -> None:
    # 120 min asked where the job may have at most 30 (partition MaxTime, QOS or association
    # MaxWall): Slurm would not start it. A shortened limit (37 min here, 30 once cut to the
    # maximum as adaptalloc once did) would make it startable, and the kill guard would
    # later give it the user's 120: the limit stays as written and Slurm decides.
    got = time_limit(JOB, LINEAR_JOB, 40, ClusterState(max_time_min=30), DEFAULTS)
    assert got.minutes is None
    assert got.reason == (
        "the user's 120 min exceed the job's maximum of 30 min (partition MaxTime, QOS or "
        "association MaxWall), so the limit is left as written and Slurm decides whether the "
        "job may start"
    )
    # At the maximum or under it the limit is rescaled as anywhere, and so never exceeds it.
    for maximum in (120, 200):
        within = time_limit(JOB, LINEAR_JOB, 40, ClusterState(max_time_min=maximum), DEFAULTS)
        unbounded = time_limit(JOB, LINEAR_JOB, 40, FREE, DEFAULTS).minutes
        assert unbounded is not None
        assert within.minutes == unbounded < 120


def test_no_limit_is_shortened_where_slurm_enforces_limits() -> None:
    # Only an operator can raise a running job's limit back, and that lifts the enforced
    # limits: the kill guard could not give a shortened limit back, so none is shortened.
    got = time_limit(JOB, LINEAR_JOB, 40, ClusterState(limits_enforced=True), DEFAULTS)
    assert got.minutes is None
    assert got.reason.startswith("Slurm enforces association and QOS limits")
    assert got.reason.endswith("the user's 120 min stand")


def test_beyond_the_largest_observed_size_the_users_limit_stands() -> None:
    # Observed only up to 16 nodes: at 40 the curve's T(40) = 900 s is a guess (it would give
    # 36 min), so the user's 120 min stand; at 16 the curve may shorten it.
    curve = replace(LINEAR, observed_n=(4, 8, 16))
    profile = RuntimeProfile.of(curve, 10, 80)
    got = time_limit(JOB, profile, 40, FREE, DEFAULTS)
    assert got.minutes is None
    assert "beyond the largest observed size 16" in got.reason
    assert time_limit(JOB, profile, 16, FREE, DEFAULTS).minutes is not None


def test_real_fit_npb_mg_is_never_cut_past_its_data() -> None:
    # No cut past the data: runs up to 16 nodes; 60 min at 4 nodes was cut to 17 min at 31 nodes.
    # Taken as trusted (it is not, see below) to show the rule on its own: within the data the
    # limit may shrink, past 16 the user's 60 min stand.
    fitted = _fitted("npb_mg_C_rpi_cluster.csv")
    curve = replace(fitted, identified=True, diagnostics=predictor.Diagnostics())
    assert curve.largest_observed == 16
    job = Request(4, 64, time_limit_min=60)
    profile = RuntimeProfile.of(curve, 4, 64)
    within = time_limit(job, profile, 16, FREE, DEFAULTS)
    assert within.minutes is not None
    assert within.minutes <= 60
    for chosen in (17, 31, 64):
        got = time_limit(job, profile, chosen, FREE, DEFAULTS)
        assert got.minutes is None
        assert "beyond the largest observed size 16" in got.reason


def test_real_fit_npb_mg_as_fitted_never_shortens() -> None:
    # As fitted, the curve is not identified (its knee lies past the data): the user's limit
    # stands whatever the size.
    curve = _fitted("npb_mg_C_rpi_cluster.csv")
    assert not curve.identified
    job = Request(4, 64, time_limit_min=60)
    got = time_limit(job, RuntimeProfile.of(curve, 4, 64), 31, FREE, DEFAULTS)
    assert got.minutes is None
    assert "never shortens a limit" in got.reason


@pytest.mark.parametrize(
    ("curve", "why"),
    [
        (replace(LINEAR, identified=False), "not identified"),
        (replace(LINEAR, diagnostics=unreliable("runner_up", 32)), "not reliable (runner_up)"),
        (replace(LINEAR, fit_error=0.2), "exceeds max_fit_error"),
    ],
)
def test_an_unreliable_curve_never_shortens_a_limit(curve: predictor.Curve, why: str) -> None:
    got = time_limit(JOB, RuntimeProfile.of(curve, 10, 80), 40, FREE, DEFAULTS)
    assert got.minutes is None
    assert why in got.reason


@pytest.mark.parametrize(
    ("job", "curve", "chosen", "settings", "facts"),
    [
        (JOB, LINEAR, None, DEFAULTS, ("left as submitted", "time limit")),
        (Request(10, 80), LINEAR, 40, DEFAULTS, ("no time limit", "partition's default")),
        (
            JOB,
            LINEAR,
            40,
            replace(DEFAULTS, scale_time_limit=False),
            ("scale_time_limit is off", "120 min"),
        ),
        (JOB, None, 40, DEFAULTS, ("without a usable curve", "120 min")),
    ],
)
def test_left_alone(
    job: Request, curve: object, chosen: int | None, settings: object, facts: tuple[str, ...]
) -> None:
    profile = None if curve is None else RuntimeProfile.of(curve, job.min_nodes, job.max_nodes)  # type: ignore[arg-type]
    got = time_limit(job, profile, chosen, FREE, settings)  # type: ignore[arg-type]
    assert got.minutes is None
    assert_names(got.reason, *facts)


def test_fits_limit_raises_a_size_to_the_least_one_within_the_users_limit() -> None:
    curve = make_curve(24.25, 0.82, t1=36000.0, observed=(2, 4, 8, 16, 32, 64))
    profile = RuntimeProfile.of(curve, 4, 64)
    sizes = np.arange(4, 65)
    # A curve without a residual is taken as T·(1 + fit error), as the limit takes it.
    upper = np.array([pessimistic_bounds(profile, int(n), int(n)).upper for n in sizes])
    times = upper * DEFAULTS.time_limit_safety_factor / 60.0
    least = int(sizes[np.argmax(times <= 100.0)])
    assert least == 9  # T⁺(8)·1.2 = 102 min, T⁺(9)·1.2 = 92 min
    assert np.allclose(pessimistic_runtimes(profile), upper)
    assert fits_limit(profile, 4, 100, DEFAULTS) == least
    assert fits_limit(profile, 20, 100, DEFAULTS) == 20  # fits already: never lowered
    assert fits_limit(profile, 4, None, DEFAULTS) == 4  # no limit
    assert fits_limit(profile, 4, 10, DEFAULTS) is None  # no size fits: left as submitted
    looser = replace(DEFAULTS, time_limit_safety_factor=1.0)
    assert fits_limit(profile, 4, 100, looser) == int(sizes[np.argmax(times / 1.2 <= 100.0)])


def test_fits_below_finds_the_largest_smaller_size_where_the_runtime_rises_with_size() -> None:
    """Past the largest observed size the interval widens, so a curve whose speedup has
    stopped has a pessimistic runtime that rises with the size: a limit can fit at the data
    and at no larger size. fits_limit then finds nothing from n up, fits_below the largest
    smaller size that fits; on a range where nothing fits, nothing."""
    curve = replace(make_curve(4.0, 0.0, t1=36000.0, observed=(1, 2, 4, 8, 16)), residual=0.05)
    profile = RuntimeProfile.of(curve, 2, 64)
    minutes = pessimistic_runtimes(profile) * DEFAULTS.time_limit_safety_factor / 60.0
    assert minutes[-1] > minutes[16 - 2]  # rises past the data
    limit = math.ceil(minutes[16 - 2])
    fits = np.flatnonzero(minutes <= limit)
    largest = 2 + int(fits[-1])
    assert 16 <= largest < 64
    assert fits_limit(profile, 64, limit, DEFAULTS) is None
    assert fits_below(profile, 64, limit, DEFAULTS) == largest
    assert fits_below(profile, largest + 1, limit, DEFAULTS) == largest
    assert fits_below(profile, 2, limit, DEFAULTS) is None  # nothing below the minimum
    assert fits_below(profile, 64, 1, DEFAULTS) is None  # a limit no size meets


def test_fits_limit_holds_a_curve_of_heterogeneous_runs_to_its_runs_limit_use() -> None:
    """With a limit-use bound u_q (predictor/covariate.py), the size check is
    L·e^(u_q)·T(n)/T(r)·safety ≤ L, r the size the limit was written for: it reads the user's
    limit, not the curve's Gaussian interval (whose noise term is the inputs' spread)."""
    base = make_curve(24.25, 0.82, t1=36000.0, observed=(2, 4, 8, 16, 32, 64))
    noisy = replace(base, residual=2.0)  # inputs scatter e^±2: T⁺ overruns any limit
    cov = Covariate(1.0, 3600.0, 2.0, 50, 0.0, 0.9, use=math.log(1.5))
    curve = replace(noisy, covariate=cov)
    profile = RuntimeProfile.of(curve, 4, 64)
    ratio = profile.runtime / profile.at(4)
    least = 4 + int(np.argmax(1.5 * ratio * DEFAULTS.time_limit_safety_factor <= 1.0))
    assert least > 4
    assert fits_limit(profile, 4, 100, DEFAULTS, written_for=4) == least
    # The limit's own length does not matter: the bound is relative to it.
    assert fits_limit(profile, 4, 10_000, DEFAULTS, written_for=4) == least
    # Without the size the limit was written for, the interval decides: nothing fits.
    assert fits_limit(profile, 4, 100, DEFAULTS) is None
    # Runs that used at most half their limit: the minimum fits.
    half = replace(noisy, covariate=replace(cov, use=math.log(0.5)))
    assert fits_limit(RuntimeProfile.of(half, 4, 64), 4, 100, DEFAULTS, written_for=4) == 4
