"""Acceptance scenarios: fake NVML -> real agent loop -> verdict, conditions and events."""

from __future__ import annotations

import pynvml
import pytest

from tau_gpuhealth.verdicts import Verdict

from .fake_nvml import FakeNvml, consumer_gpu_all_unsupported, consumer_gpu_typical, h100_node
from .sim import SimNode, fast_config


def cond(node: SimNode, ctype: str) -> tuple[str, str]:
    c = node.writer.condition(ctype)
    return c["status"], c["reason"]


def test_healthy_node_reports_false_conditions_and_no_events():
    node = SimNode(h100_node(8), labels={"nvidia.com/gpu.count": "8"})
    node.run_for(120)
    assert node.health.verdict is Verdict.HEALTHY
    assert cond(node, "GPUUnhealthy") == ("False", "GPUsHealthy")
    assert cond(node, "GPUDegraded") == ("False", "NoDegradedGPUs")
    assert node.writer.event_list() == []
    assert node.writer.health_status["verdict"] == "healthy"
    assert len(node.writer.health_status["gpus"]) == 8


def test_xid79_gpu_fell_off_the_bus_is_unhealthy_with_reboot_action():
    node = SimNode(h100_node(8), labels={"nvidia.com/gpu.count": "8"})
    node.run_for(30)
    node.nvml.emit_xid(3, 79)
    node.nvml.gpus[3].lost = True
    node.step(1)
    assert node.health.verdict is Verdict.UNHEALTHY
    gpu3 = node.gpu(3)
    assert gpu3.verdict is Verdict.UNHEALTHY
    assert [r.code for r in gpu3.reasons] == ["XID79", "GpuLost"]
    assert {r.action.value for r in gpu3.reasons} == {"REBOOT"}
    assert all(r.latched for r in gpu3.reasons)
    assert gpu3.uuid == node.nvml.gpus[3].uuid  # the lost GPU keeps its identity
    node.run_for(60)
    assert cond(node, "GPUUnhealthy") == ("True", "XID79")
    assert "gpu3" in node.writer.condition("GPUUnhealthy")["message"]
    assert cond(node, "GPUDegraded")[0] == "False"
    reasons = node.writer.event_reasons()
    assert "GpuXid79" in reasons and "GPUUnhealthy" in reasons
    xid_event = next(e for e in node.writer.event_list() if e.reason == "GpuXid79")
    assert xid_event.type == "Warning" and "REBOOT" in xid_event.message
    # Other GPUs stay healthy.
    assert all(node.gpu(i).verdict is Verdict.HEALTHY for i in range(8) if i != 3)


def test_xid48_double_bit_ecc_latches_until_gpu_reset():
    node = SimNode(h100_node(2))
    node.run_for(30)
    node.nvml.emit_xid(1, 48)
    node.nvml.gpus[1].ecc[(1, 0)] = 1  # volatile DBE
    node.nvml.gpus[1].ecc[(1, 1)] = 1  # aggregate DBE
    node.run_for(90)
    assert node.health.verdict is Verdict.UNHEALTHY
    assert set(node.codes(1)) == {"XID48", "DoubleBitEcc"}
    assert cond(node, "GPUUnhealthy") == ("True", "XID48")
    assert {"GpuXid48", "GPUUnhealthy"} <= set(node.writer.event_reasons())
    # Latched: hours later, nothing new, still unhealthy.
    node.run_for(3 * 3600, step=60)
    assert node.gpu(1).verdict is Verdict.UNHEALTHY
    # GPU reset: volatile counters go back to zero -> recovery evidence.
    node.nvml.gpus[1].ecc[(1, 0)] = 0
    node.run_for(120)
    assert node.gpu(1).verdict is Verdict.HEALTHY
    node.run_for(600, step=30)
    assert cond(node, "GPUUnhealthy")[0] == "False"
    assert "GPUHealthRecovered" in node.writer.event_reasons()


