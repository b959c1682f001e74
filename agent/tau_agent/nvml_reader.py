"""NVML access layer: every pynvml call the agent makes, and what each error means.

The NVML module is injected (the real `pynvml`, or a test fake with the same functions and the
real `pynvml.NVMLError` classes). Error meaning (reference gpu-health.md section 2.2):
NotSupported / FunctionNotFound -> the signal is absent (n/a), never a fault;
GpuIsLost -> GPU lost (unhealthy); ResetRequired -> unhealthy until reset;
LibraryNotFound / DriverNotLoaded / LibRmVersionMismatch / NoPermission / Uninitialized -> NVML
cannot be read: the node is unknown, never healthy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tau_gpuhealth.samples import GpuSample

from .call_guard import Caller

# NVML return codes (nvml.h); kept here so the error mapping does not depend on import order.
ERR_UNINITIALIZED = 1
ERR_INVALID_ARGUMENT = 2
ERR_NOT_SUPPORTED = 3
ERR_NO_PERMISSION = 4
ERR_NOT_FOUND = 6
ERR_DRIVER_NOT_LOADED = 9
ERR_TIMEOUT = 10
ERR_LIBRARY_NOT_FOUND = 12
ERR_FUNCTION_NOT_FOUND = 13
ERR_GPU_IS_LOST = 15
ERR_RESET_REQUIRED = 16
ERR_LIB_RM_VERSION_MISMATCH = 18

NOT_AVAILABLE_CODES = {ERR_NOT_SUPPORTED, ERR_FUNCTION_NOT_FOUND}
UNAVAILABLE_REASONS = {
    ERR_LIBRARY_NOT_FOUND: "NvmlLibraryNotFound",
    ERR_DRIVER_NOT_LOADED: "NvmlDriverNotLoaded",
    ERR_LIB_RM_VERSION_MISMATCH: "NvmlVersionMismatch",
    ERR_NO_PERMISSION: "NvmlNoPermission",
    ERR_UNINITIALIZED: "NvmlUninitialized",
}

FI_NVLINK_LINK_COUNT = 91
FI_GPU_RECOVERY_ACTION = 230
NVLINK_MAX_LINKS = 36
EVENT_XID_CRITICAL = 0x8
_VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


class NvmlUnavailable(Exception):
    """NVML cannot be used at all on this node right now."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class _GpuLost(Exception):
    pass


class _ResetRequired(Exception):
    pass


