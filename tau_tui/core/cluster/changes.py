"""Change notifications and state: what subscribers receive (coalesced change batches, the
connection state) and the per-kind health of the cache."""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ObjectView


class ChangeType(str, enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One applied change.  For DELETED, ``obj`` is the last known state."""

    kind: ResourceKind
    type: ChangeType
    obj: ObjectView

    @property
    def key(self) -> tuple[str, str]:
        return self.obj.key


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """Changes coalesced over a short window.  Several changes to one object
    within the window collapse to the last one (ADDED+DELETED collapses to
    nothing).  ``relisted`` names kinds whose cache was rebuilt from a fresh
    list (after a 410 or a reconnect): consumers should re-read them whole."""

    events: tuple[ChangeEvent, ...]
    relisted: frozenset[ResourceKind] = frozenset()

    @property
    def kinds(self) -> frozenset[ResourceKind]:
        return frozenset(e.kind for e in self.events) | self.relisted


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



ChangeCallback = Callable[[ChangeBatch], None]
StateCallback = Callable[[ConnectionState], None]


class Subscription(abc.ABC):
    @abc.abstractmethod
    def close(self) -> None:
        """Stop delivering callbacks (idempotent)."""