def test_row_remap_pending_is_degraded_after_two_polls():
    node = SimNode(h100_node(1))
    node.run_for(60)
    node.nvml.gpus[0].remapped = (1, 0, 1, 0)
    node.step(60)  # first counter poll that sees it
    assert node.gpu(0).verdict is Verdict.HEALTHY  # one bad poll is not enough
    node.step(15)
    assert node.gpu(0).verdict is Verdict.DEGRADED
    assert node.codes(0) == ["RowRemapPending"]
    assert node.gpu(0).reasons[0].action.value == "RESET_GPU"
    node.run_for(60)
    assert cond(node, "GPUDegraded") == ("True", "RowRemapPending")
    assert cond(node, "GPUUnhealthy")[0] == "False"
    assert "GPUDegraded" in node.writer.event_reasons()


def test_row_remap_failure_is_unhealthy():
    node = SimNode(h100_node(1))
    node.run_for(60)
    node.nvml.gpus[0].remapped = (0, 1, 0, 1)
    node.run_for(120)
    assert node.gpu(0).verdict is Verdict.UNHEALTHY
    assert node.codes(0) == ["RowRemapFailure"]
    assert cond(node, "GPUUnhealthy") == ("True", "RowRemapFailure")
    assert "GPUUnhealthy" in node.writer.event_reasons()


def test_thermal_slowdown_degrades_and_clears_after_ten_clean_minutes():
    node = SimNode(h100_node(1))
    node.run_for(60)
    gpu = node.nvml.gpus[0]
    gpu.clock_reasons = 0x40 | 0x20  # HwThermalSlowdown + SwThermalSlowdown
    gpu.temperature = 91
    node.run_for(60)
    assert node.gpu(0).verdict is Verdict.DEGRADED
    assert set(node.codes(0)) == {"HwThermalSlowdown", "TemperatureNearSlowdown"}
    assert cond(node, "GPUDegraded")[0] == "True"
    gpu.clock_reasons = 0x1
    gpu.temperature = 60
    node.run_for(540)
    assert node.gpu(0).verdict is Verdict.DEGRADED  # not yet 10 minutes clean
    node.run_for(90)
    assert node.gpu(0).verdict is Verdict.HEALTHY
    node.run_for(300, step=30)
    assert cond(node, "GPUDegraded")[0] == "False"
    assert node.writer.event_reasons().count("GPUDegraded") == 1
    assert "GPUHealthy" in node.writer.event_reasons()


def test_nvlink_link_down_is_unhealthy():
    node = SimNode(h100_node(2))
    node.run_for(60)
    node.nvml.gpus[1].nvlinks[5] = False
    node.run_for(120)
    assert node.gpu(1).verdict is Verdict.UNHEALTHY
    assert node.codes(1) == ["NVLinkDown"]
    assert "[5]" in node.gpu(1).reasons[0].message
    assert cond(node, "GPUUnhealthy") == ("True", "NVLinkDown")
    assert node.gpu(1).telemetry.nvlinks_down == [5]


def test_consumer_gpu_where_everything_is_not_supported_is_unknown_not_unhealthy():
    node = SimNode([consumer_gpu_all_unsupported()])
    node.run_for(120)
    gpu = node.gpu(0)
    assert gpu.verdict is Verdict.UNKNOWN
    assert node.codes(0) == ["NoHealthSignals"]
    assert {"ecc", "remapped_rows", "nvlink", "temperature", "clock_event_reasons"} <= set(gpu.not_supported)
    assert cond(node, "GPUUnhealthy") == ("Unknown", "NoHealthSignals")
    assert cond(node, "GPUDegraded")[0] == "Unknown"


def test_consumer_gpu_with_telemetry_is_healthy_and_lists_what_is_not_available():
    node = SimNode([consumer_gpu_typical()])
    node.run_for(120)
    gpu = node.gpu(0)
    assert gpu.verdict is Verdict.HEALTHY
    assert {"ecc", "remapped_rows", "nvlink", "mig_mode", "retired_pages"} <= set(gpu.not_supported)
    assert cond(node, "GPUUnhealthy")[0] == "False"


