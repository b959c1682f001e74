"""The compose pane's form over tau.yaml (its sections and fields), which field a diagnostic belongs
to, and what a validation of the form's document found."""

from __future__ import annotations

from dataclasses import dataclass, field

from tau_tui.core.runconfig.config import ALIASES
from tau_tui.core.runconfig.diagnostics import Diagnostic

#: (section, [(canonical path, label, kind, placeholder)])
#: kinds: text, int, list ("a, b"), map ("KEY=value, KEY2=value").
FORM: tuple[tuple[str, tuple[tuple[str, str, str, str], ...]], ...] = (
    ("run", (
        ("run.name", "name", "text", "my-run"),
        ("run.engine", "engine", "text", "job | rayjob"),
        ("run.entrypoint", "entrypoint", "text", "train.py"),
        ("run.ttl_seconds_after_finished", "ttl_after_finish", "int", "28800 (seconds)"),
    )),
    ("runtime", (
        ("runtime.image", "image", "text", "python:3.12-slim"),
        ("runtime.working_dir", "working_dir", "text", ""),
        ("runtime.pip", "pip", "list", "torch, numpy"),
        ("runtime.env", "env", "map", "KEY=value, OTHER=value"),
        ("runtime.env_secret", "env_secret", "map", "ENV=SECRET_NAME:KEY"),
        ("runtime.security.mode", "security.mode", "text", "restricted | (empty)"),
    )),
    ("compute", (
        ("compute.workers", "workers", "int", "1"),
        ("compute.gpus", "gpus", "int", "8 (Job: GPUs in all; 0 for CPU only)"),
        ("compute.gpus_per_worker", "gpus_per_worker", "int", "0-8 (RayJob: per worker)"),
        ("compute.gpu_resource_mode", "gpu_resource_mode", "text", "device-plugin | nvidia | dra | mig"),
        ("compute.mig_profile", "mig_profile", "text", "1g.10gb (gpu_resource_mode mig)"),
        ("compute.cpu_request", "cpu_request", "text", "4"),
        ("compute.memory_request", "memory_request", "text", "16Gi"),
        ("compute.cpu_limit", "cpu_limit", "text", ""),
        ("compute.memory_limit", "memory_limit", "text", ""),
    )),
    ("policy", (
        ("policy.namespace", "namespace", "text", "taugrid-default"),
        ("policy.team", "team", "text", ""),
        ("policy.lane", "lane", "text", "eval | training | large-memory | elastic"),
        ("policy.queue", "queue", "text", "(from the profile)"),
        ("policy.priority_tier", "priority_tier", "text", "default | priority"),
        ("policy.gpu_class", "gpu_class", "text", "h100-80gb, a100-80gb, ..."),
        ("policy.mode", "mode", "text", "fixed | elastic"),
        ("policy.node_selector", "node_selector", "map", "label=value"),
    )),
    ("storage", (
        ("storage.data_pvc", "data_pvc", "text", ""),
        ("storage.result_pvc", "result_pvc", "text", ""),
        ("storage.output", "output", "text", ""),
        ("storage.checkpoint", "checkpoint", "text", ""),
        ("storage.volumes", "volumes", "list", "pvc-name, ..."),
        ("storage.mounts", "mounts", "list", "pvc:/mnt/path, ..."),
    )),
    ("resilience", (
        ("resilience.max_retries", "max_retries", "int", "0"),
        ("resilience.retry_on", "retry_on", "list", "Preempted, Evicted, OOMKilled"),
        ("resilience.backoff_initial", "backoff_initial", "text", "30s"),
        ("resilience.backoff_max", "backoff_max", "text", "5m"),
        ("resilience.checkpoint_path", "checkpoint_path", "text", ""),
    )),
)
FIELD_PATHS = [path for _, fields in FORM for path, *_ in fields] + ["policy.profile"]
#: written alias path → canonical path
ALIAS_TO_CANONICAL = {".".join(src): ".".join(canonical) for canonical, sources in ALIASES.items() for src in sources}
IMPLICIT_PROFILE = "__implicit__"
#: requested resource → the field that sets it (GPU resources go to compute.gpus / gpus_per_worker)
QUOTA_FIELDS = {"cpu": "compute.cpu_request", "memory": "compute.memory_request"}


def field_for(diagnostic_path: str) -> str | None:
    """The form field a diagnostic belongs to (longest matching key path)."""
    if not diagnostic_path:
        return None
    path = ALIAS_TO_CANONICAL.get(diagnostic_path, diagnostic_path)
    best = None
    for candidate in FIELD_PATHS:
        if path == candidate or path.startswith(candidate + ".") or path.startswith(candidate + "["):
            if best is None or len(candidate) > len(best):
                best = candidate
    return best


@dataclass
class Validation:
    ok: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)
    manifests: list[dict] = field(default_factory=list)
    manifests_yaml: str = ""
    submission_id: str = ""
    profile_options: list[tuple[str, str]] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    profile_source: str = ""
    rendered: bool = False
    #: "2 pod(s): nvidia.com/gpu 16, ..." and the quota lines for the submit confirmation.
    request_summary: str = ""
    quota_warnings: list[str] = field(default_factory=list)
    #: The profiles are not there yet (no cluster yet, or the TauCluster view still lists).
    waiting: bool = False
    #: What the profiles came from (backend, TauCluster generation, view state): checked again when it moves.
    profile_key: tuple = ()
    #: The document text this result is for.
    text: str | None = None
