"""The daemon's Prometheus metrics (prometheus-client), on their own registry.

| metric | type | labels | what |
|---|---|---|---|
| ``adaptalloc_decisions_total`` | counter | rule | jobs decided by the policy, by winning rule |
| ``adaptalloc_fail_open_total`` | counter | reason | jobs released as submitted, by reason code |
| ``adaptalloc_jobs_total`` | counter | outcome | jobs finished: resized, kept, released, gone |
| ``adaptalloc_held_jobs`` | gauge | | jobs carrying the held marker at the last sweep |
| ``adaptalloc_advised_jobs_total`` | counter | status | advise jobs recorded (advised[_late]) |
| ``adaptalloc_decision_latency_seconds`` | histogram | | held to released, per job |
| ``adaptalloc_slurm_call_seconds`` | histogram | call | one adapter call (squeue, resize, ...) |
| ``adaptalloc_slurm_call_failures_total`` | counter | call | adapter calls that raised |
| ``adaptalloc_batch_jobs`` | histogram | | jobs per batch |
| ``adaptalloc_store_failures_total`` | counter | op | failed Redis operations (curve, record) |
| ``adaptalloc_learner_runs_total`` | counter | step | learner steps: poll, refit, age_out, error |
| ``adaptalloc_guard_raises_total`` | counter | | time limits the kill guard raised |
| ``adaptalloc_guard_kills_total`` | counter | | jobs killed at a limit adaptalloc set (0) |
| ``adaptalloc_guard_watched_jobs`` | gauge | | jobs with a shortened limit being watched |
| ``adaptalloc_heartbeat_timestamp_seconds`` | gauge | | Unix time of the last heartbeat written |
| ``adaptalloc_limit_node_hours`` | counter | which | decided jobs' limit node-hours |
| ``adaptalloc_prediction_error_ratio`` | histogram | | each scored job's abs(T̂ - T) / T |
| ``adaptalloc_predictions_scored_total`` | counter | interval | inside, above, below, unknown |
| ``adaptalloc_accuracy_coverage`` | gauge | | the fleet window's share in the 90% interval |
| ``adaptalloc_accuracy_error_ratio`` | gauge | quantile | its error at 0.5 and 0.9 |
| ``adaptalloc_accuracy_bias_ratio`` | gauge | | its exp(mean log(T / T̂)) - 1 |
| ``adaptalloc_accuracy_window_jobs`` | gauge | | the fleet window's jobs the coverage counts |
| ``adaptalloc_app_accuracy_*`` | gauge | app (, quantile) | the same per app, top apps only |
| ``adaptalloc_daemon_info`` | gauge | version, backend | 1 |
| ``process_*`` | | | the daemon process's CPU seconds, memory, open files, start time |

A registry per `Metrics` (not the global one), so a process can hold several daemons (the
tests do) and the HTTP endpoint shows only these. ``port=0`` serves nothing.

Every fail-open reason and decision rule the daemon passes in, every job outcome
(OUTCOMES) and both ``which`` values are exported from the start at 0: a series that first
appears at 1 has no increase for Prometheus, so ``increase()`` (the dashboard, the rising
fail-open alert in deploy/prometheus/) would miss the first fail-open, and the dashboard's
decision and outcome panels would stay empty until each label's first job.

Live accuracy (plugin/learning/accuracy.py): the learner's worker scores each finished job
the daemon sized with a curve against that curve's prediction at the size it ran on; the
histogram and the counter take each job this daemon's learner scored (Prometheus' own
windows: ``increase(...[7d])``), the gauges the rolling window over the stored scores (the
newest 1,000 jobs of the fleet, or 200 of an app, in the last 7 days: the figures the
report and the doctor show), set after each learner round that scored a job, and at the
first. Per-app gauges exist for the `accuracy.TOP_APPS` apps with the most jobs in the
fleet's window only, so that the label set stays bounded; an app that drops out of them
loses its series. A gauge with nothing to show is NaN.

``adaptalloc_limit_node_hours_total`` is what the dashboard's node-hours saved panel
subtracts: per decided job with a time limit, ``requested`` adds max nodes × the user's
limit and ``decided`` the chosen nodes × adaptalloc's limit. Both are reservations (upper
bounds), not node-hours used: a saving in what the scheduler must plan for.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    start_http_server,
)

__all__ = ["ERROR_BUCKETS", "INTERVAL_PLACES", "LATENCY_BUCKETS", "OUTCOMES", "Metrics"]

#: Seconds: decisions are aimed at well under 1 s; the watchdog bound is minutes.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
SLURM_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500)
#: ``adaptalloc_jobs_total``'s outcomes.
OUTCOMES = ("resized", "kept", "released", "gone")
#: |T̂ - T| / T: 1% to 5x (a miss of 100% is a run twice as fast as predicted, or worse).
ERROR_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0)
#: ``adaptalloc_predictions_scored_total``'s places against the 90% interval.
INTERVAL_PLACES = ("inside", "above", "below", "unknown")
#: The quantiles of the error gauges.
ERROR_QUANTILES = (("0.5", "error_median"), ("0.9", "error_p90"))


class Window(Protocol):
    """What the accuracy gauges read of a window's summary (plugin/learning/accuracy.py's
    Summary; this module sits below plugin/learning and imports none of it)."""

    @property
    def judged(self) -> int: ...
    @property
    def coverage(self) -> float | None: ...
    @property
    def error_median(self) -> float | None: ...
    @property
    def error_p90(self) -> float | None: ...
    @property
    def bias(self) -> float | None: ...


def _value(value: float | None) -> float:
    return math.nan if value is None else float(value)


class Metrics:
    """Every metric of one daemon (module docstring)."""

    def __init__(self, fail_open_reasons: Iterable[str] = (), rules: Iterable[str] = ()) -> None:
        """`fail_open_reasons` and `rules`: the reason codes and decision rules exported at 0
        from the start (the daemon's REASONS and the policy's rules; passed in, since this
        module sits below plugin/daemon)."""
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        ProcessCollector(registry=r)
        self.decisions = Counter(
            "adaptalloc_decisions",
            "Jobs decided by the policy, by winning rule",
            ["rule"],
            registry=r,
        )
        self.fail_open = Counter(
            "adaptalloc_fail_open", "Jobs released as submitted, by reason", ["reason"], registry=r
        )
        self.jobs = Counter(
            "adaptalloc_jobs", "Held jobs finished, by outcome", ["outcome"], registry=r
        )
        self.held = Gauge("adaptalloc_held_jobs", "Jobs held at the last sweep", registry=r)
        self.advised = Counter(
            "adaptalloc_advised_jobs",
            "Advise-mode jobs whose would-be decision was recorded, by status",
            ["status"],
            registry=r,
        )
        self.latency = Histogram(
            "adaptalloc_decision_latency_seconds",
            "Held to released, per job",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.slurm_seconds = Histogram(
            "adaptalloc_slurm_call_seconds",
            "Duration of one Slurm adapter call",
            ["call"],
            buckets=SLURM_BUCKETS,
            registry=r,
        )
        self.slurm_failures = Counter(
            "adaptalloc_slurm_call_failures",
            "Slurm adapter calls that failed",
            ["call"],
            registry=r,
        )
        self.batch = Histogram(
            "adaptalloc_batch_jobs", "Jobs per batch", buckets=BATCH_BUCKETS, registry=r
        )
        self.store_failures = Counter(
            "adaptalloc_store_failures", "Redis operations that failed", ["op"], registry=r
        )
        self.learner = Counter(
            "adaptalloc_learner_runs", "Learner steps, by step", ["step"], registry=r
        )
        self.guard_raises = Counter(
            "adaptalloc_guard_raises", "Time limits the kill guard raised", registry=r
        )
        self.guard_kills = Counter(
            "adaptalloc_guard_kills", "Jobs killed at a time limit adaptalloc set", registry=r
        )
        self.guard_watched = Gauge(
            "adaptalloc_guard_watched_jobs", "Jobs whose shortened limit is watched", registry=r
        )
        self.heartbeat = Gauge(
            "adaptalloc_heartbeat_timestamp_seconds", "Unix time of the last heartbeat", registry=r
        )
        self.limit_node_hours = Counter(
            "adaptalloc_limit_node_hours",
            "Node-hours of decided jobs' time limits: requested (max nodes x user's limit), "
            "decided (nodes x adaptalloc's limit)",
            ["which"],
            registry=r,
        )
        self.info = Gauge(
            "adaptalloc_daemon_info", "The daemon's version", ["version", "backend"], registry=r
        )
        self.prediction_error = Histogram(
            "adaptalloc_prediction_error_ratio",
            "Each scored job's absolute percentage error |predicted - actual| / actual",
            buckets=ERROR_BUCKETS,
            registry=r,
        )
        self.predictions_scored = Counter(
            "adaptalloc_predictions_scored",
            "Finished jobs scored against the prediction that decided them, by where the "
            "runtime fell against the 90% interval",
            ["interval"],
            registry=r,
        )
        self.coverage = Gauge(
            "adaptalloc_accuracy_coverage",
            "Share of the fleet window's jobs inside the 90% prediction interval",
            registry=r,
        )
        self.error = Gauge(
            "adaptalloc_accuracy_error_ratio",
            "Absolute percentage error of the fleet window's jobs, by quantile",
            ["quantile"],
            registry=r,
        )
        self.bias = Gauge(
            "adaptalloc_accuracy_bias_ratio",
            "Geometric mean of actual / predicted runtime over the fleet window, minus 1",
            registry=r,
        )
        self.window_jobs = Gauge(
            "adaptalloc_accuracy_window_jobs",
            "Jobs of the fleet window whose runtime is known against the interval (coverage's "
            "count: censored runs inside it are not)",
            registry=r,
        )
        self.app_coverage = Gauge(
            "adaptalloc_app_accuracy_coverage",
            "Share of an app window's jobs inside the 90% prediction interval (top apps)",
            ["app"],
            registry=r,
        )
        self.app_error = Gauge(
            "adaptalloc_app_accuracy_error_ratio",
            "Absolute percentage error of an app window's jobs, by quantile (top apps)",
            ["app", "quantile"],
            registry=r,
        )
        self.app_bias = Gauge(
            "adaptalloc_app_accuracy_bias_ratio",
            "Geometric mean of actual / predicted runtime over an app's window, minus 1",
            ["app"],
            registry=r,
        )
        self.app_window_jobs = Gauge(
            "adaptalloc_app_accuracy_window_jobs",
            "Jobs of an app's window whose runtime is known against the interval",
            ["app"],
            registry=r,
        )
        self._server: tuple[Any, Any] | None = None
        for reason in fail_open_reasons:
            self.fail_open.labels(reason)
        for rule in rules:
            self.decisions.labels(rule)
        for outcome in OUTCOMES:
            self.jobs.labels(outcome)
        for status in ("advised", "advised_late"):
            self.advised.labels(status)
        for which in ("requested", "decided"):
            self.limit_node_hours.labels(which)
        for place in INTERVAL_PLACES:
            self.predictions_scored.labels(place)
        self.set_accuracy(None, {})

    def record_scores(self, scored: Iterable[tuple[float | None, str]]) -> None:
        """Count newly scored jobs: (absolute percentage error or None when censored, where
        the runtime fell against the interval: one of INTERVAL_PLACES)."""
        for error, place in scored:
            if error is not None and math.isfinite(error):
                self.prediction_error.observe(error)
            if place in INTERVAL_PLACES:
                self.predictions_scored.labels(place).inc()

    def set_accuracy(self, fleet: Window | None, apps: Mapping[str, Window]) -> None:
        """Set the windowed gauges: the fleet's (None: no scores, NaN and 0) and each of
        `apps`' (the others' series removed)."""
        self.coverage.set(_value(None if fleet is None else fleet.coverage))
        for quantile, name in ERROR_QUANTILES:
            self.error.labels(quantile).set(_value(getattr(fleet, name, None)))
        self.bias.set(_value(None if fleet is None else fleet.bias))
        self.window_jobs.set(0 if fleet is None else fleet.judged)
        for gauge in (self.app_coverage, self.app_error, self.app_bias, self.app_window_jobs):
            gauge.clear()
        for app, window in apps.items():
            self.app_coverage.labels(app).set(_value(window.coverage))
            for quantile, name in ERROR_QUANTILES:
                self.app_error.labels(app, quantile).set(_value(getattr(window, name)))
            self.app_bias.labels(app).set(_value(window.bias))
            self.app_window_jobs.labels(app).set(window.judged)

    def record_limits(
        self, max_nodes: int | None, user_limit_min: int | None, nodes: int, limit_min: int | None
    ) -> None:
        """Count one decided job's limit node-hours (see the module docstring); a job without
        a known range or limit counts nothing."""
        if max_nodes is None or user_limit_min is None:
            return
        decided_limit = user_limit_min if limit_min is None else limit_min
        self.limit_node_hours.labels("requested").inc(max_nodes * user_limit_min / 60.0)
        self.limit_node_hours.labels("decided").inc(nodes * decided_limit / 60.0)

    def serve(self, port: int, address: str = "127.0.0.1") -> int:
        """Serve /metrics on `address`:`port` in a background thread; 0 serves nothing.

        Returns the port (an OSError, e.g. the port is taken, propagates to the caller).
        """
        if port == 0:
            return 0
        self._server = start_http_server(port, addr=address, registry=self.registry)
        return int(getattr(self._server[0], "server_port", port))

    def close(self) -> None:
        """Stop serving (prometheus-client >= 0.17 returns the server and its thread)."""
        server = self._server
        self._server = None
        if server is not None:
            with contextlib.suppress(Exception):
                server[0].shutdown()
                server[0].server_close()

    @contextlib.contextmanager
    def slurm_call(self, call: str) -> Iterator[None]:
        """Time one Slurm adapter call; count it as failed if it raises."""
        started = time.perf_counter()
        try:
            yield
        except Exception:
            self.slurm_failures.labels(call).inc()
            raise
        finally:
            self.slurm_seconds.labels(call).observe(time.perf_counter() - started)
