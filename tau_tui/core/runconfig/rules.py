"""Cross-field rules of the direct run config (taugrid.md §1.2 and §1.3).

Each rule adds one Diagnostic per problem, pointing at the key that has to change.
"""

from __future__ import annotations

import posixpath
import re
import stat
from collections.abc import Callable
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import Diagnostic, shown
from tau_tui.core.runconfig.image_tags import image_tag_warnings
from tau_tui.core.runconfig.key_scope import check_key_scope
from tau_tui.core.runconfig.metrics_offload import check_metrics
from tau_tui.core.runconfig.profiler import check_profiler
from tau_tui.core.runconfig.schema import GO_DURATION, GPU_CLASSES, LEGACY_PLACEMENTS, PLACEMENTS, TauConfig
from tau_tui.core.runconfig.yamlsource import FileRefused, file_mode, resolve_inside

# err(path, message, hint): records one Diagnostic at the key path.
ReportProblem = Callable[[tuple[Any, ...], str, str], None]

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# RFC 1123 subdomain as Kubernetes checks it: dot-separated labels, so `a..b` and `a.-b` are not names.
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_DNS_LABEL = 63
MAX_DNS_SUBDOMAIN = 253
# A label value (queue, team, workspace, experiment): at most 63 characters of this shape, or empty.
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
MAX_LABEL_VALUE = 63
# The OCI distribution reference grammar (distribution/reference regexp.go), ASCII only.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_DOMAIN = r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
IMAGE_REFERENCE = re.compile(
    rf"^(?P<name>(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,128}))?$",
    re.ASCII,
)
MAX_IMAGE_NAME = 255
# Paths that end up inside `sh -c` in the rendered pod: no spaces, quotes, `;`, `$` or control characters.
SHELL_SAFE_PATH = re.compile(r"^[A-Za-z0-9._+@=,/-]+$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
PINNED_IMAGE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
MAX_ENV_VALUE_BYTES = 64 * 1024
MAX_ENV_TOTAL_BYTES = 128 * 1024
ASSET_PREFIX = "tau-asset-"  # the asset's volume and init container are named tau-asset-<name>
MAX_RAYJOB_NAME = 47  # KubeRay derives longer child names from it.
MAX_JOB_NAME = 63
HEADLESS_SUFFIX = "-headless"
TAU_ENV_ALLOWED = {"TAU_RESUME_FROM", "TAU_RETRY_ATTEMPT", "TAU_RETRY_MAX", "TAU_RETRY_REASON"}
RESERVED_MOUNTS = ("/data", "/mnt", "/script", "/manifest", "/tmp", "/dev/shm", "/var/run/tau", "/tau/source")
PVC_MOUNT_SPEC = re.compile(r"^(?P<claim>[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*):(?P<path>/[^:]*)(:(?P<mode>ro|rw))?$")
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


def is_dns_label(name: str) -> bool:
    return len(name) <= MAX_DNS_LABEL and bool(DNS_LABEL.match(name))


def is_dns_subdomain(name: str) -> bool:
    return len(name) <= MAX_DNS_SUBDOMAIN and bool(DNS_SUBDOMAIN.match(name))


def is_label_value(value: str) -> bool:
    return len(value) <= MAX_LABEL_VALUE and bool(LABEL_VALUE.match(value))


def is_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return False
    return len(name) <= MAX_LABEL_VALUE and bool(LABEL_NAME.match(name))


def image_problem(image: str) -> str | None:
    """Why `image` is not an OCI image reference, or None when it is one."""
    match = IMAGE_REFERENCE.match(image) if len(image) <= MAX_IMAGE_NAME + 300 else None
    if match is None:
        return f"is not an image reference such as registry.example.com/team/app:1.0 (got {shown(image)})"
    first, slash, _ = match["name"].partition("/")
    if slash and not any(ch in first for ch in ".:") and first != "localhost" and not re.fullmatch(_PATH_COMPONENT, first):
        # Without a '.', ':' or localhost the first part is a repository path, which must be lowercase.
        return f"is not an image reference: {shown(first)} is neither a registry host nor a lowercase repository name"
    if len(match["name"]) > MAX_IMAGE_NAME:
        return f"has a repository name of {len(match['name'])} characters; the limit is {MAX_IMAGE_NAME}"
    return None


def _has_control(path: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path)


def is_clean_relative(path: str) -> bool:
    return bool(path) and not _has_control(path) and not path.startswith("/") and posixpath.normpath(path) == path and not path.startswith("..")


def is_clean_absolute(path: str) -> bool:
    return path.startswith("/") and not _has_control(path) and posixpath.normpath(path) == path


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
            err(path, f"{shown(value)} conflicts with {'.'.join(explicit[0][0])}={shown(explicit[0][1])}", "set the engine in one place only")

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
    check_metrics(c, engine, err)
    check_key_scope(c, engine, err, is_label_value)
    _check_resilience(c, err)
    check_profiler(c, engine, err)
    if loaded.origins.get(("experiment", "name")) == ("experiment", "title"):
        out.append(loaded.diagnostic(("experiment", "name"), "experiment.title is deprecated; read as experiment.name",
                                     "rename experiment.title to experiment.name", severity="warning"))
    out += image_tag_warnings(loaded)
    return out


def _check_name(c: TauConfig, engine: str, err: ReportProblem) -> None:
    name = c.run.name
    if not name:
        err(("run", "name"), "is required", "add `name: my-run` (lowercase letters, digits and '-')")
        return
    if not DNS_LABEL.match(name):
        err(("run", "name"), f"must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit (got {shown(name)})", "rename the run, e.g. " + repr(re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "my-run"))
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
        err(("compute", "gpu_resource_mode"), f"a direct Job supports only device-plugin (got {shown(compute.gpu_resource_mode)})", "remove gpu_resource_mode or set it to device-plugin")
    if c.run.working_dir:
        err(("run", "working_dir"), "ships a project into Ray runtime_env and is for RayJob only", "use run.source for a Job, or engine: rayjob")
    if c.execution.nodes > 1 and c.execution.launcher != "torchrun":
        err(("execution", "nodes"), f"nodes > 1 needs launcher: torchrun (got launcher {shown(c.execution.launcher or 'python')})", "set execution.launcher: torchrun")
    if c.execution.processes_per_node is not None and c.execution.launcher != "torchrun":
        err(("execution", "processes_per_node"), "is for launcher: torchrun only", "set execution.launcher: torchrun or remove it")
    if c.storage.result_pvc and c.storage.result_pvc != c.storage.data_pvc:
        err(("storage", "result_pvc"), f"must equal storage.data_pvc for a Job (got {shown(c.storage.result_pvc)} vs {shown(c.storage.data_pvc)})", "remove result_pvc or set it to the data_pvc")
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
        err(("compute", "gpu_resource_mode"), f"a RayJob supports device-plugin or mig (got {shown(mode)})", "use device-plugin or mig")
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
        err(("execution", "launcher"), f"{shown(launcher)} is not a {engine} launcher; use one of {', '.join(allowed)}", "change the launcher or the engine")


def _check_env(c: TauConfig, err: ReportProblem) -> None:
    total = 0
    allow_nccl = c.execution.allow_nccl_override
    for section, mapping in (("env", c.runtime.env), ("env_secret", c.runtime.env_secret)):
        for name, value in mapping.items():
            path = ("runtime", section, name)
            if not ENV_NAME.match(name) or len(name) > MAX_DNS_SUBDOMAIN:
                err(path, f"{shown(name)} is not a valid environment variable name", "use letters, digits, '_', '-' or '.', not starting with a digit")
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
                if not sep or not is_dns_subdomain(secret) or not SECRET_KEY.match(key) or len(key) > MAX_DNS_SUBDOMAIN:
                    err(path, f"must be SECRET_NAME:KEY (got {shown(value)})", "e.g. HF_TOKEN: hf-credentials:token")
                if name in c.runtime.env:
                    err(path, f"{name} is set in both runtime.env and runtime.env_secret", "keep one of them")
    if total > MAX_ENV_TOTAL_BYTES:
        err(("runtime", "env"), f"names and values total {total} bytes; the limit is {MAX_ENV_TOTAL_BYTES} (128 KiB)", "move large values to a file on storage")


def _check_paths(loaded: LoadedConfig, err: ReportProblem) -> None:
    c = loaded.config
    entry = c.run.entrypoint
    project_ok = True
    if c.run.working_dir is not None:
        if not is_clean_relative(c.run.working_dir) and c.run.working_dir != ".":
            err(("run", "working_dir"), f"must be a clean relative path (got {shown(c.run.working_dir)})", "give the project directory relative to this tau.yaml")
            project_ok = False
        else:
            problem = _local_problem(loaded, c.run.working_dir, True, f"not found next to {loaded.file}")
            if problem:
                err(("run", "working_dir"), f"directory {shown(c.run.working_dir)} {problem[0]}", problem[1])
                project_ok = False
    if entry is not None:
        if not is_clean_relative(entry):
            err(("run", "entrypoint"), f"must be a clean relative path without '..' (got {shown(entry)})", "give the script path relative to this tau.yaml")
        elif not SHELL_SAFE_PATH.match(entry):
            err(("run", "entrypoint"), f"may use only letters, digits and . _ + @ = , / - (got {shown(entry)})", "rename the script: the path is used in the pod's start command")
        elif c.run.source is None and project_ok:
            # With a project directory the entrypoint is relative to it.
            relative = posixpath.join(c.run.working_dir, entry) if c.run.working_dir else entry
            problem = _local_problem(loaded, relative, False, f"not found in {loaded.base_dir / (c.run.working_dir or '.')}")
            if problem:
                err(("run", "entrypoint"), f"file {shown(entry)} {problem[0]}", problem[1])
    if c.run.source is not None:
        if not PINNED_IMAGE.match(c.run.source.image):
            err(("run", "source", "image"), f"must be pinned by digest: name@sha256:<64 lowercase hex> (got {shown(c.run.source.image)})", "pin the source image digest")
        elif image_problem(c.run.source.image):
            err(("run", "source", "image"), str(image_problem(c.run.source.image)), "use registry/repository@sha256:<digest>")
        if c.run.source.path is not None and not (is_clean_absolute(c.run.source.path) and SHELL_SAFE_PATH.match(c.run.source.path)):
            err(("run", "source", "path"), f"must be a clean absolute path inside the source image (got {shown(c.run.source.path)})", "e.g. /src")
    if c.runtime.working_dir is not None and not is_clean_absolute(c.runtime.working_dir):
        err(("runtime", "working_dir"), f"must be a clean absolute path (got {shown(c.runtime.working_dir)})", "e.g. /workspace")
    if c.runtime.image is not None and image_problem(c.runtime.image):
        err(("runtime", "image"), str(image_problem(c.runtime.image)), "use an image reference such as python:3.12-slim or registry/repository:tag")


def _local_problem(loaded: LoadedConfig, relative: str, directory: bool, missing: str) -> tuple[str, str] | None:
    """What is wrong with a local path the payload would carry: (message, hint), or None.

    stat only, never a read: the renderer reads with a byte bound, after the same checks."""
    try:
        path = resolve_inside(loaded.base_dir, relative)
        mode = file_mode(path)
    except FileRefused as refused:
        if refused.message == "file not found":
            return missing, "fix the path" if directory else "create it or fix the path"
        return f"cannot be used: {refused.message}", refused.hint
    if directory and not stat.S_ISDIR(mode):
        return f"is not a directory (next to {loaded.file})", "fix the path"
    if not directory and not stat.S_ISREG(mode):
        return "is not a regular file", "point at the script file itself; a FIFO, device or directory cannot be sent"
    return None


def _check_storage(c: TauConfig, engine: str, err: ReportProblem) -> None:
    s = c.storage
    for key in ("data_pvc", "result_pvc"):
        value = getattr(s, key)
        if value is not None and not is_dns_subdomain(value):
            err(("storage", key), f"{shown(value)} is not a valid PVC name", "use the name of an existing PersistentVolumeClaim: lowercase letters, digits, '-' and '.', at most 253 characters")
    if s.checkpoint is not None and not is_clean_relative(s.checkpoint):
        err(("storage", "checkpoint"), f"must be a relative path inside the checkpoint directory, without '..' (got {shown(s.checkpoint)})", "e.g. final")
    if s.output is not None and not s.output.startswith("/"):
        err(("storage", "output"), f"must be an absolute path (got {shown(s.output)})", "e.g. /data/outputs/my-run")
    if s.output is not None and s.output.startswith("/data") and not s.data_pvc:
        err(("storage", "output"), "is under /data but no storage.data_pvc is mounted there", "set storage.data_pvc")
    names: set[str] = set()
    for index, asset in enumerate(s.image_assets):
        path = ("storage", "image_assets", index)
        if not is_dns_label(f"{ASSET_PREFIX}{asset.name}") or asset.name in names:
            err(path + ("name",), f"must be a unique DNS label of at most {MAX_DNS_LABEL - len(ASSET_PREFIX)} characters (got {shown(asset.name)})", "rename the asset")
        names.add(asset.name)
        if not PINNED_IMAGE.match(asset.image):
            err(path + ("image",), f"must be pinned by digest: name@sha256:<64 lowercase hex> (got {shown(asset.image)})", "pin the asset image digest")
        elif image_problem(asset.image):
            err(path + ("image",), str(image_problem(asset.image)), "use registry/repository@sha256:<digest>")
        if not (is_clean_absolute(asset.source_path) and SHELL_SAFE_PATH.match(asset.source_path)):
            err(path + ("source_path",), f"must be a clean absolute path (got {shown(asset.source_path)})", "the path inside the asset image")
        if not is_clean_absolute(asset.mount_path):
            err(path + ("mount_path",), f"must be a clean absolute path (got {shown(asset.mount_path)})", "e.g. /models/base")
        else:
            clash = next((r for r in RESERVED_MOUNTS if mounts_overlap(asset.mount_path, r)), None)
            if clash:
                err(path + ("mount_path",), f"overlaps the reserved mount {clash}", "mount the asset somewhere else, e.g. /assets/" + asset.name)
    for key in ("volumes", "mounts"):
        for index, spec in enumerate(getattr(s, key)):
            match = PVC_MOUNT_SPEC.match(spec)
            if not match:
                err(("storage", key, index), f"must be CLAIM:/mount/path[:ro] (got {shown(spec)})", "only PersistentVolumeClaims can be mounted")
            elif not is_dns_subdomain(match["claim"]):
                err(("storage", key, index), f"the claim name is {len(match['claim'])} characters; a PVC name has at most {MAX_DNS_SUBDOMAIN}", "use the name of an existing PersistentVolumeClaim")
            elif any(mounts_overlap(match["path"], r) for r in RESERVED_MOUNTS):
                err(("storage", key, index), f"mount path {match['path']} overlaps a reserved mount", "choose another mount path")


def _check_policy(c: TauConfig, err: ReportProblem) -> None:
    p = c.policy
    if p.gpu_class is not None and p.gpu_class not in GPU_CLASSES:
        err(("policy", "gpu_class"), f"unknown GPU class {shown(p.gpu_class)}", "one of " + ", ".join(GPU_CLASSES))
    if p.topology is not None and p.topology not in PLACEMENTS and p.topology not in LEGACY_PLACEMENTS:
        err(("policy", "topology"), f"unknown placement {shown(p.topology)}", "one of " + ", ".join(PLACEMENTS))
    if p.namespace is not None and not is_dns_label(p.namespace):
        err(("policy", "namespace"), f"{shown(p.namespace)} is not a valid namespace name", "lowercase letters, digits and '-', at most 63 characters")
    # The queue name is also the value of the kueue.x-k8s.io/queue-name label: a subdomain of at most 63 characters.
    if p.queue is not None and p.queue != "auto" and not (is_dns_subdomain(p.queue) and len(p.queue) <= MAX_LABEL_VALUE):
        err(("policy", "queue"), f"{shown(p.queue)} is not a valid LocalQueue name", "use the LocalQueue name (lowercase letters, digits, '-' and '.', at most 63 characters), or auto")
    for key in ("workload_priority_class", "pod_priority_class"):
        value = getattr(p, key)
        limit = MAX_LABEL_VALUE if key == "workload_priority_class" else MAX_DNS_SUBDOMAIN
        if value is not None and not (is_dns_subdomain(value) and len(value) <= limit):
            err(("policy", key), f"{shown(value)} is not a valid PriorityClass name", f"lowercase letters, digits, '-' and '.', at most {limit} characters")
    # These become label values on the Job or RayJob (tau.azure.com/team, /workspace, /experiment).
    for path, value in ((("policy", "team"), p.team), (("policy", "workspace"), p.workspace), (("experiment", "name"), c.experiment.name)):
        if value is not None and not is_label_value(value):
            err(path, f"{shown(value)} cannot be a Kubernetes label value", "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit")
    if p.workload_profile_snapshot is not None:
        for key in ("namespace", "team", "lane"):
            if getattr(p, key) is None:
                err(("policy", key), "is required when policy.workload_profile_snapshot is set", f"set policy.{key} explicitly: an offline snapshot cannot discover it")
    for name, value in p.node_selector.items():
        if not is_label_key(name):
            err(("policy", "node_selector", name), f"{shown(name)} is not a valid label key", "e.g. kubernetes.io/hostname or tier")
        elif not is_label_value(value):
            err(("policy", "node_selector", name), f"{shown(value)} is not a valid label value", "at most 63 letters, digits, '-', '_' and '.'")


def _check_resilience(c: TauConfig, err: ReportProblem) -> None:
    r = c.resilience
    if len(set(r.retry_on)) != len(r.retry_on):
        err(("resilience", "retry_on"), "lists a reason twice", "list each reason once")
    if GO_DURATION.match(r.backoff_initial) and GO_DURATION.match(r.backoff_max):
        if duration_seconds(r.backoff_initial) > duration_seconds(r.backoff_max):
            err(("resilience", "backoff_initial"), f"({r.backoff_initial}) is longer than backoff_max ({r.backoff_max})", "make backoff_initial <= backoff_max")
    if r.checkpoint_path is not None and not is_clean_absolute(r.checkpoint_path):
        err(("resilience", "checkpoint_path"), f"must be a clean absolute path (got {shown(r.checkpoint_path)})", "e.g. /data/checkpoints/my-run")
