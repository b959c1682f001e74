"""The real backend's streams from pods: a container's log (HTTP), a command's output (``exec``,
over the API server's WebSocket channels, as ``kubectl exec`` speaks it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubernetes import client as k8s
from kubernetes.stream.ws_client import ERROR_CHANNEL, STDERR_CHANNEL, STDOUT_CHANNEL, WSClient, get_websocket_url

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.errors import describe_transport_error
from tau_tui.core.cluster.kubeconfig import RequestTimeouts
from tau_tui.core.cluster.logspool.log_requests import ExecRequest

if TYPE_CHECKING:
    from urllib3 import BaseHTTPResponse

#: How long one wait for a frame lasts: a close from another thread is seen within it.
EXEC_POLL_S = 0.5
#: What of a failed command's stderr its error carries.
STDERR_KEPT = 2000


class LogResponse:
    """Iterable chunks of a streaming log response; ``close`` interrupts it."""

    def __init__(self, resp: BaseHTTPResponse):
        self.resp = resp

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self.resp.stream(65536, decode_content=True):
                if chunk:
                    yield chunk
        except Exception as exc:
            raise ConnectionError(str(exc)) from None

    def close(self) -> None:
        try:
            self.resp.shutdown()
        except Exception:
            pass
        try:
            self.resp.release_conn()
        except Exception:
            pass


class ExecOutput:
    """A command's stdout as it comes; at its end a failure (non-zero exit, no such container or
    command) raises :class:`ApiFailure` with the server's message and the command's stderr."""

    def __init__(self, client: WSClient, request: ExecRequest):
        self._client = client
        self._request = request
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        client = self._client
        stderr = b""
        try:
            while client.is_open():
                client.update(timeout=EXEC_POLL_S)
                out = client.read_channel(STDOUT_CHANNEL)
                if out:
                    yield out
                stderr = (stderr + client.read_channel(STDERR_CHANNEL))[-STDERR_KEPT:]
            out = client.read_channel(STDOUT_CHANNEL)
            if out:
                yield out
            stderr = (stderr + client.read_channel(STDERR_CHANNEL))[-STDERR_KEPT:]
            error = client.read_channel(ERROR_CHANNEL)
        except Exception as exc:
            if self.closed:
                return
            raise ConnectionError(f"exec in {self._request.pod}/{self._request.container}: {exc}") from None
        finally:
            client.close()
        if self.closed:
            return
        self._raise_on_failure(error, stderr)

    def _raise_on_failure(self, error: bytes, stderr: bytes) -> None:
        if not error:
            raise ConnectionError(f"exec in {self._request.pod}/{self._request.container} ended without a status")
        try:
            status: dict[str, Any] = json.loads(error)
        except ValueError:
            status = {"status": "Failure", "message": error.decode("utf-8", "replace")}
        if status.get("status") == "Success":
            return
        said = stderr.decode("utf-8", "replace").strip()
        message = str(status.get("message") or status.get("reason") or "the command failed")
        raise ApiFailure(500, str(status.get("reason") or "ExecFailed"),
                         f"{' '.join(self._request.command)}: {message}" + (f": {said}" if said else ""), status)

    def close(self) -> None:
        self.closed = True
        try:
            self._client.close()
        except Exception:
            pass


def open_exec(api_client: k8s.ApiClient, timeouts: RequestTimeouts, request: ExecRequest) -> ExecOutput:
    """``kubectl exec POD -c CONTAINER -- COMMAND`` (no stdin, no TTY), with the client's credential."""
    path = f"/api/v1/namespaces/{request.namespace}/pods/{request.pod}/exec"
    query = [("container", request.container), ("stdout", "true"), ("stderr", "true"), ("stdin", "false"),
             ("tty", "false"), *(("command", part) for part in request.command)]
    configuration = api_client.configuration
    try:
        _m, url, headers, _body, _post = api_client.param_serialize(
            "GET", path, query_params=query, header_params={}, auth_settings=["BearerToken"])
        client = WSClient(configuration, get_websocket_url(url), headers, capture_all=False, binary=True)
    except Exception as exc:
        where = f"exec in {request.namespace}/{request.pod}/{request.container}"
        code = int(getattr(exc, "status_code", 0) or getattr(exc, "status", 0) or 0)
        if code:  # the API server answered the upgrade with an error status (no pod, container not running)
            said = _status_message(getattr(exc, "resp_body", None)) or str(exc)
            raise ApiFailure(code, type(exc).__name__, f"{where}: {said}") from None
        raise ApiFailure(0, type(exc).__name__,
                         f"{where}: {describe_transport_error(exc, getattr(configuration, 'host', None), timeouts)}") from None
    return ExecOutput(client, request)


def _status_message(body: Any) -> str:
    """The ``message`` of a Status the API server answered with, else its text."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if not body:
        return ""
    try:
        return str(json.loads(body).get("message") or body)
    except (ValueError, AttributeError):
        return str(body)
