"""Whether a standalone worker kubeconfig is safe to hand to Kueue's MultiKueue controller
(kueue.md A4.4): pure checks on the document, shared by the setup wizard and the simulator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def named_entry(entries: Any, name: str | None) -> dict[str, Any] | None:
    """The kubeconfig list entry (context, cluster, user) called `name`, as a dict."""
    for entry in entries or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            return dict(entry)
    return None


def insecure_reasons(doc: Mapping[str, Any]) -> list[str]:
    """Why Kueue (and we) refuse this standalone kubeconfig; empty = acceptable."""
    reasons: list[str] = []
    ctx_name = doc.get("current-context")
    ctx = (named_entry(doc.get("contexts"), ctx_name) or {}).get("context") or {}
    cluster = (named_entry(doc.get("clusters"), ctx.get("cluster")) or {}).get("cluster") or {}
    user = (named_entry(doc.get("users"), ctx.get("user")) or {}).get("user") or {}
    server = str(cluster.get("server") or "")
    if not server:
        reasons.append("the cluster has no server")
    elif server.startswith("http://"):
        reasons.append(f"server {server} is plain http: the credential would travel unencrypted; use https")
    elif not server.startswith("https://"):
        reasons.append(f"server {server} is not an https URL")
    if cluster.get("insecure-skip-tls-verify"):
        reasons.append("insecure-skip-tls-verify is set: the worker's identity would not be checked; give its CA instead")
    if cluster.get("certificate-authority") and not cluster.get("certificate-authority-data"):
        reasons.append("certificate-authority is a file path, which the manager cannot read; embed it as certificate-authority-data")
    elif not cluster.get("certificate-authority-data"):
        reasons.append("no certificate-authority-data: the worker's TLS certificate cannot be verified")
    if user.get("tokenFile") or user.get("token-file"):
        reasons.append("tokenFile is a path on this machine; embed the token")
    if user.get("username") or user.get("password"):
        reasons.append("basic auth (username/password) is refused by Kueue")
    if user.get("exec"):
        reasons.append("an exec credential plugin cannot run inside the Kueue controller")
    if user.get("auth-provider"):
        reasons.append("an auth-provider cannot run inside the Kueue controller")
    if not (user.get("token") or (user.get("client-certificate-data") and user.get("client-key-data"))):
        reasons.append("no embedded token or client certificate")
    return reasons
