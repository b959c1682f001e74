"""Keys that take effect only in some runs: anywhere else they would be accepted and do nothing, so
they are refused there with the reason (issue 45: no silent keys).  The keys that never reach the
rendered objects on purpose are listed, with the reason for each, in `client_only.py`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tau_tui.core.runconfig.diagnostics import shown
from tau_tui.core.runconfig.schema import TauConfig

ReportProblem = Callable[[tuple[Any, ...], str, str], None]

#: execution.* keys read only by the Ray Tune launcher.
TUNE_KEYS = ("metric", "mode", "num_samples", "max_concurrent_trials", "configs")


def check_key_scope(c: TauConfig, engine: str, err: ReportProblem, is_label_value: Callable[[str], bool]) -> None:
    p = c.policy
    if p.topology_policy is not None:
        err(("policy", "topology_policy"), "is a legacy key that TauGrid no longer reads; it would change nothing",
            "remove it; use policy.topology (or a workload profile) for placement")
    if engine == "job" and p.clear_node_selector:
        err(("policy", "clear_node_selector"), "has nothing to clear: tau-tui's workload profiles carry no node selector, "
            "and a profile refuses it anyway", "remove it; policy.node_selector alone decides the nodes")
    if c.execution.launcher != "ray-tune":
        for key in TUNE_KEYS:
            if key in c.execution.model_fields_set:
                err(("execution", key), "is read only by launcher: ray-tune", "set execution.launcher: ray-tune, or remove it")
    elif engine == "rayjob" and not c.execution.metric:
        err(("execution", "metric"), "is required for launcher: ray-tune (the metric the trials are ranked by)", "e.g. metric: val_loss")
    if engine == "job" and c.compute.cpu_workers is not None:
        err(("compute", "cpu_workers"), "is for RayJob only: CPU workers join a Ray cluster", "remove it, or use engine: rayjob")
    if engine == "rayjob" and c.storage.result_pvc and c.storage.result_pvc != c.storage.data_pvc:
        err(("storage", "result_pvc"), f"a second PVC for results cannot be honoured: tau-tui mounts one PVC, storage.data_pvc, "
            f"at /data (got {shown(c.storage.result_pvc)} vs {shown(c.storage.data_pvc)})", "remove result_pvc or set it to the data_pvc")
    # These become label values on the object (tau.azure.com/stellar-*, /preset, /shape).
    for path, value in ((("experiment", "project"), c.experiment.project), (("experiment", "group"), c.experiment.group),
                        (("policy", "preset"), p.preset), (("policy", "shape"), p.shape)):
        if value is not None and not is_label_value(value):
            err(path, f"{shown(value)} cannot be a Kubernetes label value", "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit")
