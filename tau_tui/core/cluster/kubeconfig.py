"""Kubeconfig loading the way kubectl does it: ``KUBECONFIG`` may list several
files (merged, first wins), contexts, exec credential plugins (handled by the
kubernetes client), and in-cluster service-account config when there is no
kubeconfig at all."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import ENV_KUBECONFIG_PATH_SEPARATOR, KubeConfigLoader, KubeConfigMerger

from tau_tui.core.cluster.credential_refresh import CredentialRefresher, reload_from, retry_once_refreshed
from tau_tui.core.cluster.credentials import harden_kubernetes_client, take_exec_failure
from tau_tui.core.cluster.errors import ClusterError

IN_CLUSTER_CONTEXT = "in-cluster"
#: One long-lived watch per resource kind plus log streams and requests.
POOL_SIZE = 64
IN_CLUSTER_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


@dataclass(frozen=True)
class RequestTimeouts:
    """Seconds each API request may take to connect (TLS handshake included) and
    between bytes of the answer; exec credential plugins get ``exec_plugin``.
    ``0`` means no limit (as kubectl's ``--request-timeout=0``)."""

    connect: float = 5.0
    read: float = 30.0
    exec_plugin: float = 60.0

    def pair(self, read: float | None = None) -> tuple[float | None, float | None]:
        """The ``(connect, read)`` pair urllib3 takes (``None``: unbounded)."""
        chosen = self.read if read is None else read
        return (self.connect or None, chosen or None)

    @classmethod
    def from_read(cls, read: float, connect: float | None = None, exec_plugin: float | None = None) -> RequestTimeouts:
        """A ``--request-timeout`` value: the read limit; connect is capped by it."""
        base = cls()
        connect = base.connect if connect is None else connect
        if read and connect:
            connect = min(connect, read)
        if exec_plugin is None:
            exec_plugin = max(base.exec_plugin, read) if read else 0.0
        return cls(connect=connect, read=read, exec_plugin=exec_plugin)


DEFAULT_TIMEOUTS = RequestTimeouts()
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$")


def parse_duration(text: str) -> float:
    """kubectl's ``--request-timeout`` spelling: ``0``, ``30``, ``30s``, ``1m30s``, ``500ms``, ``2h``."""
    value = str(text).strip()
    try:
        number = float(value)
    except ValueError:
        match = _DURATION.match(value)
        if not value or not match or not any(match.groups()):
            raise ValueError(f"{text!r} is not a duration; write e.g. 30s, 1m, 500ms or 0 (no limit)") from None
        hours, minutes, seconds, millis = (float(g) if g else 0.0 for g in match.groups())
        number = hours * 3600 + minutes * 60 + seconds + millis / 1000
    if number < 0:
        raise ValueError(f"{text!r} is negative; write a duration such as 30s, or 0 for no limit")
    return number


def bound_requests(api_client: k8s.ApiClient, timeouts: RequestTimeouts) -> k8s.ApiClient:
    """Every request of ``api_client`` without its own timeout gets ``timeouts``."""
    rest = api_client.rest_client
    unbounded: Callable[..., Any] = rest.request  # the client's method carries no annotations

    def request(
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        return unbounded(method, url, headers=headers, body=body, post_params=post_params,
                         _request_timeout=_request_timeout or timeouts.pair())

    # Both go onto this one instance on purpose (an instance attribute shadows the method, and
    # the timeouts ride along for error messages); set by name, as the client's types declare neither.
    setattr(rest, "request", request)  # noqa: B010
    setattr(api_client, "tau_timeouts", timeouts)  # noqa: B010
    return api_client


def client_configuration() -> k8s.Configuration:
    """The settings every client of the app starts from: a pool for the watches, no silent re-sends."""
    configuration = k8s.Configuration()
    configuration.connection_pool_maxsize = POOL_SIZE
    configuration.retries = False  # one timeout is one failure
    return configuration


def api_client_from_document(doc: dict[str, Any], timeouts: RequestTimeouts | None = None) -> k8s.ApiClient:
    """A client for a kubeconfig held in memory (its current context), made as
    :meth:`KubeconfigSource.api_client` makes one: key material in memory only
    (:mod:`tau_tui.core.cluster.credentials`), no retries, every request bounded.
    Raises the client's ``ConfigException`` when the document cannot be used."""
    timeouts = timeouts or DEFAULT_TIMEOUTS
    harden_kubernetes_client(timeouts.exec_plugin)
    configuration = client_configuration()
    KubeConfigLoader(config_dict=doc).load_and_set(configuration)
    return bound_requests(k8s.ApiClient(configuration), timeouts)


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
        # kubectl's rule: the first file that sets current-context wins; the client's merger keeps the last.
        first = next((c["current-context"] for c in merger.config_files.values()
                      if isinstance(c, dict) and c.get("current-context")), None)
        if first:
            config["current-context"] = first
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

    def api_client(self, context: str | None, timeouts: RequestTimeouts | None = None) -> k8s.ApiClient:
        """A client for ``context`` (exec plugins refresh their tokens) whose every
        request is bounded by ``timeouts``; key material never touches a shared
        temporary directory (:mod:`tau_tui.core.cluster.credentials`)."""
        timeouts = timeouts or DEFAULT_TIMEOUTS
        harden_kubernetes_client(timeouts.exec_plugin)
        try:
            if context == IN_CLUSTER_CONTEXT and self._config() is None:
                configuration = client_configuration()
                k8s_config.load_incluster_config(client_configuration=configuration)
                return bound_requests(k8s.ApiClient(configuration), timeouts)
            if self._config() is None:
                raise ClusterError(
                    f"no kubeconfig found (looked at {', '.join(self.paths) or '~/.kube/config'}) and not running in a cluster; "
                    "set KUBECONFIG or use --demo"
                )
            configuration = client_configuration()
            loader = k8s_config.kube_config._get_kube_config_loader(
                filename=ENV_KUBECONFIG_PATH_SEPARATOR.join(p for p in self.paths if os.path.exists(p)),
                active_context=context,
            )
            take_exec_failure()
            loader.load_and_set(configuration)
            failure = take_exec_failure()  # the client only logs a failing plugin; say it
            if failure:
                raise ClusterError(f"{failure}. Fix or re-run the credential plugin of context {context or '(current)'} (log in again)")
            refresher = CredentialRefresher(configuration, reload_from(loader, configuration), getattr(loader, "expiry", None))
            return retry_once_refreshed(bound_requests(k8s.ApiClient(configuration), timeouts), refresher)
        except ConfigException as exc:
            known = ", ".join(c.name for c in self.contexts())
            where = ENV_KUBECONFIG_PATH_SEPARATOR.join(p for p in self.paths if os.path.exists(p))
            raise ClusterError(f"cannot use kubeconfig {where} context {context!r}: {exc}" + (f". Known contexts: {known}" if known else "")) from None
