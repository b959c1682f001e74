"""Test-only fake of the pynvml module surface the agent uses.

It raises the real `pynvml.NVMLError(code)` subclasses, so the agent's error mapping is exercised
exactly as with a driver. Each FakeGpu describes one device; `None` for a signal means NVML
answers NotSupported for it. Never shipped in the agent package.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

NVMLError = pynvml.NVMLError


def err(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)


@dataclass
class FakeGpu:
    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    utilization: tuple[int, int] | None = (35, 20)
    memory: tuple[int, int] | None = (20 * 2**30, 80 * 2**30)  # used, total
    temperature: int | None = 55
    slowdown: int | None = 90
    shutdown: int | None = 95
    power_mw: int | None = 350_000
    power_limit_mw: int | None = 700_000
    clock_reasons: int | None = 0x1
    ecc: dict[tuple[int, int], int] | None = field(
        default_factory=lambda: {(0, 0): 0, (1, 0): 0, (0, 1): 0, (1, 1): 0}
    )  # (errorType, counterType) -> count
    remapped: tuple[int, int, int, int] | None = (0, 0, 0, 0)  # corr, unc, pending, failure
    retired: tuple[list[int], list[int], int] | None = None  # sbe pages, dbe pages, pending (pre-Ampere)
    nvlinks: list[bool] | None = field(default_factory=lambda: [True] * 18)
    pcie_replay: int | None = 0
    persistence: int | None = 1
    mig: tuple[int, int] | None = (0, 0)
    recovery_action: int | None = 0
    xid_events_supported: bool = True
    lost: bool = False
    reset_required: bool = False
    hang: set[str] = field(default_factory=set)  # function names that block until released
    errors: dict[str, int] = field(default_factory=dict)  # function name -> NVML error code


class FakeHandle:
    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"FakeHandle({self.index})"

    # Real NVML handles are stable pointers; the same device always has the same handle.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeHandle) and other.index == self.index

    def __hash__(self) -> int:
        return hash(("FakeHandle", self.index))


class FakeNvml:
    NVMLError = pynvml.NVMLError
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
    NVML_FEATURE_ENABLED = pynvml.NVML_FEATURE_ENABLED

    def __init__(self, gpus: list[FakeGpu], driver_version: str = "550.54.15", init_error: int | None = None):
        self.gpus = gpus
        self.driver_version = driver_version
        self.init_error = init_error
        self.initialised = 0
        self.hidden: set[int] = set()  # indices no longer enumerated (count drops)
        self.release = threading.Event()
        self.calls = 0
        self._events: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    # -- test controls --

    def emit_xid(self, index: int, xid: int) -> None:
        with self._lock:
            self._events.append((index, xid))

    def release_hangs(self) -> None:
        self.release.set()

    # -- helpers --

    def _gpu(self, handle: Any, name: str) -> FakeGpu:
        self.calls += 1
        if not self.initialised:
            raise err(pynvml.NVML_ERROR_UNINITIALIZED)
        gpu = self.gpus[handle.index]
        if name in gpu.hang:
            self.release.wait(30)
        if gpu.lost:
            raise err(pynvml.NVML_ERROR_GPU_IS_LOST)
        if gpu.reset_required and name != "nvmlDeviceGetHandleByIndex":
            raise err(pynvml.NVML_ERROR_RESET_REQUIRED)
        if name in gpu.errors:
            raise err(gpu.errors[name])
        return gpu

    @staticmethod
    def _supported(value: Any) -> Any:
        if value is None:
            raise err(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    # -- node level --

    def nvmlInit(self) -> None:
        self.calls += 1
        if self.init_error is not None:
            raise err(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.initialised = max(0, self.initialised - 1)

    def nvmlSystemGetDriverVersion(self) -> str:
        self.calls += 1
        if not self.initialised:
            raise err(pynvml.NVML_ERROR_UNINITIALIZED)
        return self.driver_version

    def nvmlDeviceGetCount(self) -> int:
        self.calls += 1
        if not self.initialised:
            raise err(pynvml.NVML_ERROR_UNINITIALIZED)
        return len(self.gpus) - len(self.hidden)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        if index >= len(self.gpus) or index in self.hidden:
            self.calls += 1
            raise err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        handle = FakeHandle(index)
        self._gpu(handle, "nvmlDeviceGetHandleByIndex")
        return handle

    # -- device --

    def nvmlDeviceGetUUID(self, h: FakeHandle) -> str:
        return self._gpu(h, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetName(self, h: FakeHandle) -> str:
        return self._gpu(h, "nvmlDeviceGetName").name

    def nvmlDeviceGetUtilizationRates(self, h: FakeHandle) -> Any:
        gpu, mem = self._supported(self._gpu(h, "nvmlDeviceGetUtilizationRates").utilization)
        return SimpleNamespace(gpu=gpu, memory=mem)

    def nvmlDeviceGetMemoryInfo(self, h: FakeHandle, version: Any = None) -> Any:
        used, total = self._supported(self._gpu(h, "nvmlDeviceGetMemoryInfo").memory)
        return SimpleNamespace(used=used, total=total, free=total - used)

    def nvmlDeviceGetTemperatureV(self, h: FakeHandle, sensor: int) -> int:
        return self._supported(self._gpu(h, "nvmlDeviceGetTemperatureV").temperature)

    def nvmlDeviceGetTemperatureThreshold(self, h: FakeHandle, threshold: int) -> int:
        gpu = self._gpu(h, "nvmlDeviceGetTemperatureThreshold")
        if threshold == pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
            return self._supported(gpu.slowdown)
        return self._supported(gpu.shutdown)

    def nvmlDeviceGetPowerUsage(self, h: FakeHandle) -> int:
        return self._supported(self._gpu(h, "nvmlDeviceGetPowerUsage").power_mw)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: FakeHandle) -> int:
        return self._supported(self._gpu(h, "nvmlDeviceGetEnforcedPowerLimit").power_limit_mw)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: FakeHandle) -> int:
        return self._supported(self._gpu(h, "nvmlDeviceGetCurrentClocksEventReasons").clock_reasons)

    def nvmlDeviceGetTotalEccErrors(self, h: FakeHandle, error_type: int, counter_type: int) -> int:
        ecc = self._supported(self._gpu(h, "nvmlDeviceGetTotalEccErrors").ecc)
        return ecc[(error_type, counter_type)]

    def nvmlDeviceGetRemappedRows(self, h: FakeHandle) -> tuple[int, int, int, int]:
        return self._supported(self._gpu(h, "nvmlDeviceGetRemappedRows").remapped)

    def nvmlDeviceGetRetiredPages(self, h: FakeHandle, cause: int) -> list[int]:
        retired = self._supported(self._gpu(h, "nvmlDeviceGetRetiredPages").retired)
        return list(retired[cause])

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: FakeHandle) -> int:
        return self._supported(self._gpu(h, "nvmlDeviceGetRetiredPagesPendingStatus").retired)[2]

    def nvmlDeviceGetFieldValues(self, h: FakeHandle, field_ids: list[int]) -> list[Any]:
        gpu = self._gpu(h, "nvmlDeviceGetFieldValues")
        out = []
        for fid in field_ids:
            if fid == pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT:
                value = None if gpu.nvlinks is None else len(gpu.nvlinks)
            elif fid == pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION:
                value = gpu.recovery_action
            else:
                value = None
            ret = pynvml.NVML_ERROR_NOT_SUPPORTED if value is None else pynvml.NVML_SUCCESS
            out.append(SimpleNamespace(fieldId=fid, nvmlReturn=ret, valueType=1, value=SimpleNamespace(uiVal=value or 0)))
        return out

    def nvmlDeviceGetNvLinkState(self, h: FakeHandle, link: int) -> int:
        links = self._supported(self._gpu(h, "nvmlDeviceGetNvLinkState").nvlinks)
        if link >= len(links):
            raise err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return pynvml.NVML_FEATURE_ENABLED if links[link] else pynvml.NVML_FEATURE_DISABLED

    def nvmlDeviceGetPcieReplayCounter(self, h: FakeHandle) -> int:
        return self._supported(self._gpu(h, "nvmlDeviceGetPcieReplayCounter").pcie_replay)

    def nvmlDeviceGetPersistenceMode(self, h: FakeHandle) -> int:
        return self._supported(self._gpu(h, "nvmlDeviceGetPersistenceMode").persistence)

    def nvmlDeviceGetMigMode(self, h: FakeHandle) -> list[int]:
        return list(self._supported(self._gpu(h, "nvmlDeviceGetMigMode").mig))

    # -- events --

    def nvmlEventSetCreate(self) -> object:
        self.calls += 1
        return object()

    def nvmlDeviceGetSupportedEventTypes(self, h: FakeHandle) -> int:
        gpu = self._gpu(h, "nvmlDeviceGetSupportedEventTypes")
        if not gpu.xid_events_supported:
            raise err(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return pynvml.nvmlEventTypeXidCriticalError | pynvml.nvmlEventTypeDoubleBitEccError

    def nvmlDeviceRegisterEvents(self, h: FakeHandle, mask: int, event_set: object) -> None:
        self._gpu(h, "nvmlDeviceRegisterEvents")

    def nvmlEventSetWait(self, event_set: object, timeout_ms: int) -> Any:
        self.calls += 1
        with self._lock:
            pending = bool(self._events)
        if not pending:
            if timeout_ms:  # a real-thread test: wait a little, like the driver would
                time.sleep(min(timeout_ms / 1000.0, 0.01))
            raise err(pynvml.NVML_ERROR_TIMEOUT)  # timeout 0: never block, tests drive the clock
        with self._lock:
            index, xid = self._events.pop(0)
        return SimpleNamespace(
            device=FakeHandle(index), eventType=pynvml.nvmlEventTypeXidCriticalError, eventData=xid,
            gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF,
        )

    def nvmlEventSetFree(self, event_set: object) -> None:
        return None


def h100_node(count: int = 8) -> list[FakeGpu]:
    return [FakeGpu(uuid=f"GPU-{i:08d}-0000-4000-8000-00000000000{i % 10}") for i in range(count)]


def consumer_gpu_all_unsupported(uuid: str = "GPU-consumer-0") -> FakeGpu:
    """A GeForce-class GPU where every health query answers NotSupported."""
    return FakeGpu(
        uuid=uuid, name="NVIDIA GeForce RTX 4090", utilization=None, memory=None, temperature=None,
        slowdown=None, shutdown=None, power_mw=None, power_limit_mw=None, clock_reasons=None, ecc=None,
        remapped=None, retired=None, nvlinks=None, pcie_replay=None, persistence=None, mig=None,
        recovery_action=None, xid_events_supported=False,
    )


def consumer_gpu_typical(uuid: str = "GPU-consumer-1") -> FakeGpu:
    """A GeForce-class GPU: telemetry works; ECC, remap, NVLink, MIG and recovery action are n/a."""
    return FakeGpu(
        uuid=uuid, name="NVIDIA GeForce RTX 4090", ecc=None, remapped=None, retired=None, nvlinks=None,
        mig=None, recovery_action=None, persistence=None, xid_events_supported=True,
    )
