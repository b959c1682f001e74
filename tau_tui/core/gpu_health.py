"""GPU health model shared by the node agent and the TUI.

One module decides what a GPU's state is (healthy, degraded, unhealthy or unknown), why, and
what on-call should do about it. The agent feeds it NVML samples; the TUI reads what the
agent published (Node conditions and the GPUNodeHealth object) through the same types.

Pure Python: stdlib, pydantic and PyYAML only. No Kubernetes client, no Textual, no NVML.
"""

from __future__ import annotations

import enum
import hashlib
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

# --- Names written to Kubernetes (one place, so the agent, manifests and TUI agree) -------------

API_GROUP = "tau-tui.io"
API_VERSION = "v1alpha1"
HEALTH_KIND = "GPUNodeHealth"
HEALTH_PLURAL = "gpunodehealths"
CONDITION_UNHEALTHY = "GPUUnhealthy"
CONDITION_DEGRADED = "GPUDegraded"
TAINT_UNHEALTHY_KEY = f"{API_GROUP}/gpu-unhealthy"
ANNOTATION_CORDONED_BY = f"{API_GROUP}/cordoned-by"
ANNOTATION_CORDON_REASON = f"{API_GROUP}/cordon-reason"
ANNOTATION_CORDON_TIMESTAMP = f"{API_GROUP}/cordon-timestamp"
LABEL_MANAGED = f"{API_GROUP}/gpu-health-managed"
LABEL_EXPECTED_GPU_COUNT = "nvidia.com/gpu.count"
AGENT_COMPONENT = "tau-agent"

# A heartbeat older than this many heartbeat periods means the agent is gone: unknown.
STALE_AFTER_PERIODS = 2.5
MESSAGE_LIMIT = 1024


class Verdict(str, enum.Enum):
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    UNKNOWN = "unknown"
    UNHEALTHY = "unhealthy"

    @property
    def rank(self) -> int:
        # Unknown ranks above degraded: fail closed, a GPU we cannot judge is not "mostly fine".
        return _VERDICT_RANK[self]


_VERDICT_RANK = {Verdict.HEALTHY: 0, Verdict.DEGRADED: 1, Verdict.UNKNOWN: 2, Verdict.UNHEALTHY: 3}


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    result = Verdict.HEALTHY
    for verdict in verdicts:
        if verdict.rank > result.rank:
            result = verdict
    return result


class Action(str, enum.Enum):
    """What on-call should do; keeps the catalog's verb so a GPU reset is not confused with a reboot."""

    NONE = "NONE"
    RESTART_APP = "RESTART_APP"
    RESET_GPU = "RESET_GPU"
    REBOOT = "REBOOT"
    CONTACT_SUPPORT = "CONTACT_SUPPORT"
    CHECK_AGENT = "CHECK_AGENT"


# --- XID catalog ---------------------------------------------------------------------------------


class XidSeverity(str, enum.Enum):
    UNHEALTHY = "unhealthy"
    DEGRADED = "degraded"
    EVENT = "event"


class XidEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    xid: int = Field(ge=1)
    mnemonic: str
    bucket: str = "UNKNOWN"
    severity: XidSeverity
    action: Action
    recurring_degraded: bool = False


class XidUnknownPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    severity: XidSeverity = XidSeverity.DEGRADED
    action: Action = Action.CONTACT_SUPPORT
    mnemonic: str = "XID not in catalog"


class XidCatalog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    catalog: str = ""
    unknown: XidUnknownPolicy = XidUnknownPolicy()
    recurring_threshold: int = Field(default=3, ge=1)
    recurring_window_s: float = Field(default=3600, gt=0)
    degraded_window_s: float = Field(default=3600, gt=0)
    entries: list[XidEntry]

    def model_post_init(self, __context: Any) -> None:
        seen: set[int] = set()
        for entry in self.entries:
            if entry.xid in seen:
                raise ValueError(f"XID {entry.xid} is listed twice in the catalog")
            seen.add(entry.xid)
        self._by_xid = {entry.xid: entry for entry in self.entries}

    def classify(self, xid: int) -> XidEntry:
        entry = self._by_xid.get(xid)
        if entry is not None:
            return entry
        return XidEntry(
            xid=max(xid, 1),
            mnemonic=self.unknown.mnemonic,
            bucket="UNKNOWN",
            severity=self.unknown.severity,
            action=self.unknown.action,
        )


class CatalogError(ValueError):
    """The XID catalog file is missing or malformed; the message names the file and key."""


