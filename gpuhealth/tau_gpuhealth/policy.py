"""Thresholds and timing of the health model (defaults follow DCGM)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tau_gpuhealth.verdicts import Verdict


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