@pytest.mark.parametrize(
    "code, reason",
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "NvmlLibraryNotFound"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "NvmlDriverNotLoaded"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NvmlVersionMismatch"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "NvmlNoPermission"),
    ],
)
def test_nvml_missing_is_unknown_never_healthy(code, reason):
    node = SimNode(nvml=FakeNvml(h100_node(8), init_error=code))
    node.run_for(60)
    assert node.health.verdict is Verdict.UNKNOWN
    assert not node.health.nvml_available
    assert cond(node, "GPUUnhealthy") == ("Unknown", reason)
    assert cond(node, "GPUDegraded") == ("Unknown", reason)
    assert node.writer.health_status["nvmlAvailable"] is False
    # The driver comes back: the agent re-initialises and reports healthy.
    node.nvml.init_error = None
    node.run_for(60)
    assert node.health.verdict is Verdict.HEALTHY


def test_hung_call_is_a_finding_and_other_gpus_are_still_read():
    gpus = h100_node(4)
    gpus[2].hang = {"nvmlDeviceGetPowerUsage"}
    config = fast_config(actions={"taint": {"enabled": True}, "cordon": {"enabled": True}, "min_unhealthy_s": 0})
    node = SimNode(gpus, config=config)
    try:
        node.step(0)
        gpu2 = node.gpu(2)
        assert gpu2.verdict is Verdict.UNHEALTHY
        assert node.codes(2) == ["NvmlCallHung"]
        assert "nvmlDeviceGetPowerUsage" in gpu2.reasons[0].message
        assert all(node.gpu(i).verdict is Verdict.HEALTHY for i in (0, 1, 3))
        assert node.guard.stuck_calls() == {"gpu2": "nvmlDeviceGetPowerUsage"}
        # While the call is stuck the GPU is not called again, and the finding stays.
        calls_before = node.nvml.calls
        node.run_for(60)
        assert node.codes(2) == ["NvmlCallHung"]
        assert node.nvml.calls > calls_before  # the other GPUs are still polled
        assert cond(node, "GPUUnhealthy") == ("True", "NvmlCallHung")
        # Report-only: a hung call never taints or cordons.
        assert node.writer.times("actions") == []
    finally:
        node.nvml.gpus[2].hang.clear()
        node.nvml.release_hangs()
    import time

    deadline = time.monotonic() + 30  # a bounded wait for the released thread, not a speed check
    while node.guard.stuck_calls() and time.monotonic() < deadline:
        time.sleep(0.01)
    node.run_for(30)
    assert node.gpu(2).verdict is Verdict.HEALTHY


def test_xid13_application_error_is_an_event_only():
    node = SimNode(h100_node(2))
    node.run_for(60)
    for _ in range(5):
        node.nvml.emit_xid(0, 13)
        node.step(20)
    node.run_for(120)
    assert node.health.verdict is Verdict.HEALTHY
    assert cond(node, "GPUUnhealthy")[0] == "False" and cond(node, "GPUDegraded")[0] == "False"
    events = [e for e in node.writer.event_list() if e.reason == "GpuXid13"]
    assert len(events) == 1  # deduplicated per (GPU, reason) for 10 minutes
    assert events[0].type == "Normal" and "RESTART_APP" in events[0].message
    assert "GPUUnhealthy" not in node.writer.event_reasons()
    node.run_for(600, step=30)
    events = [e for e in node.writer.event_list() if e.reason == "GpuXid13"]
    assert events[-1].count == 5  # repeats are counted, not lost


def test_recurring_restart_app_xid_degrades():
    node = SimNode(h100_node(1))
    node.run_for(30)
    for _ in range(3):
        node.nvml.emit_xid(0, 32)
        node.step(60)
    assert node.gpu(0).verdict is Verdict.DEGRADED
    assert node.codes(0) == ["XID32Recurring"]