def load_xid_catalog(path: str | Path | None = None) -> XidCatalog:
    """Load the versioned XID catalog (the packaged one unless a path is given)."""
    if path is None:
        source = "tau_tui/core/data/xid_catalog.yaml"
        text = resources.files("tau_tui.core").joinpath("data/xid_catalog.yaml").read_text("utf-8")
    else:
        source = str(path)
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise CatalogError(f"{source}: cannot read XID catalog ({exc.strerror})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{source}: not valid YAML: {exc}") from exc
    try:
        return XidCatalog.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CatalogError(f"{source}: key '{where}': {first['msg']}") from exc
    except ValueError as exc:
        raise CatalogError(f"{source}: {exc}") from exc


# --- Thresholds ----------------------------------------------------------------------------------


class HealthPolicy(BaseModel):
    """Thresholds and timing of the model. Defaults follow DCGM and the reference note, section 7."""

    model_config = ConfigDict(extra="forbid")

    raise_after_polls: int = Field(default=2, ge=1, description="consecutive bad polls before a counter state raises")
    clear_after_s: float = Field(default=600, ge=0, description="clean time before a counter state clears")
    retired_pages_limit: int = Field(default=63, ge=1)
    pcie_replays_per_min: float = Field(default=8, ge=0)
    sbe_per_hour: float = Field(default=10, ge=0)
    temperature_margin_c: float = Field(default=5, ge=0, description="degraded at slowdown threshold minus this")
    power_limit_tolerance: float = Field(default=0.05, ge=0, description="degraded above limit x (1 + this)")
    require_persistence_mode: bool = True
    hung_call_severity: Verdict = Verdict.UNHEALTHY
    expected_nvlinks_per_gpu: int | None = Field(
        default=None, ge=0, description="links expected up per GPU; unset means every reported link"
    )


# --- Samples: what the agent read from NVML in one poll ------------------------------------------

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


# --- Published model: what the agent writes and the TUI reads -----------------------------------


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class HealthReason(_Camel):
    code: str
    severity: Verdict
    action: Action
    message: str
    since: datetime | None = None
    latched: bool = False


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


def _to_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


# --- The stateful model --------------------------------------------------------------------------


@dataclass
class _Latch:
    gpu_key: str
    gpu_index: int | None
    code: str
    action: Action
    message: str
    since: float
    boot_id: str | None
    driver_version: str | None
    max_volatile_ecc: int | None = None


@dataclass
class _Hysteresis:
    consecutive: int = 0
    active: bool = False
    since: float = 0.0
    last_bad: float = 0.0
    finding: HealthReason | None = None
    gpu_index: int | None = None


@dataclass
class Recovery:
    """A latch cleared by recovery evidence; the agent turns it into an Event."""

    gpu_key: str
    gpu_index: int | None
    code: str
    evidence: str


