"""What a pane's data is worth: the connection and view states it was read under.

A pane fails closed: on a dead connection or an unreadable view it says so (a banner, a table
notice) instead of showing an empty or silently old table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.text import Text

from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus, ViewState, ViewStatus
from tau_tui.core.cluster.first_connection import never_connected
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.widgets.status_text import style_of


@dataclass(frozen=True)
class Freshness:
    """The connection state and the view states a pane's data came from.

    A pane never shows an empty table for data it could not read: a table over
    a forbidden / not-installed / still-syncing view shows :meth:`notice`
    instead, and while the connection is down the pane keeps its last data
    under :meth:`banner` ("stale since T — showing last known data")."""

    connection: ConnectionState | None = None
    views: Mapping[ResourceKind, ViewState] = field(default_factory=dict)

    @classmethod
    def read(cls, backend: ClusterBackend | None, kinds: tuple[ResourceKind, ...]) -> Freshness:
        """Thread-safe cache reads (no network)."""
        if backend is None:
            return cls()
        return cls(backend.connection_state(), {kind: backend.view_state(kind) for kind in kinds})

    @property
    def disconnected(self) -> bool:
        return self.connection is not None and self.connection.status is not ConnectionStatus.CONNECTED

    @property
    def syncing(self) -> bool:
        """A view's first list is not finished: what a read shows is "loading", not the rows."""
        return any(v.status is ViewStatus.SYNCING for v in self.views.values())

    @property
    def stale(self) -> bool:
        """The data shown may be out of date (connection down or a view failing)."""
        return self.disconnected or any(v.status is ViewStatus.ERROR for v in self.views.values())

    def stale_since(self) -> str:
        since = self.connection.stale_since if self.connection is not None else None
        if since is None:
            stamps = [v.synced_at for v in self.views.values() if v.status is ViewStatus.ERROR and v.synced_at]
            since = min(stamps) if stamps else None
        return since.strftime("%H:%M:%S") if since is not None else "?"

    def notice(self, *kinds: ResourceKind) -> Text | None:
        """Why a table over ``kinds`` has no data to show, or None when it can show it."""
        for kind in kinds:
            state = self.views.get(kind)
            if state is None:
                continue
            if state.status in (ViewStatus.FORBIDDEN, ViewStatus.NOT_INSTALLED):
                text = state.message or f"{state.status.value}: {kind.type.qualified}"
                return Text(f"✗ {text}", style=style_of("failed"))
            if state.status is ViewStatus.SYNCING:
                return Text(f"◌ loading {kind.type.qualified} (first list not finished)", style=style_of("pending"))
        return None

    def banner(self) -> Text | None:
        """The pane's own status line about data freshness and access, or None."""
        lines: list[Text] = []
        if self.connection is not None and self.connection.status is ConnectionStatus.UNAUTHORISED:
            lines.append(Text(f"✗ {self.connection.label} — showing last known data ({self.connection.message})",
                              style=style_of("failed")))  # the server answers and refuses us: not "stale"
        elif self.connection is not None and never_connected(self.connection):  # no data yet: nothing is stale
            failed = self.connection.status is ConnectionStatus.STALE
            lines.append(Text(f"{'✗' if failed else '◌'} {self.connection.label}",
                              style=style_of("failed" if failed else "pending")))
        elif self.disconnected:
            assert self.connection is not None
            word = "reconnecting" if self.connection.status is ConnectionStatus.RECONNECTING else "connection lost"
            line = Text(f"⚠ stale since {self.stale_since()} — showing last known data ({word}", style=style_of("warning"))
            line.append(f": {self.connection.message})" if self.connection.message else ")")
            lines.append(line)
        else:
            failing = [v for v in self.views.values() if v.status is ViewStatus.ERROR]
            if failing:
                names = ", ".join(v.kind.type.qualified for v in failing)
                lines.append(Text(f"⚠ stale since {self.stale_since()} — showing last known data for {names} "
                                  f"({failing[0].message or 'watch failing'})", style=style_of("warning")))
        for state in self.views.values():  # "not installed" is said by the table that needs it
            if state.status is ViewStatus.FORBIDDEN:
                lines.append(Text(f"✗ {state.message or 'no access: list ' + state.kind.type.qualified}",
                                  style=style_of("failed")))
        return Text("\n").join(lines) if lines else None
