"""Pydantic models of the direct run config (`tau.yaml`), field for field as taugrid.md §1.2.

The models hold shape and per-field rules only. Aliases are folded in before validation
(`config.canonicalise`) and cross-field rules run after it (`rules.py`).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
QUANTITY = re.compile(r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i?|[mkMGTPE]|)$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Every count ends up in an int32 field of the Job or RayJob (backoffLimit, parallelism, replicas).
INT32_MAX = 2147483647

ENGINE_ALIASES = {"job": "job", "rayjob": "rayjob", "ray": "rayjob", "ray-train": "rayjob", "ray_train": "rayjob"}

GPU_CLASSES = (
    "any", "a10-4gb", "a10-8gb", "a10-12gb", "a10-24gb", "a100-40gb", "a100-80gb", "h100-80gb",
    "h100-95gb", "h200-141gb", "gb200-192gb", "gb300-288gb",
)
DEPRECATED_GPU_CLASSES = {
    "a100-nvlink-80gb": "a100-80gb",
    "h100-standalone-95gb": "h100-95gb",
    "h200-nvlink-141gb": "h200-141gb",
}
# Both placement vocabularies are in use (taugrid.md §0 drift 1); the legacy one maps onto the current one.
PLACEMENTS = ("unconstrained", "same-host", "same-accelerator-domain", "same-network-domain", "same-site")
LEGACY_PLACEMENTS = {
    "independent": "unconstrained",
    "single-node-nvlink": "same-host",
    "multi-node-nccl": "same-network-domain",
    "elastic-workers": "unconstrained",
}


def _check_duration(value: str) -> str:
    if not GO_DURATION.match(value):
        raise ValueError(f"must be a duration such as 30s, 5m or 1h30m (got {value!r})")
    return value


def _quantity_text(value: object) -> object:
    # YAML gives `cpu_request: 2` as an int; Kubernetes quantities are strings.
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    return value


def _check_quantity(value: str) -> str:
    if not QUANTITY.match(value):
        raise ValueError(f"must be a Kubernetes quantity such as 4, 500m, 16Gi (got {value!r})")
    return value


Duration = Annotated[str, AfterValidator(_check_duration), WithJsonSchema({"type": "string", "pattern": GO_DURATION.pattern})]
# YAML gives `cpu_request: 2` as a number; the JSON schema (`tau-tui schema`) accepts what the loader accepts.
Quantity = Annotated[str, BeforeValidator(_quantity_text), AfterValidator(_check_quantity),
                     WithJsonSchema({"anyOf": [{"type": "string", "pattern": QUANTITY.pattern}, {"type": "number", "minimum": 0}]})]
EngineName = Literal["job", "rayjob"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class SourceSpec(Section):
    image: str
    path: str | None = None


class RunSection(Section):
    name: str | None = None
    engine: EngineName | None = None
    entrypoint: str | None = None
    workload_kind: EngineName | None = None
    source: SourceSpec | None = None
    ttl_seconds_after_finished: int = Field(28800, ge=1, le=INT32_MAX)
    working_dir: str | None = None
    working_dir_excludes: list[str] = Field(default_factory=list)


class SecuritySpec(Section):
    mode: Literal["restricted"] | None = None


class RuntimeSection(Section):
    image: str | None = None
    working_dir: str | None = None
    pip: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    env_secret: dict[str, str] = Field(default_factory=dict)
    security: SecuritySpec = Field(default_factory=SecuritySpec)


class ComputeSection(Section):
    workers: int = Field(1, ge=1, le=INT32_MAX)
    gpus: int | None = Field(None, ge=0, le=INT32_MAX)
    gpus_per_worker: int = Field(1, ge=0, le=8)
    cpu_workers: int | None = Field(None, ge=0, le=INT32_MAX)
    workload_kind: EngineName | None = None
    gpu_resource_mode: Literal["device-plugin", "nvidia", "dra", "mig"] = "device-plugin"
    mig_profile: str | None = None
    cpu_request: Quantity | None = None
    memory_request: Quantity | None = None
    cpu_limit: Quantity | None = None
    memory_limit: Quantity | None = None
    head_cpu_request: Quantity | None = None
    head_memory_request: Quantity | None = None
    head_cpu_limit: Quantity | None = None
    head_memory_limit: Quantity | None = None
    worker_cpu_request: Quantity | None = None
    worker_memory_request: Quantity | None = None
    worker_cpu_limit: Quantity | None = None
    worker_memory_limit: Quantity | None = None


class PolicySection(Section):
    workspace: str | None = None
    namespace: str | None = None
    profile: str | None = None
    queue: str | None = None
    team: str | None = None
    lane: Literal["eval", "training", "large-memory", "elastic"] | None = None
    gpu_class: str | None = None
    mode: Literal["fixed", "elastic"] | None = None
    topology: str | None = None
    shape: str | None = None
    preset: str | None = None
    priority_tier: Literal["default", "priority"] | None = None
    topology_policy: str | None = None
    workload_priority_class: str | None = None
    pod_priority_class: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    clear_node_selector: bool = False
    disable_default_priorities: bool | None = None
    workload_profile_snapshot: str | None = None


class ImageAsset(Section):
    name: str
    image: str
    source_path: str
    mount_path: str


class StorageSection(Section):
    data_pvc: str | None = None
    result_pvc: str | None = None
    output: str | None = None
    publish: Literal["staged"] | None = None
    checkpoint: str | None = None
    volumes: list[str] = Field(default_factory=list)
    mounts: list[str] = Field(default_factory=list)
    image_assets: list[ImageAsset] = Field(default_factory=list, max_length=8)


class OffloadSpec(Section):
    enabled: bool = False


class MetricsSection(Section):
    history: list[str] = Field(default_factory=list)
    offload: OffloadSpec = Field(default_factory=OffloadSpec)


class ExperimentSection(Section):
    project: str | None = None
    name: str | None = None
    group: str | None = None
    #: Deprecated alias of ``name``: folded into it when the file is read, so always None here.
    title: str | None = None


class ExecutionSection(Section):
    launcher: Literal["python", "torchrun", "ray-train", "ray-tune"] | None = None
    processes_per_node: int | None = Field(None, ge=1, le=INT32_MAX)
    nodes: int = Field(1, ge=1, le=INT32_MAX)
    metric: str | None = None
    mode: Literal["min", "max"] = "min"
    num_samples: int = Field(1, ge=1, le=INT32_MAX)
    max_concurrent_trials: int = Field(1, ge=1, le=INT32_MAX)
    configs: dict[str, object] = Field(default_factory=dict)
    allow_nccl_override: bool = False


RetryReason = Literal["Preempted", "Evicted", "OOMKilled"]
_DEFAULT_RETRY_ON: list[RetryReason] = ["Preempted", "Evicted"]


class ResilienceSection(Section):
    max_retries: int = Field(0, ge=0, le=INT32_MAX)
    retry_on: list[RetryReason] = Field(default_factory=lambda: _DEFAULT_RETRY_ON.copy())
    checkpoint_path: str | None = None
    backoff_initial: Duration = "30s"
    backoff_max: Duration = "5m"


def _rank_text(value: object) -> object:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class ProfilerSection(Section):
    mode: Literal["nsys", "ncu"] | None = None
    rank: Annotated[str, BeforeValidator(_rank_text),
                    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]})] = "0"
    warmup: Duration | None = None
    duration: Duration | None = None


class TauConfig(Section):
    """The canonical direct run config: aliases already folded in."""

    run: RunSection = Field(default_factory=RunSection)
    runtime: RuntimeSection = Field(default_factory=RuntimeSection)
    compute: ComputeSection = Field(default_factory=ComputeSection)
    policy: PolicySection = Field(default_factory=PolicySection)
    storage: StorageSection = Field(default_factory=StorageSection)
    metrics: MetricsSection = Field(default_factory=MetricsSection)
    experiment: ExperimentSection = Field(default_factory=ExperimentSection)
    execution: ExecutionSection = Field(default_factory=ExecutionSection)
    resilience: ResilienceSection = Field(default_factory=ResilienceSection)
    profiler: ProfilerSection = Field(default_factory=ProfilerSection)