class HealthModel:
    """Turns NVML samples and XID observations into a NodeHealth verdict.

    Latching: XID- and DBE-derived unhealthy states stay until recovery evidence (new boot ID,
    driver reload, or a GPU reset seen as volatile ECC counters going back down).
    Hysteresis: counter and threshold states raise after `raise_after_polls` consecutive bad polls
    and clear after `clear_after_s` without a bad poll.
    """

    def __init__(self, policy: HealthPolicy | None = None, catalog: XidCatalog | None = None):
        self.policy = policy or HealthPolicy()
        self.catalog = catalog or load_xid_catalog()
        self._latches: dict[tuple[str, str], _Latch] = {}
        self._hysteresis: dict[tuple[str, str], _Hysteresis] = {}
        self._xid_degraded: dict[tuple[str, str], tuple[float, HealthReason, int | None]] = {}
        self._xid_history: dict[tuple[str, int], deque[float]] = {}
        self._pcie_last: dict[str, tuple[float, int]] = {}
        self._pcie_rate: dict[str, float] = {}
        self._sbe_history: dict[str, deque[tuple[float, int]]] = {}
        self._boot_id: str | None = None
        self._driver_version: str | None = None
        self._known_gpus: dict[str, int] = {}  # gpu key -> index, to keep lost GPUs visible
        self.recoveries: list[Recovery] = []

    # -- persistence of latches across agent restarts --

    def export_latches(self) -> list[LatchRecord]:
        return [
            LatchRecord(
                gpu_key=latch.gpu_key,
                gpu_index=latch.gpu_index,
                code=latch.code,
                action=latch.action,
                message=latch.message,
                since=_to_datetime(latch.since),
                boot_id=latch.boot_id,
                driver_version=latch.driver_version,
                max_volatile_ecc=latch.max_volatile_ecc,
            )
            for latch in self._latches.values()
        ]

    def restore_latches(self, records: Iterable[LatchRecord], boot_id: str | None, driver_version: str | None) -> int:
        """Restore latches saved before an agent restart; drops those the recovery evidence clears."""
        restored = 0
        for record in records:
            if boot_id and record.boot_id and record.boot_id != boot_id:
                continue
            if driver_version and record.driver_version and record.driver_version != driver_version:
                continue
            self._latches[(record.gpu_key, record.code)] = _Latch(
                gpu_key=record.gpu_key,
                gpu_index=record.gpu_index,
                code=record.code,
                action=record.action,
                message=record.message,
                since=record.since.timestamp(),
                boot_id=record.boot_id,
                driver_version=record.driver_version,
                max_volatile_ecc=record.max_volatile_ecc,
            )
            if record.gpu_index is not None:
                self._known_gpus.setdefault(record.gpu_key, record.gpu_index)
            restored += 1
        return restored

    # -- XIDs --

    def record_xid(self, obs: XidObservation) -> XidEntry:
        """Record one XID; returns its catalog classification (the agent emits an Event for it)."""
        entry = self.catalog.classify(obs.xid)
        code = f"XID{obs.xid}"
        message = f"XID {obs.xid} {entry.mnemonic}"
        if obs.gpu_index is not None:
            self._known_gpus.setdefault(obs.key, obs.gpu_index)
        if entry.severity is XidSeverity.UNHEALTHY:
            self._latch(obs.key, obs.gpu_index, code, entry.action, message, obs.time, None)
        elif entry.severity is XidSeverity.DEGRADED:
            reason = HealthReason(code=code, severity=Verdict.DEGRADED, action=entry.action, message=message)
            self._xid_degraded[(obs.key, code)] = (obs.time, reason, obs.gpu_index)
        elif entry.recurring_degraded:
            history = self._xid_history.setdefault((obs.key, obs.xid), deque())
            history.append(obs.time)
            while history and obs.time - history[0] > self.catalog.recurring_window_s:
                history.popleft()
            if len(history) >= self.catalog.recurring_threshold:
                rcode = f"XID{obs.xid}Recurring"
                reason = HealthReason(
                    code=rcode,
                    severity=Verdict.DEGRADED,
                    action=Action.CONTACT_SUPPORT,
                    message=f"XID {obs.xid} {entry.mnemonic} seen {len(history)} times within "
                    f"{int(self.catalog.recurring_window_s)} s",
                )
                self._xid_degraded[(obs.key, rcode)] = (obs.time, reason, obs.gpu_index)
        return entry

    # -- evaluation --

    def evaluate(self, sample: NodeSample, node_name: str = "") -> NodeHealth:
        now = sample.time
        self.recoveries = []
        self._apply_node_recovery_evidence(sample)

        node_reasons: list[HealthReason] = []
        gpu_health: dict[str, GpuHealth] = {}

        if not sample.nvml_available:
            node_reasons.append(
                HealthReason(
                    code=sample.nvml_error or "NvmlUnavailable",
                    severity=Verdict.UNKNOWN,
                    action=Action.CHECK_AGENT,
                    message=sample.nvml_error_message or "NVML cannot be read",
                    since=_to_datetime(now),
                )
            )
        if sample.hung_call:
            node_reasons.append(self._hung_reason(sample.hung_call, now))
        # XIDs that could not be tied to a GPU are node-level findings.
        node_reasons += self._carried_reasons("node", now, include_hysteresis=False)

        if sample.nvml_available and sample.expected_count is not None and sample.device_count is not None:
            missing = sample.device_count < sample.expected_count
            finding = HealthReason(
                code="GpuMissing",
                severity=Verdict.UNHEALTHY,
                action=Action.REBOOT,
                message=f"NVML sees {sample.device_count} GPUs, {sample.expected_count} expected",
            )
            active = self._hysteresis_step(("node", "GpuMissing"), missing, finding, now, None)
            if active is not None:
                node_reasons.append(active)

        for gpu in sample.gpus:
            self._known_gpus[gpu.key] = gpu.index
            gpu_health[gpu.key] = self._evaluate_gpu(gpu, now)

        # GPUs with state but not in this sample (lost, or NVML unreadable) stay visible.
        for key, index in self._known_gpus.items():
            if key in gpu_health or key == "node":
                continue
            reasons = self._carried_reasons(key, now)
            if reasons or not sample.nvml_available:
                if not sample.nvml_available and not reasons:
                    verdict = Verdict.UNKNOWN
                else:
                    verdict = worst(r.severity for r in reasons)
                gpu_health[key] = GpuHealth(
                    index=index, uuid=None if key.startswith("index-") else key, verdict=verdict, reasons=reasons
                )

        gpus = sorted(gpu_health.values(), key=lambda g: (g.index, g.uuid or ""))
        verdict = worst([g.verdict for g in gpus] + [r.severity for r in node_reasons])
        if not sample.nvml_available and verdict is not Verdict.UNHEALTHY:
            verdict = Verdict.UNKNOWN
        return NodeHealth(
            node_name=node_name,
            verdict=verdict,
            reasons=node_reasons,
            gpus=gpus,
            observed_at=_to_datetime(now),
            nvml_available=sample.nvml_available,
            driver_version=sample.driver_version,
            boot_id=sample.boot_id,
            gpu_count=sample.device_count,
            expected_gpu_count=sample.expected_count,
            catalog_version=self.catalog.version,
            latches=self.export_latches(),
        )

    # -- internals --

    def _apply_node_recovery_evidence(self, sample: NodeSample) -> None:
        if sample.boot_id:
            if self._boot_id and sample.boot_id != self._boot_id:
                self._clear_all(f"new boot ID {sample.boot_id}")
                self._hysteresis.clear()
            self._boot_id = sample.boot_id
        if sample.nvml_available and sample.driver_version:
            if self._driver_version and sample.driver_version != self._driver_version:
                self._clear_all(f"driver reloaded ({self._driver_version} -> {sample.driver_version})")
            self._driver_version = sample.driver_version
        # Latches restored from a previous boot or driver are stale evidence-wise.
        for key, latch in list(self._latches.items()):
            if sample.boot_id and latch.boot_id and latch.boot_id != sample.boot_id:
                self._clear(key, f"new boot ID {sample.boot_id}")
            elif latch.boot_id is None and sample.boot_id:
                latch.boot_id = sample.boot_id
            if latch.driver_version is None and sample.nvml_available and sample.driver_version:
                latch.driver_version = sample.driver_version

    def _clear_all(self, evidence: str) -> None:
        for key in list(self._latches):
            self._clear(key, evidence)
        self._xid_degraded.clear()
        self._xid_history.clear()

    def _clear(self, key: tuple[str, str], evidence: str) -> None:
        latch = self._latches.pop(key, None)
        if latch is not None:
            self.recoveries.append(Recovery(latch.gpu_key, latch.gpu_index, latch.code, evidence))

    def _latch(
        self,
        gpu_key: str,
        gpu_index: int | None,
        code: str,
        action: Action,
        message: str,
        now: float,
        volatile_ecc: int | None,
    ) -> None:
        latch = self._latches.get((gpu_key, code))
        if latch is None:
            self._latches[(gpu_key, code)] = _Latch(
                gpu_key=gpu_key,
                gpu_index=gpu_index,
                code=code,
                action=action,
                message=message,
                since=now,
                boot_id=self._boot_id,
                driver_version=self._driver_version,
                max_volatile_ecc=volatile_ecc,
            )
        elif volatile_ecc is not None:
            latch.max_volatile_ecc = max(latch.max_volatile_ecc or 0, volatile_ecc)

    def _hung_reason(self, call: str, now: float) -> HealthReason:
        return HealthReason(
            code="NvmlCallHung",
            severity=self.policy.hung_call_severity,
            action=Action.CONTACT_SUPPORT,
            message=f"NVML call {call} did not return within its deadline",
            since=_to_datetime(now),
        )

    def _hysteresis_step(
        self, key: tuple[str, str], bad: bool, finding: HealthReason, now: float, gpu_index: int | None
    ) -> HealthReason | None:
        state = self._hysteresis.get(key)
        if state is None:
            if not bad:
                return None
            state = self._hysteresis[key] = _Hysteresis(gpu_index=gpu_index)
        if bad:
            state.consecutive += 1
            state.last_bad = now
            state.finding = finding
            if not state.active and state.consecutive >= self.policy.raise_after_polls:
                state.active = True
                state.since = now
        else:
            state.consecutive = 0
            if state.active and now - state.last_bad >= self.policy.clear_after_s:
                state.active = False
            if not state.active:
                del self._hysteresis[key]
                return None
        if not state.active or state.finding is None:
            return None
        return state.finding.model_copy(update={"since": _to_datetime(state.since)})

    def _carried_reasons(self, gpu_key: str, now: float, include_hysteresis: bool = True) -> list[HealthReason]:
        """Latched, windowed-XID and active hysteresis reasons for a GPU absent from this sample."""
        reasons = [self._latch_reason(latch) for (key, _), latch in self._latches.items() if key == gpu_key]
        reasons += self._xid_window_reasons(gpu_key, now)
        for (key, _code), state in self._hysteresis.items():
            if include_hysteresis and key == gpu_key and state.active and state.finding is not None:
                reasons.append(state.finding.model_copy(update={"since": _to_datetime(state.since)}))
        return reasons

    def _latch_reason(self, latch: _Latch) -> HealthReason:
        return HealthReason(
            code=latch.code,
            severity=Verdict.UNHEALTHY,
            action=latch.action,
            message=latch.message,
            since=_to_datetime(latch.since),
            latched=True,
        )

    def _xid_window_reasons(self, gpu_key: str, now: float) -> list[HealthReason]:
        reasons = []
        for (key, code), (last, reason, _index) in list(self._xid_degraded.items()):
            if key != gpu_key:
                continue
            if now - last > self.catalog.degraded_window_s:
                del self._xid_degraded[(key, code)]
                continue
            reasons.append(reason.model_copy(update={"since": _to_datetime(last)}))
        return reasons

    def _evaluate_gpu(self, gpu: GpuSample, now: float) -> GpuHealth:
        p = self.policy
        key = gpu.key
        instant: list[HealthReason] = []
        counter_findings: dict[str, HealthReason] = {}

        # GPU reset evidence: volatile ECC counters went back down while a latch was held.
        vol = gpu.volatile_ecc_total
        if vol is not None:
            for lkey, latch in list(self._latches.items()):
                if lkey[0] != key:
                    continue
                if latch.max_volatile_ecc and vol < latch.max_volatile_ecc:
                    self._clear(lkey, "GPU reset (volatile ECC counters reset)")
                elif latch.max_volatile_ecc is None or vol > latch.max_volatile_ecc:
                    latch.max_volatile_ecc = vol

        if gpu.lost:
            self._latch(key, gpu.index, "GpuLost", Action.REBOOT, "GPU is lost (fallen off the bus)", now, None)
        if gpu.reset_required:
            instant.append(
                HealthReason(
                    code="GpuResetRequired",
                    severity=Verdict.UNHEALTHY,
                    action=Action.RESET_GPU,
                    message="NVML reports the GPU requires a reset",
                )
            )
        if gpu.query_error:
            instant.append(
                HealthReason(
                    code="GpuQueryFailed",
                    severity=Verdict.UNKNOWN,
                    action=Action.CONTACT_SUPPORT,
                    message=f"NVML query failed: {gpu.query_error}",
                )
            )
        if gpu.hung_call:
            instant.append(self._hung_reason(gpu.hung_call, now))
        if gpu.ecc_volatile_dbe:
            self._latch(
                key,
                gpu.index,
                "DoubleBitEcc",
                Action.RESET_GPU,
                f"{gpu.ecc_volatile_dbe} volatile double-bit ECC errors",
                now,
                vol,
            )
        if gpu.recovery_action:
            label, severity, action = RECOVERY_ACTIONS.get(
                gpu.recovery_action, ("unknown", Verdict.DEGRADED, Action.CONTACT_SUPPORT)
            )
            if severity is not None and action is not None:
                code = "RecoveryActionReboot" if action is Action.REBOOT else "RecoveryActionReset"
                if severity is Verdict.DEGRADED:
                    code = "RecoveryActionPending"
                instant.append(
                    HealthReason(
                        code=code,
                        severity=severity,
                        action=action,
                        message=f"NVML recovery action: {label} ({gpu.recovery_action})",
                    )
                )

        def counter(code: str, severity: Verdict, action: Action, message: str) -> None:
            counter_findings[code] = HealthReason(code=code, severity=severity, action=action, message=message)

        if gpu.remap_failure:
            counter("RowRemapFailure", Verdict.UNHEALTHY, Action.CONTACT_SUPPORT, "row remapping failed (RMA candidate)")
        if gpu.remap_pending:
            counter(
                "RowRemapPending",
                Verdict.DEGRADED,
                Action.RESET_GPU,
                "row remapping pending; reset the GPU when it is idle",
            )
        retired = (gpu.retired_pages_sbe or 0) + (gpu.retired_pages_dbe or 0)
        if (gpu.retired_pages_sbe is not None or gpu.retired_pages_dbe is not None) and retired >= p.retired_pages_limit:
            counter(
                "RetiredPagesLimit",
                Verdict.UNHEALTHY,
                Action.CONTACT_SUPPORT,
                f"{retired} retired pages (limit {p.retired_pages_limit})",
            )
        if gpu.retired_pages_pending:
            counter("RetiredPagesPending", Verdict.DEGRADED, Action.RESET_GPU, "page retirement pending a GPU reset")
        if gpu.nvlink_up:
            down = sorted(link for link, up in gpu.nvlink_up.items() if not up)
            up_count = len(gpu.nvlink_up) - len(down)
            expected = p.expected_nvlinks_per_gpu
            if (expected is None and down) or (expected is not None and up_count < expected):
                counter(
                    "NVLinkDown",
                    Verdict.UNHEALTHY,
                    Action.REBOOT,
                    f"NVLink links down: {down}" if down else f"{up_count} NVLinks up, {expected} expected",
                )
        if gpu.clock_event_reasons is not None:
            for bit, name in HW_SLOWDOWN_BITS.items():
                if gpu.clock_event_reasons & bit:
                    counter(name, Verdict.DEGRADED, Action.CONTACT_SUPPORT, f"clock event reason {name} is active")
        if gpu.temperature_c is not None and gpu.temperature_slowdown_c:
            if gpu.temperature_c >= gpu.temperature_slowdown_c - p.temperature_margin_c:
                counter(
                    "TemperatureNearSlowdown",
                    Verdict.DEGRADED,
                    Action.CONTACT_SUPPORT,
                    f"{gpu.temperature_c:.0f} C, slowdown at {gpu.temperature_slowdown_c:.0f} C",
                )
        if gpu.power_w is not None and gpu.power_limit_w:
            if gpu.power_w > gpu.power_limit_w * (1 + p.power_limit_tolerance):
                counter(
                    "PowerAboveLimit",
                    Verdict.DEGRADED,
                    Action.CONTACT_SUPPORT,
                    f"{gpu.power_w:.0f} W drawn, limit {gpu.power_limit_w:.0f} W",
                )
        rate = self._pcie_replay_rate(gpu)
        if rate is not None and rate > p.pcie_replays_per_min:
            counter(
                "PcieReplayRate",
                Verdict.DEGRADED,
                Action.CONTACT_SUPPORT,
                f"{rate:.1f} PCIe replays/min (limit {p.pcie_replays_per_min:g})",
            )
        sbe = self._sbe_increase(gpu)
        if sbe is not None and sbe > p.sbe_per_hour:
            counter(
                "SingleBitEccRate",
                Verdict.DEGRADED,
                Action.CONTACT_SUPPORT,
                f"{sbe} corrected ECC errors in the last hour (limit {p.sbe_per_hour:g})",
            )
        if p.require_persistence_mode and gpu.persistence_mode is False:
            counter(
                "PersistenceModeDisabled",
                Verdict.DEGRADED,
                Action.CONTACT_SUPPORT,
                "persistence mode is off; volatile counters reset between jobs",
            )
        if all(signal in gpu.not_supported for signal in HEALTH_SIGNALS) and not (gpu.lost or gpu.hung_call):
            instant.append(
                HealthReason(
                    code="NoHealthSignals",
                    severity=Verdict.UNKNOWN,
                    action=Action.NONE,
                    message="every health signal is not supported on this GPU: " + ", ".join(HEALTH_SIGNALS),
                )
            )

        reasons: list[HealthReason] = []
        # Hysteresis: step every known counter code for this GPU, found or not.
        codes = set(counter_findings) | {code for (k, code) in self._hysteresis if k == key}
        readable = not (gpu.lost or gpu.hung_call or gpu.query_error)
        for code in sorted(codes):
            finding = counter_findings.get(code)
            if finding is None and not readable:
                # No observation this poll: keep the state as it is.
                state = self._hysteresis.get((key, code))
                if state is not None and state.active and state.finding is not None:
                    reasons.append(state.finding.model_copy(update={"since": _to_datetime(state.since)}))
                continue
            placeholder = finding or HealthReason(code=code, severity=Verdict.DEGRADED, action=Action.NONE, message="")
            active = self._hysteresis_step((key, code), finding is not None, placeholder, now, gpu.index)
            if active is not None:
                reasons.append(active)

        now_dt = _to_datetime(now)
        reasons = [self._latch_reason(l) for (k, _), l in self._latches.items() if k == key] + reasons
        reasons += [r.model_copy(update={"since": r.since or now_dt}) for r in instant]
        reasons += self._xid_window_reasons(key, now)
        verdict = worst(r.severity for r in reasons) if reasons else Verdict.HEALTHY
        return GpuHealth(
            index=gpu.index,
            uuid=gpu.uuid,
            name=gpu.name,
            verdict=verdict,
            reasons=reasons,
            not_supported=sorted(gpu.not_supported),
            telemetry=_telemetry(gpu),
        )

    def _pcie_replay_rate(self, gpu: GpuSample) -> float | None:
        if gpu.pcie_replay_count is None or gpu.counters_read_at is None:
            return None
        last = self._pcie_last.get(gpu.key)
        if last is None or gpu.pcie_replay_count < last[1]:
            self._pcie_last[gpu.key] = (gpu.counters_read_at, gpu.pcie_replay_count)
            return None
        if gpu.counters_read_at > last[0]:
            elapsed_min = (gpu.counters_read_at - last[0]) / 60.0
            self._pcie_rate[gpu.key] = (gpu.pcie_replay_count - last[1]) / elapsed_min
            self._pcie_last[gpu.key] = (gpu.counters_read_at, gpu.pcie_replay_count)
        return self._pcie_rate.get(gpu.key)

    def _sbe_increase(self, gpu: GpuSample) -> int | None:
        if gpu.ecc_volatile_sbe is None or gpu.counters_read_at is None:
            return None
        history = self._sbe_history.setdefault(gpu.key, deque())
        if history and gpu.ecc_volatile_sbe < history[-1][1]:
            history.clear()  # counters reset (driver reload or GPU reset)
        if not history or gpu.counters_read_at > history[-1][0]:
            history.append((gpu.counters_read_at, gpu.ecc_volatile_sbe))
        while history and gpu.counters_read_at - history[0][0] > 3600:
            history.popleft()
        return history[-1][1] - history[0][1]


