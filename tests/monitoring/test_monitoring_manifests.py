"""manifests/monitoring without promtool: every metric the alert rules and the Grafana dashboard read is
one the agent exports (read from a scrape of a running agent on fake NVML, not from a list), and the
scrape setups find the agent's pods, on its port, with the `node` label the alerts use."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tau_agent.config import Server
from tau_agent.server import make_servers, serve_in_background
from tests.agent.fake_nvml import h100_node
from tests.agent.sim import SimNode
from tests.monitoring.promql_names import metric_names

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "manifests" / "monitoring"
AGENT = REPO / "manifests" / "agent"
#: Series Prometheus makes itself for every scrape target, not the agent.
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}


def rules() -> list[dict]:
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def dashboard_exprs() -> list[str]:
    board = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = [target["expr"] for panel in board["panels"] for target in panel["targets"]]
    exprs += [v["definition"].removeprefix("label_values(").rsplit(",", 1)[0] for v in board["templating"]["list"]
              if v["type"] == "query"]
    return exprs


@pytest.fixture(scope="module")
def exported() -> set[str]:
    """Every sample name a running agent's /metrics offers (counters as *_total), with an XID seen."""
    node = SimNode(h100_node(2))
    node.nvml.emit_xid(0, 79)
    node.run_for(30)
    public, probe, local = servers = make_servers(node.agent, Server(bind="127.0.0.1", port=0, status_port=0,
                                                                     probe_port=0), clock=node.clock)
    for server in servers:
        serve_in_background(server)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{public.server_address[1]}/metrics", timeout=30) as resp:
            body = resp.read().decode()
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    names = set()
    for family in text_string_to_metric_families(body):
        names |= {sample.name for sample in family.samples}
        names.add(family.name + "_total" if family.type == "counter" else family.name)
    assert "tau_agent_xid_total" in names and "tau_agent_gpu_health" in names, sorted(names)
    return names


def test_the_name_finder_finds_metrics_and_nothing_else():
    assert metric_names('sum by (node, gpu) (rate(a_total{job="x", b=~"c|d"}[5m])) / on(node) group_left b') == {
        "a_total", "b"}
    assert metric_names("increase(x[15m]) or (y unless y offset 15m) > 1e3") == {"x", "y"}
    assert metric_names('count(up{node=~"$node"} == 0) or vector(0)') == {"up"}


def test_every_metric_the_alerts_read_is_exported_by_the_agent(exported):
    read = {name for rule in rules() for name in metric_names(rule["expr"])}
    assert read, "no metric found in the rules"
    assert read - SCRAPE_SERIES <= exported, sorted(read - SCRAPE_SERIES - exported)
    assert {"tau_agent_gpu_health", "tau_agent_xid_total", "tau_agent_polls_total", "up"} <= read


def test_every_metric_the_dashboard_reads_is_exported_by_the_agent(exported):
    read = {name for expr in dashboard_exprs() for name in metric_names(expr)}
    assert read - SCRAPE_SERIES <= exported, sorted(read - SCRAPE_SERIES - exported)
    # the dashboard shows every GPU signal the agent exports
    for name in ("tau_agent_gpu_temperature_celsius", "tau_agent_gpu_power_watts", "tau_agent_gpu_utilization_ratio",
                 "tau_agent_gpu_memory_used_bytes", "tau_agent_gpu_ecc_volatile_dbe", "tau_agent_xid_total"):
        assert name in read, name


def test_the_alerts_the_issue_asks_for_are_there():
    names = {rule["alert"]: rule for rule in rules()}
    assert {"TauGPUUnhealthy", "TauGPUXidFatal", "TauGPUXidErrors", "TauAgentDown", "TauAgentStale"} <= set(names)
    for rule in names.values():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        assert 'job="tau-agent"' in rule["expr"], rule["alert"]  # the scrape job both setups name


def _daemonset() -> dict:
    return yaml.safe_load((AGENT / "daemonset.yaml").read_text())


def test_the_service_and_servicemonitor_find_the_agent_pods_on_their_metrics_port():
    pod = _daemonset()["spec"]["template"]
    container = pod["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    service = yaml.safe_load((MONITORING / "service.yaml").read_text())
    monitor = yaml.safe_load((MONITORING / "servicemonitor.yaml").read_text())
    labels = pod["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items())
    assert service["metadata"]["name"] == "tau-agent"  # the ServiceMonitor's job label: the alerts' job
    assert service["spec"]["ports"][0]["targetPort"] == "metrics" and "metrics" in ports
    assert service["spec"]["ports"][0]["port"] == ports["metrics"]
    assert all(service["metadata"]["labels"].get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
    assert {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"} in endpoint[
        "relabelings"]
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [pod_namespace()]


def pod_namespace() -> str:
    return _daemonset()["metadata"]["namespace"]


def test_the_scrape_annotations_and_the_plain_scrape_job_agree():
    pod = _daemonset()["spec"]["template"]
    annotations = pod["metadata"]["annotations"]
    port = {p["name"]: p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]}["metrics"]
    assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/port"] == str(port)
    job = yaml.safe_load((MONITORING / "prometheus-scrape-config.yaml").read_text())["scrape_configs"][0]
    assert job["job_name"] == "tau-agent"
    assert job["kubernetes_sd_configs"][0]["namespaces"]["names"] == [pod_namespace()]
    targets = {r.get("target_label") for r in job["relabel_configs"]}
    assert {"node", "pod", "namespace", "__address__"} <= targets


def test_kustomize_renders_the_objects_and_the_dashboard_configmap():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        from tests.harness.binaries import locate

        kubectl = str(locate().kubectl)
        assert Path(kubectl).is_file(), "no kubectl on PATH and none built by harness/build.sh"
    result = subprocess.run([kubectl, "kustomize", str(MONITORING)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    objects = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(result.stdout)}
    assert set(objects) == {("Service", "tau-agent"), ("ServiceMonitor", "tau-agent"), ("PrometheusRule", "tau-agent"),
                            ("ConfigMap", "tau-agent-dashboard")}
    config_map = objects[("ConfigMap", "tau-agent-dashboard")]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["tau-agent-dashboard.json"]) == json.loads(
        (MONITORING / "grafana-dashboard.json").read_text())
