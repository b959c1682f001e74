"""What a change is, the connection state and the per-kind health of the cache."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from tau_tui.core.cluster.kinds import ResourceKind


class ChangeType(str, enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


class ConnectionStatus(str, enum.Enum):
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    STALE = "stale"
    UNAUTHORISED = "unauthorised"  # the server refuses the credential even after a refresh


UNAUTHORISED_LABEL = "unauthorised: re-login"


@dataclass(frozen=True, slots=True)
class ConnectionState:
    """Whole-backend connection state for the status bar.

    ``stale_since`` is the moment data stopped being current (first failed
    watch); panes should read "stale since T" when ``status`` is not
    CONNECTED.  ``message`` is plain text, never markup."""

    status: ConnectionStatus
    context: str | None
    stale_since: datetime | None = None
    message: str = ""

    @property
    def label(self) -> str:
        if self.status is ConnectionStatus.CONNECTED:
            return "connected"
        if self.status is ConnectionStatus.UNAUTHORISED:
            return UNAUTHORISED_LABEL
        if self.stale_since is None:  # nothing read yet, so nothing stale (first_connection.py)
            if self.status is not ConnectionStatus.STALE:
                return "connecting"
            reason = self.message or "no answer from the API server"
            return reason if reason.startswith("cannot connect") else f"cannot connect: {reason}"
        since = self.stale_since.strftime("%H:%M:%S")
        if self.status is ConnectionStatus.RECONNECTING:
            return f"reconnecting (stale since {since})"
        return f"stale since {since}"


class ViewStatus(str, enum.Enum):
    SYNCING = "syncing"  # first list not finished
    READY = "ready"
    FORBIDDEN = "forbidden"  # RBAC denied; view is empty, others keep working
    NOT_INSTALLED = "not-installed"  # CRD / API group absent
    ERROR = "error"  # transient failure, retrying; data (if any) is stale


@dataclass(frozen=True, slots=True)
class ViewState:
    """Per-kind health of the cache.  ``message`` examples:
    ``"no access: list workloads.kueue.x-k8s.io in ns team-a"``,
    ``"not installed: rayjobs.ray.io"``."""

    kind: ResourceKind
    status: ViewStatus
    message: str = ""
    synced_at: datetime | None = None

    @property
    def usable(self) -> bool:
        return self.status is ViewStatus.READY

