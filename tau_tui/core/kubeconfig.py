"""Kubeconfig loading as kubectl does it: KUBECONFIG with several files, contexts, exec plugins, in-cluster."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeconfigError(Exception):
    """The kubeconfig cannot be used; the message names the file(s) and what to do."""


@dataclass(frozen=True)
class KubeconfigInfo:
    files: tuple[str, ...]
    contexts: tuple[str, ...]
    current: str | None
    in_cluster: bool


def kubeconfig_files() -> list[str]:
    raw = os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    return [str(Path(p).expanduser()) for p in raw.split(os.pathsep) if p]


def _in_cluster_available() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and Path("/var/run/secrets/kubernetes.io/serviceaccount/token").exists()


def describe() -> KubeconfigInfo:
    """Contexts across every KUBECONFIG file (first file wins for a name, as kubectl merges)."""
    from kubernetes.config import ConfigException, list_kube_config_contexts

    files = [f for f in kubeconfig_files() if Path(f).exists()]
    if not files:
        if _in_cluster_available():
            return KubeconfigInfo((), ("in-cluster",), "in-cluster", True)
        return KubeconfigInfo((), (), None, False)
    try:
        contexts, current = list_kube_config_contexts(config_file=os.pathsep.join(files))
    except ConfigException as err:
        raise KubeconfigError(f"cannot read kubeconfig {os.pathsep.join(files)}: {err}. Fix the file or point KUBECONFIG at a valid one") from None
    except Exception as err:  # YAML errors, permissions
        raise KubeconfigError(f"cannot read kubeconfig {os.pathsep.join(files)}: {err}. Fix the file or point KUBECONFIG at a valid one") from None
    names = tuple(c["name"] for c in contexts or ())
    return KubeconfigInfo(tuple(files), names, (current or {}).get("name"), False)


def api_client(context: str | None = None) -> Any:
    """An ApiClient for the context (or the current one). Never writes refreshed tokens back to the user's files."""
    from kubernetes import client, config

    files = [f for f in kubeconfig_files() if Path(f).exists()]
    if not files:
        if _in_cluster_available() and context in (None, "in-cluster"):
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration)
        raise KubeconfigError(f"no kubeconfig found (looked for {os.pathsep.join(kubeconfig_files())}). Set KUBECONFIG, or try `tau-tui --demo`")
    try:
        return config.new_client_from_config(config_file=os.pathsep.join(files), context=context, persist_config=False)
    except config.ConfigException as err:
        known = ""
        try:
            known = ", ".join(describe().contexts)
        except KubeconfigError:
            pass
        where = os.pathsep.join(files)
        hint = f" Known contexts: {known}." if known else ""
        raise KubeconfigError(f"cannot use kubeconfig {where}" + (f" context {context!r}" if context else "") + f": {err}.{hint}") from None
    except Exception as err:
        raise KubeconfigError(f"cannot use kubeconfig {os.pathsep.join(files)}: {err}") from None
