"""The requests one client made, read from kube-apiserver's audit log: counted outside the client's code.

A control plane started with :func:`audit_flags` logs, at level Metadata, every request of a user in
the group ``AUDITED_GROUP`` (and nothing else); :func:`audited_kubeconfig` writes a kubeconfig whose
client certificate is such a user (also in system:masters: admin rights). One user name per client
run keeps runs apart in one log.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import yaml

if TYPE_CHECKING:
    from .controlplane import ControlPlane

AUDITED_GROUP = "tau-harness:audited"
POLICY = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
    # A watch logs ResponseStarted, then ResponseComplete when it ends: one request, one auditID.
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "userGroups": [AUDITED_GROUP]}, {"level": "None"}],
}


def audit_flags(directory: Path) -> list[str]:
    """kube-apiserver flags that log the audited group's requests to ``directory/audit.log``."""
    directory.mkdir(parents=True, exist_ok=True)
    policy = directory / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(POLICY))
    return [f"--audit-policy-file={policy}", f"--audit-log-path={audit_log(directory)}",
            "--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0"]


def audit_log(directory: Path) -> Path:
    return directory / "audit.log"


def audited_kubeconfig(plane: ControlPlane, user: str, server: str | None = None) -> str:
    """A kubeconfig for ``user`` (client certificate; admin rights; audited) on ``server`` (default
    the plane's own address; a proxy in front of it works when it passes TLS through)."""
    from .controlplane import _b64, write_kubeconfig

    pair = plane.ca.issue(f"audited-{user}", user, organizations=("system:masters", AUDITED_GROUP), client=True)
    return str(write_kubeconfig(plane.state_dir / f"{user}.kubeconfig", f"{plane.name}-{user}", server or plane.server,
                                plane.ca.cert_pem(), {"client-certificate-data": _b64(pair.cert_pem()),
                                                      "client-key-data": _b64(pair.key_pem())}))


@dataclass(frozen=True)
class Request:
    verb: str  # the API verb: get, list, watch, create, ... (the HTTP verb for a path outside the API)
    resource: str  # resource.group[/subresource], or the path of a request outside the API
    name: str  # the object's name; "" for lists, watches and paths
    namespace: str
    next_page: bool  # a list carrying a continue token (a page after the first)
    received: datetime

    @property
    def key(self) -> str:
        """``verb resource``, a list's later pages counted apart as ``list (next page) resource``,
        a get naming an object as ``get (by name) resource``."""
        verb = self.verb + (" (next page)" if self.next_page else "") + (" (by name)" if self.name else "")
        return f"{verb} {self.resource}"


def read_requests(log: Path, user: str, since: datetime | None = None, until: datetime | None = None) -> list[Request]:
    """``user``'s requests received in [since, until] (server time; UTC, timezone-aware), once each."""
    seen: dict[str, Request] = {}
    for line in log.read_text().splitlines() if log.exists() else ():
        event = json.loads(line)
        if event.get("user", {}).get("username") != user or event["auditID"] in seen:
            continue
        received = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))
        if (since is not None and received < since) or (until is not None and received > until):
            continue
        ref = event.get("objectRef")
        uri = urlsplit(event["requestURI"])
        if ref:
            resource = ref.get("resource", "") + (f".{ref['apiGroup']}" if ref.get("apiGroup") else "")
            resource += f"/{ref['subresource']}" if ref.get("subresource") else ""
            name, namespace = ref.get("name", ""), ref.get("namespace", "")
        else:
            resource, name, namespace = uri.path, "", ""
        seen[event["auditID"]] = Request(event["verb"], resource, name, namespace,
                                         bool(parse_qs(uri.query).get("continue")), received)
    return sorted(seen.values(), key=lambda r: r.received)


def counted(requests: list[Request]) -> Counter[str]:
    """How many requests of each :attr:`Request.key`."""
    return Counter(r.key for r in requests)
