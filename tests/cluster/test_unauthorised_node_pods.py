"""After a refused credential the Nodes pane's GPU allocation is unknown; once the credential works
again it must come back, so that informer lists again in full instead of resuming its watch."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.unauthorised import UNAUTHORISED_RETRY_S, mark_unauthorised


def _informer(cache: ObjectCache, node_pods: bool) -> SimpleNamespace:
    backend = SimpleNamespace(cache=cache, connection_messages=[])
    backend._update_connection = backend.connection_messages.append
    return SimpleNamespace(backend=backend, kind=ResourceKind.POD, namespace=None, node_pods=node_pods,
                           synced=threading.Event(), unauthorised=None, resource_version="4711")


def test_the_node_pods_informer_relists_after_a_refusal():
    cache = ObjectCache()
    cache.replace_node_pods([])
    informer = _informer(cache, node_pods=True)
    assert mark_unauthorised(informer) == UNAUTHORISED_RETRY_S
    assert informer.resource_version is None  # the next try lists: a resumed watch would never make it known
    assert informer.unauthorised and informer.synced.is_set()
    assert informer.backend.connection_messages == [informer.unauthorised]


def test_other_informers_resume_from_their_resource_version():
    informer = _informer(ObjectCache(), node_pods=False)
    mark_unauthorised(informer)
    assert informer.resource_version == "4711"
