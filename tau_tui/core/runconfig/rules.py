"""Cross-field rules of the direct run config (taugrid.md §1.2 and §1.3).

Each rule adds one Diagnostic per problem, pointing at the key that has to change.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import Diagnostic
from tau_tui.core.runconfig.schema import GO_DURATION, GPU_CLASSES, LEGACY_PLACEMENTS, PLACEMENTS, TauConfig

# err(path, message, hint): records one Diagnostic at the key path.
ReportProblem = Callable[[tuple[Any, ...], str, str], None]

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
PINNED_IMAGE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
MAX_ENV_VALUE_BYTES = 64 * 1024
MAX_ENV_TOTAL_BYTES = 128 * 1024
MAX_RAYJOB_NAME = 47  # KubeRay derives longer child names from it.
MAX_JOB_NAME = 63
HEADLESS_SUFFIX = "-headless"
TAU_ENV_ALLOWED = {"TAU_RESUME_FROM", "TAU_RETRY_ATTEMPT", "TAU_RETRY_MAX", "TAU_RETRY_REASON"}
RESERVED_MOUNTS = ("/data", "/mnt", "/script", "/manifest", "/tmp", "/dev/shm", "/var/run/tau", "/tau/source")
PVC_MOUNT_SPEC = re.compile(r"^(?P<claim>[a-z0-9]([-a-z0-9.]*[a-z0-9])?):(?P<path>/[^:]*)(:(?P<mode>ro|rw))?$")
RAY_ONLY_COMPUTE = tuple(
    f"{role}_{res}_{kind}" for role in ("head", "worker") for res in ("cpu", "memory") for kind in ("request", "limit")
)


def infer_engine(config: TauConfig) -> str:
    """taugrid.md §1.3: explicit engine or workload_kind wins; else Ray-shaped inputs mean RayJob."""
    for explicit in (config.run.engine, config.run.workload_kind, config.compute.workload_kind):
        if explicit:
            return explicit
    compute = config.compute
    if compute.workers > 1 or "gpus_per_worker" in compute.model_fields_set or config.runtime.pip:
        return "rayjob"
    return "job"


def duration_seconds(text: str) -> float:
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * units[u] for n, _, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", text))


def is_clean_relative(path: str) -> bool:
    return bool(path) and not path.startswith("/") and posixpath.normpath(path) == path and not path.startswith("..")


def is_clean_absolute(path: str) -> bool:
    return path.startswith("/") and posixpath.normpath(path) == path


def mounts_overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def check_rules(loaded: LoadedConfig) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    c = loaded.config
    engine = loaded.engine

    def err(path: tuple[Any, ...], message: str, hint: str) -> None:
        out.append(loaded.diagnostic(path, message, hint))

    explicit = [
        (p, v)
        for p, v in ((("run", "engine"), c.run.engine), (("run", "workload_kind"), c.run.workload_kind), (("compute", "workload_kind"), c.compute.workload_kind))
        if v
    ]
    for path, value in explicit[1:]:
        if value != explicit[0][1]:
            err(path, f"{value!r} conflicts with {'.'.join(explicit[0][0])}={explicit[0][1]!r}", "set the engine in one place only")

    _check_name(c, engine, err)
    if engine == "job":
        _check_job_only(c, err)
    else:
        _check_rayjob_only(c, err)
    _check_launcher(c, engine, err)
    _check_env(c, err)
    _check_paths(loaded, err)
    _check_storage(c, engine, err)
    _check_policy(c, err)
    _check_metrics(c, engine, err)
    _check_resilience(c, err)
    _check_profiler(c, err)
    if "title" in c.experiment.model_fields_set:
        out.append(loaded.diagnostic(("experiment", "title"), "is deprecated", "use experiment.name for the comparison set", severity="warning"))
    return out


def _check_name(c: TauConfig, engine: str, err: ReportProblem) -> None:
    name = c.run.name
    if not name:
        err(("run", "name"), "is required", "add `name: my-run` (lowercase letters, digits and '-')")
        return
    if not DNS_LABEL.match(name):
        err(("run", "name"), f"must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit (got {name!r})", "rename the run, e.g. " + repr(re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "my-run"))
        return
    if engine == "rayjob" and len(name) > MAX_RAYJOB_NAME:
        err(("run", "name"), f"a RayJob name must be at most {MAX_RAYJOB_NAME} characters (got {len(name)})", "shorten the name; KubeRay derives longer names from it")
    elif engine == "job":
        limit = MAX_JOB_NAME - len(HEADLESS_SUFFIX) if c.execution.nodes > 1 else MAX_JOB_NAME
        if len(name) > limit:
            err(("run", "name"), f"a Job name must be at most {limit} characters here (got {len(name)})", "shorten the name")


def _check_job_only(c: TauConfig, err: ReportProblem) -> None:
    compute = c.compute
    if compute.workers > 1:
        err(("compute", "workers"), f"a Job cannot set workers > 1 (got {compute.workers})", "use engine: rayjob for Ray workers, or execution.nodes with launcher: torchrun")
    if "gpus_per_worker" in compute.model_fields_set:
        err(("compute", "gpus_per_worker"), "is for RayJob only", "use compute.gpus for a Job")
    if c.runtime.pip:
        err(("runtime", "pip"), "is for RayJob only; a Job cannot install packages at start", "bake the packages into the image, or use engine: rayjob")
    for key in RAY_ONLY_COMPUTE:
        if getattr(compute, key) is not None:
            err(("compute", key), "is for RayJob head/worker pods only", "use compute.cpu_request/memory_request (and *_limit) for a Job")
    if compute.mig_profile:
        err(("compute", "mig_profile"), "is for RayJob only", "remove it or use engine: rayjob")
    if compute.gpu_resource_mode != "device-plugin":
        err(("compute", "gpu_resource_mode"), f"a direct Job supports only device-plugin (got {compute.gpu_resource_mode!r})", "remove gpu_resource_mode or set it to device-plugin")
    if c.run.working_dir:
        err(("run", "working_dir"), "ships a project into Ray runtime_env and is for RayJob only", "use run.source for a Job, or engine: rayjob")
    if c.execution.nodes > 1 and c.execution.launcher != "torchrun":
        err(("execution", "nodes"), f"nodes > 1 needs launcher: torchrun (got launcher {c.execution.launcher or 'python'!r})", "set execution.launcher: torchrun")
    if c.execution.processes_per_node is not None and c.execution.launcher != "torchrun":
        err(("execution", "processes_per_node"), "is for launcher: torchrun only", "set execution.launcher: torchrun or remove it")
    if c.storage.result_pvc and c.storage.result_pvc != c.storage.data_pvc:
        err(("storage", "result_pvc"), f"must equal storage.data_pvc for a Job (got {c.storage.result_pvc!r} vs {c.storage.data_pvc!r})", "remove result_pvc or set it to the data_pvc")
    if c.run.source is not None:
        if not c.run.entrypoint:
            err(("run", "source"), "needs run.entrypoint: the script to run inside the staged source tree", "add entrypoint: path/in/source.py")
        if c.run.working_dir or c.runtime.working_dir:
            err(("run", "source"), "cannot be combined with run.working_dir or runtime.working_dir", "remove the working_dir")


def _check_rayjob_only(c: TauConfig, err: ReportProblem) -> None:
    if c.compute.gpus is not None:
        err(("compute", "gpus"), "is for Job only; a RayJob sets GPUs per worker", "use compute.gpus_per_worker")
    if c.execution.nodes > 1:
        err(("execution", "nodes"), "is for torchrun Jobs only; a RayJob scales with compute.workers", "use compute.workers")
    if c.execution.processes_per_node is not None:
        err(("execution", "processes_per_node"), "is for torchrun Jobs only", "remove it")
    job_only = [
        (("run", "source"), c.run.source is not None),
        (("run", "ttl_seconds_after_finished"), "ttl_seconds_after_finished" in c.run.model_fields_set),
        (("runtime", "working_dir"), c.runtime.working_dir is not None),
        (("policy", "clear_node_selector"), "clear_node_selector" in c.policy.model_fields_set),
        (("storage", "publish"), c.storage.publish is not None),
        (("storage", "image_assets"), bool(c.storage.image_assets)),
    ]
    for path, present in job_only:
        if present:
            err(path, "is for direct Job runs only", "remove it, or set engine: job")
    mode = c.compute.gpu_resource_mode
    if mode in ("nvidia", "dra"):
        err(("compute", "gpu_resource_mode"), f"a RayJob supports device-plugin or mig (got {mode!r})", "use device-plugin or mig")
    if mode == "mig" and not c.compute.mig_profile:
        err(("compute", "mig_profile"), "is required when gpu_resource_mode is mig", "set e.g. mig_profile: 1g.18gb")
    if c.compute.mig_profile and mode != "mig":
        err(("compute", "mig_profile"), "needs gpu_resource_mode: mig", "set compute.gpu_resource_mode: mig")
    if not c.run.entrypoint:
        err(("run", "entrypoint"), "is required for a RayJob", "set entrypoint: train.py (relative to this file)")


def _check_launcher(c: TauConfig, engine: str, err: ReportProblem) -> None:
    launcher = c.execution.launcher
    if launcher is None:
        return
    allowed = ("python", "torchrun") if engine == "job" else ("ray-train", "ray-tune")
    if launcher not in allowed:
        err(("execution", "launcher"), f"{launcher!r} is not a {engine} launcher; use one of {', '.join(allowed)}", "change the launcher or the engine")


def _check_env(c: TauConfig, err: ReportProblem) -> None:
    total = 0
    allow_nccl = c.execution.allow_nccl_override
    for section, mapping in (("env", c.runtime.env), ("env_secret", c.runtime.env_secret)):
        for name, value in mapping.items():
            path = ("runtime", section, name)
            if not ENV_NAME.match(name):
                err(path, f"{name!r} is not a valid environment variable name", "use letters, digits, '_', '-' or '.', not starting with a digit")
                continue
            if name in ("MASTER_ADDR", "MASTER_PORT"):
                err(path, f"{name} is reserved: tau sets it for distributed launch", "remove it")
            elif name.startswith("NCCL_") and not allow_nccl:
                err(path, f"{name} is reserved: NCCL_* variables are set by the platform", "remove it, or set execution.allow_nccl_override: true")
            elif name.startswith("TAU_") and name not in TAU_ENV_ALLOWED:
                err(path, f"{name} is reserved: TAU_* is set by tau", "rename it; only TAU_RESUME_FROM, TAU_RETRY_ATTEMPT, TAU_RETRY_MAX and TAU_RETRY_REASON may be set")
            if section == "env":
                size = len(value.encode())
                total += len(name.encode()) + size
                if size > MAX_ENV_VALUE_BYTES:
                    err(path, f"value is {size} bytes; the limit is {MAX_ENV_VALUE_BYTES} (64 KiB)", "move large data to a file on storage")
            else:
                secret, sep, key = value.partition(":")
                if not sep or not DNS_SUBDOMAIN.match(secret) or not SECRET_KEY.match(key):
                    err(path, f"must be SECRET_NAME:KEY (got {value!r})", "e.g. HF_TOKEN: hf-credentials:token")
                if name in c.runtime.env:
                    err(path, f"{name} is set in both runtime.env and runtime.env_secret", "keep one of them")
    if total > MAX_ENV_TOTAL_BYTES:
        err(("runtime", "env"), f"names and values total {total} bytes; the limit is {MAX_ENV_TOTAL_BYTES} (128 KiB)", "move large values to a file on storage")


def _check_paths(loaded: LoadedConfig, err: ReportProblem) -> None:
    c = loaded.config
    entry = c.run.entrypoint
    if entry is not None:
        if not is_clean_relative(entry):
            err(("run", "entrypoint"), f"must be a clean relative path without '..' (got {entry!r})", "give the script path relative to this tau.yaml")
        elif c.run.source is None:
            # With a project directory the entrypoint is relative to it.
            folder = loaded.base_dir / (c.run.working_dir or ".")
            if not (folder / entry).is_file():
                err(("run", "entrypoint"), f"file {entry!r} not found in {folder}", "create it or fix the path")
    if c.run.source is not None:
        if not PINNED_IMAGE.match(c.run.source.image):
            err(("run", "source", "image"), f"must be pinned by digest: name@sha256:<64 lowercase hex> (got {c.run.source.image!r})", "pin the source image digest")
        if c.run.source.path is not None and not is_clean_absolute(c.run.source.path):
            err(("run", "source", "path"), f"must be a clean absolute path inside the source image (got {c.run.source.path!r})", "e.g. /src")
    if c.runtime.working_dir is not None and not is_clean_absolute(c.runtime.working_dir):
        err(("runtime", "working_dir"), f"must be a clean absolute path (got {c.runtime.working_dir!r})", "e.g. /workspace")
    if c.run.working_dir is not None:
        if not is_clean_relative(c.run.working_dir) and c.run.working_dir != ".":
            err(("run", "working_dir"), f"must be a clean relative path (got {c.run.working_dir!r})", "give the project directory relative to this tau.yaml")
        elif not (loaded.base_dir / c.run.working_dir).is_dir():
            err(("run", "working_dir"), f"directory {c.run.working_dir!r} not found next to {loaded.file}", "fix the path")


def _check_storage(c: TauConfig, engine: str, err: ReportProblem) -> None:
    s = c.storage
    for key in ("data_pvc", "result_pvc"):
        value = getattr(s, key)
        if value is not None and not DNS_SUBDOMAIN.match(value):
            err(("storage", key), f"{value!r} is not a valid PVC name", "use the name of an existing PersistentVolumeClaim")
    if s.checkpoint is not None and not is_clean_relative(s.checkpoint):
        err(("storage", "checkpoint"), f"must be a relative path inside the checkpoint directory, without '..' (got {s.checkpoint!r})", "e.g. final")
    if s.output is not None and not s.output.startswith("/"):
        err(("storage", "output"), f"must be an absolute path (got {s.output!r})", "e.g. /data/outputs/my-run")
    if s.output is not None and s.output.startswith("/data") and not s.data_pvc:
        err(("storage", "output"), "is under /data but no storage.data_pvc is mounted there", "set storage.data_pvc")
    names: set[str] = set()
    for index, asset in enumerate(s.image_assets):
        path = ("storage", "image_assets", index)
        if not DNS_LABEL.match(asset.name) or asset.name in names:
            err(path + ("name",), f"must be a unique DNS label (got {asset.name!r})", "rename the asset")
        names.add(asset.name)
        if not PINNED_IMAGE.match(asset.image):
            err(path + ("image",), f"must be pinned by digest: name@sha256:<64 lowercase hex> (got {asset.image!r})", "pin the asset image digest")
        if not is_clean_absolute(asset.source_path):
            err(path + ("source_path",), f"must be a clean absolute path (got {asset.source_path!r})", "the path inside the asset image")
        if not is_clean_absolute(asset.mount_path):
            err(path + ("mount_path",), f"must be a clean absolute path (got {asset.mount_path!r})", "e.g. /models/base")
        else:
            clash = next((r for r in RESERVED_MOUNTS if mounts_overlap(asset.mount_path, r)), None)
            if clash:
                err(path + ("mount_path",), f"overlaps the reserved mount {clash}", "mount the asset somewhere else, e.g. /assets/" + asset.name)
    for key in ("volumes", "mounts"):
        for index, spec in enumerate(getattr(s, key)):
            match = PVC_MOUNT_SPEC.match(spec)
            if not match:
                err(("storage", key, index), f"must be CLAIM:/mount/path[:ro] (got {spec!r})", "only PersistentVolumeClaims can be mounted")
            elif any(mounts_overlap(match["path"], r) for r in RESERVED_MOUNTS):
                err(("storage", key, index), f"mount path {match['path']} overlaps a reserved mount", "choose another mount path")


def _check_policy(c: TauConfig, err: ReportProblem) -> None:
    p = c.policy
    if p.gpu_class is not None and p.gpu_class not in GPU_CLASSES:
        err(("policy", "gpu_class"), f"unknown GPU class {p.gpu_class!r}", "one of " + ", ".join(GPU_CLASSES))
    if p.topology is not None and p.topology not in PLACEMENTS and p.topology not in LEGACY_PLACEMENTS:
        err(("policy", "topology"), f"unknown placement {p.topology!r}", "one of " + ", ".join(PLACEMENTS))
    if p.namespace is not None and not DNS_LABEL.match(p.namespace):
        err(("policy", "namespace"), f"{p.namespace!r} is not a valid namespace name", "lowercase letters, digits and '-'")
    if p.queue is not None and p.queue != "auto" and not DNS_SUBDOMAIN.match(p.queue):
        err(("policy", "queue"), f"{p.queue!r} is not a valid LocalQueue name", "use the LocalQueue name, or auto")
    if p.workload_profile_snapshot is not None:
        for key in ("namespace", "team", "lane"):
            if getattr(p, key) is None:
                err(("policy", key), "is required when policy.workload_profile_snapshot is set", f"set policy.{key} explicitly: an offline snapshot cannot discover it")
    for name, value in p.node_selector.items():
        if not value and value != "":
            err(("policy", "node_selector", name), "must be a string", "quote the value")


def _check_metrics(c: TauConfig, engine: str, err: ReportProblem) -> None:
    m = c.metrics
    for index, entry in enumerate(m.history):
        if entry.startswith("/") and not (entry == "/data" or entry.startswith("/data/")):
            err(("metrics", "history", index), f"absolute history paths must be under /data (got {entry!r})", "use a path relative to storage.output, or under /data")
        if ".." in entry.split("/"):
            err(("metrics", "history", index), f"must not contain '..' (got {entry!r})", "use a path inside the output directory")
    if m.offload.enabled:
        needs = [
            (("metrics", "history"), bool(m.history), "add a metrics.history entry"),
            (("experiment", "project"), bool(c.experiment.project), "set experiment.project"),
            (("experiment", "name"), bool(c.experiment.name), "set experiment.name"),
            (("run", "entrypoint"), bool(c.run.entrypoint), "set run.entrypoint"),
        ]
        for path, ok, hint in needs:
            if not ok:
                err(("metrics", "offload", "enabled"), f"offload needs {'.'.join(path)}", hint)
        if engine == "job" and c.execution.nodes > 1:
            err(("metrics", "offload", "enabled"), "offload needs a single-pod Job (execution.nodes is > 1)", "disable offload or run on one node")


def _check_resilience(c: TauConfig, err: ReportProblem) -> None:
    r = c.resilience
    if len(set(r.retry_on)) != len(r.retry_on):
        err(("resilience", "retry_on"), "lists a reason twice", "list each reason once")
    if GO_DURATION.match(r.backoff_initial) and GO_DURATION.match(r.backoff_max):
        if duration_seconds(r.backoff_initial) > duration_seconds(r.backoff_max):
            err(("resilience", "backoff_initial"), f"({r.backoff_initial}) is longer than backoff_max ({r.backoff_max})", "make backoff_initial <= backoff_max")
    if r.checkpoint_path is not None and not is_clean_absolute(r.checkpoint_path):
        err(("resilience", "checkpoint_path"), f"must be a clean absolute path (got {r.checkpoint_path!r})", "e.g. /data/checkpoints/my-run")


def _check_profiler(c: TauConfig, err: ReportProblem) -> None:
    rank = c.profiler.rank
    if rank != "all" and not re.fullmatch(r"[0-9]+(,[0-9]+)*", rank):
        err(("profiler", "rank"), f"must be a rank, a comma-separated list such as 0,8, or all (got {rank!r})", "e.g. rank: 0")
