"""The messages the app posts to itself: from its workers (a backend up or not, a change previewed
or applied) and from its mutation flow (a change refused).

Each is handled on the app (``@on(...)`` in :mod:`tau_tui.app`); :class:`tau_tui.app.TauApp` also
names them as class attributes (``TauApp.MutationApplied``), as Textual's widgets do theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.mutations.mutation import Mutation


@dataclass
class BackendReady(Message):
    """A cluster (or the demo, or a replay) is connected and started."""

    backend: ClusterBackend
    #: What the backend is, when it is not a kubeconfig's cluster ("demo scenario …", "replay of …").
    note: str = ""


@dataclass
class BackendFailed(Message):
    """No cluster could be connected."""

    message: str
    #: Whether the no-cluster screen offers the demo instead.
    offer_demo: bool
    #: The screen's headline and the header's connection state (a refused server names why).
    title: str = "No cluster"
    label: str = "no cluster"


@dataclass
class MutationPreviewed(Message):
    """A change's preview (server dry-run) is ready to confirm."""

    mutation: Mutation
    ok: bool
    text: str
    #: False: the preview refuses the change; the dialog shows why and offers no "yes".
    allowed: bool = True


@dataclass
class MutationApplied(Message):
    """A confirmed change was applied (or failed)."""

    mutation: Mutation
    ok: bool
    text: str


@dataclass
class MutationBlocked(Message):
    """``--readonly`` (or a replay) refused ``verb target``."""

    verb: str
    target: str
