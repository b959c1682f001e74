"""Estimated positions come from per-ClusterQueue pending sets kept by the change feed
(``pending_order.py``): the same order a sort of the whole list gives (``estimate_cluster_queue_order``,
the oracle), and a report after one change reads that change and walks one queue's pending set."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.pending_order import PendingOrder
from tau_tui.core.cluster.positions import estimate_cluster_queue_order
from tau_tui.core.cluster.view_types import LocalQueueView, WorkloadView
from tests import builders
from tests.builders import condition

R = ResourceKind
T0 = datetime(2025, 3, 1, tzinfo=UTC)


class Feed:
    """A cache as a backend shows it to the order, counting whole lists read."""

    def __init__(self) -> None:
        self.cache = ObjectCache()
        self.whole_lists = 0

    def changes(self, kind, since, cost_ratio=1):
        return self.cache.changes(kind, since, cost_ratio)

    def generation(self, kind):
        return self.cache.generation(kind)

    def get(self, kind, name, namespace=None):
        return self.cache.get(kind, name, namespace)

    def views(self, kind):
        self.whole_lists += 1
        return self.cache.views(kind)


def local_queue(namespace: str, name: str, cluster_queue: str, rv: int = 1) -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": str(rv)},
            "spec": {"clusterQueue": cluster_queue}}


def workload(rng: random.Random, index: int, queues: list[tuple[str, str]], rv: int = 1) -> dict:
    namespace, queue = queues[rng.randrange(len(queues))]
    obj = builders.workload(f"wl-{index:05d}", namespace, queue=queue, uid=f"uid-{rng.randrange(10**6):06d}",
                            conditions=[condition("QuotaReserved", "True")] if rng.random() < 0.4 else [],
                            active=rng.random() > 0.05)
    obj["metadata"]["resourceVersion"] = str(rv)
    obj["metadata"]["creationTimestamp"] = (T0 + timedelta(seconds=rng.randrange(50))).isoformat()
    obj["spec"]["priority"] = rng.choice((0, 0, 10, 100))
    return obj


def world(rng: random.Random, workloads: int) -> tuple[Feed, list[tuple[str, str]], list[dict]]:
    feed = Feed()
    queues = [(f"ns-{i % 7}", f"lq-{i}") for i in range(20)]
    feed.cache.replace(R.LOCAL_QUEUE, [local_queue(ns, name, f"cq-{i % 4}") for i, (ns, name) in enumerate(queues)])
    objs = [workload(rng, i, queues + [("ns-0", "no-such-queue")]) for i in range(workloads)]
    feed.cache.replace(R.WORKLOAD, objs)
    return feed, queues, objs


def oracle(feed: Feed, cluster_queue: str) -> list:
    wls = [v for v in feed.cache.list(R.WORKLOAD) if isinstance(v, WorkloadView)]
    lqs = [v for v in feed.cache.list(R.LOCAL_QUEUE) if isinstance(v, LocalQueueView)]
    return estimate_cluster_queue_order(wls, lqs).get(cluster_queue, [])


def assert_same_as_a_sort_of_the_whole_list(order: PendingOrder, feed: Feed, queues) -> None:
    for cq in (f"cq-{i}" for i in range(5)):
        assert list(order.cluster_queue_report(cq, "", T0).entries) == oracle(feed, cq), cq
    for namespace, name in queues[:6]:
        cq = next(v.cluster_queue for v in feed.cache.list(R.LOCAL_QUEUE) if (v.namespace, v.name) == (namespace, name))
        wanted = [e for e in oracle(feed, cq) if e.namespace == namespace and e.local_queue == name]
        assert list(order.local_queue_report(namespace, name, "", T0).entries) == wanted


def test_the_kept_order_is_the_order_a_sort_of_the_whole_list_gives_through_every_change():
    rng = random.Random(46)
    feed, queues, objs = world(rng, 600)
    order = PendingOrder(feed)
    assert_same_as_a_sort_of_the_whole_list(order, feed, queues)
    for step in range(40):
        for _ in range(rng.randint(1, 12)):
            obj = objs[rng.randrange(len(objs))]
            choice = rng.random()
            if choice < 0.3:
                obj = workload(rng, int(obj["metadata"]["name"][3:]), queues, rv=100 + step)  # queue, priority, state
                objs[int(obj["metadata"]["name"][3:])] = obj
                feed.cache.apply(R.WORKLOAD, "MODIFIED", obj)
            elif choice < 0.4:
                feed.cache.apply(R.WORKLOAD, "DELETED", obj)
            else:
                obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": f"{200 + step}-{rng.random()}"}}
                feed.cache.apply(R.WORKLOAD, "ADDED", obj)
        if step == 20:  # a LocalQueue moved to another ClusterQueue: the sets are made again
            namespace, name = queues[3]
            feed.cache.apply(R.LOCAL_QUEUE, "MODIFIED", local_queue(namespace, name, "cq-4", rv=2))
        assert_same_as_a_sort_of_the_whole_list(order, feed, queues)
    assert order.full_reads == 2  # the first, and the LocalQueue's move


def test_a_report_after_one_pending_change_reads_it_and_walks_one_queues_pending_set():
    rng = random.Random(7)
    feed, queues, objs = world(rng, 20_000)
    order = PendingOrder(feed)
    namespace, name = queues[5]
    order.local_queue_report(namespace, name, "", T0)
    assert order.full_reads == 1 and feed.whole_lists == 2  # LocalQueues and Workloads, once
    pending = [v for v in feed.cache.views(R.WORKLOAD) if isinstance(v, WorkloadView) and v.status_word == "pending"
               and (v.namespace, v.queue_name) == (namespace, name) and v.active]
    feed.whole_lists = 0
    changed = dict(pending[0].raw)
    changed["metadata"] = {**changed["metadata"], "resourceVersion": "2"}
    changed["spec"] = {**changed["spec"], "priority": 1_000}  # first in line now
    feed.cache.apply(R.WORKLOAD, "MODIFIED", changed)
    order.entries_walked = order.workloads_read = 0
    report = order.local_queue_report(namespace, name, "", T0)
    assert report.entries[0].name == changed["metadata"]["name"]
    cq_pending = len(oracle(feed, "cq-1"))
    assert (feed.whole_lists, order.full_reads, order.workloads_read) == (0, 1, 1)
    assert order.entries_walked == cq_pending < 20_000 // 4  # that ClusterQueue's pending set, not the cluster
    status_only = {**changed, "metadata": {**changed["metadata"], "resourceVersion": "3"},
                   "status": {"conditions": [condition("QuotaReserved", "False", message="no quota")]}}
    feed.cache.apply(R.WORKLOAD, "MODIFIED", status_only)
    order.local_queue_report(namespace, name, "", T0)
    assert (feed.whole_lists, order.full_reads, order.workloads_read) == (0, 1, 2)
