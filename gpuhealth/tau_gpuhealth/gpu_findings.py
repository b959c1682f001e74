"""What one GPU sample says on its own: threshold findings and telemetry, with no memory.

The stateful side (latches, hysteresis, rates over time) is :mod:`tau_gpuhealth.model`; it feeds
these findings through hysteresis before they count."""

from __future__ import annotations

from tau_gpuhealth.policy import HealthPolicy
from tau_gpuhealth.report import GpuTelemetry, HealthReason
from tau_gpuhealth.samples import HW_SLOWDOWN_BITS, GpuSample, clock_event_names
from tau_gpuhealth.verdicts import Action, Verdict


def threshold_findings(
    gpu: GpuSample, p: HealthPolicy, pcie_replays_per_min: float | None, sbe_per_hour: int | None
) -> dict[str, HealthReason]:
    """Counter and threshold findings of one sample, by code; the rates come from the model's history."""
    findings: dict[str, HealthReason] = {}

    def counter(code: str, severity: Verdict, action: Action, message: str) -> None:
        findings[code] = HealthReason(code=code, severity=severity, action=action, message=message)

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
    rate = pcie_replays_per_min
    if rate is not None and rate > p.pcie_replays_per_min:
        counter(
            "PcieReplayRate",
            Verdict.DEGRADED,
            Action.CONTACT_SUPPORT,
            f"{rate:.1f} PCIe replays/min (limit {p.pcie_replays_per_min:g})",
        )
    sbe = sbe_per_hour
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
    return findings


def telemetry_of(gpu: GpuSample) -> GpuTelemetry:
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