def _telemetry(gpu: GpuSample) -> GpuTelemetry:
    down = sorted(link for link, up in (gpu.nvlink_up or {}).items() if not up)
    return GpuTelemetry(
        utilization_gpu=gpu.utilization_gpu,
        memory_used_bytes=gpu.memory_used_bytes,
        memory_total_bytes=gpu.memory_total_bytes,
        temperature_c=gpu.temperature_c,
        temperature_slowdown_c=gpu.temperature_slowdown_c,
        power_w=gpu.power_w,
        power_limit_w=gpu.power_limit_w,
        clock_events=clock_event_names(gpu.clock_event_reasons),
        ecc_volatile_sbe=gpu.ecc_volatile_sbe,
        ecc_volatile_dbe=gpu.ecc_volatile_dbe,
        ecc_aggregate_dbe=gpu.ecc_aggregate_dbe,
        remap_pending=gpu.remap_pending,
        remap_failure=gpu.remap_failure,
        nvlinks_down=down,
        pcie_replay_count=gpu.pcie_replay_count,
        persistence_mode=gpu.persistence_mode,
        mig_enabled=gpu.mig_enabled,
    )


# --- Transitions (one Event each) ----------------------------------------------------------------


@dataclass(frozen=True)
class Transition:
    gpu_key: str  # "node" for node-level
    gpu_index: int | None
    before: Verdict | None
    after: Verdict
    reason: str  # event reason, e.g. GPUUnhealthy
    message: str


