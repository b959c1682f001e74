"""No silent keys (issue 45): every key of the `tau.yaml` schema changes the rendered manifests, is
refused with a message naming it, or is listed as client-only (`core/runconfig/client_only.py`, with
the reason).  The walk reads the keys from the pydantic models, so a key added to the schema without
a sample here fails the first test.

Each sample renders a base config, then the base with the key set, through the same pipeline as
`tau-tui render` (profile-less cluster unless the sample needs a profile), and compares."""

from __future__ import annotations

import copy
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from tau_tui.core.runconfig.client_only import CLIENT_ONLY_KEYS
from tau_tui.core.runconfig.config import ALIASES, FIELD_STATUS
from tau_tui.core.runconfig.diagnostics import DiagnosticError
from tau_tui.core.runconfig.loader import load_config
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import load_snapshot
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.core.runconfig.schema import TauConfig

DATA = Path(__file__).resolve().parents[1] / "data" / "profiles"
OFFLOAD_IMAGE = "registry.example/taugrid-portal@sha256:" + "a" * 64
PINNED_SOURCE = "registry.example/src@sha256:" + "0" * 64

BASES: dict[str, dict[str, Any]] = {
    "job": {"run": {"name": "walk", "entrypoint": "train.py"}, "runtime": {"image": "python:3.12-slim"},
            "compute": {"gpus": 1}, "policy": {"namespace": "ns1", "queue": "q1"}},
    "rayjob": {"run": {"name": "walkray", "engine": "rayjob", "entrypoint": "train.py"},
               "runtime": {"image": "python:3.12-slim"}, "policy": {"namespace": "ns1", "queue": "q1"}},
    # A Job whose GPU count comes from policy.shape, so the engine can change without refusing compute.gpus.
    "job_shape": {"run": {"name": "walkshape", "entrypoint": "train.py"}, "runtime": {"image": "python:3.12-slim"},
                  "policy": {"namespace": "ns1", "queue": "q1", "shape": "1xa100-80gb"}},
    "profiled": {"run": {"name": "walkprof", "entrypoint": "train.py"}, "runtime": {"image": "python:3.12-slim"},
                 "policy": {"namespace": "taugrid-default", "lane": "training", "profile": "azure.research.training.l"}},
}
OFFLOAD_CONTEXT = {"metrics": {"history": ["metrics/*.jsonl"]}, "experiment": {"project": "p1", "name": "e1"},
                   "storage": {"data_pvc": "pvc1"}, "policy": {"workspace": "ws1"}}
PROFILER_CONTEXT = {"storage": {"data_pvc": "pvc1"}, "profiler": {"mode": "nsys"}, "compute": {"gpus": 2}}
TUNE_CONTEXT = {"execution": {"launcher": "ray-tune", "metric": "acc"}}

