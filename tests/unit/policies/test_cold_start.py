"""Cold-start advice: runs on a known Downey curve that the gate refuses, the advice, and the
runs it asks for (taken from the same curve) fitted again: the gate then accepts the curve."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from numpy.typing import NDArray

import predictor
from policies.cold_start import Advice, advise, new_sizes, use_runs
from policies.config import DEFAULTS
from policies.decide import unusable_because
from predictor.covariate import USE_LEVEL, limit_use
from predictor.diagnostics import ReliabilityProblem
from predictor.downey import relative_runtime
from predictor.heterogeneous import fit_heterogeneous, judged_by_noise
from predictor.observations import MIN_SIZES, OUTLIER_MIN_RUNS, outlier_mask, validate

A, SIGMA, T1 = 24.0, 0.5, 3600.0


def downey(n: Sequence[int] | NDArray[np.int64]) -> NDArray[np.float64]:
    """The known curve's runtimes (seconds)."""
    out: NDArray[np.float64] = T1 * relative_runtime(np.asarray(n, dtype=float), A, SIGMA)
    return out


def curve(n: Sequence[int], t: Sequence[float]) -> predictor.Curve | None:
    """The curve the learner stores (None where the predictor refuses the runs)."""
    try:
        fit = predictor.fit_observations(predictor.prepare(n, t))
    except ValueError:
        return None
    return predictor.Curve.from_fit(fit)


def asked_runs(advice: Advice) -> list[int]:
    """The node counts of the runs the advice asks for, one per run."""
    return list(advice.sizes[: advice.choose] if advice.choose else advice.sizes)


def test_runs_at_one_size_are_told_the_sizes_that_give_a_usable_curve() -> None:
    n = [8, 8, 8]
    t = list(downey(n))
    assert curve(n, t) is None
    note = "need runs at two or more distinct sizes to fit a speedup curve"
    advice = advise(n, t, None, note, DEFAULTS, 64)
    assert advice.condition == "min_sizes"
    assert advice.helps
    assert advice.runs == advice.choose == 1
    assert advice.sizes == (16, 32)  # doubling beyond the observed 8, within the asked 64
    assert "a curve needs runs at 1 more size: 16 or 32 nodes" in advice.text()
    assert note in advice.reason
    for extra in advice.sizes:  # either option does
        after = curve([*n, extra], [*t, *downey([extra])])
        assert after is not None
        assert unusable_because(after, DEFAULTS) == ""
        assert advise([*n, extra], [*t, *downey([extra])], after, "", DEFAULTS, 64).usable


def test_a_slow_run_is_outvoted_by_the_repeats_the_advice_asks_for() -> None:
    """A run 30% slow at 2 nodes puts the fit error above max_fit_error; repeats there, until
    the outlier rule applies, give the gate a curve it accepts."""
    n = [2, 4, 8, 16, 32]
    t = downey(n)
    t[0] *= 1.3
    before = curve(n, list(t))
    assert before is not None
    assert "max_fit_error" in unusable_because(before, DEFAULTS)
    advice = advise(n, list(t), before, "", DEFAULTS, 64)
    assert advice.condition == "fit_error"
    assert advice.helps
    assert asked_runs(advice) == [2] * (OUTLIER_MIN_RUNS - 1)
    more = asked_runs(advice)
    after = curve([*n, *more], [*t, *downey(more)])
    assert after is not None
    assert unusable_because(after, DEFAULTS) == ""


def test_a_deviation_that_repeats_is_not_asked_more_runs() -> None:
    n = [2] * OUTLIER_MIN_RUNS + [4, 8, 16, 32]
    t = downey(n)
    t[:OUTLIER_MIN_RUNS] *= 1.3  # every run at 2 is slow: the code, not the noise
    before = curve(n, list(t))
    assert before is not None
    assert unusable_because(before, DEFAULTS) != ""
    advice = advise(n, list(t), before, "", DEFAULTS, 64)
    assert advice.condition == "fit_error"
    assert not advice.helps
    assert advice.runs == 0
    assert "more runs cannot help" in advice.text()


@pytest.mark.parametrize("problem", ["user_influence", "shape_misfit", "mixed_sizes"])
def test_problems_runs_cannot_mend_ask_for_no_runs(problem: str) -> None:
    n = [2, 4, 8, 16, 32]
    good = curve(n, list(downey(n)))
    assert good is not None
    assert unusable_because(good, DEFAULTS) == ""
    flagged = replace(
        good,
        diagnostics=replace(
            good.diagnostics, reliability=(ReliabilityProblem(problem, "see the docs"),)
        ),
    )
    assert unusable_because(flagged, DEFAULTS) != ""
    advice = advise(n, list(downey(n)), flagged, "", DEFAULTS, 64)
    assert advice.condition == "not_by_runs"
    assert not advice.helps
    assert advice.runs == 0
    assert advice.sizes == ()
    assert problem in advice.reason


