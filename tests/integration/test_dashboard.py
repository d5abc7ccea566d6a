"""The Grafana dashboard and the alert rules against real data: Debian's Prometheus scrapes
the testbed's daemon through a burst of moldable jobs; every panel's query, evaluated by
Prometheus' HTTP API, returns data (the accuracy panels once the learner scored the burst's
finished jobs); the rules load, and the stale-heartbeat alert fires once the daemon stops.

The rule file is the shipped one with its ``for:`` durations shortened to seconds (and a 1 s
scrape and evaluation interval) so the test waits seconds, not minutes; the expressions are
unchanged. Their timing at the shipped durations is pinned by promtool's own unit tests
(deploy/prometheus/adaptalloc-rules.test.yml), run here too.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .daemon_harness import DaemonProcess
from .test_daemon import learn_curve
from .testbed import PROJECT_ROOT, SubmitJob, free_port, scratch_url

pytestmark = pytest.mark.integration

DASHBOARD = PROJECT_ROOT / "deploy" / "grafana" / "adaptalloc.json"
RULES = PROJECT_ROOT / "deploy" / "prometheus" / "adaptalloc-rules.yml"
RULE_TESTS = PROJECT_ROOT / "deploy" / "prometheus" / "adaptalloc-rules.test.yml"
#: Upper bound for Prometheus to start, and for its queries to see the burst.
READY_TIMEOUT_S = 90.0


def _panel_queries() -> list[tuple[str, str]]:
    """Every panel's queries as Grafana sends them with the instance variable at All (its
    allValue, ``.*``)."""
    doc = json.loads(DASHBOARD.read_text())
    (instance,) = [v for v in doc["templating"]["list"] if v["name"] == "instance"]
    return [
        (p["title"], t["expr"].replace("$instance", instance["allValue"]))
        for p in doc["panels"]
        for t in p["targets"]
    ]


class Prometheus:
    """A Prometheus server of the test's own (Debian's binary), scraping one target."""

    def __init__(self, workdir: Path, target_port: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        rules = workdir / "rules.yml"
        rules.write_text(re.sub(r"(?m)^(\s+for:) \d+m$", r"\1 3s", RULES.read_text()))
        config = workdir / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {rules}\n"
            "scrape_configs:\n  - job_name: adaptalloc\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{target_port}']\n"
        )
        self.log = workdir / "prometheus.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
                [
                    shutil.which("prometheus") or "/usr/bin/prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={workdir / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self.wait_for("Prometheus to be ready", self._ready)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as reply:  # noqa: S310
                return bool(reply.status == 200)
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as reply:  # noqa: S310
            doc = json.loads(reply.read())
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        assert data["resultType"] in ("vector", "scalar"), data
        return data["result"] if data["resultType"] == "vector" else [{"value": data["result"]}]

    def wait_for(
        self, what: str, predicate: Callable[[], bool], why: Callable[[], str] = str
    ) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not predicate():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"gave up waiting for {what} {why()}; Prometheus' log:\n"
                    + self.log.read_text(errors="replace")[-2000:],
                    pytrace=False,
                )
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def daemon(daemon_factory: Callable[..., DaemonProcess]) -> DaemonProcess:
    """The daemon with metrics on a port of its own and the learner on (every 2 s)."""
    made = daemon_factory(args=("--metrics-port", str(free_port())))
    made.config_path.write_text(
        made.config_path.read_text().replace(
            "learn = false\n", "learn = true\nlearn_interval_s = 2.0\n"
        )
    )
    return made.start()


@pytest.fixture
def prometheus(daemon: DaemonProcess, tmp_path: Path) -> Iterator[Prometheus]:
    port = int(daemon.args[daemon.args.index("--metrics-port") + 1])
    workdir = tmp_path / "prometheus"
    workdir.mkdir()
    server = Prometheus(workdir, target_port=port)
    try:
        # Its scrape manager picks targets up every 5 s: a burst before the first scrape would
        # be one flat sample, no rate. (A site's Prometheus runs long before any burst.)
        server.wait_for(
            "the first scrape of the daemon",
            lambda: server.query('up{job="adaptalloc"} == 1') != [],
        )
        yield server
    finally:
        server.stop()


def _has_data(result: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(sample["value"][1])) for sample in result)


def test_promtool_checks_and_unit_tests_the_rules() -> None:
    check = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        ["promtool", "check", "rules", str(RULES)],  # noqa: S607 - Debian's promtool from PATH
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 3 rules found" in check.stdout
    tests = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        ["promtool", "test", "rules", RULE_TESTS.name],  # noqa: S607
        cwd=RULE_TESTS.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "SUCCESS" in tests.stdout


def test_every_panel_has_data_after_a_burst_and_the_stale_alert_fires(
    daemon: DaemonProcess, prometheus: Prometheus, submit_job: SubmitJob
) -> None:
    learn_curve(scratch_url(), "dash-lu", "lan_thesis_npb_lu_W.csv")
    # They run a second, so that the learner scores them (a run of 0 s has no error) and
    # the accuracy panels have data.
    jobs = [
        submit_job(
            "--nodes=1-8", "--time=10", "--comment=adaptalloc:v1 app=dash-lu", wrap="sleep 1"
        )
        for _ in range(4)
    ]
    jobs.append(
        submit_job("--nodes=1-4", "--time=10", "--comment=adaptalloc:v1 app=dash-new", wrap="true")
    )
    for job in jobs:
        assert daemon.wait_decision(job)["status"] == "released"

    queries = _panel_queries()
    assert len(queries) >= 10
    empty: dict[str, str] = {}

    def every_panel_has_data() -> bool:
        empty.clear()
        for title, expr in queries:
            result = prometheus.query(expr)
            if not _has_data(result):
                empty[title] = f"{expr} -> {result}"
        return not empty

    prometheus.wait_for(
        "every panel's query to return data", every_panel_has_data, lambda: f"(empty: {empty})"
    )
    saved = prometheus.query(dict(queries)["Node-hours saved (time limits)"])
    assert float(saved[0]["value"][1]) > 0  # 4 jobs sized below 8 nodes, limits shortened

    rules = prometheus.api("rules")["groups"]
    loaded = {r["name"]: r["health"] for g in rules for r in g["rules"]}
    assert loaded == {
        "AdaptallocHeartbeatStale": "ok",
        "AdaptallocFailOpenRising": "ok",
        "AdaptallocCoverageDrift": "ok",
    }

    def alerts() -> dict[str, str]:
        return {a["labels"]["alertname"]: a["state"] for a in prometheus.api("alerts")["alerts"]}

    assert "AdaptallocHeartbeatStale" not in alerts()
    daemon.stop()
    prometheus.wait_for(
        "the stale-heartbeat alert to fire",
        lambda: alerts().get("AdaptallocHeartbeatStale") == "firing",
    )
