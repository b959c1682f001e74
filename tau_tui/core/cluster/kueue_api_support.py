"""Whether the server's Kueue serves the API version tau-tui speaks, and the refusal when it does not.

tau-tui reads and writes ``kueue.x-k8s.io/v1beta2`` only (Kueue v0.15 added it).  On a server whose
Kueue serves v1beta1 only (v0.14 or older) every Kueue list would answer 404 and each pane would
say "not installed"; the app and the commands refuse at start instead, naming what was found.
The served versions come from API discovery (``GET /apis/kueue.x-k8s.io``), which every
authenticated user may read, unlike the CustomResourceDefinitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.names import KUEUE_GROUP, KUEUE_VERSION

#: The oldest Kueue release that serves :data:`KUEUE_VERSION`.
MINIMUM_KUEUE_RELEASE = "v0.15"
#: The newest Kueue releases that serve v1beta1 only (named in the refusal).
NEWEST_V1BETA1_ONLY_RELEASE = "v0.14"

#: How long a discovery answer may take (seconds between bytes) before it counts as unknown.
DISCOVERY_READ_LIMIT_S = 10.0
#: ``GET path`` on the API server: the decoded JSON body; raises ApiFailure.
ApiGet = Callable[[str], Mapping[str, Any]]


class UnsupportedKueueApi(ClusterError):
    """The server's Kueue does not serve the API version tau-tui speaks (a message, no traceback)."""


@dataclass(frozen=True, slots=True)
class ApiGroupVersions:
    """What discovery says of an API group (Kueue's, KubeRay's): ``installed`` None when it could not be read."""

    installed: bool | None
    served: tuple[str, ...] = ()
    preferred: str | None = None
    why_unknown: str = ""

    @property
    def supported(self) -> bool:
        """False only when the group is known to be served without :data:`KUEUE_VERSION`."""
        return self.installed is not True or KUEUE_VERSION in self.served


def group_path(group: str) -> str:
    return f"/apis/{group}"


def read_group_versions(get: ApiGet, group: str = KUEUE_GROUP) -> ApiGroupVersions:
    """The versions an API group serves (discovery); 404: not installed; any other failure: unknown."""
    try:
        body = get(group_path(group))
    except ApiFailure as exc:
        if exc.code == 404:
            return ApiGroupVersions(installed=False)
        return ApiGroupVersions(installed=None, why_unknown=exc.message or exc.reason or f"HTTP {exc.code}")
    versions = [v for v in body.get("versions") or () if isinstance(v, Mapping)]
    served = tuple(str(v["version"]) for v in versions if v.get("version"))
    if body.get("kind") != "APIGroup" or not served:  # not a discovery answer: nothing is known
        return ApiGroupVersions(installed=None, why_unknown=f"{group_path(group)} answered no API group")
    preferred = body.get("preferredVersion")
    return ApiGroupVersions(installed=True, served=served,
                            preferred=str(preferred.get("version")) if isinstance(preferred, Mapping) else None)


def unsupported_message(found: ApiGroupVersions) -> str | None:
    """The refusal for a Kueue that does not serve :data:`KUEUE_VERSION`; None when it does,
    when Kueue is not installed (the panes say so) or when discovery could not be read."""
    if found.supported:
        return None
    served = ", ".join(found.served) or "no version"
    only = " only" if found.served else ""
    return (f"Kueue API {KUEUE_GROUP} serves {served}{only} (Kueue {NEWEST_V1BETA1_ONLY_RELEASE} or older); "
            f"tau-tui needs {KUEUE_VERSION} (Kueue ≥ {MINIMUM_KUEUE_RELEASE}). Upgrade Kueue to "
            f"{MINIMUM_KUEUE_RELEASE} or newer.")


def discovery_get(backend: object) -> ApiGet | None:
    """A raw ``GET`` on the backend's API server (the real backend's HTTP layer); None where the
    backend has no API server to ask (the simulated cluster, a replay)."""
    http = getattr(backend, "http", None)
    request = getattr(http, "request", None)
    if request is None:
        return None
    timeouts = getattr(http, "timeouts", None)
    # Capped: an unanswering server fails the command's own first request soon after anyway.
    timeout = timeouts.pair(min(timeouts.read or DISCOVERY_READ_LIMIT_S, DISCOVERY_READ_LIMIT_S)) if timeouts else None

    def get(path: str) -> Mapping[str, Any]:
        body = request("GET", path, timeout=timeout)
        return body if isinstance(body, Mapping) else {}

    return get


def refuse_unsupported_kueue(backend: object) -> ApiGroupVersions | None:
    """Raise :class:`UnsupportedKueueApi` when the backend's server serves Kueue without
    :data:`KUEUE_VERSION`; what discovery found otherwise (None: nothing to ask)."""
    get = discovery_get(backend)
    if get is None:
        return None
    found = read_group_versions(get)
    message = unsupported_message(found)
    if message is not None:
        raise UnsupportedKueueApi(message)
    return found


__all__ = [
    "MINIMUM_KUEUE_RELEASE",
    "ApiGroupVersions",
    "UnsupportedKueueApi",
    "discovery_get",
    "read_group_versions",
    "refuse_unsupported_kueue",
    "unsupported_message",
]
