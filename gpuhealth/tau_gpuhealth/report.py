"""The published health model: what the agent writes to the GPUNodeHealth object (camelCase JSON)
and what the TUI reads back."""

from __future__ import annotations

import hashlib
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from tau_gpuhealth.verdicts import Action, Verdict, action_in_words


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class HealthReason(_Camel):
    code: str
    severity: Verdict
    action: Action
    message: str
    since: datetime | None = None
    latched: bool = False

    def explain(self) -> str:
        """What to do and why the verdict is what it is, in words (issue #11: the same XID read
        "unhealthy (RESET_GPU)" on one node and "degraded (NONE)" on another with no reason given).

        A latched reason stays until the GPU is reset or the node reboots, even when the error
        stopped; one that is not latched is the policy's rating of what is happening now and
        clears when it stops."""
        if self.latched:
            why = "latched: it stays until the GPU is reset or the node reboots, even if the error stopped"
        elif self.severity is Verdict.DEGRADED:
            why = "not latched: the health policy rates it degraded; it clears when the error stops"
        elif self.severity is Verdict.UNHEALTHY:
            why = "not latched: unhealthy while the error is observed"
        else:
            why = f"{self.severity.value}: the agent could not judge this GPU"
        return f"{self.code} → {self.severity.value}; do: {action_in_words(self.action)} ({why})"


class GpuTelemetry(_Camel):
    utilization_gpu: int | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    temperature_c: float | None = None
    temperature_slowdown_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    clock_events: list[str] = Field(default_factory=list)
    ecc_volatile_sbe: int | None = None
    ecc_volatile_dbe: int | None = None
    ecc_aggregate_dbe: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    nvlinks_down: list[int] = Field(default_factory=list)
    pcie_replay_count: int | None = None
    persistence_mode: bool | None = None
    mig_enabled: bool | None = None


class GpuHealth(_Camel):
    index: int
    uuid: str | None = None
    name: str | None = None
    verdict: Verdict
    reasons: list[HealthReason] = Field(default_factory=list)
    not_supported: list[str] = Field(default_factory=list)
    telemetry: GpuTelemetry | None = None

    @property
    def label(self) -> str:
        return f"gpu{self.index} {self.uuid}" if self.uuid else f"gpu{self.index}"


class LatchRecord(_Camel):
    """A latched unhealthy reason, persisted in the health object so an agent restart keeps it."""

    gpu_key: str
    gpu_index: int | None = None
    code: str
    action: Action
    message: str
    since: datetime
    boot_id: str | None = None
    driver_version: str | None = None
    max_volatile_ecc: int | None = None


class NodeHealth(_Camel):
    node_name: str = ""
    verdict: Verdict
    reasons: list[HealthReason] = Field(default_factory=list)  # node-level reasons
    gpus: list[GpuHealth] = Field(default_factory=list)
    observed_at: datetime
    nvml_available: bool = True
    driver_version: str | None = None
    boot_id: str | None = None
    gpu_count: int | None = None
    expected_gpu_count: int | None = None
    catalog_version: str | None = None
    latches: list[LatchRecord] = Field(default_factory=list)
    # Set by the agent when it writes the object; the TUI uses them to judge staleness.
    reported_at: datetime | None = None
    heartbeat_period_s: float | None = None
    agent_version: str | None = None

    def all_reasons(self) -> list[tuple[GpuHealth | None, HealthReason]]:
        pairs: list[tuple[GpuHealth | None, HealthReason]] = [(None, r) for r in self.reasons]
        for gpu in self.gpus:
            pairs.extend((gpu, r) for r in gpu.reasons)
        return pairs

    def fingerprint(self) -> str:
        """Identity of the state that matters for reporting; numbers like temperature are left out."""
        parts = [self.verdict.value, str(self.nvml_available)]
        parts += sorted(f"node:{r.code}:{r.severity.value}" for r in self.reasons)
        for gpu in sorted(self.gpus, key=lambda g: g.index):
            codes = ",".join(sorted(f"{r.code}:{r.severity.value}" for r in gpu.reasons))
            parts.append(f"{gpu.index}:{gpu.uuid}:{gpu.verdict.value}:{codes}")
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
