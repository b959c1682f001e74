"""One poll: read NVML through the call guard and build a NodeSample for the health model.

Tiers: fast signals every poll; counters (ECC, remap, retired pages, NVLink, PCIe, modes) when
asked; between counter reads the last counter values are carried so every sample is complete.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tau_gpuhealth.samples import GpuSample, NodeSample

from .call_guard import CallGuard, CallHung
from .nvml_reader import Inventory, NvmlReader, NvmlUnavailable

# Fields that only the counter tier reads; carried forward between counter reads.
COUNTER_FIELDS = (
    "temperature_slowdown_c",
    "temperature_shutdown_c",
    "power_limit_w",
    "ecc_volatile_sbe",
    "ecc_volatile_dbe",
    "ecc_aggregate_sbe",
    "ecc_aggregate_dbe",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "retired_pages_pending",
    "remap_correctable",
    "remap_uncorrectable",
    "remap_pending",
    "remap_failure",
    "nvlink_up",
    "pcie_replay_count",
    "persistence_mode",
    "mig_enabled",
    "mig_pending",
    "recovery_action",
    "counters_read_at",
)
COUNTER_SIGNALS = {
    "temperature_thresholds",
    "power_limit",
    "ecc",
    "remapped_rows",
    "retired_pages",
    "nvlink",
    "pcie_replay",
    "persistence_mode",
    "mig_mode",
    "recovery_action",
}


def read_boot_id(path: str) -> str | None:
    try:
        return Path(path).read_text().strip() or None
    except OSError:
        return None


class Collector:
    def __init__(
        self,
        reader: NvmlReader,
        guard: CallGuard,
        boot_id: Callable[[], str | None] = lambda: None,
        expected_count: Callable[[], int | None] = lambda: None,
    ):
        self.reader = reader
        self.guard = guard
        self.boot_id = boot_id
        self.expected_count = expected_count
        self.initialised = False
        self.driver_version: str | None = None
        self.inventory: dict[int, Inventory] = {}
        self._counters: dict[int, GpuSample] = {}
        self.polls = 0

    def collect(self, now: float, *, counters: bool, refresh_config: bool) -> NodeSample:
        self.polls += 1
        sample = NodeSample(time=now, nvml_available=True, boot_id=self.boot_id(), expected_count=self.expected_count())
        try:
            if not self.initialised:
                self.guard.run("node", self.reader.init)
                self.initialised = True
                refresh_config = counters = True
            if refresh_config or self.driver_version is None:
                self.driver_version = self.guard.run("node", self.reader.driver_version)
            sample.driver_version = self.driver_version
            sample.device_count = self.guard.run("node", self.reader.device_count)
        except NvmlUnavailable as exc:
            self.initialised = False
            self.driver_version = None
            sample.nvml_available = False
            sample.nvml_error = exc.reason
            sample.nvml_error_message = str(exc)
            return sample
        except CallHung as exc:
            sample.hung_call = exc.call
            sample.driver_version = self.driver_version
            return sample

        indices = sorted(set(range(sample.device_count)) | set(self.inventory))
        for index in indices:
            gpu = self._read_one(index, now, counters)
            if gpu is None:
                sample.nvml_available = False
                sample.nvml_error = self._unavailable_reason
                sample.nvml_error_message = self._unavailable_message
                self.initialised = False
                sample.gpus = []
                return sample
            if index >= sample.device_count and not (gpu.lost or gpu.hung_call):
                continue  # a GPU we knew is no longer enumerated; GpuMissing covers it
            sample.gpus.append(gpu)
        return sample

    def _read_one(self, index: int, now: float, counters: bool) -> GpuSample | None:
        known = self.inventory.get(index)
        carried = self._counters.get(index)
        read_counters = counters or carried is None
        try:
            gpu = self.guard.run(
                f"gpu{index}",
                lambda call: self.reader.read_gpu(call, index, counters=read_counters, known=known),
            )
        except NvmlUnavailable as exc:
            self._unavailable_reason, self._unavailable_message = exc.reason, str(exc)
            return None
        except CallHung as exc:
            gpu = GpuSample(index=index, uuid=known.uuid if known else None, name=known.name if known else None)
            gpu.hung_call = exc.call
            return gpu
        if gpu.uuid and not gpu.lost:
            self.inventory[index] = Inventory(index, gpu.uuid, gpu.name)
        if gpu.lost or gpu.reset_required:
            return gpu
        if read_counters:
            gpu.counters_read_at = now
            self._counters[index] = gpu
        elif carried is not None:
            for name in COUNTER_FIELDS:
                setattr(gpu, name, getattr(carried, name))
            gpu.not_supported |= carried.not_supported & COUNTER_SIGNALS
        return gpu

    def shutdown(self) -> None:
        if self.initialised:
            try:
                self.guard.run("node", self.reader.shutdown)
            except CallHung:
                pass
            self.initialised = False
