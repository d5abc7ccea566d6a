"""The Grafana dashboard and the alert rules name only metrics the daemon exports (their
data is checked against a real Prometheus in tests/integration/test_dashboard.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from plugin.metrics import Metrics

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
METRIC = re.compile(r"\badaptalloc_[a-z_]+")


def _exported() -> set[str]:
    # Labelled series appear once used, so names come from the families and their types.
    metrics = Metrics()
    names = set()
    for family in metrics.registry.collect():
        names.add(family.name)
        names.update(s.name for s in family.samples)
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
        names.update(family.name + x for x in suffixes.get(family.type, ()))
    return names


def test_every_panel_query_names_exported_metrics() -> None:
    doc = json.loads((DEPLOY / "grafana" / "adaptalloc.json").read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p["targets"]]
    titles = [p["title"] for p in doc["panels"]]
    assert len(set(titles)) == len(titles)
    used = {name for expr in exprs for name in METRIC.findall(expr)}
    assert used <= _exported(), used - _exported()
    for wanted in (
        "adaptalloc_decisions_total",
        "adaptalloc_fail_open_total",
        "adaptalloc_held_jobs",
        "adaptalloc_decision_latency_seconds_bucket",
        "adaptalloc_slurm_call_seconds_bucket",
        "adaptalloc_slurm_call_failures_total",
        "adaptalloc_learner_runs_total",
        "adaptalloc_limit_node_hours_total",
    ):
        assert wanted in used, wanted


def test_alert_rules_name_exported_metrics() -> None:
    used = set(METRIC.findall((DEPLOY / "prometheus" / "adaptalloc-rules.yml").read_text()))
    assert used <= _exported(), used - _exported()
    assert "adaptalloc_heartbeat_timestamp_seconds" in used


def test_the_dashboard_asks_for_its_data_source_and_daemon() -> None:
    # Imported anywhere, it shows a data source picker and a daemon picker (the instance
    # label of adaptalloc_daemon_info), and every query keeps to the daemons picked.
    doc = json.loads((DEPLOY / "grafana" / "adaptalloc.json").read_text())
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    instance = variables["instance"]
    assert instance["query"]["query"] == "label_values(adaptalloc_daemon_info, instance)"
    assert instance["includeAll"]
    assert instance["multi"]
    wanted = {"type": "prometheus", "uid": "${datasource}"}
    assert instance["datasource"] == wanted
    for panel in doc["panels"]:
        assert panel["datasource"] == wanted, panel["title"]
        for target in panel["targets"]:
            selectors = re.findall(r"\badaptalloc_[a-z_]+(\{[^}]*\})?", target["expr"])
            assert selectors, panel["title"]
            for selector in selectors:
                assert 'instance=~"$instance"' in selector, (panel["title"], target["expr"])