def error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def describe(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # NVMLError.__str__ calls into the library for unknown codes
        return f"NVML error {error_code(exc)}"


@dataclass
class Inventory:
    index: int
    uuid: str | None
    name: str | None


class NvmlReader:
    """Stateless reads through an injected NVML module; all calls go through a watched caller."""

    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.nvml_error = nvml.NVMLError

    # -- node level --

    def init(self, call: Caller) -> None:
        try:
            call("nvmlInit", self.nvml.nvmlInit)
        except self.nvml_error as exc:
            raise self._unavailable(exc) from exc
        except OSError as exc:  # a broken libnvidia-ml.so surfaces as OSError from ctypes
            raise NvmlUnavailable("NvmlLibraryNotFound", f"cannot load NVML: {exc}") from exc

    def shutdown(self, call: Caller) -> None:
        try:
            call("nvmlShutdown", self.nvml.nvmlShutdown)
        except self.nvml_error:
            pass

    def driver_version(self, call: Caller) -> str | None:
        version: str | None = self._node_call(call, "nvmlSystemGetDriverVersion")
        return version

    def device_count(self, call: Caller) -> int:
        return int(self._node_call(call, "nvmlDeviceGetCount"))

    def _node_call(self, call: Caller, name: str, *args: Any) -> Any:
        try:
            return call(name, getattr(self.nvml, name), *args)
        except self.nvml_error as exc:
            if error_code(exc) in UNAVAILABLE_REASONS:
                raise self._unavailable(exc) from exc
            raise

    def _unavailable(self, exc: BaseException) -> NvmlUnavailable:
        code = error_code(exc)
        reason = UNAVAILABLE_REASONS.get(code, "NvmlInitFailed") if code is not None else "NvmlInitFailed"
        return NvmlUnavailable(reason, f"NVML unavailable: {describe(exc)} (code {code})")

    # -- one GPU --

    def read_gpu(self, call: Caller, index: int, *, counters: bool, known: Inventory | None) -> GpuSample:
        """Read one GPU. counters=True adds the slow signals (ECC, remap, NVLink, PCIe, modes)."""
        sample = GpuSample(index=index, uuid=known.uuid if known else None, name=known.name if known else None)
        try:
            handle = self._get(call, sample, None, "nvmlDeviceGetHandleByIndex", index)
            if handle is None:
                return sample
            sample.uuid = self._get(call, sample, None, "nvmlDeviceGetUUID", handle) or sample.uuid
            sample.name = self._get(call, sample, None, "nvmlDeviceGetName", handle) or sample.name
            self._read_fast(call, sample, handle)
            if counters:
                self._read_counters(call, sample, handle)
        except _GpuLost:
            sample.lost = True
        except _ResetRequired:
            sample.reset_required = True
        return sample

    def _get(self, call: Caller, sample: GpuSample, signal: str | None, name: str, *args: Any) -> Any:
        """One NVML call; n/a codes record the signal as not supported and return None."""
        try:
            return call(name, getattr(self.nvml, name), *args)
        except AttributeError:
            if signal:
                sample.not_supported.add(signal)
            return None
        except self.nvml_error as exc:
            code = error_code(exc)
            if code == ERR_GPU_IS_LOST:
                raise _GpuLost() from exc
            if code == ERR_RESET_REQUIRED:
                raise _ResetRequired() from exc
            if code in UNAVAILABLE_REASONS:
                raise self._unavailable(exc) from exc
            if code in NOT_AVAILABLE_CODES or (code in (ERR_INVALID_ARGUMENT, ERR_NOT_FOUND) and signal == "nvlink"):
                if signal:
                    sample.not_supported.add(signal)
                return None
            if sample.query_error is None:
                sample.query_error = f"{name}: {describe(exc)}"
            return None

    def _get_fallback(self, call: Caller, sample: GpuSample, signal: str, names: tuple[str, ...], *args: Any) -> Any:
        """Try newer then older function names (FunctionNotFound means an older driver)."""
        for position, name in enumerate(names):
            last = position == len(names) - 1
            probe = GpuSample(index=sample.index)
            value = self._get(call, probe, signal, name, *args)
            if probe.query_error and sample.query_error is None:
                sample.query_error = probe.query_error
            if signal not in probe.not_supported:
                return value
            if last:
                sample.not_supported.add(signal)
        return None

    def _read_fast(self, call: Caller, s: GpuSample, handle: Any) -> None:
        nv = self.nvml
        util = self._get(call, s, "utilization", "nvmlDeviceGetUtilizationRates", handle)
        if util is not None:
            s.utilization_gpu, s.utilization_memory = int(util.gpu), int(util.memory)
        mem = self._get(call, s, "memory", "nvmlDeviceGetMemoryInfo", handle)
        if mem is not None:
            s.memory_used_bytes, s.memory_total_bytes = int(mem.used), int(mem.total)
        temp = self._get_fallback(
            call, s, "temperature", ("nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature"), handle, nv.NVML_TEMPERATURE_GPU
        )
        if temp is not None:
            s.temperature_c = float(temp)
        power = self._get(call, s, "power", "nvmlDeviceGetPowerUsage", handle)
        if power is not None:
            s.power_w = power / 1000.0
        reasons = self._get_fallback(
            call,
            s,
            "clock_event_reasons",
            ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"),
            handle,
        )
        if reasons is not None:
            s.clock_event_reasons = int(reasons)

    def _read_counters(self, call: Caller, s: GpuSample, handle: Any) -> None:
        nv = self.nvml
        s.counters_read_at = -1.0  # the collector stamps the real time
        slowdown = self._get(
            call, s, "temperature_thresholds", "nvmlDeviceGetTemperatureThreshold", handle, nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
        )
        s.temperature_slowdown_c = float(slowdown) if slowdown else None
        shutdown = self._get(
            call, s, "temperature_thresholds", "nvmlDeviceGetTemperatureThreshold", handle, nv.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
        )
        s.temperature_shutdown_c = float(shutdown) if shutdown else None
        limit = self._get(call, s, "power_limit", "nvmlDeviceGetEnforcedPowerLimit", handle)
        s.power_limit_w = limit / 1000.0 if limit else None

        ecc = []
        for error_type, counter_type in ((0, 0), (1, 0), (0, 1), (1, 1)):
            value = self._get(call, s, "ecc", "nvmlDeviceGetTotalEccErrors", handle, error_type, counter_type)
            if "ecc" in s.not_supported:
                break
            ecc.append(value)
        if len(ecc) == 4:
            s.ecc_volatile_sbe, s.ecc_volatile_dbe, s.ecc_aggregate_sbe, s.ecc_aggregate_dbe = (
                None if v is None else int(v) for v in ecc
            )

        rows = self._get(call, s, "remapped_rows", "nvmlDeviceGetRemappedRows", handle)
        if rows is not None:
            corr, unc, pending, failure = rows
            s.remap_correctable, s.remap_uncorrectable = int(corr), int(unc)
            s.remap_pending, s.remap_failure = bool(pending), bool(failure)

        sbe_pages = self._get(call, s, "retired_pages", "nvmlDeviceGetRetiredPages", handle, 0)
        if "retired_pages" not in s.not_supported:
            dbe_pages = self._get(call, s, "retired_pages", "nvmlDeviceGetRetiredPages", handle, 1)
            pending = self._get(call, s, "retired_pages", "nvmlDeviceGetRetiredPagesPendingStatus", handle)
            if "retired_pages" not in s.not_supported:
                s.retired_pages_sbe = len(sbe_pages or [])
                s.retired_pages_dbe = len(dbe_pages or [])
                s.retired_pages_pending = bool(pending)

        s.nvlink_up = self._read_nvlinks(call, s, handle)
        replay = self._get(call, s, "pcie_replay", "nvmlDeviceGetPcieReplayCounter", handle)
        s.pcie_replay_count = None if replay is None else int(replay)

        persistence = self._get(call, s, "persistence_mode", "nvmlDeviceGetPersistenceMode", handle)
        s.persistence_mode = None if persistence is None else persistence == nv.NVML_FEATURE_ENABLED
        mig = self._get(call, s, "mig_mode", "nvmlDeviceGetMigMode", handle)
        if mig is not None:
            s.mig_enabled, s.mig_pending = bool(mig[0]), bool(mig[1])
        recovery = self._field(call, s, "recovery_action", handle, FI_GPU_RECOVERY_ACTION)
        s.recovery_action = None if recovery is None else int(recovery)

    def _field(self, call: Caller, s: GpuSample, signal: str, handle: Any, field_id: int) -> Any:
        values = self._get(call, s, signal, "nvmlDeviceGetFieldValues", handle, [field_id])
        if not values:
            return None
        value = values[0]
        if value.nvmlReturn != 0:
            s.not_supported.add(signal)
            return None
        attr = _VALUE_FIELDS.get(int(value.valueType))
        return getattr(value.value, attr) if attr else None

    def _read_nvlinks(self, call: Caller, s: GpuSample, handle: Any) -> dict[int, bool] | None:
        probe = GpuSample(index=s.index)
        count = self._field(call, probe, "nvlink", handle, FI_NVLINK_LINK_COUNT)
        if probe.query_error and s.query_error is None:
            s.query_error = probe.query_error
        links = range(int(count)) if count is not None else range(NVLINK_MAX_LINKS)
        states: dict[int, bool] = {}
        for link in links:
            state = self._get(call, probe, "nvlink", "nvmlDeviceGetNvLinkState", handle, link)
            if "nvlink" in probe.not_supported:
                if count is None:
                    break  # no link count field: links end at the first absent one
                probe.not_supported.discard("nvlink")
                continue
            if state is None:
                continue
            states[link] = state == self.nvml.NVML_FEATURE_ENABLED
        if probe.query_error and s.query_error is None:
            s.query_error = probe.query_error
        if not states:
            s.not_supported.add("nvlink")
            return None
        return states

    # -- XID events --

    def create_xid_event_set(self, call: Caller, handles: list[Any]) -> tuple[Any, list[int]]:
        """Register every GPU that supports XID events; returns the set and the indices left out."""
        nv = self.nvml
        event_set = call("nvmlEventSetCreate", nv.nvmlEventSetCreate)
        unsupported = []
        for index, handle in enumerate(handles):
            try:
                supported = call("nvmlDeviceGetSupportedEventTypes", nv.nvmlDeviceGetSupportedEventTypes, handle)
                mask = EVENT_XID_CRITICAL & int(supported)
                if not mask:
                    unsupported.append(index)
                    continue
                call("nvmlDeviceRegisterEvents", nv.nvmlDeviceRegisterEvents, handle, mask, event_set)
            except nv.NVMLError as exc:
                if error_code(exc) in NOT_AVAILABLE_CODES:
                    unsupported.append(index)
                    continue
                raise
        return event_set, unsupported
