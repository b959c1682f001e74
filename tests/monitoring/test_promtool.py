"""The alert rules, the dashboard's queries and the plain scrape job, checked by Prometheus' own
promtool (2.42, Debian's package, unpacked by harness/build.sh): `check rules`, `check config`,
and `test rules` with series that fire each alert and series that must not.

The series follow the agent's metrics and the scrape's labels (job `tau-agent`, `node` from the
relabeling). Expected annotations are the rule's templates with the labels put in.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.harness.binaries import locate
from tests.monitoring.promql_names import fill_grafana_variables

pytestmark = [pytest.mark.harness]

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "manifests" / "monitoring"
TARGET = {"job": "tau-agent", "namespace": "tau-system"}


@pytest.fixture(scope="module")
def promtool() -> str:
    binaries = locate()
    binaries.require("promtool")
    return str(binaries.promtool)


@pytest.fixture
def rule_file(tmp_path) -> Path:
    """The PrometheusRule's spec as a plain rule file (what a Prometheus without the operator loads)."""
    spec = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())["spec"]
    path = tmp_path / "tau-agent.rules.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run(promtool: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def rules_by_name() -> dict[str, dict]:
    spec = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())["spec"]
    return {r["alert"]: r for g in spec["groups"] for r in g["rules"]}


def series(name: str, values: str, **labels: str) -> dict:
    text = ",".join(f'{k}="{v}"' for k, v in {**TARGET, **labels}.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def fired(alert: str, **labels: str) -> dict:
    """One expected alert: its labels (the series' kept by the expression, plus the rule's) and the
    rule's annotations with ``{{ $labels.x }}`` put in."""
    rule = rules_by_name()[alert]
    every = {**TARGET, **labels, **rule["labels"]}
    every = {k: v for k, v in every.items() if k in _kept(rule["expr"], every)}

    def fill(text: str) -> str:
        return re.sub(r"{{\s*\$labels\.(\w+)\s*}}", lambda m: every.get(m.group(1), ""), text)

    return {"exp_labels": every, "exp_annotations": {k: fill(v) for k, v in rule["annotations"].items()}}


def _kept(expr: str, labels: dict[str, str]) -> set[str]:
    """The labels an alert of ``expr`` carries: those of its outer ``by (...)``, or all of the series'."""
    grouped = re.search(r"\bby \(([^)]*)\)", expr)
    kept = {k.strip() for k in grouped.group(1).split(",")} if grouped else set(labels) - {"__name__"}
    return kept | {"severity", "alertname"}


def case(alert: str, at: str, *alerts: dict) -> dict:
    return {"eval_time": at, "alertname": alert, "exp_alerts": list(alerts)}


def unit_tests() -> dict:
    node1 = {"pod": "tau-agent-a", "node": "gpu-node-1"}
    node2 = {"pod": "tau-agent-b", "node": "gpu-node-2"}
    node3 = {"pod": "tau-agent-c", "node": "gpu-node-3"}
    health = "tau_agent_gpu_health"
    xids, created = "tau_agent_xid_total", "tau_agent_xid_created"
    gpu = {"gpu": "0", "uuid": "GPU-aaaa"}
    return {"rule_files": ["tau-agent.rules.yaml"], "evaluation_interval": "1m", "tests": [
        {"name": "GPU unhealthy: fires after a minute unhealthy; not for one that flaps or stays healthy",
         "interval": "1m",
         "input_series": [
             series(health, "0 0 1x10", verdict="unhealthy", **node1, **gpu),
             series(health, "1 1 0x10", verdict="healthy", **node1, **gpu),
             series(health, "1 0 1 0 1 0 1 0 1 0 1 0", verdict="unhealthy", **node2, **gpu),
             series(health, "0x12", verdict="unhealthy", **node3, **gpu),
             series(health, "1x12", verdict="degraded", **node3, **gpu),
         ],
         "alert_rule_test": [
             case("TauGPUUnhealthy", "2m"),  # pending, not yet firing
             case("TauGPUUnhealthy", "4m", fired("TauGPUUnhealthy", **node1, **gpu)),
             case("TauGPUUnhealthy", "11m", fired("TauGPUUnhealthy", **node1, **gpu)),
         ]},
        {"name": "XIDs: a first fatal XID fires at once, an increment fires, both clear after 15 minutes; an XID "
                 "from before the first scrape does not; degraded XIDs warn; application XIDs never alert",
         "interval": "1m",
         # Each counter with its _created series (the time of its first XID, as prometheus_client exports it).
         "input_series": [
             series(xids, "_x10 1x30", gpu="gpu0", xid="79", severity="unhealthy", **node1),
             series(created, "_x10 600x30", gpu="gpu0", xid="79", severity="unhealthy", **node1),
             # first seen an hour before the test: only its increment at 5m alerts
             series(xids, "1x5 2x30", gpu="gpu1", xid="48", severity="unhealthy", **node2),
             series(created, "-3600x35", gpu="gpu1", xid="48", severity="unhealthy", **node2),
             series(xids, "_x3 1x30", gpu="gpu2", xid="94", severity="degraded", **node3),
             series(created, "_x3 180x30", gpu="gpu2", xid="94", severity="degraded", **node3),
             series(xids, "_x2 1 2 3 4 5x30", gpu="gpu3", xid="13", severity="event", **node3),
             series(created, "_x2 120x33", gpu="gpu3", xid="13", severity="event", **node3),
         ],
         "alert_rule_test": [
             case("TauGPUXidFatal", "2m"),
             case("TauGPUXidFatal", "7m", fired("TauGPUXidFatal", gpu="gpu1", xid="48", **node2)),
             case("TauGPUXidFatal", "11m", fired("TauGPUXidFatal", gpu="gpu0", xid="79", **node1),
                  fired("TauGPUXidFatal", gpu="gpu1", xid="48", **node2)),
             case("TauGPUXidFatal", "30m"),
             case("TauGPUXidErrors", "4m", fired("TauGPUXidErrors", gpu="gpu2", xid="94", **node3)),
             case("TauGPUXidErrors", "30m"),
         ]},
        {"name": "GPU health unknown: 15 minutes unknown warns; the first minute of an agent does not",
         "interval": "1m",
         "input_series": [
             series("tau_agent_node_health", "1x20", verdict="unknown", **node1),
             series("tau_agent_node_health", "1 0x20", verdict="unknown", **node2),
         ],
         "alert_rule_test": [
             case("TauGPUHealthUnknown", "10m"),
             case("TauGPUHealthUnknown", "16m", fired("TauGPUHealthUnknown", **node1)),
         ]},
        {"name": "agent down: 5 minutes without a scrape; not a short gap, not a healthy agent",
         "interval": "1m",
         "input_series": [
             {"series": 'up{job="tau-agent",namespace="tau-system",pod="tau-agent-a",node="gpu-node-1",instance="10.0.0.1:9464"}',
              "values": "1 1 0x10"},
             {"series": 'up{job="tau-agent",namespace="tau-system",pod="tau-agent-b",node="gpu-node-2",instance="10.0.0.2:9464"}',
              "values": "1 0 0 0 1x10"},
             {"series": 'up{job="tau-agent",namespace="tau-system",pod="tau-agent-c",node="gpu-node-3",instance="10.0.0.3:9464"}',
              "values": "1x12"},
         ],
         "alert_rule_test": [
             case("TauAgentDown", "5m"),
             case("TauAgentDown", "8m", fired("TauAgentDown", instance="10.0.0.1:9464", **node1)),
         ]},
        {"name": "agent stale: answers scrapes but has not polled for 10 minutes; a polling agent does not",
         "interval": "1m",
         "input_series": [
             series("tau_agent_polls_total", "0+4x5 20x30", **node1, instance="10.0.0.1:9464"),
             series("tau_agent_polls_total", "0+4x35", **node2, instance="10.0.0.2:9464"),
         ],
         "alert_rule_test": [
             case("TauAgentStale", "12m"),
             case("TauAgentStale", "16m"),  # stale since 15m: pending
             case("TauAgentStale", "21m", fired("TauAgentStale", instance="10.0.0.1:9464", **node1)),
         ]},
    ]}


def test_promtool_checks_the_rules(promtool, rule_file):
    result = run(promtool, "check", "rules", str(rule_file))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules_by_name())} rules found" in result.stdout, result.stdout