def test_recovery_after_reboot_latch_survives_agent_restart_but_not_a_new_boot():
    gpus = h100_node(8)
    node = SimNode(gpus, labels={"nvidia.com/gpu.count": "8"})
    node.run_for(30)
    node.nvml.emit_xid(3, 79)
    node.nvml.gpus[3].lost = True
    node.run_for(60)
    assert cond(node, "GPUUnhealthy") == ("True", "XID79")
    saved = node.writer

    # Agent restart on the same boot (GPU even looks fine again): the latch is restored.
    gpus[3].lost = False
    restarted = SimNode(nvml=FakeNvml(gpus), writer=saved, clock=node.clock, boot_id="boot-1")
    restarted.run_for(60)
    assert restarted.gpu(3).verdict is Verdict.UNHEALTHY
    assert "XID79" in restarted.codes(3)

    # Node reboot: new boot ID -> no latch restored; the GPU is healthy and the condition clears.
    rebooted = SimNode(nvml=FakeNvml(gpus), writer=saved, clock=node.clock, boot_id="boot-2")
    rebooted.run_for(60)
    assert rebooted.health.verdict is Verdict.HEALTHY
    assert cond(rebooted, "GPUUnhealthy")[0] == "False"
    assert rebooted.writer.health_status["latches"] == []


def test_boot_id_change_while_running_clears_latches_with_an_event():
    node = SimNode(h100_node(2))
    node.run_for(30)
    node.nvml.emit_xid(0, 79)
    node.nvml.gpus[0].lost = True
    node.run_for(60)
    assert node.gpu(0).verdict is Verdict.UNHEALTHY
    node.nvml.gpus[0].lost = False
    node.boot_id = "boot-2"
    node.run_for(700, step=30)
    assert node.health.verdict is Verdict.HEALTHY
    recovered = [e for e in node.writer.event_list() if e.reason == "GPUHealthRecovered"]
    assert recovered and "new boot ID" in recovered[0].message


def test_gpu_count_below_expected_is_unhealthy():
    node = SimNode(h100_node(8), labels={"nvidia.com/gpu.count": "8"})
    node.run_for(30)
    node.nvml.hidden.add(7)
    node.run_for(60)
    assert node.health.verdict is Verdict.UNHEALTHY
    assert [r.code for r in node.health.reasons] == ["GpuMissing"]
    assert cond(node, "GPUUnhealthy") == ("True", "GpuMissing")


def test_taint_and_cordon_only_when_enabled_and_persistent():
    config = fast_config(actions={"taint": {"enabled": True}, "cordon": {"enabled": True}, "min_unhealthy_s": 120})
    node = SimNode(h100_node(2), config=config)
    node.run_for(30)
    node.nvml.emit_xid(1, 79)
    node.nvml.gpus[1].lost = True
    node.run_for(60)
    assert node.writer.times("actions") == []  # not yet persistent for 2 minutes
    node.run_for(120)
    actions = [p for k, _, p in node.writer.writes if k == "actions"]
    assert len(actions) == 1
    assert actions[0].taint_reason == "XID79" and actions[0].cordon is True
    node.run_for(600, step=30)
    assert len([k for k, _, _ in node.writer.writes if k == "actions"]) == 1  # no repeats

    # Default config: never.
    plain = SimNode(h100_node(2))
    plain.nvml.emit_xid(1, 79)
    plain.nvml.gpus[1].lost = True
    plain.run_for(600, step=30)
    assert plain.writer.times("actions") == []


def test_opt_out_label_disables_actions():
    config = fast_config(actions={"taint": {"enabled": True}, "min_unhealthy_s": 0})
    node = SimNode(h100_node(1), config=config, labels={"tau-tui.io/gpu-health-managed": "false"})
    node.nvml.emit_xid(0, 79)
    node.nvml.gpus[0].lost = True
    node.run_for(300, step=30)
    assert node.writer.times("actions") == []
    assert node.health.verdict is Verdict.UNHEALTHY
