"""A shared (site) curve from many users' runs: one vote per user and size, and no user who
can move it far (plugin/learning/sharing.py), with the real predictor's fits."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

import predictor
from plugin.appkey import AppKey
from plugin.learning.learner import _fit_heterogeneous, _fit_shared
from plugin.learning.sharing import USER_INFLUENCE, flag_influence, influence, votes
from plugin.store.curves import Observation
from predictor.downey import relative_runtime

APP = AppKey("lulesh")
#: NAS LU class W (the thesis' Table 5.1) as runtimes of T(1) = 100 s.
LU = {1: 100.0, 2: 50.8, 4: 26.1, 8: 13.8, 16: 7.65, 32: 4.81}


def run(job: int, n: int, t: float, user: str | None) -> Observation:
    return Observation(f"j{job}", APP, n, t, 1_700_000_000.0 + job, "sacct", user=user)


def honest(users: Sequence[str], start: int = 0) -> list[Observation]:
    """Each user ran every size of LU, within 2% of its curve."""
    out = []
    for k, user in enumerate(users):
        for i, (n, t) in enumerate(LU.items()):
            out.append(run(start + 100 * k + i, n, t * (1.0 + 0.01 * ((k + i) % 3 - 1)), user))
    return out


def fit(runs: Sequence[Observation]) -> predictor.Curve | None:
    try:
        result = predictor.fit([r.nodes for r in runs], [r.runtime_s for r in runs])
    except ValueError:
        return None
    return predictor.Curve.from_fit(result) if result.status == "ok" else None


def test_a_user_votes_once_per_size_with_the_median_of_their_runs() -> None:
    spam = [run(k, 1, 10.0 + k, "mallory") for k in range(99)]
    pooled = votes([*spam, run(500, 1, 100.0, "ann"), run(501, 1, 90.0, None)])
    by_user = {(r.user, r.nodes): r.runtime_s for r in pooled}
    assert by_user == {("mallory", 1): 59.0, ("ann", 1): 100.0, (None, 1): 90.0}
    assert len(pooled) == 3  # 99 runs of one user are one vote; an admin's run stays whole


def test_a_vote_of_runs_with_limits_is_one_real_run_with_its_own_limit() -> None:
    """Medians taken apart would pair one input's runtime with another's limit: runs of
    (100 s, 1000 s limit), (500 s, 100 s) and (1000 s, 1100 s) gave (500 s, 1000 s), a run
    that used half its limit where the real one overran it five times."""

    def limited(job: int, t: float, limit: float, written_for: int) -> Observation:
        one = run(job, 4, t, "ann")
        return dataclasses.replace(one, limit_s=limit, written_for=written_for)

    group = [
        limited(1, 100.0, 1000.0, 8),
        limited(2, 500.0, 100.0, 2),
        limited(3, 1000.0, 1100.0, 4),
    ]
    (vote,) = votes(group)
    assert (vote.runtime_s, vote.limit_s, vote.written_for) == (500.0, 100.0, 2)
    assert vote.job_id == "j3"  # the newest run stands for the group
    # An even group: the lower middle run, whole.
    (pair,) = votes(group[:1] + group[2:])
    assert (pair.runtime_s, pair.limit_s, pair.written_for) == (100.0, 1000.0, 8)
    # One run without its limit: the median runtime, and no limit.
    (plain,) = votes([*group[:2], run(3, 4, 1000.0, "ann")])
    assert (plain.runtime_s, plain.limit_s) == (500.0, None)


def test_honest_users_move_a_shared_curve_little() -> None:
    pooled = votes(honest(["ann", "bob", "carol"]))
    found = influence(pooled, fit)
    assert found is not None
    assert found.change < 0.05
    curve = fit(pooled)
    assert curve is not None
    assert flag_influence(curve, found, 0.25) is curve


#: What mallory's runs say: LU stops scaling at 2 nodes (so 2 nodes would size its jobs).
CRAFTED = {1: 100.0, 2: 60.0, 4: 58.0, 8: 57.0, 16: 57.0, 32: 57.0}


def flood() -> list[Observation]:
    """mallory ran every size 20 times with the crafted runtimes."""
    return [
        run(1000 + 10 * i + k, n, t, "mallory")
        for i, (n, t) in enumerate(CRAFTED.items())
        for k in range(20)
    ]


def test_a_flood_of_one_users_runs_does_not_move_a_shared_curve() -> None:
    runs = honest(["ann", "bob", "carol"]) + flood()
    pooled = votes(runs)
    found = influence(pooled, fit)
    curve = fit(pooled)
    assert found is not None
    assert curve is not None
    assert found.change < 0.05
    assert flag_influence(curve, found, 0.25) is curve
    assert abs(curve.runtime(32) / LU[32] - 1.0) < 0.05
    # What she can do is make the votes of a size disagree: the reliability judgment then
    # sees mixed inputs, and the curve sizes no job (a denial, not a steer).
    assert {p.problem for p in curve.diagnostics.reliability} == {"mixed_sizes"}
    # Without the votes the flood outweighs the three of them: the curve goes flat.
    plain = fit(runs)
    assert plain is not None
    assert plain.runtime(32) > 2.0 * LU[32]


def test_a_shared_curve_that_stands_or_falls_with_one_user_sizes_no_job() -> None:
    # Two honest users and mallory: the fit drops her votes as outliers, but only while both
    # of them are there; leaving one out, hers are half the votes and the curve goes flat.
    pooled = votes(honest(["ann", "bob"]) + flood())
    found = influence(pooled, fit)
    assert found is not None
    assert found.change > 0.25
    curve = fit(pooled)
    assert curve is not None
    flagged = flag_influence(curve, found, 0.25)
    [problem] = [p for p in flagged.diagnostics.reliability if p.problem == USER_INFLUENCE]
    assert problem.detail["influence"] == found.change
    assert found.user not in problem.action  # the curve's readers learn no user's name
    assert not flagged.reliable


def test_a_curve_of_one_users_runs_alone_is_that_users_say() -> None:
    pooled = votes(honest(["ann"]))
    found = influence(pooled, fit)
    assert found is not None
    assert (found.user, found.nodes) == ("ann", None)
    assert math.isinf(found.change)
    curve = fit(pooled)
    assert curve is not None
    assert not flag_influence(curve, found, 0.25).reliable
    # An admin's import beside it: the curve stands without her.
    admin = [run(900 + i, n, t, None) for i, (n, t) in enumerate(LU.items())]
    backed = influence(votes([*honest(["ann"]), *admin]), fit)
    assert backed is not None
    assert backed.change < 0.05


def test_runs_without_users_are_not_checked() -> None:
    admin = [run(i, n, t, None) for i, (n, t) in enumerate(LU.items())]
    assert influence(votes(admin), fit) is None


#: Sizes of the heterogeneous runs below, and their Downey shape (A = 24, σ = 0.8) at T(1) =
#: 1000 s for an input of scale 1.
SIZES = np.array([1, 2, 4, 8, 16, 32, 64])
SHAPE = 1000.0 * relative_runtime(SIZES.astype(float), 24.0, 0.8)


def inputs_vary(
    user: str, ran: Sequence[int], rng: np.random.Generator, log_scale: float, spread: float
) -> list[Observation]:
    """One run of `user` at each size index of `ran`, each with its own input (a log-normal
    scale of mean `log_scale` and SD `spread`) and the limit its user wrote for it: twice the
    runtime the input takes on the size asked (the one ran, or a neighbour), within 10%."""
    start = 1000 * (sum(map(ord, user)) % 1000)
    out = []
    for i, r in enumerate(ran):
        asked = int(np.clip(r + (i + start) % 3 - 1, 0, SIZES.size - 1))
        scale = float(np.exp(rng.normal(log_scale, spread)))
        runtime = SHAPE[r] * scale * float(np.exp(rng.normal(0.0, 0.03)))
        limit = 2.0 * SHAPE[asked] * scale * float(np.exp(rng.normal(0.0, 0.1)))
        out.append(
            Observation(
                f"{user}{i}",
                APP,
                int(SIZES[r]),
                runtime,
                1_700_000_000.0 + start + i,
                "sacct",
                user=user,
                limit_s=limit,
                written_for=int(SIZES[asked]),
            )
        )
    return out


def honest_inputs(rng: np.random.Generator) -> list[Observation]:
    """Four users who ran every size once, each run on an input of its own (a log-SD of 1:
    runtimes of one size differ up to ~20x, as real traces' do)."""
    users = ("ann", "bob", "carol", "erin")
    return [run for user in users for run in inputs_vary(user, range(SIZES.size), rng, 0.0, 1.0)]


def covariate(runs: Sequence[Observation]) -> predictor.Curve | None:
    return _fit_heterogeneous(runs)[0]


def test_a_covariate_curve_leaves_each_user_out_of_the_covariate_fit() -> None:
    pooled = votes(honest_inputs(np.random.default_rng(0)))
    assert len(pooled) == 4 * SIZES.size  # one run per user and size: the votes are the runs
    curve, _ = _fit_shared(pooled, "adept", predictor.fit_observations, 0.25)
    assert curve is not None
    assert curve.covariate is not None
    assert USER_INFLUENCE not in {p.problem for p in curve.diagnostics.reliability}
    found = influence(pooled, covariate)
    assert found is not None
    assert found.change < 0.25
    # A plain refit reads the spread of their inputs as a steer: leaving any one of them out
    # moves its runtime far, and it would deny a curve that sizes no job by it.
    plain = influence(pooled, fit)
    assert plain is not None
    assert plain.change > 1.0


def test_a_users_bigger_inputs_move_the_reference_job_not_the_covariate_curve() -> None:
    rng = np.random.default_rng(0)
    # An admin's import of every size, and dave, whose inputs are ~50x theirs, at 16-64.
    admin = [dataclasses.replace(run, user=None) for run in honest_inputs(rng)]
    pooled = votes([*admin, *inputs_vary("dave", [4, 5, 6], rng, 4.0, 0.2)])
    full = covariate(pooled)
    rest = covariate([run for run in pooled if run.user is None])
    assert full is not None
    assert full.covariate is not None
    assert rest is not None
    assert rest.covariate is not None
    # Without him the runs' mean input, the reference job whose runtime a covariate curve
    # states, is a third smaller: its runtime drops by more than the bound ...
    assert rest.covariate.reference / full.covariate.reference < 0.7
    sizes = np.asarray(full.observed_n, dtype=float)
    assert np.max(np.abs(rest.runtime(sizes) / full.runtime(sizes) - 1.0)) > 0.25
    # ... but for one job the two curves hardly differ: he is no steer.
    found = influence(pooled, covariate)
    assert found is not None
    assert found.user == "dave"
    assert found.change < 0.1
    same_job = rest.for_limit(full.covariate.reference, 1).runtime(sizes)
    assert np.max(np.abs(same_job / full.runtime(sizes) - 1.0)) == found.change
