"""Kubeconfig loading the way kubectl does it: ``KUBECONFIG`` may list several
files (merged, first wins), contexts, exec credential plugins (handled by the
kubernetes client), and in-cluster service-account config when there is no
kubeconfig at all."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import ENV_KUBECONFIG_PATH_SEPARATOR, KubeConfigMerger

from tau_tui.core.cluster.errors import ClusterError

IN_CLUSTER_CONTEXT = "in-cluster"
#: One long-lived watch per resource kind plus log streams and requests.
POOL_SIZE = 64
IN_CLUSTER_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


@dataclass(frozen=True)
class ContextInfo:
    name: str
    cluster: str
    user: str
    namespace: str | None


def kubeconfig_paths(explicit: str | None = None) -> list[str]:
    raw = explicit if explicit is not None else os.environ.get("KUBECONFIG", "~/.kube/config")
    return [os.path.expanduser(p) for p in raw.split(ENV_KUBECONFIG_PATH_SEPARATOR) if p]


def _merger(paths: list[str]) -> KubeConfigMerger | None:
    existing = [p for p in paths if os.path.exists(p)]
    if not existing:
        return None
    return KubeConfigMerger(ENV_KUBECONFIG_PATH_SEPARATOR.join(existing))


def _plain(node: Any) -> Any:
    """The merger wraps dicts (and list entries) in ConfigNode; unwrap them."""
    value = getattr(node, "value", node)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def in_cluster_available() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(k8s_config.incluster_config.SERVICE_TOKEN_FILENAME)


class KubeconfigSource:
    """Contexts of one kubeconfig set, and ApiClients for them."""

    def __init__(self, kubeconfig: str | None = None):
        self.paths = kubeconfig_paths(kubeconfig)
        self.explicit = kubeconfig

    def _config(self) -> dict[str, Any] | None:
        try:
            merger = _merger(self.paths)
        except Exception as exc:  # unreadable file, broken YAML: name the files, never a traceback
            where = ENV_KUBECONFIG_PATH_SEPARATOR.join(p for p in self.paths if os.path.exists(p))
            raise ClusterError(f"cannot read kubeconfig {where}: {exc}. Fix the file or point KUBECONFIG at a valid one") from None
        if merger is None:
            return None
        config: dict[str, Any] = _plain(merger.config)
        return config

    def contexts(self) -> list[ContextInfo]:
        cfg = self._config()
        if cfg is None:
            return [ContextInfo(IN_CLUSTER_CONTEXT, "in-cluster", "serviceaccount", self._in_cluster_namespace())] if in_cluster_available() else []
        out = []
        for entry in cfg.get("contexts") or ():
            ctx = entry.get("context") or {}
            out.append(ContextInfo(str(entry.get("name")), str(ctx.get("cluster", "")), str(ctx.get("user", "")), ctx.get("namespace")))
        return out

    def current_context(self) -> str | None:
        cfg = self._config()
        if cfg is None:
            return IN_CLUSTER_CONTEXT if in_cluster_available() else None
        return cfg.get("current-context") or (self.contexts()[0].name if self.contexts() else None)

    @staticmethod
    def _in_cluster_namespace() -> str | None:
        try:
            with open(IN_CLUSTER_NAMESPACE_FILE) as fh:
                return fh.read().strip() or None
        except OSError:
            return None

    def namespace_of(self, context: str | None) -> str | None:
        for info in self.contexts():
            if info.name == context:
                return info.namespace
        return None

    def api_client(self, context: str | None) -> k8s.ApiClient:
        """A client for ``context`` (exec plugins refresh their tokens)."""
        try:
            if context == IN_CLUSTER_CONTEXT and self._config() is None:
                configuration = k8s.Configuration()
                configuration.connection_pool_maxsize = POOL_SIZE
                k8s_config.load_incluster_config(client_configuration=configuration)
                return k8s.ApiClient(configuration)
            if self._config() is None:
                raise ClusterError(
                    f"no kubeconfig found (looked at {', '.join(self.paths) or '~/.kube/config'}) and not running in a cluster; "
                    "set KUBECONFIG or use --demo"
                )
            configuration = k8s.Configuration()
            configuration.connection_pool_maxsize = POOL_SIZE
            loader = k8s_config.kube_config._get_kube_config_loader(
                filename=ENV_KUBECONFIG_PATH_SEPARATOR.join(p for p in self.paths if os.path.exists(p)),
                active_context=context,
            )
            loader.load_and_set(configuration)
            return k8s.ApiClient(configuration)
        except ConfigException as exc:
            known = ", ".join(c.name for c in self.contexts())
            where = ENV_KUBECONFIG_PATH_SEPARATOR.join(p for p in self.paths if os.path.exists(p))
            raise ClusterError(f"cannot use kubeconfig {where} context {context!r}: {exc}" + (f". Known contexts: {known}" if known else "")) from None
