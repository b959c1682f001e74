"""Agent configuration: one YAML file, validated with pydantic; errors name the file and key."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tau_gpuhealth.policy import HealthPolicy


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Intervals(_Strict):
    fast_poll_s: float = Field(default=15, gt=0, description="liveness, count and telemetry")
    slow_poll_s: float = Field(default=60, gt=0, description="ECC, row remap, retired pages, NVLink, PCIe")
    config_poll_s: float = Field(default=600, gt=0, description="driver version, persistence and MIG mode")
    xid_wait_ms: int = Field(default=5000, ge=1, le=60000)
    call_timeout_s: float = Field(default=10, gt=0, description="deadline for any single NVML call")

    @model_validator(mode="after")
    def _ordered(self) -> Intervals:
        if self.slow_poll_s < self.fast_poll_s:
            raise ValueError("slow_poll_s must be >= fast_poll_s")
        return self


class Budget(_Strict):
    """Kubernetes write budget per node (reference gpu-health.md section 7.4)."""

    debounce_s: float = Field(default=10, ge=0)
    min_write_interval_s: float = Field(default=30, ge=0)
    max_change_writes_per_hour: int = Field(default=20, ge=1)
    heartbeat_s: float = Field(default=300, gt=0)
    heartbeat_jitter: float = Field(default=0.1, ge=0, lt=1)
    startup_delay_max_s: float = Field(default=30, ge=0)
    event_dedup_s: float = Field(default=600, ge=0)
    max_events_per_hour: int = Field(default=30, ge=1)
    event_burst: int = Field(default=10, ge=1)
    retry_initial_s: float = Field(default=0.5, gt=0)
    retry_max_s: float = Field(default=30, gt=0)


class TaintAction(_Strict):
    enabled: bool = False
    effect: str = Field(default="NoSchedule", pattern="^(NoSchedule|PreferNoSchedule)$")


class CordonAction(_Strict):
    enabled: bool = False


class Actions(_Strict):
    """Off by default. The agent never drains: that is an on-call action in the TUI."""

    taint: TaintAction = TaintAction()
    cordon: CordonAction = CordonAction()
    min_unhealthy_s: float = Field(default=120, ge=0, description="unhealthy this long before acting")
    dry_run: bool = Field(default=False, description="send taint/cordon as server dry-run only")
    report_only_reasons: list[str] = Field(
        default_factory=lambda: ["NvmlCallHung"], description="unhealthy reasons that never trigger actions"
    )


class Server(_Strict):
    """Public listener: /healthz and /metrics only. /status is served on 127.0.0.1:status_port,
    the kubelet's /healthz on probe_port (same bind), each from its own small pool."""

    bind: str = Field(default="0.0.0.0", description="in the pod's network namespace: the pod IP and loopback")
    port: int = Field(default=9464, ge=0, le=65535)
    status_port: int | None = Field(
        default=9465, ge=0, le=65535, description="127.0.0.1 only (/status, /healthz, /metrics); null: off"
    )
    probe_port: int = Field(
        default=9466, ge=0, le=65535, description="on `bind`, /healthz only: clients of `port` cannot starve it"
    )
    workers: int = Field(default=4, ge=1, le=64, description="threads serving the public listener")
    max_pending: int = Field(default=8, ge=1, le=1024, description="accepted connections waiting; past it: 503")
    connection_timeout_s: float = Field(
        default=5, gt=0, le=60, description="a request must arrive in full this soon after connecting"
    )

    @model_validator(mode="after")
    def _distinct_ports(self) -> Server:
        if self.port and self.status_port and self.port == self.status_port:
            raise ValueError("status_port must differ from port")
        if self.probe_port and self.probe_port in (self.port, self.status_port):
            raise ValueError("probe_port must differ from port and status_port")
        return self


class AgentConfig(_Strict):
    node_name: str | None = Field(default=None, description="defaults to $NODE_NAME")
    events_namespace: str | None = Field(
        default=None, description='defaults to "default": the API only accepts Node events there'
    )
    expected_gpu_count: int | None = Field(
        default=None, ge=0, description="defaults to the node label nvidia.com/gpu.count"
    )
    xid_catalog_path: str | None = None
    boot_id_path: str = "/proc/sys/kernel/random/boot_id"
    intervals: Intervals = Intervals()
    thresholds: HealthPolicy = HealthPolicy()
    budget: Budget = Budget()
    actions: Actions = Actions()
    server: Server = Server()


class ConfigError(ValueError):
    pass


def load_config(path: str | Path | None) -> AgentConfig:
    """Load and validate the config; a missing path means all defaults."""
    if path is None:
        return AgentConfig()
    source = str(path)
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read agent config ({exc.strerror})") from exc
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{source}:{where} not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the agent config must be a mapping of keys, got {type(data).__name__}")
    try:
        return AgentConfig.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(part) for part in err["loc"]) or "(top level)"
            lines.append(f"{source}: key '{where}': {err['msg']}")
        raise ConfigError("\n".join(lines)) from exc
