"""The GPU node agent in the simulation: node GPU conditions and taints,
GPUNodeHealth objects with per-GPU telemetry, periodic heartbeats, and
injected GPU faults and recoveries."""

from __future__ import annotations

import functools
import hashlib
from datetime import datetime
from typing import Any

from tau_gpuhealth.report import GpuTelemetry
from tau_gpuhealth.xid import XidCatalog, load_xid_catalog
from tau_tui.core.cluster.convert import format_time, parse_quantity, pod_requests
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import GPU_RESOURCE_NAMES
from tau_tui.core.sim.conditions import cond, set_condition
from tau_tui.core.sim.controllers.base import Controller
from tau_tui.core.sim.controllers.world_view import ControllerWorld

R = ResourceKind


@functools.cache
def _catalog() -> XidCatalog:
    return load_xid_catalog()


def _action_for(code: str, verdict: str) -> tuple[str, bool]:
    """(action, latched) as the real agent reports them: an XID takes its catalog action, and a
    fatal one latches until reset/reboot; other codes: reset when unhealthy, nothing when degraded."""
    if code.startswith("Xid") and code[3:].isdigit():
        entry = _catalog().classify(int(code[3:]))
        return entry.action.value, verdict == "unhealthy" and entry.severity.value == "unhealthy"
    return ("RESET_GPU" if verdict == "unhealthy" else "NONE"), False


