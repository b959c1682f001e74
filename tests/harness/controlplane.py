"""One local Kubernetes control plane: etcd + kube-apiserver, optionally Kueue and the T2 set.

All servers listen on 127.0.0.1. Kueue's fixed certificate paths (/visibility and
/etc/kueue/metrics/certs) are bind-mounted per Kueue process inside its own mount
namespace (`unshare -m`), so several managers can run side by side.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from .binaries import REPO_ROOT, Binaries
from .kuberay import FakeRayDashboard, kwok_process_env, ray_cli_dir, ray_head_exec, remove_ray_cli_dir, start_kuberay
from .pki import CertificateAuthority, write_service_account_keypair
from .processes import HarnessStartError, ManagedProcess, free_port, port_open

KUEUE_NAMESPACE = "kueue-system"
# Kueue resolves these fixed paths itself; each Kueue process sees its own dirs mounted there.
KUEUE_VISIBILITY_CERT_DIR = "/visibility"
KUEUE_METRICS_CERT_DIR = "/etc/kueue/metrics/certs"
# Conversion webhooks that Kueue's config/components/crd kustomization enables.
KUEUE_CONVERTED_CRDS = {"localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters"}
# Webhooks kept from Kueue's manifests: the integrations the harness enables plus Kueue's own kinds.
KUEUE_WEBHOOK_RESOURCES = {("batch", "jobs"), ("ray.io", "rayjobs")}
KUBERAY_CRDS = ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml")
# The operator also starts its RayService controller, which needs its kind served.
KUBERAY_OPERATOR_CRDS = (*KUBERAY_CRDS, "ray.io_rayservices.yaml")
TAU_CRD_DIR = REPO_ROOT / "manifests" / "crds"
STARTUP_TIMEOUT = 120.0


@dataclass
class KueueOptions:
    enabled: bool = True
    visibility: bool = True
    # multiKueue section of the Kueue Configuration (only used on a MultiKueue manager).
    multikueue: dict | None = None
    feature_gates: dict[str, bool] = field(default_factory=dict)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig_yaml(name: str, server: str, ca_pem: bytes, user: dict) -> str:
    """One-context kubeconfig with inline CA data (the form MultiKueue accepts)."""
    return yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    })


def release_labelled(crd: dict, version: str) -> dict:
    """A CRD as Kueue's and KubeRay's Helm charts install it: labelled with its release
    (`app.kubernetes.io/version`), which is how a client tells the installed release apart
    (the MultiKueue dependency matrix compares manager and workers by it)."""
    crd.setdefault("metadata", {}).setdefault("labels", {})["app.kubernetes.io/version"] = version
    return crd


def write_kubeconfig(path: Path, name: str, server: str, ca_pem: bytes, user: dict) -> Path:
    path.write_text(kubeconfig_yaml(name, server, ca_pem, user))
    path.chmod(0o600)
    return path


class ControlPlane:
    """etcd + kube-apiserver (+ Kueue) (+ kube-controller-manager, kube-scheduler, KWOK)."""

    def __init__(self, name: str, state_dir: Path, binaries: Binaries, *, kueue: KueueOptions | None = None,
                 workloads_controllers: bool = False, garbage_collector: bool = False,
                 controllers: list[str] | None = None, apiserver_flags: list[str] | None = None,
                 kuberay: bool = False):
        self.name = name
        # Tier 2: the KubeRay operator with its stand-ins for the Ray heads (tests/harness/kuberay.py).
        self.kuberay = kuberay
        self.ray_dashboard: FakeRayDashboard | None = None
        self._ray_cli_dir: Path | None = None
        # Appended to kube-apiserver's command line (e.g. an audit policy and log for a test that counts requests).
        self.apiserver_flags = list(apiserver_flags or ())
        self.state_dir = state_dir
        self.binaries = binaries
        self.kueue_options = kueue or KueueOptions()
        self.workloads_controllers = workloads_controllers
        # kube-controller-manager's --controllers with workloads_controllers; None: all that run
        # without a cloud or pod CIDRs. A short list keeps CPU low where several planes share a host.
        self.controllers = controllers
        # Only the garbage collector (and namespace controller) of kube-controller-manager, so that
        # deleting a Job removes its Workload; implied by workloads_controllers.
        self.garbage_collector = garbage_collector
        state_dir.mkdir(parents=True, exist_ok=True)
        self.logs_dir = state_dir / "logs"
        self.pki_dir = state_dir / "pki"
        self.ports = {
            key: free_port()
            for key in ("etcd_client", "etcd_peer", "apiserver", "kueue_webhook", "kueue_health",
                        "kueue_visibility", "kcm", "scheduler", "kwok")
        }
        self.server = f"https://127.0.0.1:{self.ports['apiserver']}"
        self._make_pki()
        self.kubeconfig = str(write_kubeconfig(
            state_dir / "admin.kubeconfig", name, self.server, self.ca.cert_pem(),
            {"client-certificate-data": _b64(self.admin.cert_pem()),
             "client-key-data": _b64(self.admin.key_pem())},
        ))
        self.etcd = ManagedProcess(f"{name}/etcd", self._etcd_argv(), self.logs_dir / "etcd.log")
        self.apiserver = ManagedProcess(f"{name}/kube-apiserver", self._apiserver_argv(),
                                        self.logs_dir / "kube-apiserver.log")
        self.kueue: ManagedProcess | None = None
        self.extra: list[ManagedProcess] = []
        self.has_visibility_api = False
        self.gpu_nodes: list[str] = []
        # KWOK renews each node's Lease every quarter of this; benchmarks with thousands of nodes
        # raise it (staying under the node controller's 50 s grace period) to keep the plane quiet.
        self.kwok_lease_seconds = 40
        # T3 workers: pods of tau-tui runs stay Running until deleted (kwok.keep_tau_runs_running).
        self.kwok_keeps_tau_runs = False
        self._api_client: k8s.ApiClient | None = None

    # ----- certificates -----------------------------------------------------------
    def _make_pki(self) -> None:
        self.ca = CertificateAuthority(self.pki_dir, f"tau-harness-{self.name}-ca")
        self.front_proxy_ca = CertificateAuthority(self.pki_dir, f"tau-harness-{self.name}-front-proxy-ca")
        local = ("localhost",)
        self.apiserver_cert = self.ca.issue(
            "apiserver", "kube-apiserver", server=True, ip_addresses=("127.0.0.1", "10.0.0.1"),
            dns_names=local + ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                               "kubernetes.default.svc.cluster.local"),
        )
        self.admin = self.ca.issue("admin", "tau-harness-admin", organizations=("system:masters",), client=True)
        self.kubelet_client = self.ca.issue("kubelet-client", "kube-apiserver-kubelet-client",
                                            organizations=("system:masters",), client=True)
        self.front_proxy_client = self.front_proxy_ca.issue("front-proxy-client", "front-proxy-client", client=True)
        self.kueue_serving = self.ca.issue(
            "kueue-serving", "kueue", server=True, ip_addresses=("127.0.0.1",),
            dns_names=local + (f"kueue-webhook-service.{KUEUE_NAMESPACE}.svc",
                               f"visibility-server.{KUEUE_NAMESPACE}.svc"),
        )
        self.service_account_keys = write_service_account_keypair(self.pki_dir)

    # ----- process command lines -------------------------------------------------------
    def _etcd_argv(self) -> list[str]:
        client = f"http://127.0.0.1:{self.ports['etcd_client']}"
        peer = f"http://127.0.0.1:{self.ports['etcd_peer']}"
        return [
            str(self.binaries.etcd), "--name", self.name, "--data-dir", str(self.state_dir / "etcd"),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"{self.name}={peer}", "--unsafe-no-fsync",
            "--max-request-bytes", str(8 * 1024 * 1024), "--log-level", "warn",
        ]

    def _apiserver_argv(self) -> list[str]:
        admission_off = "" if self.workloads_controllers else "ServiceAccount"
        argv = [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd_client']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.ports['apiserver']}",
            f"--cert-dir={self.pki_dir}",
            f"--tls-cert-file={self.apiserver_cert.cert}", f"--tls-private-key-file={self.apiserver_cert.key}",
            f"--client-ca-file={self.ca.cert_path}",
            f"--service-account-issuer={self.server}",
            f"--service-account-key-file={self.service_account_keys.cert}",
            f"--service-account-signing-key-file={self.service_account_keys.key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC", "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            f"--kubelet-client-certificate={self.kubelet_client.cert}",
            f"--kubelet-client-key={self.kubelet_client.key}",
            "--kubelet-preferred-address-types=InternalIP",
            f"--requestheader-client-ca-file={self.front_proxy_ca.cert_path}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={self.front_proxy_client.cert}",
            f"--proxy-client-key-file={self.front_proxy_client.key}",
            "--profiling=false", "-v=1",
        ]
        if admission_off:
            argv.append(f"--disable-admission-plugins={admission_off}")
        return argv + self.apiserver_flags

    # ----- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        try:
            self._start_etcd()
            self.start_apiserver()
            self._install_base()
            if self.kueue_options.enabled:
                self._start_kueue()
            if self.workloads_controllers:
                self._start_workload_controllers()
            elif self.garbage_collector:
                self._start_controller_manager(["garbagecollector", "namespace"])
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every component this control plane started, newest first."""
        for proc in reversed(self.extra):
            proc.stop()
        if self.ray_dashboard is not None:
            self.ray_dashboard.stop()
            self.ray_dashboard = None
        if self._ray_cli_dir is not None:
            remove_ray_cli_dir(self._ray_cli_dir)
            self._ray_cli_dir = None
        if self.kueue:
            self.kueue.stop()
        self.apiserver.stop()
        self.etcd.stop()
        if self._api_client is not None:
            self._api_client.close()
            self._api_client = None

    def pids(self) -> dict[str, int]:
        """PIDs of the running components, by component name."""
        procs = [self.etcd, self.apiserver, *([self.kueue] if self.kueue else []), *self.extra]
        return {proc.name: proc.pid for proc in procs if proc.running() and proc.pid is not None}

    def _start_etcd(self) -> None:
        self.etcd.start()
        url = f"http://127.0.0.1:{self.ports['etcd_client']}/health"
        self.etcd.wait_until(lambda: json.load(urllib.request.urlopen(url, timeout=2))["health"] == "true",
                             "healthy", STARTUP_TIMEOUT)

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca.cert_path))
        ctx.load_cert_chain(str(self.admin.cert), str(self.admin.key))
        return ctx

    def _get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.server + path, context=self._ssl_context(), timeout=5) as resp:
            return resp.read()

    def start_apiserver(self, binary: Path | None = None) -> None:
        """Start (or restart) kube-apiserver on the same port and etcd; returns once /readyz is ok.
        ``binary``: another kube-apiserver to run with the same flags (an upgrade); None: the cell's."""
        self.apiserver.argv[0] = str(binary or self.binaries.kube_apiserver)
        self.apiserver.start()
        self.apiserver.wait_until(lambda: self._get("/readyz") == b"ok", "/readyz ok", STARTUP_TIMEOUT)

    def stop_apiserver(self, kill: bool = True) -> None:
        self.apiserver.stop(kill=kill)

    def api_client(self) -> k8s.ApiClient:
        if self._api_client is None:
            self._api_client = k8s_config.new_client_from_config(config_file=self.kubeconfig)
        return self._api_client

    # ----- objects installed once per control plane --------------------------------------
    def _install_base(self) -> None:
        core = k8s.CoreV1Api(self.api_client())
        core.create_namespace({"metadata": {"name": KUEUE_NAMESPACE}})
        crds: list[dict] = []
        kueue_crd_dir = self.binaries.kueue_module_dir / "config" / "components" / "crd" / "bases"
        for path in sorted(kueue_crd_dir.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            if crd["spec"]["names"]["plural"] in KUEUE_CONVERTED_CRDS:
                crd["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": self._kueue_client_config("/convert")},
                }
            crds.append(release_labelled(crd, self.binaries.versions["KUEUE_VERSION"]))
        ray_dir = self.binaries.kuberay_module_dir / "config" / "crd" / "bases"
        crds += [release_labelled(yaml.safe_load((ray_dir / name).read_text()), self.binaries.versions["KUBERAY_VERSION"])
                 for name in (KUBERAY_OPERATOR_CRDS if self.kuberay else KUBERAY_CRDS)]
        tau = sorted(TAU_CRD_DIR.glob("*.yaml"))
        if not tau:
            raise HarnessStartError(f"no TauCluster/TauWorkspace CRDs found in {TAU_CRD_DIR}")
        crds += [doc for p in tau for doc in yaml.safe_load_all(p.read_text())
                 if doc and doc.get("kind") == "CustomResourceDefinition"]
        ext = k8s.ApiextensionsV1Api(self.api_client())
        for crd in crds:
            ext.create_custom_resource_definition(crd)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        pending = {crd["metadata"]["name"] for crd in crds}
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                conds = ext.read_custom_resource_definition(name).status.conditions or []
                if any(c.type == "Established" and c.status == "True" for c in conds):
                    pending.discard(name)
            if pending:
                time.sleep(0.2)
        if pending:
            raise HarnessStartError(f"CRDs not Established after {STARTUP_TIMEOUT:.0f}s: {sorted(pending)}")

    def _kueue_client_config(self, path: str) -> dict:
        return {"url": f"https://127.0.0.1:{self.ports['kueue_webhook']}{path}",
                "caBundle": _b64(self.ca.cert_pem())}

    # ----- Kueue ---------------------------------------------------------------------------
    @property
    def kueue_visibility(self) -> bool:
        """Whether this plane runs Kueue's visibility server.  Before v0.17 Kueue has no setting for its
        address and binds every interface; the harness serves on 127.0.0.1 only, so such a cell
        (scripts/matrix.sh) runs without it, as a cluster without the visibility API."""
        minor = tuple(int(part) for part in self.binaries.versions["KUEUE_VERSION"].lstrip("v").split(".")[:2])
        return self.kueue_options.visibility and minor >= (0, 17)

    def _kueue_config(self, webhook_cert_dir: Path) -> dict:
        cfg: dict = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": KUEUE_NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports['kueue_health']}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"host": "127.0.0.1", "port": self.ports["kueue_webhook"], "certDir": str(webhook_cert_dir)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "integrations": {"frameworks": ["batch/job", "ray.io/rayjob"]},
            "clientConnection": {"qps": 100, "burst": 200},
        }
        if self.kueue_visibility:
            cfg["visibilityServer"] = {"bindAddress": "127.0.0.1", "bindPort": self.ports["kueue_visibility"]}
        if self.kueue_options.multikueue is not None:
            cfg["multiKueue"] = self.kueue_options.multikueue
        return cfg

    def _start_kueue(self) -> None:
        for mountpoint in (KUEUE_VISIBILITY_CERT_DIR, KUEUE_METRICS_CERT_DIR):
            if not os.path.isdir(mountpoint):
                try:
                    os.makedirs(mountpoint, exist_ok=True)
                except OSError as err:
                    raise HarnessStartError(
                        f"Kueue reads certificates from the fixed path {mountpoint}; the harness bind-mounts a "
                        f"per-process dir there and needs that empty mount point to exist ({err}). Run as root."
                    ) from err
        kdir = self.state_dir / "kueue"
        cert_dirs = {}
        for purpose in ("webhook", "visibility", "metrics"):
            d = kdir / f"{purpose}-certs"
            d.mkdir(parents=True, exist_ok=True)
            shutil.copy(self.kueue_serving.cert, d / "tls.crt")
            shutil.copy(self.kueue_serving.key, d / "tls.key")
            cert_dirs[purpose] = d
        config_path = kdir / "config.yaml"
        config_path.write_text(yaml.safe_dump(self._kueue_config(cert_dirs["webhook"])))
        gates = dict(self.kueue_options.feature_gates)
        if not self.kueue_visibility:
            gates["VisibilityOnDemand"] = False
        argv = [
            "unshare", "--mount", "--propagation", "private", "--",
            "/bin/sh", "-c",
            'mount --bind "$1" "$2" && mount --bind "$3" "$4" && shift 4 && exec "$@"', "kueue-mounts",
            str(cert_dirs["visibility"]), KUEUE_VISIBILITY_CERT_DIR,
            str(cert_dirs["metrics"]), KUEUE_METRICS_CERT_DIR,
            str(self.binaries.kueue), f"--config={config_path}", f"--kubeconfig={self.kubeconfig}",
            "--zap-log-level=info",
        ]
        if gates:
            argv.append("--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items())))
        self.kueue = ManagedProcess(f"{self.name}/kueue", argv, self.logs_dir / "kueue.log")
        self.kueue.start()
        health = f"http://127.0.0.1:{self.ports['kueue_health']}/readyz"
        self.kueue.wait_until(lambda: urllib.request.urlopen(health, timeout=2).status == 200,
                              "/readyz ok", STARTUP_TIMEOUT)
        self.kueue.wait_until(lambda: port_open(self.ports["kueue_webhook"]), "webhook port open", STARTUP_TIMEOUT)
        self._install_kueue_webhooks()
        if self.kueue_visibility:
            self.kueue.wait_until(lambda: port_open(self.ports["kueue_visibility"]),
                                  "visibility port open", STARTUP_TIMEOUT)
            self._install_visibility_api()
            self.has_visibility_api = True

    def _install_kueue_webhooks(self) -> None:
        manifests = self.binaries.kueue_module_dir / "config" / "components" / "webhook" / "manifests.yaml"
        adm = k8s.AdmissionregistrationV1Api(self.api_client())
        for doc in yaml.safe_load_all(manifests.read_text()):
            kept = []
            for hook in doc["webhooks"]:
                rules = hook["rules"]
                wanted = all(
                    group == "kueue.x-k8s.io" or (group, res.split("/")[0]) in KUEUE_WEBHOOK_RESOURCES
                    for rule in rules for group in rule["apiGroups"] for res in rule["resources"]
                )
                if wanted:
                    hook["clientConfig"] = self._kueue_client_config(hook["clientConfig"]["service"]["path"])
                    kept.append(hook)
            body = {"apiVersion": doc["apiVersion"], "kind": doc["kind"],
                    "metadata": {"name": "kueue-" + doc["metadata"]["name"]}, "webhooks": kept}
            if doc["kind"] == "MutatingWebhookConfiguration":
                adm.create_mutating_webhook_configuration(body)
            else:
                adm.create_validating_webhook_configuration(body)

    def _install_visibility_api(self) -> None:
        # The aggregator has no URL form; an ExternalName Service resolves to host:port directly,
        # so the visibility server is reached on 127.0.0.1 without a ClusterIP or Endpoints.
        core = k8s.CoreV1Api(self.api_client())
        core.create_namespaced_service(KUEUE_NAMESPACE, {
            "metadata": {"name": "visibility-server", "namespace": KUEUE_NAMESPACE},
            "spec": {"type": "ExternalName", "externalName": "localhost",
                     "ports": [{"name": "https", "port": self.ports["kueue_visibility"]}]},
        })
        reg = k8s.ApiregistrationV1Api(self.api_client())
        vis_dir = self.binaries.kueue_module_dir / "config" / "components" / "visibility"
        names = []
        for path in sorted(vis_dir.glob("apiservice_*.yaml")):
            svc = yaml.safe_load(path.read_text())
            svc["spec"].pop("insecureSkipTLSVerify", None)
            svc["spec"]["caBundle"] = _b64(self.ca.cert_pem())
            svc["spec"]["service"]["port"] = self.ports["kueue_visibility"]
            reg.create_api_service(svc)
            names.append(svc["metadata"]["name"])

        def available() -> bool:
            for name in names:
                conds = reg.read_api_service(name).status.conditions or []
                if not any(c.type == "Available" and c.status == "True" for c in conds):
                    return False
            return True

        assert self.kueue is not None
        self.kueue.wait_until(available, "visibility APIServices Available", STARTUP_TIMEOUT)

    # ----- T2: controller-manager, scheduler, KWOK ----------------------------------------------
    def _controller_manager(self, controllers: list[str]) -> ManagedProcess:
        return ManagedProcess(f"{self.name}/kube-controller-manager", [
            str(self.binaries.kube_controller_manager),
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={self.ports['kcm']}",
            "--leader-elect=false", "--use-service-account-credentials=false",
            f"--service-account-private-key-file={self.service_account_keys.key}",
            f"--root-ca-file={self.ca.cert_path}",
            "--controllers=" + ",".join(controllers),
            "--profiling=false", "-v=1",
        ], self.logs_dir / "kube-controller-manager.log")

    def _start_controller_manager(self, controllers: list[str]) -> None:
        kcm = self._controller_manager(controllers)
        self.extra.append(kcm)
        kcm.start()
        kcm.wait_until(lambda: port_open(self.ports["kcm"]), "serving port open", STARTUP_TIMEOUT)

    def _start_workload_controllers(self) -> None:
        from .kwok import start_kwok  # T2 only

        # nodeipam and the cloud controllers need a cloud or pod CIDRs the harness does not have.
        self._start_controller_manager(
            self.controllers or ["*", "-nodeipam", "-service-lb-controller", "-cloud-node-lifecycle"])
        scheduler = ManagedProcess(f"{self.name}/kube-scheduler", [
            str(self.binaries.kube_scheduler),
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={self.ports['scheduler']}",
            "--leader-elect=false", "--profiling=false", "-v=1",
        ], self.logs_dir / "kube-scheduler.log")
        self.extra.append(scheduler)
        scheduler.start()
        scheduler.wait_until(lambda: port_open(self.ports["scheduler"]), "serving port open", STARTUP_TIMEOUT)
        if not self.kuberay:
            self.extra.append(start_kwok(self))
            return
        self.ray_dashboard = FakeRayDashboard()
        self._ray_cli_dir = ray_cli_dir(self.ray_dashboard)
        self.extra.append(start_kwok(self, [ray_head_exec(self.ray_dashboard, self._ray_cli_dir)],
                                     kwok_process_env(self._ray_cli_dir)))
        self.extra.append(start_kuberay(self, self.ray_dashboard))

    # ----- service accounts ---------------------------------------------------------------
    def kubeconfig_for_serviceaccount(self, namespace: str, name: str, *, expiration_seconds: int = 86400,
                                      server: str | None = None) -> str:
        """Create the ServiceAccount if needed and write a token kubeconfig for it (no RBAC granted)."""
        core = k8s.CoreV1Api(self.api_client())
        try:
            core.read_namespace(namespace)
        except ApiException as err:
            if err.status != 404:
                raise
            core.create_namespace({"metadata": {"name": namespace}})
        try:
            core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
        except ApiException as err:
            if err.status != 409:
                raise
        token = core.create_namespaced_service_account_token(
            name, namespace, {"spec": {"expirationSeconds": expiration_seconds}}
        ).status.token
        path = self.state_dir / f"sa-{namespace}-{name}.kubeconfig"
        return str(write_kubeconfig(path, f"{self.name}-{namespace}-{name}", server or self.server,
                                    self.ca.cert_pem(), {"token": token}))
