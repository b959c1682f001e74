"""`profiler.*`: the Nsight profiler contract TauGrid renders (workloadmeta's `tau.azure.com/profile-*`
annotations and the `TAU_PROFILE_*` environment the image's launcher reads), and its rules.

The annotations share a prefix with the `tau.azure.com/profile` label (the workload profile) by
accident; they are a different contract.  The profile is written next to the run's output on the
data PVC (`<output>/profile`), so a profiler without `storage.data_pvc` would write into a pod that
is gone when the run ends: it is refused, never rendered to nowhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import DiagnosticError, shown
from tau_tui.core.runconfig.resolve import Resolution
from tau_tui.core.runconfig.schema import GO_DURATION, TauConfig

TAU = "tau.azure.com"
ANNOTATIONS = {key: f"{TAU}/profile-{key}" for key in ("mode", "path", "pvc", "rank", "world-size", "warmup", "duration")}
EXTENSIONS = {"nsys": "nsys-rep", "ncu": "ncu-rep"}
RANKS = re.compile(r"[0-9]+(,[0-9]+)*")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

ReportProblem = Callable[[tuple[Any, ...], str, str], None]


def seconds_of(text: str) -> float:
    return sum(float(n) * _UNITS[u] for n, _, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", text))


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration.String`` writes it for whole seconds: 90 -> 1m30s, 0 -> 0s."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _duration_text(text: str, seconds: float) -> str:
    return go_duration(seconds) if seconds == int(seconds) else text


def output_dir(c: TauConfig, output: str | None) -> str:
    """The run's output directory: ``storage.output`` (or the workspace's), else ``/data/<name>``."""
    return (output or f"/data/{c.run.name}").rstrip("/")


def check_profiler(c: TauConfig, engine: str, err: ReportProblem) -> None:
    p = c.profiler
    bad_rank = p.rank != "all" and not RANKS.fullmatch(p.rank)
    if bad_rank:
        err(("profiler", "rank"), f"must be a rank, a comma-separated list such as 0,8, or all (got {shown(p.rank)})", "e.g. rank: 0")
    if p.mode is None:
        # Without a mode nothing is profiled: a rank, warmup or duration alone would be silently dropped.
        for key in ("rank", "warmup", "duration"):
            if key in p.model_fields_set and not (key == "rank" and bad_rank):
                err(("profiler", key), "does nothing without profiler.mode", "set profiler.mode: nsys (or ncu), or remove this key")
        return
    if not c.storage.data_pvc:
        err(("profiler", "mode"), "needs storage.data_pvc: the profile is written to <output>/profile on the data PVC, "
            "and a pod's own disk is gone when the run ends", "set storage.data_pvc to a Bound PVC, or remove profiler")
    if engine == "job" and c.execution.launcher == "torchrun":
        err(("profiler", "mode"), "cannot be combined with launcher: torchrun (the profiler wraps the python launcher)",
            "use launcher: python for a profiled run, or remove profiler")
    if engine == "rayjob":
        if p.mode != "nsys":
            err(("profiler", "mode"), f"RayJob actor profiling supports nsys only (got {shown(p.mode)})", "set profiler.mode: nsys")
        if p.duration is None:
            err(("profiler", "duration"), "is required for RayJob actor profiling", "e.g. duration: 60s")
    if p.duration is not None and GO_DURATION.match(p.duration) and seconds_of(p.duration) <= 0:
        err(("profiler", "duration"), f"must be longer than 0 (got {shown(p.duration)})", "e.g. duration: 60s")


def world_size(loaded: LoadedConfig, r: Resolution) -> int:
    """Ranks of the run: nodes x processes per node for a Job, workers x GPUs per worker for a RayJob."""
    if loaded.engine == "job":
        return r.nodes * (loaded.config.execution.processes_per_node or max(r.gpus, 1))
    return r.workers * max(r.gpus_per_worker, 1)


def profiler_contract(loaded: LoadedConfig, r: Resolution) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The env for the run's containers and the annotations for its object; both empty without a mode.
    A rank at or beyond the world size (known only once the profile decided the GPUs) is refused."""
    c = loaded.config
    p = c.profiler
    if p.mode is None:
        return [], {}
    size = world_size(loaded, r)
    if p.rank != "all" and (too_high := [rank for rank in p.rank.split(",") if int(rank) >= size]):
        raise DiagnosticError([loaded.diagnostic(("profiler", "rank"), f"rank {too_high[0]} does not exist: the run has "
                                                 f"{size} rank(s), 0 to {size - 1}", f"pick ranks below {size}, or all")])
    out_dir = output_dir(c, r.output) + "/profile"
    extension = EXTENSIONS[p.mode]
    warmup = seconds_of(p.warmup) if p.warmup else 0.0
    active = seconds_of(p.duration) if p.duration else 0.0
    env = {
        "TAU_PROFILE_MODE": p.mode,
        "TAU_PROFILE_TOOL": p.mode,
        "TAU_PROFILE_RANK": p.rank,
        "TAU_PROFILE_OUT_DIR": out_dir,
        "TAU_PROFILE_RUN_ID": str(c.run.name),
        "TAU_PROFILE_NAMESPACE": r.namespace,
        "TAU_PROFILE_EXT": extension,
        "TAU_PROFILE_WORLD_SIZE": str(size),
        "TAU_PROFILE_WARMUP_SEC": str(math.ceil(warmup)),
        "TAU_PROFILE_ACTIVE_SEC": str(math.ceil(active)),
    }
    if p.rank == "all" or "," in p.rank:
        env["TAU_PROFILE_OUT_PATTERN"] = f"{out_dir}/rank-<rank>.{extension}"
    else:
        env["TAU_PROFILE_OUT"] = f"{out_dir}/rank-{p.rank}.{extension}"
    notes = {
        ANNOTATIONS["mode"]: p.mode,
        ANNOTATIONS["path"]: out_dir,
        ANNOTATIONS["pvc"]: str(c.storage.data_pvc),
        ANNOTATIONS["rank"]: p.rank,
        ANNOTATIONS["world-size"]: str(size),
    }
    if p.warmup is not None:
        notes[ANNOTATIONS["warmup"]] = _duration_text(p.warmup, warmup)
    if p.duration is not None:
        notes[ANNOTATIONS["duration"]] = _duration_text(p.duration, active)
    return [{"name": k, "value": v} for k, v in env.items()], notes
