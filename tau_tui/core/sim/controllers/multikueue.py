"""MultiKueue in the simulation: AdmissionCheck Active from its
MultiKueueConfig's clusters, worker connection faults, and dispatching
admitted workloads to a worker (or evicting them when the worker is lost)."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import yaml

from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.sim.conditions import cond, get_condition, is_true, set_condition
from tau_tui.core.sim.controllers.base import Controller
from tau_tui.core.sim.controllers.world_view import ControllerWorld
from tau_tui.core.sim.store import SimStore

R = ResourceKind
SECRET = ResourceType("", "v1", "secrets", "Secret", True)
KUEUE_NAMESPACE = "kueue-system"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"


def multikueue_check_of(store: SimStore, cq: Mapping[str, Any]) -> dict[str, Any] | None:
    for ref in ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or ():
        ac = store.read(R.ADMISSION_CHECK.type, ref.get("name", ""))
        if ac is not None and (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER_NAME:
            return ac
    return None


class MultiKueueController(Controller):
    def __init__(self, world: ControllerWorld):
        super().__init__(world)
        #: When each disconnected worker was lost (workloads placed there are evicted after a timeout).
        self.worker_lost_at: dict[str, datetime] = {}
        #: Worker worlds (``sim/fleet.py``): clusters with a credential Secret are connected for real.
        self.fleet: Any = None
        #: Fleet workers whose connection a scenario cut (``multikueueDisconnect``), with the error Kueue
        #: reports; their API servers still answer their owner (the manager's path to them is what broke).
        self.cut_off: dict[str, str] = {}

    # -- worker connections from the credential Secret (kueue.md A1.9, A4.4) --

    def update_clusters(self) -> None:
        if self.fleet is None:
            return
        for mkc in sorted(self.store.items(R.MULTIKUEUE_CLUSTER.type), key=lambda o: o["metadata"]["name"]):
            name = mkc["metadata"]["name"]
            spec = mkc.get("spec") or {}
            source = (spec.get("clusterSource") or {}).get("kubeConfig") or spec.get("kubeConfig") or {}
            secret = self.store.read(SECRET, source.get("location", ""), KUEUE_NAMESPACE)
            if secret is None and name not in self.fleet.workers:
                continue  # a scenario's hand-made cluster: its state is driven by set_cluster_active
            if name in self.cut_off:
                status, reason, message = "False", "ClientConnectionFailed", self.cut_off[name]
            else:
                status, reason, message = self._connect(source, secret)
            current = get_condition(mkc, "Active") or {}
            if (current.get("status"), current.get("reason"), current.get("message")) != (status, reason, message):
                self._set_active(name, status, reason, message)

    def _connect(self, source: Mapping[str, Any], secret: Mapping[str, Any] | None) -> tuple[str, str, str]:
        from tau_tui.core.cluster.worker_kubeconfig import insecure_reasons

        if source.get("locationType", "Secret") != "Secret":
            return "False", "BadKubeConfig", "locationType Path is not available in the simulation"
        if secret is None:
            return "False", "BadKubeConfig", f'Secret "{source.get("location")}" not found in {KUEUE_NAMESPACE}'
        try:
            doc = yaml.safe_load(base64.b64decode((secret.get("data") or {}).get("kubeconfig", "")).decode())
            assert isinstance(doc, dict)
        except Exception:
            return "False", "BadKubeConfig", f'Secret "{source.get("location")}" has no valid kubeconfig under key kubeconfig'
        reasons = insecure_reasons(doc)
        if reasons:
            return "False", "InsecureKubeConfig", "; ".join(reasons)
        server = str(doc["clusters"][0]["cluster"]["server"])
        found = self.fleet.worker_by_server(server)
        if found is None:
            return "False", "ClientConnectionFailed", f"dial tcp: lookup {server}: no such host"
        worker, world = found
        if world.api_down is not None:
            return "False", "ClientConnectionFailed", f'Get "{server}/apis/kueue.x-k8s.io/v1beta2/workloads": {world.api_down}'
        token = str((doc["users"][0].get("user") or {}).get("token") or "")
        identity = world.store.tokens.get(token)
        if identity is None:
            return "False", "ClientConnectionFailed", "Unauthorized: the worker rejects the credential"
        if not (world.store.allowed(identity, "list", "workloads.kueue.x-k8s.io", None)
                and world.store.allowed(identity, "watch", "workloads.kueue.x-k8s.io", None)):
            return "False", "ClientConnectionFailed", (
                f'workloads.kueue.x-k8s.io is forbidden: User "{identity}" cannot list resource "workloads" '
                "in API group \"kueue.x-k8s.io\" at the cluster scope")
        return "True", "Active", "Connected"

    def _set_active(self, name: str, status: str, reason: str, message: str) -> None:
        now = self.now()
        if status == "True":
            self.worker_lost_at.pop(name, None)
        else:
            self.worker_lost_at.setdefault(name, now)
        new = cond("Active", status, reason, message, now)
        obj = self.store.update(R.MULTIKUEUE_CLUSTER.type, name, None, lambda o: set_condition(o, new))
        if obj is not None:
            self.event(obj, "Normal" if status == "True" else "Warning", reason, message)

    def sync_remote(self) -> None:
        """Copy placed Jobs to their worker (labelled with the prebuilt workload
        and origin) and delete remote copies whose manager Workload finished or is
        gone.  Like Kueue's GC, a worker it cannot reach (down, or its MultiKueueCluster not Active) is skipped."""
        if self.fleet is None:
            return
        placed: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        for wl in self.store.items(R.WORKLOAD.type):
            where = (wl.get("status") or {}).get("clusterName")
            if isinstance(where, str) and where in self.fleet.workers and not is_true(wl, "Finished"):
                placed.setdefault(where, {})[(wl["metadata"]["namespace"], wl["metadata"]["name"])] = wl
        for worker, world in sorted(self.fleet.workers.items()):
            if world.api_down is not None or not is_true(self.store.read(R.MULTIKUEUE_CLUSTER.type, worker) or {}, "Active"):
                continue  # Kueue reaches a worker only through its connected MultiKueueCluster
            wanted = placed.get(worker, {})
            remote = {(o["metadata"]["namespace"], (o["metadata"].get("labels") or {}).get(PREBUILT_LABEL, "")): o
                      for o in world.store.items(R.JOB.type) if (o["metadata"].get("labels") or {}).get(ORIGIN_LABEL)}
            for key, job in sorted(remote.items()):
                if key not in wanted:
                    world.store.remove(R.JOB.type, job["metadata"]["name"], job["metadata"]["namespace"])
            for (ns, wl_name), wl in sorted(wanted.items()):
                if (ns, wl_name) in remote or world.store.read(R.NAMESPACE.type, ns) is None:
                    continue
                owner = next((o for o in wl["metadata"].get("ownerReferences") or () if o.get("kind") == "Job"), None)
                if owner is None:
                    continue
                world.store.put(R.JOB.type, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
                    "name": owner["name"], "namespace": ns,
                    "labels": {PREBUILT_LABEL: wl_name, ORIGIN_LABEL: "multikueue"}},
                    "spec": {"suspend": False}, "status": {"active": 1}})

    def update_admission_checks(self) -> None:
        """AdmissionCheck Active from its config's clusters (kueue.md A1.7)."""
        now = self.now()
        for ac in sorted(self.store.items(R.ADMISSION_CHECK.type), key=lambda o: o["metadata"]["name"]):
            if (ac.get("spec") or {}).get("controllerName") != MULTIKUEUE_CONTROLLER_NAME:
                if get_condition(ac, "Active") is None:
                    self.store.update(R.ADMISSION_CHECK.type, ac["metadata"]["name"], None,
                                      lambda o: set_condition(o, cond("Active", "True", "Active", "The admission check is active", now)))
                continue
            params = (ac.get("spec") or {}).get("parameters") or {}
            config = self.store.read(R.MULTIKUEUE_CONFIG.type, params.get("name", "")) if params.get("kind") == "MultiKueueConfig" else None
            if config is None:
                new = cond("Active", "False", "BadConfig", f"Cannot load the AdmissionChecks parameters: MultiKueueConfig {params.get('name')!r} not found", now)
            else:
                names = list((config.get("spec") or {}).get("clusters") or ())
                missing = [n for n in names if self.store.read(R.MULTIKUEUE_CLUSTER.type, n) is None]
                inactive = [n for n in names if n not in missing and not is_true(self.store.read(R.MULTIKUEUE_CLUSTER.type, n) or {}, "Active")]
                active = [n for n in names if n not in missing and n not in inactive]
                if not active:
                    new = cond("Active", "False", "NoUsableClusters", "No usable clusters: " + ", ".join(names), now)
                elif missing or inactive:
                    msg = "; ".join(p for p in (f"Missing clusters: {missing}" if missing else "", f"Inactive clusters: {inactive}" if inactive else "") if p)
                    new = cond("Active", "True", "SomeActiveClusters", msg, now)
                else:
                    new = cond("Active", "True", "Active", "The admission check is active", now)
            self.store.update(R.ADMISSION_CHECK.type, ac["metadata"]["name"], None, functools.partial(set_condition, new=new))

    def set_cluster_active(self, name: str, active: bool, message: str = "") -> None:
        """Fault injection: a worker stalls (or comes back)."""
        now = self.now()
        with self.lock:
            if active:
                new = cond("Active", "True", "Active", "Connected", now)
                self.worker_lost_at.pop(name, None)
                self.cut_off.pop(name, None)
            else:
                new = cond("Active", "False", "ClientConnectionFailed", message or "Get \"https://worker:6443/api\": dial tcp: i/o timeout", now)
                self.worker_lost_at.setdefault(name, now)
                if self.fleet is not None and name in self.fleet.workers:
                    self.cut_off[name] = new["message"]  # else the next tick reconnects it from its Secret
            obj = self.store.update(R.MULTIKUEUE_CLUSTER.type, name, None, lambda o: set_condition(o, new))
            if obj is not None:
                self.event(obj, "Normal" if active else "Warning", "Connected" if active else "ClientConnectionFailed", new["message"])

    def dispatch(self) -> None:
        now = self.now()
        holding = [wl for wl in self.store.items(R.WORKLOAD.type) if (wl.get("status") or {}).get("admission")]
        for wl in sorted(holding, key=lambda w: (w["metadata"]["namespace"], w["metadata"]["name"])):
            st = wl["status"]
            if is_true(wl, "Finished"):
                continue
            cq = self.store.read(R.CLUSTER_QUEUE.type, st["admission"].get("clusterQueue", ""))
            ac = multikueue_check_of(self.store, cq or {})
            checks = {c.get("name"): c for c in st.get("admissionChecks") or ()}
            if ac is None:
                # non-MultiKueue checks in the simulation pass at once
                if checks and any(c.get("state") != "Ready" for c in checks.values()):
                    self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"], self._all_checks_ready(now))
                continue
            name = ac["metadata"]["name"]
            config = self.store.read(R.MULTIKUEUE_CONFIG.type, ((ac.get("spec") or {}).get("parameters") or {}).get("name", "")) or {}
            workers = sorted(n for n in (config.get("spec") or {}).get("clusters") or ()
                             if is_true(self.store.read(R.MULTIKUEUE_CLUSTER.type, n) or {}, "Active"))
            state = (checks.get(name) or {}).get("state", "Pending")
            cluster_name = st.get("clusterName")
            if cluster_name:
                lost_at = self.worker_lost_at.get(cluster_name)
                if lost_at is not None and (now - lost_at).total_seconds() >= self.settings.worker_lost_timeout_seconds:
                    self.world.kueue.evict(wl, "AdmissionCheck", f"Reserving remote lost: worker {cluster_name}")
                continue
            if state != "Pending":
                continue
            if not workers:
                def waiting(obj: dict[str, Any], name: str = name) -> None:
                    for c in obj["status"].get("admissionChecks") or ():
                        if c.get("name") == name:
                            c["message"] = "No usable clusters: every MultiKueueCluster is inactive"
                self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"], waiting)
                continue
            if not st.get("nominatedClusterNames"):
                def nominate(obj: dict[str, Any], workers: list[str] = workers) -> None:
                    obj["status"]["nominatedClusterNames"] = list(workers)
                self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"], nominate)
                continue
            winner = workers[0]

            def place(obj: dict[str, Any], winner: str = winner, name: str = name) -> None:
                obj["status"]["clusterName"] = winner
                obj["status"].pop("nominatedClusterNames", None)
                for c in obj["status"].get("admissionChecks") or ():
                    if c.get("name") == name:
                        c.update(state="Ready", message=f'The workload got reservation on "{winner}"', lastTransitionTime=format_time(now))
                if all(c.get("state") == "Ready" for c in obj["status"].get("admissionChecks") or ()):
                    set_condition(obj, cond("Admitted", "True", "Admitted", "The workload is admitted", now))
            new = self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"], place)
            if new is not None:
                self.event(new, "Normal", "Admitted", f"Admitted; dispatched to worker {winner}")

    @staticmethod
    def _all_checks_ready(now: datetime) -> Callable[[dict[str, Any]], None]:
        def ready(obj: dict[str, Any]) -> None:
            for c in obj["status"].get("admissionChecks") or ():
                c.update(state="Ready", lastTransitionTime=format_time(now))
            set_condition(obj, cond("Admitted", "True", "Admitted", "The workload is admitted", now))
        return ready