def test_promtool_unit_tests_fire_and_do_not_fire_each_alert(promtool, rule_file):
    tests = unit_tests()
    tested = {c["alertname"] for t in tests["tests"] for c in t["alert_rule_test"]}
    assert tested == set(rules_by_name()), "every alert needs its firing and silent cases"
    for alert in tested:
        cases = [c for t in tests["tests"] for c in t["alert_rule_test"] if c["alertname"] == alert]
        assert any(c["exp_alerts"] for c in cases) and any(not c["exp_alerts"] for c in cases), alert
    (rule_file.parent / "tau-agent.test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = run(promtool, "test", "rules", "tau-agent.test.yaml", cwd=rule_file.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout, result.stdout


def test_promtool_would_catch_a_wrong_expectation(promtool, rule_file):
    """The unit tests can fail: an alert expected where none fires is reported."""
    tests = unit_tests()
    tests["tests"] = tests["tests"][:1]
    tests["tests"][0]["alert_rule_test"] = [case("TauGPUUnhealthy", "2m", fired("TauGPUUnhealthy", pod="tau-agent-a",
                                                                                node="gpu-node-1", gpu="0", uuid="GPU-aaaa"))]
    (rule_file.parent / "wrong.test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = run(promtool, "test", "rules", "wrong.test.yaml", cwd=rule_file.parent)
    assert result.returncode != 0 and "TauGPUUnhealthy" in result.stdout + result.stderr


def test_every_dashboard_query_is_valid_promql(promtool, tmp_path):
    board = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    recording = [{"record": f"tau:dashboard_query_{i}:check", "expr": fill_grafana_variables(e)} for i, e in enumerate(exprs)]
    path = tmp_path / "dashboard.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": recording}]}))
    result = run(promtool, "check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


#: kubernetes_sd_config as Prometheus' configuration reference lists it (docs/configuration/configuration.md).
KUBERNETES_SD_ROLES = {"endpoints", "endpointslice", "service", "pod", "node", "ingress"}
KUBERNETES_SD_KEYS = {"api_server", "role", "kubeconfig_file", "namespaces", "selectors", "attach_metadata"}


def test_promtool_checks_the_plain_scrape_job_with_the_rules(promtool, rule_file):
    """Debian's promtool has no Kubernetes service discovery (its package removed it, NEWS.Debian 1.5.0):
    it checks the job (intervals, every relabeling, the rule file) with the pod discovery swapped for a
    static target; the discovery block is checked against the configuration reference's keys."""
    job = yaml.safe_load((MONITORING / "prometheus-scrape-config.yaml").read_text())
    for scrape in job["scrape_configs"]:
        for sd in scrape.pop("kubernetes_sd_configs"):
            assert set(sd) <= KUBERNETES_SD_KEYS and sd["role"] in KUBERNETES_SD_ROLES, sd
            assert set(sd.get("namespaces", {})) <= {"names", "own_namespace"}, sd
        scrape["static_configs"] = [{"targets": ["10.0.0.1:9464"]}]
    config = rule_file.parent / "prometheus.yml"
    config.write_text(yaml.safe_dump({"rule_files": [rule_file.name], **job}))
    result = run(promtool, "check", "config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
