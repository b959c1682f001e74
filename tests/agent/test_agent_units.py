"""Unit tests: XID catalog, model view for the TUI, drain planning, call guard, reader, config, HTTP."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta

import pynvml
import pytest

import tau_gpuhealth as gpuhealth
from tau_agent.call_guard import CallGuard, CallHung
from tau_agent.config import ConfigError, load_config
from tau_agent.nvml_reader import NvmlReader
from tau_agent.server import LOCAL_PATHS, make_server, serve_in_background
from tau_gpuhealth.nodeview import view_from_node
from tau_gpuhealth.verdicts import Verdict
from tau_gpuhealth.xid import CatalogError, load_xid_catalog
from tau_tui.core.operations.drain import DrainBudgetPolicy, check_drain_budget, plan_drain, selector_matches
from tests import builders as b

from .fake_nvml import FakeGpu, FakeNvml, h100_node
from .sim import SimNode


def direct(name, fn, *args):
    return fn(*args)


# --- XID catalog ----------------------------------------------------------------------------------


def test_catalog_matches_reference_fatal_and_application_classes():
    cat = load_xid_catalog()
    assert cat.version
    unhealthy = {46, 48, 62, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 143, 151, 155, 156, 158}
    unhealthy |= set(range(144, 151))
    for xid in unhealthy:
        assert cat.classify(xid).severity.value == "unhealthy", xid
    for xid in (13, 31, 43, 45, 68, 137):
        assert cat.classify(xid).severity.value == "event", xid
    assert cat.classify(79).action.value == "REBOOT"
    assert cat.classify(48).action.value == "RESET_GPU"
    assert cat.classify(12345).severity.value == "degraded"  # unknown XIDs: degraded + alert


def test_catalog_errors_name_the_file_and_key(tmp_path):
    bad = tmp_path / "xid.yaml"
    bad.write_text("version: x\nentries:\n  - {xid: 1, mnemonic: a, severity: fatal, action: NONE}\n")
    with pytest.raises(CatalogError, match=r"xid.yaml: key 'entries.0.severity'"):
        load_xid_catalog(bad)
    dup = tmp_path / "dup.yaml"
    dup.write_text(
        "version: x\nentries:\n  - {xid: 1, mnemonic: a, severity: event, action: NONE}\n"
        "  - {xid: 1, mnemonic: b, severity: event, action: NONE}\n"
    )
    with pytest.raises(CatalogError, match="listed twice"):
        load_xid_catalog(dup)


def test_core_module_imports_no_kubernetes_textual_or_nvml():
    import ast
    import importlib
    import inspect
    import pkgutil

    health_modules = [
        importlib.import_module(info.name) for info in pkgutil.iter_modules(gpuhealth.__path__, "tau_gpuhealth.")
    ]
    assert len(health_modules) >= 9
    for module in (*health_modules, __import__("tau_tui.core.operations.drain", fromlist=["x"])):
        tree = ast.parse(inspect.getsource(module))
        names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not names & {"kubernetes", "textual", "pynvml", "prometheus_client"}, module.__name__


# --- What the TUI reads ---------------------------------------------------------------------------


def test_view_from_node_reads_agent_output_and_fails_closed_when_stale():
    node = SimNode(h100_node(2))
    node.run_for(30)
    node.nvml.emit_xid(0, 79)
    node.nvml.gpus[0].lost = True
    node.run_for(60)
    node_json = {"metadata": {"name": "gpu-node-a"}, "status": {"conditions": list(node.writer.conditions.values())}}
    health_obj = {"status": node.writer.health_status}
    now = datetime.fromtimestamp(node.clock.now, tz=UTC)
    view = view_from_node(node_json, health_obj, now)
    assert view.verdict is Verdict.UNHEALTHY and view.reason == "XID79" and not view.stale
    assert view.detail is not None and view.detail.gpus[0].verdict is Verdict.UNHEALTHY
    stale = view_from_node(node_json, health_obj, now + timedelta(minutes=13))
    assert stale.verdict is Verdict.UNKNOWN and stale.reason == "AgentHeartbeatStale"
    none = view_from_node({"metadata": {"name": "x"}, "status": {"conditions": []}}, None, now)
    assert none.verdict is Verdict.UNKNOWN and none.reason == "NoAgentReport"


# --- Drain planning -------------------------------------------------------------------------------


def _node(name, *, gpu=True, cordoned=False, ready=True, annotations=None):
    return b.node(name, ready=ready, gpus=8 if gpu else 0, allocatable=False, cordoned=cordoned,
                  annotations=annotations or {})


def _pod(name, *, ns="team-a", owner=("ReplicaSet", "rs"), labels=None, phase="Running", volumes=None):
    pod = b.pod(name, ns, labels=labels or {}, owner=owner or None, phase=phase)
    pod["spec"] = {"volumes": volumes or []}
    return pod


NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_drain_budget_is_the_smaller_of_fraction_and_count():
    nodes = [_node(f"g{i}") for i in range(100)] + [_node("cpu", gpu=False)]
    assert check_drain_budget("g0", nodes, NOW).max_unavailable == 3  # 5% of 100 = 5 > 3
    small = [_node(f"g{i}") for i in range(10)]
    budget = check_drain_budget("g0", small, NOW)
    assert budget.max_unavailable == 1 and budget.allowed  # small fleets may still drain one
    small[3]["spec"]["unschedulable"] = True
    refused = check_drain_budget("g0", small, NOW)
    assert not refused.allowed and "g3" in refused.explanation
    recent = [_node(f"g{i}") for i in range(200)]
    for i in (1, 2, 3):
        recent[i]["metadata"]["annotations"]["tau-tui.io/drain-started"] = (NOW - timedelta(minutes=2)).isoformat()
    assert not check_drain_budget("g0", recent, NOW, DrainBudgetPolicy(max_nodes=3)).allowed


def test_plan_drain_skips_daemonsets_blocks_on_pdb_and_unmanaged_pods():
    nodes = [_node(f"g{i}") for i in range(40)]
    pods = [
        _pod("train-0", labels={"app": "train"}),
        _pod("agent-x", owner=("DaemonSet", "tau-agent"), ns="tau-system"),
        _pod("done", phase="Succeeded"),
        _pod("bare", owner=None, volumes=[{"name": "scratch", "emptyDir": {}}]),
    ]
    pdbs = [
        {
            "metadata": {"name": "train-pdb", "namespace": "team-a"},
            "spec": {"selector": {"matchLabels": {"app": "train"}}},
            "status": {"disruptionsAllowed": 0},
        }
    ]
    plan = plan_drain("g0", pods, pdbs, nodes, NOW)
    assert [p.name for p in plan.evict] == ["train-0", "bare"]
    assert {s.pod.name for s in plan.skipped} == {"agent-x", "done"}
    assert not plan.allowed
    assert any("train-pdb" in b for b in plan.blockers)
    assert any("no controller" in b for b in plan.blockers)
    assert any("emptyDir" in w for w in plan.warnings)
    assert plan.eviction_bodies()[0] == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "train-0", "namespace": "team-a"},
    }
    pdbs[0]["status"]["disruptionsAllowed"] = 1
    ok = plan_drain("g0", pods, pdbs, nodes, NOW, allow_unmanaged=True)
    assert ok.allowed and not ok.blockers


def test_selector_semantics():
    labels = {"app": "a", "tier": "gpu"}
    assert selector_matches({}, labels)
    assert selector_matches({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu"]}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, labels)
    assert not selector_matches(None, labels)


# --- Call guard -----------------------------------------------------------------------------------


def test_call_guard_names_the_hung_call_and_isolates_the_key():
    guard = CallGuard(timeout_s=0.05)
    release = threading.Event()
    returned = threading.Event()

    def hung_call():
        release.wait(30)
        returned.set()

    try:
        with pytest.raises(CallHung) as info:
            guard.run("gpu1", lambda call: call("nvmlDeviceGetPowerUsage", hung_call))
        assert info.value.call == "nvmlDeviceGetPowerUsage"
        # The guard gave up while the call was still blocked: it did not wait for the call to return.
        assert not returned.is_set()
        with pytest.raises(CallHung):  # not called again while stuck
            guard.run("gpu1", lambda call: call("nvmlDeviceGetName", lambda: "x"))
        assert guard.run("gpu2", lambda call: call("nvmlDeviceGetName", lambda: "ok")) == "ok"
    finally:
        release.set()
    deadline = time.monotonic() + 30  # a bounded wait for the released thread, not a speed check
    while guard.stuck_calls() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert guard.stuck_calls() == {}
    assert guard.run("gpu1", lambda call: call("nvmlDeviceGetName", lambda: "back")) == "back"


def test_call_guard_passes_exceptions_through():
    guard = CallGuard(timeout_s=1)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        guard.run("gpu0", lambda call: call("x", lambda: (_ for _ in ()).throw(pynvml.NVMLError(15))))


# --- Reader details -------------------------------------------------------------------------------


class OldDriverNvml(FakeNvml):
    """An older driver: the newer function names raise FunctionNotFound."""

    def nvmlDeviceGetTemperatureV(self, h, sensor):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 61

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        return 0x40


def test_reader_falls_back_to_older_calls_on_function_not_found():
    nvml = OldDriverNvml(h100_node(1))
    reader = NvmlReader(nvml)
    reader.init(direct)
    sample = reader.read_gpu(direct, 0, counters=True, known=None)
    assert sample.temperature_c == 61 and sample.clock_event_reasons == 0x40
    assert "temperature" not in sample.not_supported and "clock_event_reasons" not in sample.not_supported


def test_reader_maps_unknown_error_to_query_failure_and_reset_required():
    gpus = [FakeGpu(uuid="GPU-a", errors={"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_UNKNOWN}), FakeGpu(uuid="GPU-b")]
    gpus[1].reset_required = True
    reader = NvmlReader(FakeNvml(gpus))
    reader.init(direct)
    a = reader.read_gpu(direct, 0, counters=True, known=None)
    assert a.query_error and "nvmlDeviceGetPowerUsage" in a.query_error
    assert a.temperature_c == 55  # the other calls still ran
    b = reader.read_gpu(direct, 1, counters=True, known=None)
    assert b.reset_required


def test_reset_required_and_query_errors_in_the_model():
    gpus = h100_node(2)
    gpus[0].reset_required = True
    gpus[1].errors = {"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_UNKNOWN}
    node = SimNode(gpus)
    node.run_for(30)
    assert node.codes(0) == ["GpuResetRequired"] and node.gpu(0).verdict is Verdict.UNHEALTHY
    assert node.codes(1) == ["GpuQueryFailed"] and node.gpu(1).verdict is Verdict.UNKNOWN


def test_pcie_replay_rate_and_persistence_mode_degrade():
    gpus = h100_node(2)
    gpus[1].persistence = 0
    node = SimNode(gpus)
    node.run_for(60)
    for _ in range(3):
        gpus[0].pcie_replay += 20  # 20 per minute > 8
        node.run_for(60)
    assert "PcieReplayRate" in node.codes(0)
    assert node.codes(1) == ["PersistenceModeDisabled"]


# --- Config ---------------------------------------------------------------------------------------


def test_config_errors_name_file_and_key(tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text("budget:\n  heartbeat_s: -5\nactions:\n  taint: {enabled: true, effect: NoExecute}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = str(info.value)
    assert "agent.yaml: key 'budget.heartbeat_s'" in text
    assert "key 'actions.taint.effect'" in text  # NoExecute is refused: it ignores PDBs
    path.write_text("intervals: [1, 2\n")
    with pytest.raises(ConfigError, match="line"):
        load_config(path)


def test_shipped_manifest_config_is_valid():
    from pathlib import Path

    config = load_config(Path(__file__).resolve().parents[2] / "manifests/agent/config.yaml")
    assert config.actions.taint.enabled is False and config.actions.cordon.enabled is False


# --- HTTP endpoints -------------------------------------------------------------------------------


def test_healthz_metrics_and_status_endpoints():
    # The local listener's routes; the public one (no /status) is in test_http_server.py.
    node = SimNode(h100_node(2))
    node.nvml.emit_xid(1, 13)
    node.run_for(30)
    server = make_server(node.agent, "127.0.0.1", 0, clock=node.clock, paths=LOCAL_PATHS, name="local")
    serve_in_background(server)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=5) as resp:
            assert resp.status == 200
        with urllib.request.urlopen(base + "/metrics", timeout=5) as resp:
            text = resp.read().decode()
        assert 'tau_agent_node_health{verdict="healthy"} 1.0' in text
        assert 'tau_agent_xid_total{gpu="gpu1",severity="event",xid="13"} 1.0' in text
        assert "tau_agent_gpu_temperature_celsius" in text
        with urllib.request.urlopen(base + "/status", timeout=5) as resp:
            status = json.loads(resp.read())
        assert status["health"]["verdict"] == "healthy"
        assert status["conditions"][0]["type"] == "GPUUnhealthy"
        node.clock.now += 3600  # loop stopped ticking -> not healthy
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(base + "/healthz", timeout=5)
        assert info.value.code == 503
    finally:
        server.shutdown()
        server.server_close()