_TRANSITION_REASON = {
    Verdict.HEALTHY: "GPUHealthy",
    Verdict.DEGRADED: "GPUDegraded",
    Verdict.UNHEALTHY: "GPUUnhealthy",
    Verdict.UNKNOWN: "GPUHealthUnknown",
}


def transitions(before: NodeHealth | None, after: NodeHealth) -> list[Transition]:
    """Per-GPU and node-level verdict changes between two evaluations."""
    result: list[Transition] = []
    old = {(g.uuid or f"index-{g.index}"): g for g in (before.gpus if before else [])}
    for gpu in after.gpus:
        key = gpu.uuid or f"index-{gpu.index}"
        prev = old.get(key)
        prev_verdict = prev.verdict if prev else (None if before is None else Verdict.HEALTHY)
        if prev_verdict is gpu.verdict or (prev_verdict is None and gpu.verdict is Verdict.HEALTHY):
            continue
        summary = "; ".join(f"{r.code}: {r.message} ({r.action.value})" for r in gpu.reasons) or "no findings"
        was = prev_verdict.value if prev_verdict else "new"
        result.append(
            Transition(
                key,
                gpu.index,
                prev_verdict,
                gpu.verdict,
                _TRANSITION_REASON[gpu.verdict],
                _cap(f"{gpu.label}: {was} -> {gpu.verdict.value}: {summary}"),
            )
        )
    old_node_codes = {r.code for r in before.reasons} if before else set()
    new_node_codes = {r.code for r in after.reasons}
    if new_node_codes != old_node_codes:
        node_verdict = worst(r.severity for r in after.reasons) if after.reasons else Verdict.HEALTHY
        summary = "; ".join(f"{r.code}: {r.message}" for r in after.reasons) or "node-level findings cleared"
        result.append(
            Transition("node", None, None, node_verdict, _TRANSITION_REASON[node_verdict], _cap(summary))
        )
    return result


