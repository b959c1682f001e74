"""Reading the workload profiles from a live cluster: TauCluster/cluster through the
kubernetes client, with advice for every way the read can fail (taugrid.md §3.4).

The run-config compiler only parses profiles; this read is cluster access, so it lives here."""

from __future__ import annotations

import json
from typing import Any

from tau_tui.core.runconfig.profiles import (
    GROUP,
    TAUCLUSTER_NAME,
    TAUCLUSTER_PLURAL,
    VERSION,
    ProfileReadError,
    ProfileSet,
    profile_set_from_taucluster,
)


def read_profile_set(api_client: Any) -> ProfileSet:
    """Read TauCluster/cluster with the kubernetes client. Raises ProfileReadError with advice."""
    from kubernetes.client import CustomObjectsApi
    from kubernetes.client.exceptions import ApiException

    from tau_tui.core.cluster.errors import describe_transport_error

    try:
        obj = CustomObjectsApi(api_client).get_cluster_custom_object(GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME)
    except ApiException as err:
        raise ProfileReadError(_explain_read_error(err, api_client)) from None
    except Exception as err:  # connection refused, TLS, DNS, timeouts: all mean "cannot read".
        server = getattr(getattr(api_client, "configuration", None), "host", None)
        what = describe_transport_error(err, server, getattr(api_client, "tau_timeouts", None))
        raise ProfileReadError(f"cannot read TauCluster/{TAUCLUSTER_NAME}: {what} "
                               "(or use --profiles SNAPSHOT for an offline client dry-run)") from None
    if not isinstance(obj, dict):
        raise ProfileReadError(f"TauCluster/{TAUCLUSTER_NAME} came back as {type(obj).__name__}, not an object; check the API server")
    return profile_set_from_taucluster(obj)


def _group_served(api_client: Any) -> bool | None:
    """Does the server's API discovery (``GET /apis``) list the TauGrid group?
    None when the answer is not a Kubernetes APIGroupList (a proxy, a wrong address)."""
    try:
        _method, url, headers, _body, _post = api_client.param_serialize(
            "GET", "/apis", header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
        resp = api_client.call_api("GET", url, header_params=headers)
        data = json.loads(resp.read() or b"{}") if resp.status == 200 else None
    except Exception:
        return None
    if not isinstance(data, dict) or data.get("kind") != "APIGroupList" or not isinstance(data.get("groups"), list):
        return None
    for group in data["groups"]:
        if isinstance(group, dict) and group.get("name") == GROUP:
            return any(isinstance(v, dict) and v.get("version") == VERSION for v in group.get("versions") or ())
    return False


def _explain_read_error(err: Any, api_client: Any = None) -> str:
    server = getattr(getattr(api_client, "configuration", None), "host", None) or "the API server"
    if not err.status:  # the client turns TLS failures into status 0
        reason = " ".join(str(err.reason or "").split())
        return (f"cannot read TauCluster/{TAUCLUSTER_NAME}: TLS failed with {server}: {reason}. Check the kubeconfig's "
                "certificate-authority and server address")
    if err.status == 401:
        from tau_tui.core.cluster.credentials import take_exec_failure

        plugin = take_exec_failure()
        return (f"not authenticated reading TauCluster/{TAUCLUSTER_NAME} from {server}: credentials missing or "
                "expired; log in again" + (f" ({plugin})" if plugin else ""))
    if err.status == 403:
        return f"access forbidden reading TauCluster/{TAUCLUSTER_NAME}: ask for `get` on clusters.{GROUP}"
    if err.status == 404:
        try:
            body = json.loads(err.body or "{}")
        except (ValueError, TypeError):
            body = None
        details = (body.get("details") or {}) if isinstance(body, dict) else {}
        if isinstance(details, dict) and details.get("name") == TAUCLUSTER_NAME:
            return f"TauCluster/{TAUCLUSTER_NAME} not found: TauGrid is installed but not configured; ask the platform owner"
        # Only the server's own discovery may say the CRD is missing: a proxy answers 404 too.
        served = _group_served(api_client) if api_client is not None else None
        if served is False:
            return f"the TauCluster CRD (clusters.{GROUP}) is not installed in this cluster; use --profiles SNAPSHOT or a TauGrid cluster"
        if served:
            return f"TauCluster/{TAUCLUSTER_NAME} not found: TauGrid is installed but not configured; ask the platform owner"
        return (f"HTTP 404 from {server} reading TauCluster/{TAUCLUSTER_NAME}, and its API discovery (/apis) did not "
                "answer like a Kubernetes API server: a proxy or a wrong server address in the kubeconfig?")
    return f"reading TauCluster/{TAUCLUSTER_NAME} failed: HTTP {err.status} {err.reason}"
