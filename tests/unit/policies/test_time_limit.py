"""The time limit: rescaled by the predicted runtime ratio, bounded by the floor, the prediction
and the partition's MaxTime. With σ = 0 and n ≤ A the Downey runtime is T(1)/n, so every
expected value here is plain arithmetic."""

from __future__ import annotations

from dataclasses import replace

import pytest

from policies import DEFAULTS, ClusterState, Request
from policies.profile import RuntimeProfile
from policies.time_limit import time_limit

from .curves import make_curve

LINEAR = make_curve(100.0, 0.0, t1=36_000.0)  # T(n) = 36000/n seconds up to 100 nodes
SHORT = make_curve(100.0, 0.0, t1=600.0)  # T(n) = 600/n seconds
JOB = Request(10, 80, time_limit_min=120)
LINEAR_JOB = RuntimeProfile.of(LINEAR, 10, 80)
SHORT_JOB = RuntimeProfile.of(SHORT, 10, 80)
FREE = ClusterState()


def test_rescaled_by_the_runtime_ratio_and_the_safety_factor() -> None:
    got = time_limit(JOB, LINEAR_JOB, 40, FREE, DEFAULTS)
    # 120 · (900 s / 3600 s) · 1.2 = 36; the prediction, 15 min · 1.2 = 18, is below it.
    assert got.minutes == 36
    assert got.reason == (
        "120 min written for 10 nodes × predicted runtime ratio T(40)/T(10) = 0.25 × safety "
        "1.2 gives 36 min"
    )
    assert got.note == ""
    plain = replace(DEFAULTS, time_limit_safety_factor=1.0)
    assert time_limit(JOB, LINEAR_JOB, 40, FREE, plain).minutes == 30


def test_the_reference_size_can_be_the_range_maximum() -> None:
    settings = replace(DEFAULTS, time_limit_reference="max")
    got = time_limit(JOB, LINEAR_JOB, 40, FREE, settings)
    assert got.minutes == 288  # 120 · T(40)/T(80) = 2 · 1.2
    assert "120 min written for 80 nodes × predicted runtime ratio T(40)/T(80) = 2 " in got.reason


def test_no_more_than_the_users_limit_when_the_job_gets_at_least_the_reference_size() -> None:
    got = time_limit(JOB, LINEAR_JOB, 10, FREE, DEFAULTS)  # ratio 1 · 1.2 = 144 > 120
    assert got.minutes == 120
    assert got.reason.endswith(
        "gives 144 min, kept at the user's 120 min since the job gets no fewer nodes"
    )


def test_never_below_the_floor() -> None:
    job = Request(10, 80, time_limit_min=10)
    got = time_limit(job, SHORT_JOB, 40, FREE, DEFAULTS)  # 10 · 0.25 · 1.2 = 3 min
    assert got.minutes == 5
    assert got.reason.endswith("gives 3 min, raised to the floor of 5 min")
    assert (
        time_limit(job, SHORT_JOB, 40, FREE, replace(DEFAULTS, time_limit_floor_min=2)).minutes == 3
    )


def test_never_shorter_than_the_curve_predicts() -> None:
    job = Request(10, 80, time_limit_min=10)
    got = time_limit(job, LINEAR_JOB, 40, FREE, DEFAULTS)  # 3 min, but T(40) = 15 min · 1.2 = 18
    assert got.minutes == 18
    assert got.reason.endswith(", raised to the predicted runtime 15 min × safety 1.2 = 18 min")


def test_never_above_the_partition_maximum() -> None:
    got = time_limit(JOB, LINEAR_JOB, 40, ClusterState(max_time_min=30), DEFAULTS)
    assert got.minutes == 30
    assert got.reason.endswith(", cut to the partition's maximum of 30 min")
    assert got.note == ""
    # Even below the prediction (18 min with the safety factor): then the reason says so.
    tight = time_limit(JOB, LINEAR_JOB, 40, ClusterState(max_time_min=10), DEFAULTS)
    assert tight.minutes == 10
    assert tight.note == (
        "the time limit is the partition's maximum of 10 min, shorter than the 18 min the "
        "curve predicts with its safety factor"
    )


@pytest.mark.parametrize(
    ("job", "curve", "chosen", "settings", "reason"),
    [
        (JOB, LINEAR, None, DEFAULTS, "the job is left as submitted, time limit included"),
        (
            Request(10, 80),
            LINEAR,
            40,
            DEFAULTS,
            "the job gave no time limit, so the partition's default applies",
        ),
        (
            JOB,
            LINEAR,
            40,
            replace(DEFAULTS, scale_time_limit=False),
            "scale_time_limit is off, so the user's 120 min stand",
        ),
        (JOB, None, 40, DEFAULTS, "without a usable curve the user's 120 min stand"),
    ],
)
def test_left_alone(
    job: Request, curve: object, chosen: int | None, settings: object, reason: str
) -> None:
    profile = None if curve is None else RuntimeProfile.of(curve, job.min_nodes, job.max_nodes)  # type: ignore[arg-type]
    got = time_limit(job, profile, chosen, FREE, settings)  # type: ignore[arg-type]
    assert got.minutes is None
    assert got.reason == reason
