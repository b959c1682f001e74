"""The scheduler and the kubelets in the simulation: bind pending pods to
nodes with free GPUs, run them (pod phases, container statuses), end them at
their deadline, and serve their container logs, previous logs included."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.convert import format_time, parse_quantity, pod_requests
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogChunkRequest
from tau_tui.core.cluster.names import is_gpu_resource
from tau_tui.core.sim.annotations import DURATION_ANNOTATION, OUTCOME_ANNOTATION, RESTARTS_ANNOTATION
from tau_tui.core.sim.conditions import cond, is_true, set_condition
from tau_tui.core.sim.controllers.base import Controller
from tau_tui.core.sim.controllers.world_view import ControllerWorld
from tau_tui.core.sim.ray_driver import (
    HEAD_CONTAINER,
    DriverLogs,
    UntimedOutput,
    is_ray_head,
    offload_sidecars,
    open_driver_exec,
    ray_job_logs_command,
)
from tau_tui.core.sim.simlogs import ContainerLog, SimLogReader, to_ns

R = ResourceKind


def _affinity_allows(node: dict[str, Any], terms: list[dict[str, Any]]) -> bool:
    """Required node affinity as the scheduler reads it: any term whose expressions all hold
    (In, NotIn, Exists, DoesNotExist on the node's labels; kubernetes.io/hostname is the node's name)."""
    if not terms:
        return True
    labels = dict(node["metadata"].get("labels") or {})
    labels.setdefault("kubernetes.io/hostname", node["metadata"]["name"])

    def holds(e: dict[str, Any]) -> bool:
        op, value, values = str(e.get("operator")), labels.get(str(e.get("key", ""))), e.get("values") or []
        return {"In": value in values, "NotIn": value not in values,
                "Exists": value is not None, "DoesNotExist": value is None}.get(op, False)
    return any(all(holds(e) for e in term.get("matchExpressions") or ()) for term in terms)


class Kubelet(Controller):
    def __init__(self, world: ControllerWorld):
        super().__init__(world)
        #: Container logs by (namespace, pod, container, previous).
        self.logs: dict[tuple[str, str, str, bool], ContainerLog] = {}
        self.log_break_generation = 0
        #: What `ray job logs` prints in a Ray head, by (namespace, Ray job id).
        self.driver_logs = DriverLogs()

    def _node_free(self) -> dict[str, dict[str, float]]:
        free: dict[str, dict[str, float]] = {}
        for node in self.store.items(R.NODE.type):
            alloc = (node.get("status") or {}).get("allocatable") or {}
            free[node["metadata"]["name"]] = {k: parse_quantity(v) for k, v in alloc.items() if is_gpu_resource(k)}
        for pod in self.store.items(R.POD.type):
            node_name = (pod.get("spec") or {}).get("nodeName")
            if not node_name or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or node_name not in free:
                continue
            for res, value in pod_requests(pod.get("spec") or {}).items():
                if is_gpu_resource(res):
                    free[node_name][res] = free[node_name].get(res, 0.0) - value
        return free

    def _schedulable_nodes(self) -> list[dict[str, Any]]:
        out = []
        for node in sorted(self.store.items(R.NODE.type), key=lambda n: n["metadata"]["name"]):
            if (node.get("spec") or {}).get("unschedulable"):
                continue
            if not is_true(node, "Ready") or is_true(node, "GPUUnhealthy"):
                continue
            out.append(node)
        return out

    def bind_and_run_pods(self) -> None:
        now = self.now()
        pending = [p for p in self.store.items(R.POD.type)
                   if (p.get("status") or {}).get("phase") == "Pending" or ((p.get("status") or {}).get("phase") == "Running" and False)]
        if not pending:
            return
        free = None
        nodes = None
        by_selector: dict[tuple[Any, ...], list[str]] = {}
        for pod in sorted(pending, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
            meta = pod["metadata"]
            spec = pod.get("spec") or {}
            if spec.get("nodeName"):
                self._run_pod(pod, now)
                continue
            if free is None:
                free, nodes = self._node_free(), self._schedulable_nodes()
            need = {k: v for k, v in pod_requests(spec).items() if is_gpu_resource(k) and v}
            selector = spec.get("nodeSelector") or {}
            terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                     .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
            sel_key = (tuple(sorted(selector.items())), json.dumps(terms, sort_keys=True))
            candidates = by_selector.get(sel_key)
            if candidates is None:
                candidates = by_selector[sel_key] = [
                    n["metadata"]["name"] for n in nodes or ()
                    if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
                    and _affinity_allows(n, terms)]
            target = None
            for node_name in candidates:
                slot = free.get(node_name, {})
                if all(slot.get(r, 0.0) >= v - 1e-9 for r, v in need.items()):
                    target = node_name
                    break
            if target is None:
                continue
            for r, v in need.items():
                free[target][r] -= v
            if need and all(v <= 1e-9 for v in free[target].values()):
                for lst in by_selector.values():
                    if target in lst:
                        lst.remove(target)

            def bind(o: dict[str, Any], target: str = target) -> None:
                o["spec"]["nodeName"] = target
                set_condition(o, cond("PodScheduled", "True", "Scheduled", f"assigned to {target}", now))
            new = self.store.update(R.POD.type, meta["name"], meta["namespace"], bind)
            if new is not None:
                self.event(new, "Normal", "Scheduled", f"Successfully assigned {meta['namespace']}/{meta['name']} to {target}")

    def _run_pod(self, pod: dict[str, Any], now: datetime) -> None:
        meta = pod["metadata"]
        spec = pod.get("spec") or {}
        ann = meta.get("annotations") or {}
        restarts = int(ann.get(RESTARTS_ANNOTATION) or 0)
        style = ann.get("sim.tau-tui.io/log-style", "train")
        start_ns = to_ns(now)
        interval = int(self.settings.log_interval_seconds * 1_000_000_000)
        seed_base = int(meta["uid"].replace("-", "")[:8], 16)
        for i, c in enumerate(spec.get("containers") or ()):
            key = (meta["namespace"], meta["name"], c["name"], False)
            log = self.logs.get(key) or ContainerLog(style=style if i == 0 else "train", seed=seed_base + i,
                                                     start_ns=start_ns, interval_ns=interval)
            self.logs[key] = log
            if restarts:
                prev = ContainerLog(style=style, seed=seed_base + 100 + i, start_ns=start_ns - 120 * 1_000_000_000, interval_ns=interval)
                prev.stop(start_ns - 1_000_000_000, ("RuntimeError: CUDA error: uncorrectable ECC error encountered",
                                                     "Traceback ends; container exited with code 1"))
                self.logs[(meta["namespace"], meta["name"], c["name"], True)] = prev
        if is_ray_head(pod):
            self._start_driver(pod, seed_base, start_ns, interval)
        for c in spec.get("initContainers") or ():
            key = (meta["namespace"], meta["name"], c["name"], False)
            init = ContainerLog(style="init", seed=seed_base + 50, start_ns=start_ns - 10 * 1_000_000_000, interval_ns=1_000_000_000)
            init.stop(start_ns - 1, ("init done",))
            self.logs[key] = init

        def run(o: dict[str, Any]) -> None:
            st = o["status"]
            st["phase"] = "Running"
            st["startTime"] = format_time(now)
            st["containerStatuses"] = [{"name": c["name"], "ready": True, "restartCount": restarts,
                                        "state": {"running": {"startedAt": format_time(now)}}} for c in spec.get("containers") or ()]
            if spec.get("initContainers"):
                st["initContainerStatuses"] = [{"name": c["name"], "ready": True, "restartCount": 0,
                                                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}} for c in spec["initContainers"]]
            set_condition(o, cond("Ready", "True", "", "", now))
        self.store.update(R.POD.type, meta["name"], meta["namespace"], run)
        self.event(pod, "Normal", "Started", f"Started container {((spec.get('containers') or [{}])[0]).get('name')}")

    def _pod_deadline(self, pod: dict[str, Any]) -> datetime | None:
        st = pod.get("status") or {}
        start = parse_time(st.get("startTime"))
        if start is None:
            return None
        ann = pod["metadata"].get("annotations") or {}
        duration = float(ann.get(DURATION_ANNOTATION) or self.settings.default_duration_seconds)
        return start + timedelta(seconds=duration)

    def finish_pods(self, now: datetime) -> None:
        for pod in sorted(self.store.items(R.POD.type), key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
            deleting = parse_time(pod["metadata"].get("deletionTimestamp"))
            if deleting is not None:
                if now >= deleting:  # the grace period is over: the containers are gone, the GPUs free
                    self.store.remove(R.POD.type, pod["metadata"]["name"], pod["metadata"]["namespace"])
                continue
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            deadline = self._pod_deadline(pod)
            if deadline is None or now < deadline:
                continue
            outcome = (pod["metadata"].get("annotations") or {}).get(OUTCOME_ANNOTATION, "Succeeded")
            self.terminate_pod(pod["metadata"]["namespace"], pod["metadata"]["name"], outcome, at=deadline)

    def terminate_pod(self, namespace: str, name: str, outcome: str = "Succeeded", message: str = "", at: datetime | None = None) -> None:
        """End a pod's containers (used by completion and by GPU faults)."""
        at = at or self.now()
        pod = self.store.read(R.POD.type, name, namespace)
        if pod is None:
            return
        failed = outcome == "Failed"
        job_id = self._ray_job_id(pod) if is_ray_head(pod) else ""
        if job_id:  # the driver ends with its head (its last line first: a log-offload sidecar shares it)
            self.driver_logs.stop(namespace, job_id, to_ns(at), failed)
        last = ("training finished; final checkpoint written",) if not failed else (
            message or "RuntimeError: NCCL error: unhandled system error", "process exited with code 1")
        for c in (pod.get("spec") or {}).get("containers") or ():
            log = self.logs.get((namespace, name, c["name"], False))
            if log is not None and not log.finished:
                log.stop(to_ns(at), last)

        def end(o: dict[str, Any]) -> None:
            st = o["status"]
            st["phase"] = "Failed" if failed else "Succeeded"
            st["containerStatuses"] = [{"name": c["name"], "ready": False, "restartCount": cs.get("restartCount", 0),
                                        "state": {"terminated": {"exitCode": 1 if failed else 0,
                                                                 "reason": "Error" if failed else "Completed",
                                                                 "finishedAt": format_time(at)}}}
                                       for c, cs in zip(o["spec"].get("containers") or (), st.get("containerStatuses") or [{}] * 99, strict=False)]
            set_condition(o, cond("Ready", "False", "PodCompleted", "", at))
        self.store.update(R.POD.type, name, namespace, end)

    def disrupt_pod(self, namespace: str, name: str, reason: str = "PreemptionByScheduler",
                    message: str = "Preempted in order to admit critical pod") -> None:
        """Fault injection: the scheduler preempts (or the Eviction API evicts) a running pod: its
        containers end and the pod carries ``DisruptionTarget`` with the reason, as Kubernetes sets it."""
        with self.lock:
            pod = self.store.read(R.POD.type, name, namespace)
            if pod is None:
                return
            now = self.now()
            self.terminate_pod(namespace, name, "Failed", f"terminated: {message}", at=now)
            self.store.update(R.POD.type, name, namespace,
                              lambda o: set_condition(o, cond("DisruptionTarget", "True", reason, message, now)))
            self.event(pod, "Warning", "Preempted" if reason.startswith("Preemption") else "Evicted", message)

    # -- logs ------------------------------------------------------------------------

    def open_container_log(self, request: LogChunkRequest) -> SimLogReader:
        with self.lock:
            pod = self.store.read(R.POD.type, request.pod, request.namespace)
            if pod is None:
                raise ApiFailure(404, "NotFound", f'pods "{request.pod}" not found')
            names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or ()] + \
                    [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or ()]
            if request.container not in names:
                raise ApiFailure(400, "BadRequest", f"container {request.container} is not valid for pod {request.pod}")
            log = self.logs.get((request.namespace, request.pod, request.container, request.previous))
            if log is None:
                if request.previous:
                    raise ApiFailure(400, "BadRequest", f'previous terminated container "{request.container}" in pod "{request.pod}" not found')
                if (pod.get("status") or {}).get("phase") == "Pending":
                    raise ApiFailure(400, "BadRequest", f'container "{request.container}" in pod "{request.pod}" is waiting to start: ContainerCreating')
                log = self.logs.setdefault((request.namespace, request.pod, request.container, False), ContainerLog(finished=True))
            key = (request.namespace, request.pod, request.container)

            def done() -> bool:
                current = self.store.read(R.POD.type, key[1], key[0])
                return current is None or log.finished or request.previous
            return SimLogReader(log, request, self.lock, self.store.changed, lambda: to_ns(self.now()),
                                lambda: self.log_break_generation, done)

    def _ray_job_id(self, pod: dict[str, Any]) -> str:
        for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
            if ref.get("kind") == "RayJob":
                owner = self.store.read(R.RAY_JOB.type, ref.get("name", ""), pod["metadata"]["namespace"]) or {}
                return str((owner.get("status") or {}).get("jobId") or "")
        return ""

    def _start_driver(self, pod: dict[str, Any], seed: int, start_ns: int, interval: int) -> None:
        meta = pod["metadata"]
        job_id = self._ray_job_id(pod)
        if not job_id:
            return
        driver = self.driver_logs.start(meta["namespace"], job_id, seed + 7, start_ns, interval)
        for sidecar in offload_sidecars(pod):  # the sidecar ships the driver's output: the same log
            self.logs[(meta["namespace"], meta["name"], sidecar, False)] = driver

    def open_pod_exec(self, request: ExecRequest) -> UntimedOutput:
        """``kubectl exec``: a Ray head's ``ray-head`` runs ``ray job logs JOB_ID [--follow]``."""
        with self.lock:
            pod = self.store.read(R.POD.type, request.pod, request.namespace)
            if pod is None:
                raise ApiFailure(404, "NotFound", f'pods "{request.pod}" not found')
            names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or ()]
            if request.container not in names:
                raise ApiFailure(400, "BadRequest", f"container {request.container} is not valid for pod {request.pod}")
            running = any(cs.get("name") == request.container and "running" in (cs.get("state") or {})
                          for cs in (pod.get("status") or {}).get("containerStatuses") or ())
            if not running:
                raise ApiFailure(400, "BadRequest", f'unable to upgrade connection: container not found ("{request.container}")')
            if not is_ray_head(pod) or request.container != HEAD_CONTAINER:
                raise ApiFailure(500, "NonZeroExitCode", f"{' '.join(request.command)}: command terminated with non-zero "
                                 "exit code 127 (the simulated cluster execs only in a Ray head's ray-head container)")
            job_id, follow = ray_job_logs_command(request)
            log = self.driver_logs.logs.get((request.namespace, job_id))
            key = (request.namespace, request.pod)
            return open_driver_exec(request, log, job_id, follow, self.lock, self.store.changed, lambda: to_ns(self.now()),
                                    lambda: self.log_break_generation,
                                    lambda: self.store.read(R.POD.type, key[1], key[0]) is None)

    def write_log(self, namespace: str, pod: str, container: str, text: str, newline: bool = True, at: datetime | None = None) -> None:
        """Append to a container log directly (tests, scripted scenarios)."""
        with self.lock:
            log = self.logs.setdefault((namespace, pod, container, False), ContainerLog(start_ns=1 << 62))
            log.write(to_ns(at or self.now()), text, newline)
            self.store.changed.notify_all()

    def break_log_streams(self) -> None:
        """Fault injection: every open log stream fails with a connection reset."""
        with self.lock:
            self.log_break_generation += 1
            self.store.changed.notify_all()