# key: (base, context added to both sides, what the key is set to, expected outcome[, what else the variant needs])
RENDERS, REFUSED = "renders", "refused"
SAMPLES: dict[str, tuple[Any, ...]] = {
    "run.name": ("job", {}, "renamed", RENDERS),
    "run.engine": ("job_shape", {}, "rayjob", RENDERS),
    "run.entrypoint": ("job", {}, "other.py", RENDERS),
    "run.workload_kind": ("job_shape", {}, "rayjob", RENDERS),
    "run.source.image": ("job", {}, PINNED_SOURCE, RENDERS),
    "run.source.path": ("job", {"run": {"source": {"image": PINNED_SOURCE}}}, "/app", RENDERS),
    "run.ttl_seconds_after_finished": ("job", {}, 600, RENDERS),
    "run.working_dir": ("rayjob", {}, "proj", RENDERS),
    "run.working_dir_excludes": ("rayjob", {"run": {"working_dir": "proj"}}, ["skip.py"], RENDERS),
    "runtime.image": ("job", {}, "python:3.13-slim", RENDERS),
    "runtime.working_dir": ("job", {}, "/work", RENDERS),
    "runtime.pip": ("rayjob", {}, ["numpy==2.0"], RENDERS),
    "runtime.env": ("job", {}, {"A": "1"}, RENDERS),
    "runtime.env_secret": ("job", {}, {"B": "creds:token"}, RENDERS),
    "runtime.security.mode": ("job", {}, "restricted", RENDERS),
    "compute.workers": ("rayjob", {}, 3, RENDERS),
    "compute.gpus": ("job", {}, 2, RENDERS),
    "compute.gpus_per_worker": ("rayjob", {}, 2, RENDERS),
    "compute.cpu_workers": ("rayjob", {}, 2, RENDERS),
    "compute.workload_kind": ("job_shape", {}, "rayjob", RENDERS),
    # mig needs both keys; either alone is refused (test_mig_needs_both_keys), together they render.
    "compute.gpu_resource_mode": ("rayjob", {}, "mig", RENDERS, {"compute": {"mig_profile": "1g.18gb"}}),
    "compute.mig_profile": ("rayjob", {"compute": {"gpu_resource_mode": "mig", "mig_profile": "1g.18gb"}}, "2g.35gb", RENDERS),
    **{f"compute.{k}": ("job", {}, "2" if "cpu" in k else "4Gi", RENDERS)
       for k in ("cpu_request", "memory_request", "cpu_limit", "memory_limit")},
    **{f"compute.{role}_{res}_{kind}": ("rayjob", {}, "2" if res == "cpu" else "4Gi", RENDERS)
       for role in ("head", "worker") for res in ("cpu", "memory") for kind in ("request", "limit")},
    "policy.workspace": ("job", {}, "ws1", RENDERS),
    "policy.namespace": ("job", {}, "ns2", RENDERS),
    "policy.profile": ("profiled", {}, "azure.research.training.xl", RENDERS),
    "policy.queue": ("job", {}, "q2", RENDERS),
    "policy.team": ("job", {}, "team1", RENDERS),
    "policy.lane": ("job", {}, "eval", RENDERS),
    "policy.gpu_class": ("job", {}, "a100-80gb", RENDERS),
    "policy.topology": ("job", {}, "same-host", RENDERS),
    "policy.shape": ("job", {}, "1xa100-80gb", RENDERS),
    "policy.preset": ("job", {}, "azure.research.training.l", RENDERS),
    "policy.priority_tier": ("job", {}, "priority", RENDERS),
    "policy.topology_policy": ("job", {}, "packed", REFUSED),
    "policy.workload_priority_class": ("job", {}, "wpc-high", RENDERS),
    "policy.pod_priority_class": ("job", {}, "pc-high", RENDERS),
    "policy.node_selector": ("job", {}, {"pool": "a"}, RENDERS),
    "policy.clear_node_selector": ("job", {}, True, REFUSED),
    "policy.disable_default_priorities": ("job", {}, True, RENDERS),
    "storage.data_pvc": ("job", {}, "pvc1", RENDERS),
    "storage.result_pvc": ("rayjob", {"storage": {"data_pvc": "pvc1"}}, "pvc2", REFUSED),
    "storage.output": ("job", {"storage": {"data_pvc": "pvc1"}}, "/data/out", RENDERS),
    "storage.publish": ("job", {}, "staged", RENDERS),
    "storage.checkpoint": ("job", {}, "ckpt/last", RENDERS),
    "storage.volumes": ("job", {}, ["claim-a:/vol"], RENDERS),
    "storage.mounts": ("job", {}, ["claim-b:/mnt2:ro"], RENDERS),
    "storage.image_assets": ("job", {}, [{"name": "model", "image": PINNED_SOURCE, "source_path": "/m", "mount_path": "/assets/m"}], RENDERS),
    "metrics.history": ("job", {}, ["metrics/*.jsonl"], RENDERS),
    "metrics.offload.enabled": ("job", OFFLOAD_CONTEXT, True, RENDERS),
    "experiment.project": ("job", {}, "p1", RENDERS),
    "experiment.name": ("job", {}, "e1", RENDERS),
    "experiment.group": ("job", {}, "g1", RENDERS),
    "experiment.title": ("job", {}, "e1", RENDERS),
    "execution.launcher": ("job", {}, "torchrun", RENDERS),
    "execution.processes_per_node": ("job", {"execution": {"launcher": "torchrun"}}, 2, RENDERS),
    "execution.nodes": ("job", {"execution": {"launcher": "torchrun"}}, 2, RENDERS),
    "execution.metric": ("rayjob", TUNE_CONTEXT, "loss", RENDERS),
    "execution.mode": ("rayjob", TUNE_CONTEXT, "max", RENDERS),
    "execution.num_samples": ("rayjob", TUNE_CONTEXT, 4, RENDERS),
    "execution.max_concurrent_trials": ("rayjob", TUNE_CONTEXT, 2, RENDERS),
    "execution.configs": ("rayjob", TUNE_CONTEXT, {"lr": [0.1, 0.01]}, RENDERS),
    "resilience.max_retries": ("job", {}, 2, RENDERS),
    "resilience.retry_on": ("job", {}, ["OOMKilled"], RENDERS),
    "resilience.checkpoint_path": ("job", {}, "/data/ck", RENDERS),
    "resilience.backoff_initial": ("job", {}, "10s", RENDERS),
    "resilience.backoff_max": ("job", {}, "10m", RENDERS),
    "profiler.mode": ("job", {"storage": {"data_pvc": "pvc1"}}, "nsys", RENDERS),
    "profiler.rank": ("job", PROFILER_CONTEXT, "1", RENDERS),
    "profiler.warmup": ("job", PROFILER_CONTEXT, "10s", RENDERS),
    "profiler.duration": ("job", PROFILER_CONTEXT, "30s", RENDERS),
}


