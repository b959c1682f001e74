"""The agent's stateful health model: NVML samples and XID observations in, a NodeHealth verdict out.

Latches (XID and DBE states that stay until recovery evidence) and hysteresis (counter states
that raise and clear over time) live here.  Only the node agent runs it; the TUI reads what the
agent published (:mod:`tau_gpuhealth.nodeview`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from tau_gpuhealth.gpu_findings import telemetry_of, threshold_findings
from tau_gpuhealth.policy import HealthPolicy
from tau_gpuhealth.report import (
    GpuHealth,
    HealthReason,
    LatchRecord,
    NodeHealth,
)
from tau_gpuhealth.samples import (
    HEALTH_SIGNALS,
    RECOVERY_ACTIONS,
    GpuSample,
    NodeSample,
    XidObservation,
)
from tau_gpuhealth.verdicts import Action, Verdict, worst
from tau_gpuhealth.xid import (
    XidCatalog,
    XidEntry,
    XidSeverity,
    load_xid_catalog,
)


def _to_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


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

        counter_findings = threshold_findings(gpu, p, self._pcie_replay_rate(gpu), self._sbe_increase(gpu))
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
        reasons = [self._latch_reason(latch) for (k, _), latch in self._latches.items() if k == key] + reasons
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
            telemetry=telemetry_of(gpu),
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
