"""Turn API server failures into plain, actionable messages.

One function, :func:`describe_api_error`, used by the backends, the CLI and
the UI alike, so a 403 reads the same everywhere; :class:`ClusterError`
carries such a message to the caller."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any


class ClusterError(Exception):
    """A failure already turned into a plain message (no traceback for users)."""

    def __init__(self, message: str, *, code: int | None = None):
        super().__init__(message)
        self.message = message
        self.code = code


def _status_body(body: Any) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        return body
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body.strip().startswith("{"):
        try:
            parsed = json.loads(body)
            return parsed if isinstance(parsed, Mapping) else {}
        except ValueError:
            return {}
    return {}


def _where(namespace: str | None) -> str:
    return f" in ns {namespace}" if namespace else " (cluster-scoped)"


def describe_api_error(
    code: int | None,
    *,
    verb: str,
    resource: str,
    namespace: str | None = None,
    name: str | None = None,
    body: Any = None,
    reason: str | None = None,
) -> str:
    """A one-paragraph message naming resource, verb and what to do.

    ``resource`` is the kubectl spelling (``workloads.kueue.x-k8s.io``,
    ``jobs.batch``); ``body`` is the server's Status object or its JSON text."""
    status = _status_body(body)
    server_msg = str(status.get("message") or reason or "").strip()
    target = f"{resource}/{name}" if name else resource
    where = _where(namespace)
    if code is None or code == 0:
        return (
            f"cannot reach the API server to {verb} {target}{where}: {server_msg or 'connection failed'}. "
            "Check the network/VPN and the kubeconfig server address, then retry."
        )
    if code == 401:
        return (
            f"not authenticated to {verb} {target}{where}: credentials are missing or expired. "
            "Log in again (refresh the kubeconfig or the exec credential plugin) and retry."
        )
    if code == 403:
        return (
            f"no access: {verb} {resource}{where}. Ask a cluster admin for a Role/ClusterRole "
            f"that grants '{verb}' on {resource}" + (f" in namespace {namespace}" if namespace else "") + "."
        )
    if code == 404:
        if name and status.get("details", {}).get("name") == name or (name and "not found" in server_msg and name in server_msg):
            return f"not found: {target}{where} does not exist (it may have been deleted). Refresh and retry."
        return (
            f"not found: the server does not serve {resource}{where} "
            f"({server_msg or 'resource type not installed'}). Install its CRD/controller or check the "
            "API version, or pick another context."
        )
    if code == 409:
        if (status.get("reason") or reason) == "AlreadyExists":
            return f"already exists: {target}{where}. Pick another name or delete the existing object first."
        return f"conflict while trying to {verb} {target}{where}: the object changed meanwhile. Refresh and retry."
    if code == 422 or (status.get("reason") == "Invalid"):
        causes = [
            f"{c.get('field')}: {c.get('message')}" if c.get("field") else str(c.get("message"))
            for c in (status.get("details") or {}).get("causes") or ()
            if isinstance(c, Mapping)
        ]
        detail = "; ".join(causes) or server_msg
        return (
            f"rejected: {verb} {target}{where} was denied by validation or an admission webhook: {detail}. "
            "Fix the named field(s) in the manifest (or tau.yaml) and submit again."
        )
    if code == 400:
        return f"bad request: {verb} {target}{where}: {server_msg}. Fix the manifest and retry."
    if code == 410:
        return f"expired: the watch of {resource}{where} is too old; the cache re-lists automatically."
    if code == 429:
        return (
            f"refused for now: {verb} {target}{where}: {server_msg or 'too many requests'}. "
            "A PodDisruptionBudget or API rate limit blocks it; wait and retry."
        )
    if code >= 500:
        webhook = "webhook" in server_msg.lower()
        hint = (
            "An admission webhook failed (is the Kueue controller running?)."
            if webhook
            else "The server had an internal error."
        )
        return f"server error ({code}) trying to {verb} {target}{where}: {server_msg}. {hint} Retry shortly."
    return f"failed to {verb} {target}{where} (HTTP {code}): {server_msg or 'unknown error'}."


def no_access_message(verb: str, resource: str, namespace: str | None) -> str:
    """The short form a degraded view shows: ``no access: list workloads.kueue.x-k8s.io in ns X``."""
    return f"no access: {verb} {resource}" + (f" in ns {namespace}" if namespace else "")


def describe_transport_error(exc: BaseException, server: str | None, timeouts: Any = None) -> str:
    """What went wrong below HTTP, naming the server and the limit that ran out.

    ``timeouts`` is a :class:`tau_tui.core.cluster.kubeconfig.RequestTimeouts`
    (duck-typed: ``connect`` and ``read``)."""
    import socket
    import ssl

    from urllib3 import exceptions as u3

    where = server or "the API server"
    connect = getattr(timeouts, "connect", None)
    read = getattr(timeouts, "read", None)
    cause = getattr(exc, "reason", None) if isinstance(exc, u3.MaxRetryError) else None
    exc = cause if isinstance(cause, BaseException) else exc
    hint = "Check the network/VPN and the kubeconfig server address, or raise --request-timeout."
    if isinstance(exc, u3.NewConnectionError):  # a subclass of ConnectTimeoutError, but a refusal
        return f"cannot connect to {where}: {getattr(exc, 'message', None) or exc}. {hint}"
    if isinstance(exc, u3.ConnectTimeoutError):
        return f"connect timeout: could not connect to {where} within {connect:g} s. {hint}" if connect else \
            f"connect timeout: could not connect to {where}. {hint}"
    if isinstance(exc, u3.ReadTimeoutError):
        # urllib3 reports a TLS handshake that stalls as a read timeout (with the connect limit).
        limit = re.search(r"timeout=([0-9.]+)", str(exc))
        seconds = float(limit.group(1)) if limit else read
        if _during_tls_handshake(exc):
            return f"TLS handshake timeout: {where} accepted the connection but did not complete TLS within {connect:g} s. {hint}"
        return (f"read timeout: {where} did not answer within {seconds:g} s" if seconds else
                f"read timeout: {where} did not answer") + f". {hint}"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"timeout talking to {where}. {hint}"
    if isinstance(exc, (u3.SSLError, ssl.SSLError)):
        return f"TLS failed with {where}: {exc}. Check the kubeconfig's certificate-authority and server name."
    if isinstance(exc, (u3.NewConnectionError, ConnectionError, u3.ProtocolError)):
        return f"cannot connect to {where}: {exc}. {hint}"
    return f"cannot talk to {where}: {type(exc).__name__}: {exc}. {hint}"


def _during_tls_handshake(exc: BaseException) -> bool:
    """Did the underlying socket error happen inside the TLS handshake?"""
    cause = exc.__cause__ or exc.__context__
    tb = getattr(cause, "__traceback__", None)
    while tb is not None:
        if tb.tb_frame.f_code.co_name in ("do_handshake", "wrap_socket", "ssl_wrap_socket"):
            return True
        tb = tb.tb_next
    return False


def not_authenticated_message(verb: str, resource: str, namespace: str | None, exec_failure: str | None = None) -> str:
    """A 401: the credentials are missing or expired (never "no access", which is 403)."""
    text = f"not authenticated: {verb} {resource}" + (f" in ns {namespace}" if namespace else "") + \
        ": credentials missing or expired; log in again"
    return text + (f" ({exec_failure})" if exec_failure else "")
