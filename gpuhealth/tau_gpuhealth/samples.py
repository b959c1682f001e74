"""Samples: what the agent read from NVML in one poll, and the XIDs it observed."""

from __future__ import annotations

from dataclasses import dataclass, field

from tau_gpuhealth.verdicts import Action, Verdict

# Clock event (throttle) reason bits that indicate hardware trouble (NVML nvmlClocksEventReason*).
CLOCK_EVENT_BITS = {
    0x1: "GpuIdle",
    0x2: "ApplicationsClocksSetting",
    0x4: "SwPowerCap",
    0x8: "HwSlowdown",
    0x10: "SyncBoost",
    0x20: "SwThermalSlowdown",
    0x40: "HwThermalSlowdown",
    0x80: "HwPowerBrakeSlowdown",
    0x100: "DisplayClockSetting",
}
HW_SLOWDOWN_BITS = {0x8: "HwSlowdown", 0x40: "HwThermalSlowdown", 0x80: "HwPowerBrakeSlowdown"}

# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION values.
RECOVERY_ACTIONS = {
    0: ("None", None, None),
    1: ("GPU reset", Verdict.UNHEALTHY, Action.RESET_GPU),
    2: ("node reboot", Verdict.UNHEALTHY, Action.REBOOT),
    3: ("drain peer-to-peer", Verdict.DEGRADED, Action.RESET_GPU),
    4: ("drain and reset", Verdict.UNHEALTHY, Action.RESET_GPU),
    5: ("recover IMEX domain", Verdict.DEGRADED, Action.CONTACT_SUPPORT),
    6: ("bus reset", Verdict.UNHEALTHY, Action.RESET_GPU),
    7: ("system reboot", Verdict.UNHEALTHY, Action.REBOOT),
}

# Signals that say something about health; if every one is n/a the GPU cannot be judged.
HEALTH_SIGNALS = (
    "clock_event_reasons",
    "temperature",
    "ecc",
    "remapped_rows",
    "retired_pages",
    "nvlink",
    "pcie_replay",
)


def clock_event_names(mask: int | None) -> list[str]:
    if mask is None:
        return []
    return [name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit]


@dataclass
class GpuSample:
    """One GPU as read in one poll. None means 'not read'; names in not_supported mean n/a."""

    index: int
    uuid: str | None = None
    name: str | None = None
    lost: bool = False
    reset_required: bool = False
    query_error: str | None = None
    hung_call: str | None = None
    not_supported: set[str] = field(default_factory=set)
    utilization_gpu: int | None = None
    utilization_memory: int | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    temperature_c: float | None = None
    temperature_slowdown_c: float | None = None
    temperature_shutdown_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    clock_event_reasons: int | None = None
    ecc_volatile_sbe: int | None = None
    ecc_volatile_dbe: int | None = None
    ecc_aggregate_sbe: int | None = None
    ecc_aggregate_dbe: int | None = None
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None
    remap_correctable: int | None = None
    remap_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    nvlink_up: dict[int, bool] | None = None
    pcie_replay_count: int | None = None
    persistence_mode: bool | None = None
    mig_enabled: bool | None = None
    mig_pending: bool | None = None
    recovery_action: int | None = None
    counters_read_at: float | None = None  # when the slow (counter) signals were read

    @property
    def key(self) -> str:
        return self.uuid or f"index-{self.index}"

    @property
    def volatile_ecc_total(self) -> int | None:
        if self.ecc_volatile_sbe is None and self.ecc_volatile_dbe is None:
            return None
        return (self.ecc_volatile_sbe or 0) + (self.ecc_volatile_dbe or 0)


@dataclass
class NodeSample:
    time: float
    nvml_available: bool
    nvml_error: str | None = None  # reason code, e.g. NvmlLibraryNotFound
    nvml_error_message: str | None = None
    driver_version: str | None = None
    boot_id: str | None = None
    device_count: int | None = None
    expected_count: int | None = None
    hung_call: str | None = None  # a node-level NVML call (init, count) that hung
    gpus: list[GpuSample] = field(default_factory=list)


@dataclass(frozen=True)
class XidObservation:
    xid: int
    time: float
    gpu_uuid: str | None
    gpu_index: int | None = None

    @property
    def key(self) -> str:
        if self.gpu_uuid:
            return self.gpu_uuid
        return f"index-{self.gpu_index}" if self.gpu_index is not None else "node"
