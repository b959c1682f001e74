"""TauGrid's own GPU node conditions (NPD, gpu-metrics-collector) and the GKE/AKS ones, read into
the same verdicts as tau-agent's: every mapped condition, fail-closed staleness, and both sources."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tau_gpuhealth.nodeconditions import MappingError, load_condition_mapping, packaged_mapping
from tau_gpuhealth.nodeview import view_from_node
from tau_gpuhealth.verdicts import Verdict
from tests import builders as b

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
FRESH = (NOW - timedelta(minutes=1)).isoformat()
STALE = (NOW - timedelta(hours=1)).isoformat()
MAPPING = packaged_mapping()

#: taugrid.md §6.1 (NPD condition types) and §6.2 (the collector's 20 default rules plus exporter
#: availability), gpu-health.md §3.2 (GKE) and §3.3 (AKS): all must be mapped.
TAUGRID_NPD = ("GPUMissing", "NvidiaSmiProblem", "NvidiaDeviceFilesProblem", "DcgmHealthProblem", "XIDErrors",
               "XIDErrorsAlwaysFail", "GPUECC", "GPUECCErrors", "GPUECCRemapPending", "GPUECCRemapFailure",
               "NVLinkStatusInactive", "NVLinkB200Inactive", "NVLinkDown", "GPUThrottle", "GPUClockThrottling",
               "GPUVbiosMismatch", "GPUVbiosInconsistent", "GPUDriverProblem", "TempIMEXProblem", "IBLinkIssue",
               "IBPKeyIssue", "IBLinkFlapping", "RoCELinkIssue", "NVMeMountMissing")
TAUGRID_COLLECTOR_DRAIN = ("GPUECCDoubleRetired", "GPUECCDoubleVolatile", "GPUNVLinkCRCFlitErrors", "GPUNVLinkCRCDataErrors",
                           "GPUNVLinkReplayErrors", "XIDError48", "XIDError63", "XIDError64", "XIDError79", "XIDError94",
                           "XIDError95", "GraceCPUECCUncorrectable")
TAUGRID_COLLECTOR_TAINT = ("GPUThermalViolation", "GPUPowerViolation", "IBLinkDown", "IBSymbolError",
                           "GPUECCSingleVolatileRate", "GPUECCSingleRetired", "GPUPCIeReplayErrors", "GraceCPUECCCorrectableRate")
OTHERS = ("DcgmExporterUnavailable", "XidCriticalError", "UnhealthyNvidiaDevicePlugin")


def node(*conditions: dict[str, Any]) -> dict[str, Any]:
    return b.node("gpu-1", *conditions)


def cond(type_: str, status: str = "True", heartbeat: str = FRESH, reason: str = "", message: str = "") -> dict[str, Any]:
    return b.node_condition(type_, status, heartbeat, reason, message)


def agent(status: str = "False", reason: str = "AllGPUsHealthy", message: str = "8 GPUs healthy") -> dict[str, Any]:
    return cond("GPUUnhealthy", status, reason=reason, message=message)


def test_every_documented_condition_is_mapped_with_its_source():
    mapped = MAPPING.by_type()
    for names, source in ((TAUGRID_NPD, "taugrid-npd"), (TAUGRID_COLLECTOR_DRAIN, "taugrid-collector"),
                          (TAUGRID_COLLECTOR_TAINT, "taugrid-collector")):
        for name in names:
            assert mapped[name].source == source, name
    # The collector's "drain" rules are faults; its "taint" rules need attention.
    assert {mapped[n].when_true for n in TAUGRID_COLLECTOR_DRAIN} == {"unhealthy"}
    assert {mapped[n].when_true for n in TAUGRID_COLLECTOR_TAINT} == {"degraded"}
    assert len(TAUGRID_COLLECTOR_DRAIN) + len(TAUGRID_COLLECTOR_TAINT) == 20
    assert set(mapped) == set(TAUGRID_NPD + TAUGRID_COLLECTOR_DRAIN + TAUGRID_COLLECTOR_TAINT + OTHERS)
    assert {"aks-npd"} <= set(mapped["XIDErrors"].also) and mapped["XidCriticalError"].source == "gke-device-plugin"


@pytest.mark.parametrize("entry", MAPPING.conditions, ids=lambda e: e.type)
def test_each_mapped_condition_on_a_node_without_the_agent(entry):
    true = view_from_node(node(cond(entry.type, message="seen by the plugin")), None, NOW)
    assert true.verdict is Verdict(entry.when_true)
    assert true.reason == entry.type and true.stale is False
    assert true.message.startswith(MAPPING.sources[entry.source] + ": " + entry.type)
    assert [s.source for s in true.sources] == [entry.source]
    assert view_from_node(node(cond(entry.type, "False")), None, NOW).verdict is Verdict.HEALTHY
    assert view_from_node(node(cond(entry.type, "Unknown")), None, NOW).verdict is Verdict.UNKNOWN
    stale = view_from_node(node(cond(entry.type, "False", heartbeat=STALE)), None, NOW)
    assert stale.verdict is Verdict.UNKNOWN and stale.stale
    # A stale True still reports the fault it last saw (or unknown, whichever is worse).
    stale_true = view_from_node(node(cond(entry.type, heartbeat=STALE)), None, NOW)
    assert stale_true.verdict.rank >= Verdict.UNKNOWN.rank


def test_xid_errors_alone_make_the_node_unhealthy_with_that_reason():
    view = view_from_node(node(cond("XIDErrors", reason="XIDErrors", message="Xid 79 on GPU 0000:3b:00.0")), None, NOW)
    assert view.verdict is Verdict.UNHEALTHY and view.reason == "XIDErrors"
    assert "Xid 79 on GPU 0000:3b:00.0" in view.message and "TauGrid node-problem-detector" in view.message
    # Without the agent, the last heartbeat is NPD's (the Nodes pane's hb column), not "never".
    assert view.last_heartbeat == datetime.fromisoformat(FRESH)


def test_healthy_conditions_of_several_writers_are_healthy_and_listed():
    view = view_from_node(node(cond("XIDErrors", "False"), cond("GPUNVLinkReplayErrors", "False"),
                               cond("GPUMissing", "False")), None, NOW)
    assert view.verdict is Verdict.HEALTHY
    assert sorted(s.source for s in view.sources) == ["taugrid-collector", "taugrid-npd"]


def test_the_worst_condition_of_a_writer_wins():
    view = view_from_node(node(cond("GPUThermalViolation"), cond("XIDError79"), cond("GPUPCIeReplayErrors", "False")), None, NOW)
    assert view.verdict is Verdict.UNHEALTHY and view.reason == "XIDError79"
    (collector,) = view.sources
    assert {f.type: f.verdict for f in collector.findings} == {
        "GPUThermalViolation": Verdict.DEGRADED, "XIDError79": Verdict.UNHEALTHY, "GPUPCIeReplayErrors": Verdict.HEALTHY}


def test_gke_reason_names_the_xids():
    view = view_from_node(node(cond("XidCriticalError", reason='{"79":true,"48":true}', message="boot-id-1")), None, NOW)
    assert view.verdict is Verdict.UNHEALTHY
    assert view.sources[0].findings[0].reason == "XID 48, 79"


def test_no_conditions_at_all_is_still_unknown():
    view = view_from_node(node(), None, NOW)
    assert view.verdict is Verdict.UNKNOWN and view.reason == "NoAgentReport" and view.sources == []


def test_both_sources_agent_healthy_but_npd_reports_a_fault():
    view = view_from_node(node(agent(), cond("XIDErrors", message="Xid 48")), None, NOW)
    assert view.verdict is Verdict.UNHEALTHY and view.reason == "XIDErrors"
    assert [(s.source, s.verdict) for s in view.sources] == [("taugrid-npd", Verdict.UNHEALTHY), ("tau-agent", Verdict.HEALTHY)]


def test_both_sources_agent_unhealthy_keeps_the_agent_reason():
    view = view_from_node(node(agent("True", "Xid79", "GPU 0 fell off the bus"), cond("XIDErrors", "False")), None, NOW)
    assert view.verdict is Verdict.UNHEALTHY and view.reason == "Xid79" and view.message == "GPU 0 fell off the bus"
    assert [(s.source, s.verdict) for s in view.sources] == [("tau-agent", Verdict.UNHEALTHY), ("taugrid-npd", Verdict.HEALTHY)]


def test_both_sources_healthy_is_healthy_from_the_agent():
    view = view_from_node(node(agent(), cond("DcgmHealthProblem", "False")), None, NOW)
    assert view.verdict is Verdict.HEALTHY and view.reason == "AllGPUsHealthy"
    assert {s.source for s in view.sources} == {"tau-agent", "taugrid-npd"}


def test_a_stale_agent_is_not_hidden_by_a_fresh_healthy_npd():
    view = view_from_node(node(cond("GPUUnhealthy", "False", heartbeat=STALE), cond("XIDErrors", "False")), None, NOW)
    assert view.verdict is Verdict.UNKNOWN and view.reason == "AgentHeartbeatStale"


def test_agent_only_lists_itself_as_the_source():
    view = view_from_node(node(agent()), None, NOW)
    assert view.verdict is Verdict.HEALTHY and [s.source for s in view.sources] == ["tau-agent"]


@pytest.mark.parametrize(("text", "expected"), [
    ("version: x\n", "key 'heartbeat_seconds'"),
    ("version: x\nheartbeat_seconds: 1\nstale_after_periods: 1\nsources: {a: A}\n"
     "conditions: [{type: T, source: b, when_true: unhealthy, category: c, what: w}]\n", "unknown source 'b'"),
    ("version: x\nheartbeat_seconds: 1\nstale_after_periods: 1\nsources: {a: A}\n"
     "conditions: [{type: T, source: a, when_true: unhealthy, category: c, what: w},"
     " {type: T, source: a, when_true: degraded, category: c, what: w}]\n", "condition T is mapped twice"),
    ("version: x\nheartbeat_seconds: 1\nstale_after_periods: 1\nsources: {a: A}\n"
     "conditions: [{type: T, source: a, when_true: broken, category: c, what: w}]\n", "key 'conditions.0.when_true'"),
    ("version: [\n", "not valid YAML"),
])
def test_a_malformed_mapping_names_the_file_and_key(tmp_path, text, expected):
    path = tmp_path / "mapping.yaml"
    path.write_text(text)
    with pytest.raises(MappingError) as err:
        load_condition_mapping(path)
    assert str(err.value).startswith(str(path)) and expected in str(err.value)
