"""The app's first screen costs a bounded number of requests, whatever the number of Workloads (tier 1).

The app starts on a control plane holding N Workloads, then again (as another user) after 4N more
were added; each run lasts from start until the queue pane shows workload rows and the complete
counts line, and every informer has listed once.  The requests are counted by kube-apiserver's audit
log (tests/harness/request_audit.py), not by the app's code: the same kinds are listed and watched,
the larger run adds the later pages of the Workload list and, beyond them, far fewer requests than
Workloads (what repeats with time), and what is read by name is a queue or a CRD, never a Workload:
no request per object.
Counts only; the wait bounds catch a hang and are never asserted."""

from __future__ import annotations

import asyncio
import math
import os
import re
import shutil
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest
from kubernetes import client as k8s

from tau_tui.app import TauApp
from tau_tui.core.cluster.real import LIST_PAGE
from tau_tui.core.operations.audit import AuditLog
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tau_tui.widgets.keyed_table import NOTICE_KEY, KeyedTable
from tests.app.helpers import async_test, wait_until
from tests.harness.binaries import locate
from tests.harness.controlplane import ControlPlane
from tests.harness.fixtures import KEEP_STATE_ENV
from tests.harness.request_audit import Request, audit_flags, audit_log, audited_kubeconfig, counted, read_requests
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t1]

KUEUE = ("kueue.x-k8s.io", "v1beta2")
WORKLOADS = "workloads.kueue.x-k8s.io"
NAMESPACES = ("team-a", "team-b")
FEW = 150  # one page of a list; five times as many take two
BOUND = 300  # seconds a wait may take before the test fails: far above what it needs
# A run with 4N more Workloads may make at most one more request per this many of them (beyond the pages).
GROWTH_PER_REQUEST = 10
# What the app may read by name: queues (their positions) and CRDs (the versions it found).
NAMED_READS = ("localqueues.", "clusterqueues.", "customresourcedefinitions.")
COUNTS_KNOWN = re.compile(r"^\d+ CQ · \d+ LQ · workloads: \d+ pending, \d+ quotaReserved, \d+ admitted, \d+ finished")


@pytest.fixture(scope="module")
def audited_plane():
    """A tier-1 plane of its own whose kube-apiserver writes an audit log of the audited users."""
    binaries = locate()
    binaries.require("etcd", "kube_apiserver", "kueue")
    state = Path(tempfile.mkdtemp(prefix="tau-harness-t1-audit-"))
    plane = ControlPlane("t1-audit", state, binaries, apiserver_flags=audit_flags(state / "audit"))
    plane.start()
    try:
        seed_queues(plane.api_client())
        yield plane
    finally:
        plane.stop()
        if not os.environ.get(KEEP_STATE_ENV):
            shutil.rmtree(state, ignore_errors=True)


def seed_queues(admin) -> None:
    core, custom = k8s.CoreV1Api(admin), k8s.CustomObjectsApi(admin)
    for namespace in NAMESPACES:
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace)))
    custom.create_cluster_custom_object(*KUEUE, "resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    for cq in ("cq-a", "cq-b"):
        custom.create_cluster_custom_object(*KUEUE, "clusterqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]}})
    for namespace, cq in zip(NAMESPACES, ("cq-a", "cq-b"), strict=True):
        custom.create_namespaced_custom_object(*KUEUE, namespace, "localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cq}})


def add_workloads(admin, first: int, count: int) -> None:
    """Workloads ``wl-<first>`` .. on the two LocalQueues, then wait until Kueue has placed every one."""
    custom = k8s.CustomObjectsApi(admin)

    def create(i: int) -> None:
        namespace = NAMESPACES[i % len(NAMESPACES)]
        custom.create_namespaced_custom_object(*KUEUE, namespace, "workloads", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"wl-{i:05d}", "namespace": namespace},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "main", "image": "registry.invalid/tau/trainer:1",
                                                          "resources": {"requests": {"cpu": "1"}}}]}}}]}})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(first, first + count)))
    total = first + count

    def placed() -> bool:
        queues = cast(dict, custom.list_cluster_custom_object(*KUEUE, "clusterqueues"))["items"]
        return sum(int((q.get("status") or {}).get("pendingWorkloads") or 0)
                   + int((q.get("status") or {}).get("reservingWorkloads") or 0) for q in queues) >= total

    wait_for(placed, f"Kueue to place all {total} Workloads", BOUND, interval=1.0)


