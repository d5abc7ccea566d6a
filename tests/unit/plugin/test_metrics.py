"""The daemon's metrics: names as documented, failures counted, served over HTTP."""

from __future__ import annotations

import socket
import urllib.request

import pytest

from plugin.metrics import Metrics

NAMES = (
    "adaptalloc_decisions_total",
    "adaptalloc_fail_open_total",
    "adaptalloc_jobs_total",
    "adaptalloc_held_jobs",
    "adaptalloc_decision_latency_seconds_bucket",
    "adaptalloc_slurm_call_seconds_bucket",
    "adaptalloc_slurm_call_failures_total",
    "adaptalloc_batch_jobs_bucket",
    "adaptalloc_store_failures_total",
    "adaptalloc_learner_runs_total",
    "adaptalloc_heartbeat_timestamp_seconds",
    "adaptalloc_daemon_info",
)


def test_every_documented_metric_is_exposed_and_failures_are_counted() -> None:
    metrics = Metrics()
    metrics.decisions.labels("cap").inc()
    metrics.fail_open.labels("watchdog").inc()
    metrics.jobs.labels("resized").inc()
    metrics.latency.observe(0.3)
    metrics.batch.observe(12)
    metrics.store_failures.labels("curve").inc()
    metrics.learner.labels("poll").inc()
    metrics.info.labels("0.1.0", "cli").set(1)
    with metrics.slurm_call("squeue"):
        pass
    with pytest.raises(RuntimeError), metrics.slurm_call("release"):
        raise RuntimeError("scontrol failed")
    names = {s.name for m in metrics.registry.collect() for s in m.samples}
    assert set(NAMES) <= names
    assert (
        metrics.registry.get_sample_value(
            "adaptalloc_slurm_call_failures_total", {"call": "release"}
        )
        == 1.0
    )
    assert (
        metrics.registry.get_sample_value("adaptalloc_slurm_call_seconds_count", {"call": "squeue"})
        == 1.0
    )


def test_served_on_a_port_and_not_at_all_on_port_0() -> None:
    metrics = Metrics()
    assert metrics.serve(0) == 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert metrics.serve(port) == port
    try:
        metrics.held.set(3)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            text = reply.read().decode()
        assert "adaptalloc_held_jobs 3.0" in text
    finally:
        metrics.close()


def test_fail_open_reasons_start_at_zero() -> None:
    # increase() sees nothing of a series whose first sample is already 1: each reason must be
    # exported at 0 before its first fail-open (the rising fail-open alert depends on it).
    from plugin.daemon import REASONS  # noqa: PLC0415

    metrics = Metrics(fail_open_reasons=REASONS)
    for reason in REASONS:
        assert (
            metrics.registry.get_sample_value("adaptalloc_fail_open_total", {"reason": reason})
            == 0.0
        )


def test_limit_node_hours() -> None:
    metrics = Metrics()

    def value(which: str) -> float | None:
        return metrics.registry.get_sample_value(
            "adaptalloc_limit_node_hours_total", {"which": which}
        )

    assert (value("requested"), value("decided")) == (0.0, 0.0)
    metrics.record_limits(8, 60, 2, 30)  # 8 nodes x 1 h asked; 2 nodes x 0.5 h decided
    metrics.record_limits(4, 120, 4, None)  # size kept, limit unchanged: 8 and 8
    metrics.record_limits(None, 60, 2, 30)  # range unknown: nothing
    metrics.record_limits(8, None, 2, 30)  # no user limit: nothing
    assert (value("requested"), value("decided")) == pytest.approx((16.0, 9.0))


def test_decisions_and_outcomes_start_at_zero_and_the_process_is_exported() -> None:
    # The dashboard's decision and outcome panels have a series for every label before the
    # first job; the process collector gives CPU, memory and open files of the daemon.
    from plugin.metrics import OUTCOMES  # noqa: PLC0415
    from policies.decision import PARTITION_LIMIT, RULES  # noqa: PLC0415

    metrics = Metrics(rules=(*RULES, PARTITION_LIMIT))
    get = metrics.registry.get_sample_value
    for rule in (*RULES, PARTITION_LIMIT):
        assert get("adaptalloc_decisions_total", {"rule": rule}) == 0.0, rule
    assert set(OUTCOMES) == {"resized", "kept", "released", "gone"}
    for outcome in OUTCOMES:
        assert get("adaptalloc_jobs_total", {"outcome": outcome}) == 0.0, outcome
    assert (get("process_resident_memory_bytes") or 0.0) > 0.0
    assert get("process_start_time_seconds") is not None


def test_live_accuracy_is_exported_fleet_wide_and_for_the_top_apps_only() -> None:
    from plugin.learning import accuracy  # noqa: PLC0415 - this test alone needs it
    from plugin.store.scores import Score  # noqa: PLC0415

    metrics = Metrics()
    value = metrics.registry.get_sample_value
    assert value("adaptalloc_accuracy_window_jobs") == 0.0
    assert value("adaptalloc_predictions_scored_total", {"interval": "above"}) == 0.0
    metrics.record_scores([(0.1, "inside"), (0.6, "above"), (None, "unknown")])
    assert value("adaptalloc_prediction_error_ratio_count") == 2.0
    assert value("adaptalloc_prediction_error_ratio_bucket", {"le": "0.2"}) == 1.0
    assert value("adaptalloc_predictions_scored_total", {"interval": "unknown"}) == 1.0

    now = 1_800_000_000.0
    scores = [
        Score(app, k, 1, now - k, 4, runtime, 100.0, 80.0, 125.0)
        for app, count, runtime in (("lu", 8, 100.0), ("cg", 2, 200.0))
        for k in range(count)
    ]
    g = accuracy.gauges(scores, now, top=1)
    metrics.set_accuracy(g.fleet, g.apps)
    assert value("adaptalloc_accuracy_window_jobs") == 10.0
    assert value("adaptalloc_accuracy_coverage") == 0.8
    assert value("adaptalloc_accuracy_error_ratio", {"quantile": "0.5"}) == 0.0
    assert value("adaptalloc_app_accuracy_coverage", {"app": "lu"}) == 1.0
    assert value("adaptalloc_app_accuracy_coverage", {"app": "cg"}) is None  # not a top app
    assert value("adaptalloc_app_accuracy_window_jobs", {"app": "lu"}) == 8.0
    metrics.set_accuracy(None, {})
    assert value("adaptalloc_app_accuracy_coverage", {"app": "lu"}) is None  # series gone
    assert value("adaptalloc_accuracy_window_jobs") == 0.0