class GpuAgent(Controller):
    def __init__(self, world: ControllerWorld):
        super().__init__(world)
        #: Nodes the agent runs on (the others have no GPU conditions: unknown, not healthy).
        self.nodes: set[str] = set()
        self.last_heartbeat: datetime | None = None

    def heartbeat(self, now: datetime) -> None:
        if self.last_heartbeat is not None and (now - self.last_heartbeat).total_seconds() < self.settings.heartbeat_seconds:
            return
        self.last_heartbeat = now
        stamp = format_time(now)
        for name in sorted(self.nodes):
            def beat(o: dict[str, Any]) -> None:
                for c in (o.get("status") or {}).get("conditions") or ():
                    if c.get("type") in ("GPUUnhealthy", "GPUDegraded"):
                        c["lastHeartbeatTime"] = stamp
            self.store.update(R.NODE.type, name, None, beat)
            def report(o: dict[str, Any], name: str = name) -> None:
                status = o.setdefault("status", {})
                status["observedAt"] = stamp
                self._refresh_telemetry(name, status)
            self.store.update(R.GPU_HEALTH.type, name, None, report)

    def gpu_fault(self, node: str, verdict: str = "unhealthy", code: str = "Xid79", message: str = "GPU has fallen off the bus (Xid 79)",
                  gpu_index: int = 0, kill_pods: bool = True) -> None:
        """Fault injection: the agent reports a GPU fault on ``node``."""
        now = self.now()
        stamp = format_time(now)
        with self.lock:
            unhealthy = verdict == "unhealthy"
            self.nodes.add(node)

            def mark(o: dict[str, Any]) -> None:
                set_condition(o, dict(cond("GPUUnhealthy", "True" if unhealthy else "False",
                                           code if unhealthy else "NoUnhealthyGPUs", message if unhealthy else "no unhealthy GPU", now),
                                      lastHeartbeatTime=stamp))
                set_condition(o, dict(cond("GPUDegraded", "True" if not unhealthy else "False",
                                           code if not unhealthy else "NoDegradedGPUs", message if not unhealthy else "no degraded GPU", now),
                                      lastHeartbeatTime=stamp))
                if unhealthy:
                    taints = list(o.setdefault("spec", {}).get("taints") or [])
                    if not any(t.get("key") == "tau-tui.io/gpu-unhealthy" for t in taints):
                        taints.append({"key": "tau-tui.io/gpu-unhealthy", "effect": "NoSchedule", "value": code})
                    o["spec"]["taints"] = taints
            obj = self.store.update(R.NODE.type, node, None, mark)
            if obj is None:
                return
            self.put_health(node, verdict, [(gpu_index, code, message)], now)
            self.event(obj, "Warning", "GPUUnhealthy" if unhealthy else "GPUDegraded", f"gpu{gpu_index}: {message}")
            if unhealthy and kill_pods:
                for pod in sorted(self.store.items(R.POD.type), key=lambda p: p["metadata"]["name"]):
                    if (pod.get("spec") or {}).get("nodeName") == node and (pod.get("status") or {}).get("phase") == "Running":
                        self.world.kubelet.terminate_pod(pod["metadata"]["namespace"], pod["metadata"]["name"], "Failed",
                                           f"RuntimeError: CUDA error: unspecified launch failure ({code} on {node} gpu{gpu_index})")

    def gpu_recover(self, node: str) -> None:
        now = self.now()
        stamp = format_time(now)
        with self.lock:
            def heal(o: dict[str, Any]) -> None:
                set_condition(o, dict(cond("GPUUnhealthy", "False", "NoUnhealthyGPUs", "no unhealthy GPU", now), lastHeartbeatTime=stamp))
                set_condition(o, dict(cond("GPUDegraded", "False", "NoDegradedGPUs", "no degraded GPU", now), lastHeartbeatTime=stamp))
                o.setdefault("spec", {})["taints"] = [t for t in o["spec"].get("taints") or () if t.get("key") != "tau-tui.io/gpu-unhealthy"]
            self.store.update(R.NODE.type, node, None, heal)
            self.put_health(node, "healthy", [], now)

    def _gpu_telemetry(self, node: str, index: int, busy: bool, problem: tuple[str, str] | None) -> dict[str, Any] | None:
        """What the agent's NVML reader reports for one GPU, in the agent's
        shape (``GpuTelemetry`` dumped by alias, unset fields left out).
        Deterministic per node and GPU; a GPU that fell off the bus reads nothing."""
        code = problem[0] if problem else ""
        if code in ("Xid79", "Xid74"):  # NVML cannot reach the device
            return None
        digest = hashlib.sha256(f"{node}/{index}".encode()).digest()
        total = 80 * 1024**3
        sbe = 214 if "Ecc" in code or "ECC" in code else digest[3] % 3
        telemetry = GpuTelemetry(
            utilization_gpu=85 + digest[0] % 15 if busy else 0,
            memory_used_bytes=int(total * (0.72 + digest[1] % 20 / 100)) if busy else 512 * 1024**2,
            memory_total_bytes=total,
            temperature_c=float((64 if busy else 36) + digest[2] % 12 + (20 if code == "ThermalSlowdown" else 0)),
            temperature_slowdown_c=87.0,
            power_w=float((520 if busy else 70) + digest[4] % 90),
            power_limit_w=700.0,
            clock_events=["HwThermalSlowdown"] if code == "ThermalSlowdown" else [],
            ecc_volatile_sbe=sbe,
            ecc_volatile_dbe=1 if code == "Xid48" else 0,
            ecc_aggregate_dbe=1 if code == "Xid48" else 0,
            remap_pending=False,
            remap_failure=False,
            pcie_replay_count=digest[5] % 4,
            persistence_mode=True,
            mig_enabled=False,
        )
        return telemetry.model_dump(by_alias=True, mode="json", exclude_none=True)

    def _busy_gpus(self, node: str) -> int:
        """GPUs requested by running pods bound to ``node``."""
        busy = 0.0
        for pod in self.store.items(R.POD.type):
            if (pod.get("spec") or {}).get("nodeName") == node and (pod.get("status") or {}).get("phase") == "Running":
                busy += sum(v for k, v in pod_requests(pod.get("spec") or {}).items() if k in GPU_RESOURCE_NAMES[:1])
        return int(busy)

    def _refresh_telemetry(self, node: str, status: dict[str, Any]) -> None:
        """The agent's periodic report: utilisation and memory follow the pods on the node."""
        busy = self._busy_gpus(node)
        for gpu in status.get("gpus") or ():
            index = int(gpu.get("index", 0))
            reasons = gpu.get("reasons") or []
            problem = (reasons[0].get("code", ""), reasons[0].get("message", "")) if reasons else None
            telemetry = self._gpu_telemetry(node, index, index < busy, problem)
            if telemetry is None:
                gpu.pop("telemetry", None)
            else:
                gpu["telemetry"] = telemetry

    def put_health(self, node: str, verdict: str, problems: list[tuple[int, str, str]], now: datetime) -> None:
        node_obj = self.store.read(R.NODE.type, node) or {}
        alloc = (node_obj.get("status") or {}).get("capacity") or {}
        count = int(sum(parse_quantity(v) for k, v in alloc.items() if k in GPU_RESOURCE_NAMES[:1])) or 8
        product = ((node_obj.get("metadata") or {}).get("labels") or {}).get("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")
        model = product.replace("-", " ")
        bad = {i: (code, msg) for i, code, msg in problems}
        busy = self._busy_gpus(node)
        gpus = []
        for i in range(count):
            if i in bad:
                code, msg = bad[i]
                action, latched = _action_for(code, verdict)
                gpu = {"index": i, "uuid": f"GPU-{node}-{i:02d}", "name": model, "verdict": verdict,
                       "reasons": [{"code": code, "severity": verdict, "action": action, "latched": latched,
                                    "message": msg, "since": format_time(now)}]}
            else:
                gpu = {"index": i, "uuid": f"GPU-{node}-{i:02d}", "name": model, "verdict": "healthy", "reasons": []}
            telemetry = self._gpu_telemetry(node, i, i < busy, bad.get(i))
            if telemetry is not None:
                gpu["telemetry"] = telemetry
            gpus.append(gpu)
        obj = {"apiVersion": R.GPU_HEALTH.type.api_version, "kind": R.GPU_HEALTH.type.kind,
               "metadata": {"name": node, "labels": {"tau-tui.io/gpu-health-managed": "true"}},
               "status": {"nodeName": node, "verdict": verdict, "reasons": [], "gpus": gpus, "observedAt": format_time(now),
                          "nvmlAvailable": True, "driverVersion": "550.90.07", "gpuCount": count, "expectedGpuCount": count}}
        existing = self.store.read(R.GPU_HEALTH.type, node)
        if existing is None:
            self.store.put(R.GPU_HEALTH.type, obj)
        else:
            self.store.update(R.GPU_HEALTH.type, node, None, lambda o: o.__setitem__("status", obj["status"]))