def status_text(app) -> str:
    return app.screen._status.plain


async def first_screen(plane: ControlPlane, user: str, monkeypatch, tmp_path: Path) -> tuple[list[Request], list[Request]]:
    """(requests until rows and the complete counts line, requests of the whole run) of the app as
    ``user``; the run ends once every informer has listed."""
    monkeypatch.setenv("KUBECONFIG", audited_kubeconfig(plane, user))
    app = TauApp(None, settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / user / "config.yaml"),
                 audit=AuditLog(tmp_path / user / "audit.jsonl"), start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.backend is not None, BOUND, "the backend")
        table = app.screen.query_one("#workloads-table", KeyedTable)
        await wait_until(pilot, lambda: bool(table.keys) and table.keys != [NOTICE_KEY]
                         and bool(COUNTS_KNOWN.match(status_text(app))), BOUND, "workload rows and the counts line")
        shown = datetime.now(UTC)
        assert app.backend is not None
        assert await asyncio.to_thread(app.backend.wait_synced, BOUND), "every informer to list once"
        await pilot.pause()
    log = audit_log(plane.state_dir / "audit")
    return read_requests(log, user, until=shown), read_requests(log, user)


def informer_requests(counts: Counter[str]) -> Counter[str]:
    """The lists and watches, without a list's later pages."""
    return Counter({key: n for key, n in counts.items()
                    if key.startswith(("list ", "watch ")) and not key.startswith("list (next page) ")})


@async_test
async def test_first_screen_requests_do_not_grow_with_the_workloads(audited_plane, monkeypatch, tmp_path):
    admin = audited_plane.api_client()
    add_workloads(admin, 0, FEW)
    few_screen, few_run = await first_screen(audited_plane, "tau-tui-few", monkeypatch, tmp_path)
    add_workloads(admin, FEW, 4 * FEW)
    many_screen, many_run = await first_screen(audited_plane, "tau-tui-many", monkeypatch, tmp_path)

    few, many = counted(few_run), counted(many_run)
    report = f"{FEW} Workloads: {sorted(few.items())}\n{5 * FEW} Workloads: {sorted(many.items())}"
    assert few_screen and many_screen and len(few_screen) <= len(few_run) and len(many_screen) <= len(many_run), report
    # The same kinds listed and watched in both runs.
    assert set(informer_requests(few)) == set(informer_requests(many)), report
    # The Workload list is the one that grows: one more page per LIST_PAGE Workloads.
    pages = math.ceil(5 * FEW / LIST_PAGE) - 1
    assert few[f"list (next page) {WORKLOADS}"] == 0 and many[f"list (next page) {WORKLOADS}"] == pages, report
    # Apart from that, what differs is what repeats with time (a watch resumed, a queue's positions
    # read again, a kind not installed asked again): far less than one request per added Workload.
    growth = 4 * FEW // GROWTH_PER_REQUEST
    assert len(many_run) - pages - len(few_run) <= growth, report
    assert len(many_screen) - pages - len(few_screen) <= growth, \
        f"{sorted(counted(few_screen).items())}\n{sorted(counted(many_screen).items())}"
    # Reads by name are of queues (positions: per LocalQueue) and CRDs (the versions found), never of
    # an object that grows in number: no request per Workload.
    for run in (few_run, many_run):
        named = sorted({(r.resource, r.namespace, r.name) for r in run if r.name})
        assert all(resource.startswith(NAMED_READS) for resource, _, _ in named), named