def test_runner_up_asks_one_run_at_the_suggested_size_within_the_range() -> None:
    n = [2, 4, 8, 16, 32]
    good = curve(n, list(downey(n)))
    assert good is not None
    flagged = replace(
        good,
        diagnostics=replace(
            good.diagnostics,
            reliability=(ReliabilityProblem("runner_up", "run once", suggest_n=200),),
        ),
    )
    advice = advise(n, list(downey(n)), flagged, "", DEFAULTS, 128)
    assert advice.condition == "runner_up"
    assert asked_runs(advice) == [128]


def test_heterogeneous_runs_are_asked_repeats_on_other_sizes_than_their_limits() -> None:
    """Runs whose inputs vary 8x, each with a limit written for its own size (a rigid log)
    and noisy: judged by the raw fit error the curve is refused; the runs the advice asks
    for, submitted as ranges from 1 node (their limits written for 1), let the gate judge
    the shape by the noise instead, and it accepts it."""
    rng = np.random.default_rng(5)
    n = np.array([2, 4, 8, 16, 32, 2, 4, 8])
    scale = np.exp(rng.uniform(0.0, np.log(8.0), n.size))
    t = scale * downey(n) * np.exp(rng.normal(0.0, 0.02, n.size))
    limit = 1.5 * t * np.exp(rng.normal(0.0, 0.4, n.size))
    before = fit_heterogeneous(n, t, limit, n)
    assert before is not None
    assert not judged_by_noise(before)
    assert unusable_because(before, DEFAULTS) != ""
    advice = advise(list(n), list(t), before, "", DEFAULTS, 64)
    assert advice.condition == "heterogeneous"
    assert advice.helps
    more = np.array(asked_runs(advice))
    assert more.size == advice.runs > 0
    assert set(more) <= set(n)  # repeats at observed sizes
    extra = np.exp(rng.uniform(0.0, np.log(8.0), more.size))
    t2 = extra * downey(more) * np.exp(rng.normal(0.0, 0.02, more.size))
    limit2 = 1.5 * extra * downey(np.ones(more.size, dtype=np.int64))
    after = fit_heterogeneous(
        np.r_[n, more], np.r_[t, t2], np.r_[limit, limit2], np.r_[n, np.ones(more.size)]
    )
    assert after is not None
    assert judged_by_noise(after)
    assert unusable_because(after, DEFAULTS) == ""
    # Fewer runs than the limit-use bound needs: said, without blocking the gate.
    assert str(use_runs()) in advice.also


def test_no_curve_yet_with_enough_sizes_waits_for_the_refit() -> None:
    n = [2, 4]
    advice = advise(n, list(downey(n)), None, "not fitted yet", DEFAULTS, 64)
    assert advice.condition == "refit_due"
    assert advice.runs == 0
    assert advice.helps


def test_new_sizes_double_beyond_the_runs_then_halve_below_within_the_range() -> None:
    assert new_sizes([4, 8], 64, 3) == (16, 32, 64)
    assert new_sizes([4, 8], 12, 2) == (12, 2)  # the asked maximum, then below
    assert new_sizes([16, 32], 32, 2) == (8, 4)
    assert new_sizes([], 16, 3) == (1, 2, 4)
    assert new_sizes([1], 1, 2) == ()
    assert all(1 <= k <= 100 for k in new_sizes([3, 7], 100, 10))


def test_the_predictor_refuses_and_drops_exactly_where_its_constants_say() -> None:
    """The advice counts runs by MIN_SIZES and OUTLIER_MIN_RUNS: fewer sizes are refused, as
    many fit; fewer runs at a size keep an odd one, as many drop it."""
    with pytest.raises(ValueError, match="distinct sizes"):
        validate([8] * (MIN_SIZES + 3), [1.0] * (MIN_SIZES + 3))
    validate(list(range(1, MIN_SIZES + 1)), [1.0] * MIN_SIZES)
    group = np.zeros(OUTLIER_MIN_RUNS, dtype=np.int64)
    slow = np.r_[np.ones(OUTLIER_MIN_RUNS - 1), 2.0]
    assert outlier_mask(slow, group)[-1]
    assert not outlier_mask(slow[1:], group[1:]).any()


def test_use_runs_is_where_the_limit_use_bound_starts() -> None:
    k = use_runs()
    ones = np.ones(k)
    assert limit_use(ones, ones, ones) is not None
    assert limit_use(ones[1:], ones[1:], ones[1:]) is None
    assert k == int(np.ceil(USE_LEVEL * (k + 1)))
