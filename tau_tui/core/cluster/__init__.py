"""Cluster access layer: the :class:`ClusterBackend` contract and its
implementations (real Kubernetes, simulated).  No Textual imports here."""

from tau_tui.core.cluster.api import *  # noqa: F401,F403
from tau_tui.core.cluster.api import ClusterBackend, ResourceKind  # noqa: F401