def _cap(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- Node conditions -----------------------------------------------------------------------------


class ConditionState(BaseModel):
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str


def _summarise(pairs: list[tuple[GpuHealth | None, HealthReason]]) -> str:
    parts = []
    for gpu, reason in pairs:
        where = gpu.label if gpu else "node"
        parts.append(f"{where}: {reason.message} ({reason.action.value})")
    return _cap("; ".join(parts))


def node_conditions(health: NodeHealth) -> list[ConditionState]:
    """GPUUnhealthy and GPUDegraded, problem polarity: True means a problem; Unknown when unreadable."""
    pairs = health.all_reasons()
    unhealthy = [(g, r) for g, r in pairs if r.severity is Verdict.UNHEALTHY]
    degraded = [(g, r) for g, r in pairs if r.severity is Verdict.DEGRADED]
    unknown = [(g, r) for g, r in pairs if r.severity is Verdict.UNKNOWN]
    unreadable = not health.nvml_available or bool(unknown)

    if unhealthy:
        cond_unhealthy = ConditionState(
            type=CONDITION_UNHEALTHY, status="True", reason=unhealthy[0][1].code, message=_summarise(unhealthy)
        )
    elif unreadable:
        cond_unhealthy = ConditionState(
            type=CONDITION_UNHEALTHY, status="Unknown", reason=unknown[0][1].code, message=_summarise(unknown)
        )
    else:
        cond_unhealthy = ConditionState(
            type=CONDITION_UNHEALTHY, status="False", reason="GPUsHealthy", message="no unhealthy GPU"
        )

    if degraded:
        cond_degraded = ConditionState(
            type=CONDITION_DEGRADED, status="True", reason=degraded[0][1].code, message=_summarise(degraded)
        )
    elif unreadable:
        cond_degraded = ConditionState(
            type=CONDITION_DEGRADED, status="Unknown", reason=unknown[0][1].code, message=_summarise(unknown)
        )
    else:
        cond_degraded = ConditionState(
            type=CONDITION_DEGRADED, status="False", reason="NoDegradedGPUs", message="no degraded GPU"
        )
    return [cond_unhealthy, cond_degraded]


# --- Reading what the agent published (used by the TUI) ------------------------------------------


class NodeHealthView(BaseModel):
    """What the TUI shows for one node: the verdict, why, and whether the data is stale."""

    node_name: str
    verdict: Verdict
    reason: str
    message: str
    stale: bool
    last_heartbeat: datetime | None = None
    detail: NodeHealth | None = None


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    return None


def view_from_node(
    node: dict[str, Any],
    health_object: dict[str, Any] | None,
    now: datetime,
    heartbeat_period_s: float = 300,
) -> NodeHealthView:
    """Combine a Node (as JSON) and its GPUNodeHealth object into one truthful verdict.

    Fails closed: no conditions, a stale heartbeat or an unreadable object gives unknown.
    """
    name = (node.get("metadata") or {}).get("name", "")
    conditions = {c.get("type"): c for c in ((node.get("status") or {}).get("conditions") or [])}
    unhealthy = conditions.get(CONDITION_UNHEALTHY)
    degraded = conditions.get(CONDITION_DEGRADED)
    detail: NodeHealth | None = None
    if health_object is not None:
        try:
            detail = NodeHealth.model_validate(health_object.get("status") or {})
        except ValidationError:
            detail = None
    if unhealthy is None:
        return NodeHealthView(
            node_name=name,
            verdict=Verdict.UNKNOWN,
            reason="NoAgentReport",
            message="the GPU health agent has not reported on this node",
            stale=True,
            detail=detail,
        )
    heartbeat = _parse_time(unhealthy.get("lastHeartbeatTime"))
    stale = heartbeat is None or (now - heartbeat).total_seconds() > STALE_AFTER_PERIODS * heartbeat_period_s
    if stale:
        return NodeHealthView(
            node_name=name,
            verdict=Verdict.UNKNOWN,
            reason="AgentHeartbeatStale",
            message=f"last agent heartbeat {heartbeat.isoformat() if heartbeat else 'never'}; "
            "the agent may not be running",
            stale=True,
            last_heartbeat=heartbeat,
            detail=detail,
        )
    if unhealthy.get("status") == "True":
        verdict, source = Verdict.UNHEALTHY, unhealthy
    elif unhealthy.get("status") == "Unknown":
        verdict, source = Verdict.UNKNOWN, unhealthy
    elif degraded is not None and degraded.get("status") == "True":
        verdict, source = Verdict.DEGRADED, degraded
    elif degraded is not None and degraded.get("status") == "Unknown":
        verdict, source = Verdict.UNKNOWN, degraded
    else:
        verdict, source = Verdict.HEALTHY, unhealthy
    return NodeHealthView(
        node_name=name,
        verdict=verdict,
        reason=str(source.get("reason", "")),
        message=str(source.get("message", "")),
        stale=False,
        last_heartbeat=heartbeat,
        detail=detail,
    )
