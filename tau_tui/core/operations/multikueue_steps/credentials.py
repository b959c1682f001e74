"""Worker credentials: a least-privilege kubeconfig per MultiKueue worker.

* read from a file or from a context of the owner's kubeconfig, reduced to one
  standalone context (cluster, user, context) with everything embedded;
* refused when Kueue would refuse it (kueue.md A4.4): ``insecure-skip-tls-verify``,
  a plain ``http://`` server, no ``certificate-authority-data``, a CA *file*
  path, token files, basic auth, exec plugins and auth providers;
* never shown, logged or written to a plain file: :class:`WorkerCredential`
  prints as a fingerprint, previews show ``<redacted>``; the bytes go only to
  the Secret on the manager and, during a rotation, to the OS keyring.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from tau_tui.core.cluster.worker_kubeconfig import insecure_reasons, named_entry
from tau_tui.core.operations.multikueue_steps.access import AccessError, BackendAccess

REDACTED = "<redacted>"


class CredentialError(Exception):
    """The kubeconfig cannot be used; ``message`` says why and what to do."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, repr=False)
class WorkerCredential:
    worker: str
    kubeconfig: bytes = field(repr=False)
    server: str
    source: str

    @property
    def fingerprint(self) -> str:
        """Names this credential in records without revealing it."""
        return "sha256:" + hashlib.sha256(self.kubeconfig).hexdigest()[:16]

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = yaml.safe_load(self.kubeconfig.decode("utf-8"))
        return doc

    def secret_data(self) -> str:
        return base64.b64encode(self.kubeconfig).decode("ascii")

    def __repr__(self) -> str:
        return f"WorkerCredential(worker={self.worker!r}, server={self.server!r}, {self.fingerprint})"

    __str__ = __repr__


def standalone(doc: Mapping[str, Any], context: str | None, where: str) -> dict[str, Any]:
    """One context of a kubeconfig, with its cluster and user, as a standalone document."""
    name = context or doc.get("current-context")
    if not name:
        raise CredentialError(f"{where}: no context given and no current-context set; name one")
    entry = named_entry(doc.get("contexts"), name)
    if entry is None:
        known = ", ".join(str(c.get("name")) for c in doc.get("contexts") or () if isinstance(c, Mapping))
        raise CredentialError(f"{where}: context {name!r} not found" + (f"; known contexts: {known}" if known else ""))
    ctx = dict(entry.get("context") or {})
    cluster = named_entry(doc.get("clusters"), ctx.get("cluster"))
    user = named_entry(doc.get("users"), ctx.get("user"))
    if cluster is None or user is None:
        raise CredentialError(f"{where}: context {name!r} names a cluster or user that is not in the file")
    return {"apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [cluster], "users": [user], "contexts": [{"name": name, "context": ctx}]}


def credential_from_document(worker: str, doc: dict[str, Any], source: str) -> WorkerCredential:
    reasons = insecure_reasons(doc)
    if reasons:
        raise CredentialError(f"worker {worker}: kubeconfig from {source} refused: " + "; ".join(reasons))
    server = str(((doc["clusters"][0] or {}).get("cluster") or {}).get("server"))
    return WorkerCredential(worker, yaml.safe_dump(doc, sort_keys=True).encode("utf-8"), server, source)


def load_kubeconfig_file(path: str, where: str) -> dict[str, Any]:
    try:
        with open(os.path.expanduser(path), "rb") as handle:
            raw = handle.read(1 << 20)
    except OSError as exc:
        raise CredentialError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise CredentialError(f"{path}{at}: not a kubeconfig (YAML error: {getattr(exc, 'problem', exc)})") from None
    if not isinstance(doc, dict) or doc.get("kind", "Config") != "Config":
        raise CredentialError(f"{path}: not a kubeconfig (expected kind: Config)")
    return doc


def credential_from_secret(worker: str, secret: Mapping[str, Any] | None) -> WorkerCredential | None:
    """The credential stored in the Kueue Secret (key ``kubeconfig``), or None."""
    if not secret:
        return None
    data = (secret.get("data") or {}).get("kubeconfig")
    if not data:
        return None
    try:
        raw = base64.b64decode(data)
        doc = yaml.safe_load(raw.decode("utf-8"))
        server = str(((doc["clusters"][0] or {}).get("cluster") or {}).get("server"))
    except Exception:
        return None
    return WorkerCredential(worker, raw, server, f"Secret {secret.get('metadata', {}).get('name')}")


def redacted_kubeconfig(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The kubeconfig with every credential field replaced (for previews)."""
    out = dict(doc)
    users = []
    for entry in doc.get("users") or ():
        user = dict((entry or {}).get("user") or {})
        for key in list(user):
            if key in ("token", "client-key-data", "client-certificate-data", "password", "exec", "auth-provider"):
                user[key] = REDACTED
        users.append({"name": entry.get("name"), "user": user})
    out["users"] = users
    return out


class WorkerConnector(Protocol):
    """Where worker credentials come from and how a worker is reached with one."""

    def load(self, worker: str, path: str | None = None, context: str | None = None) -> WorkerCredential: ...

    def connect(self, credential: WorkerCredential) -> BackendAccess: ...

    def admin(self, context: str) -> BackendAccess:
        """The owner's own access to a worker (a kubeconfig context), for inspection and revocation."""
        ...


class KubeconfigConnector:
    """Real clusters: the owner's kubeconfig files; a worker is reached with an
    ApiClient built in memory from the standalone credential."""

    def __init__(self, kubeconfig: str | None = None):
        self.kubeconfig = kubeconfig

    def load(self, worker: str, path: str | None = None, context: str | None = None) -> WorkerCredential:
        if path:
            doc = standalone(load_kubeconfig_file(path, f"worker {worker}"), context, path)
            return credential_from_document(worker, doc, f"file {path}")
        if not context:
            raise CredentialError(f"worker {worker}: give a kubeconfig path or a context name")
        from tau_tui.core.cluster.kubeconfig import KubeconfigSource

        source = KubeconfigSource(self.kubeconfig)
        config = source._config()
        if config is None:
            raise CredentialError(f"worker {worker}: no kubeconfig found to take context {context!r} from")
        return credential_from_document(worker, standalone(config, context, "kubeconfig"), f"context {context}")

    def connect(self, credential: WorkerCredential) -> BackendAccess:
        from tau_tui.core.cluster.cache import ObjectCache
        from tau_tui.core.cluster.common import BaseBackend
        from tau_tui.core.cluster.kubeconfig import api_client_from_document
        from tau_tui.core.cluster.real import KubernetesBackend, _Http

        try:  # the main client's path: key material in a memfd, never in $TMPDIR; no retries
            api_client = api_client_from_document(credential.document())
        except Exception as exc:
            raise AccessError(f"worker {credential.worker}: the kubeconfig cannot be loaded: {type(exc).__name__}") from None

        class CredentialBackend(KubernetesBackend):
            """Only the API primitives of the real backend: no kubeconfig files, no watches."""

            def __init__(self) -> None:
                BaseBackend.__init__(self, ObjectCache())
                self.http = _Http(api_client)
                self._context = credential.worker
                self._namespace = None

        return BackendAccess(CredentialBackend(), f"worker {credential.worker}")

    def admin(self, context: str) -> BackendAccess:
        from tau_tui.core.cluster.real import KubernetesBackend

        return BackendAccess(KubernetesBackend(self.kubeconfig, context=context), f"context {context}")