def schema_keys(model: type[BaseModel] = TauConfig, prefix: str = "") -> set[str]:
    """Every key of the models: nested sections walked, lists and mappings are one key each."""
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        if typing.get_origin(info.annotation) in (list, dict):
            keys.add(f"{prefix}{name}")
            continue
        nested = [a for a in (info.annotation, *typing.get_args(info.annotation)) if isinstance(a, type) and issubclass(a, BaseModel)]
        keys |= schema_keys(nested[0], f"{prefix}{name}.") if nested else {f"{prefix}{name}"}
    return keys


def merged(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def with_key(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    parts = dotted.split(".")
    patch: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        patch = {part: patch}
    return merged(data, patch)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("train.py", "other.py"):
        (tmp_path / name).write_text("print('hi')\n")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text("print('proj')\n")
    (tmp_path / "proj" / "skip.py").write_text("print('skip')\n")
    return tmp_path


def rendered(project: Path, data: dict[str, Any], profiled: bool = False, offload_image: str | None = OFFLOAD_IMAGE):
    path = project / "tau.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    loaded = load_config(path)
    profiles = load_snapshot(DATA / ("snapshot.yaml" if profiled else "empty.yaml"))
    return render_run(loaded, profiles, RenderOptions(None, None, None, metrics_offload_image=offload_image)).manifests


def outcome(project: Path, key: str, sample: tuple[Any, ...]) -> tuple[str, str]:
    base_name, context, value, _, *also = sample
    base = merged(BASES[base_name], context)
    before = rendered(project, base, profiled=base_name == "profiled")
    try:
        variant = merged(with_key(base, key, value), also[0] if also else {})
        after = rendered(project, variant, profiled=base_name == "profiled")
    except DiagnosticError as err:
        named = [d for d in err.diagnostics if d.path == key or d.path.startswith(key + "[")]
        assert named, f"{key}: refused, but no message names it: {[str(d) for d in err.diagnostics]}"
        return REFUSED, named[0].message
    return (RENDERS, "") if after != before else ("unchanged", "")


def test_every_schema_key_has_a_sample_or_is_client_only():
    keys = schema_keys()
    listed = set(SAMPLES) | set(CLIENT_ONLY_KEYS)
    assert keys - listed == set(), f"keys with no sample and not client-only: {sorted(keys - listed)}"
    assert listed - keys == set(), f"samples for keys the schema does not have: {sorted(listed - keys)}"
    assert not set(SAMPLES) & set(CLIENT_ONLY_KEYS)
    assert all(len(why) > 40 for why in CLIENT_ONLY_KEYS.values()), "each client-only key says why"


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_each_key_renders_or_is_refused_by_name(project, key):
    got, why = outcome(project, key, SAMPLES[key])
    assert got == SAMPLES[key][3], f"{key}: {got} {why}"


@pytest.mark.parametrize("key", sorted(k for k in FIELD_STATUS))
def test_keys_of_other_config_shapes_are_refused_by_name(project, key):
    dotted = ".".join(key)
    with pytest.raises(DiagnosticError) as err:
        rendered(project, with_key(BASES["job"], dotted, "x" if len(key) > 1 else {"file": "x"}))
    assert any(d.path == dotted for d in err.value.diagnostics)


@pytest.mark.parametrize("canonical", sorted(ALIASES), ids=lambda k: ".".join(k))
def test_every_alias_renders_as_its_key(project, canonical):
    """`name`, `image`, `script`, `policy.priority`, `experiment.title` ...: written instead of their key,
    they render exactly as the key does."""
    base = BASES["job"]
    value = {("run", "name"): "aliased", ("run", "engine"): "job", ("run", "entrypoint"): "other.py",
             ("runtime", "image"): "python:3.13-slim", ("policy", "priority_tier"): "priority",
             ("experiment", "name"): "e1"}[canonical]
    expected = rendered(project, with_key(base, ".".join(canonical), value))
    for alias in ALIASES[canonical][1:]:
        data = copy.deepcopy(base)
        data.get(canonical[0], {}).pop(canonical[1], None)
        assert rendered(project, with_key(data, ".".join(alias), value)) == expected, alias


def test_mig_needs_both_keys(project):
    for key, value in (("compute.gpu_resource_mode", "mig"), ("compute.mig_profile", "1g.18gb")):
        with pytest.raises(DiagnosticError):
            rendered(project, with_key(BASES["rayjob"], key, value))


def test_offload_without_the_platform_image_is_refused_naming_the_key(project):
    data = merged(BASES["job"], merged(OFFLOAD_CONTEXT, {"metrics": {"offload": {"enabled": True}}}))
    with pytest.raises(DiagnosticError) as err:
        rendered(project, data, offload_image=None)
    (problem,) = err.value.diagnostics
    assert problem.path == "metrics.offload.enabled" and "TAU_METRICS_OFFLOAD_IMAGE" in problem.message


def test_profiler_renders_taugrids_annotations_and_environment(project):
    data = merged(BASES["job"], merged(PROFILER_CONTEXT, {"profiler": {"rank": "all", "warmup": "90s", "duration": "2m"}}))
    job = rendered(project, data)[0]
    notes = job["metadata"]["annotations"]
    assert {k: v for k, v in notes.items() if k.startswith("tau.azure.com/profile-")} == {
        "tau.azure.com/profile-mode": "nsys", "tau.azure.com/profile-path": "/data/walk/profile",
        "tau.azure.com/profile-pvc": "pvc1", "tau.azure.com/profile-rank": "all",
        "tau.azure.com/profile-world-size": "2", "tau.azure.com/profile-warmup": "1m30s",
        "tau.azure.com/profile-duration": "2m0s"}
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TAU_PROFILE_OUT_PATTERN"] == "/data/walk/profile/rank-<rank>.nsys-rep"
    assert env["TAU_PROFILE_WARMUP_SEC"] == "90" and env["TAU_PROFILE_ACTIVE_SEC"] == "120"


@pytest.mark.parametrize(("patch", "key", "phrase"), [
    ({"profiler": {"mode": "nsys"}}, "profiler.mode", "needs storage.data_pvc"),
    ({"profiler": {"rank": "1"}}, "profiler.rank", "does nothing without profiler.mode"),
    ({"profiler": {"mode": "nsys", "rank": "4"}, "storage": {"data_pvc": "p"}}, "profiler.rank", "rank 4 does not exist"),
    ({"profiler": {"mode": "nsys"}, "storage": {"data_pvc": "p"}, "execution": {"launcher": "torchrun"}}, "profiler.mode", "torchrun"),
])
def test_profiler_rules(project, patch, key, phrase):
    with pytest.raises(DiagnosticError) as err:
        rendered(project, merged(BASES["job"], patch))
    assert any(d.path == key and phrase in d.message for d in err.value.diagnostics), [str(d) for d in err.value.diagnostics]


def test_rayjob_profiling_is_nsys_with_a_duration(project):
    with pytest.raises(DiagnosticError) as err:
        rendered(project, merged(BASES["rayjob"], {"storage": {"data_pvc": "p"}, "profiler": {"mode": "ncu"}}))
    paths = {d.path for d in err.value.diagnostics}
    assert paths == {"profiler.mode", "profiler.duration"}


def test_offload_renders_the_sidecar_and_wraps_the_entrypoint(project):
    for base in ("job", "rayjob"):
        data = merged(BASES[base], merged(OFFLOAD_CONTEXT, {"metrics": {"offload": {"enabled": True}}}))
        obj = rendered(project, data)[0]
        if base == "job":
            pod = obj["spec"]["template"]["spec"]
            assert pod["containers"][0]["command"][:2] == ["sh", "-c"]
        else:
            pod = obj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
            assert obj["spec"]["entrypoint"].startswith("sh -c ")
        sidecar = next(c for c in pod["containers"] if c["name"] == "metrics-offload")
        assert sidecar["image"] == OFFLOAD_IMAGE and sidecar["command"] == ["/usr/local/bin/taugrid-portal"]
        args = sidecar["args"]
        assert args[:3] == ["experiment", "offload", "metrics"]
        history = base == "job" and "/data/walk/metrics/*.jsonl" or "/data/walkray/metrics/*.jsonl"
        assert args[args.index("--history") + 1] == history
        assert "tau.azure.com/metrics-session-id" in obj["metadata"]["annotations"]
