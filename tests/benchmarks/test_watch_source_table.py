"""benchmarks/watch_source.py's server-side printing (the Tables k9s lists Workloads as): the Kueue
Workload CRD's columns, a row per object, the Queue cell following spec.queueName, pages, a watch
of one-row Tables, and the CRD and the access review k9s reads.  Counts only: no wall-clock
assertion."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest

from benchmarks.watch_source import HOT_NAMESPACE, WatchSource, WorldShape

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"
HOT = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{HOT_NAMESPACE}/workloads"
#: Kueue v1beta2's Workload CRD additionalPrinterColumns, after the Name every Table starts with.
CRD_COLUMNS = [("Name", "string"), ("Queue", "string"), ("Reserved in", "string"), ("Admitted", "string"),
               ("Finished", "string"), ("Age", "date")]


@pytest.fixture
def source() -> Iterator[WatchSource]:
    served = WatchSource(WorldShape(workloads=292, local_queues=5, cluster_queues=2, namespaces=3, hot_rows=8),
                         bookmark_interval=0.2)
    served.start()
    try:
        yield served
    finally:
        served.stop()


def get(source: WatchSource, path: str, accept: str = TABLE) -> dict:
    request = urllib.request.Request(source.url + path, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def queue_cells(table: dict) -> dict[str, str]:
    return {row["cells"][0]: row["cells"][1] for row in table["rows"]}


def test_a_table_list_has_the_crd_columns_and_a_row_per_workload(source) -> None:
    table = get(source, WORKLOADS)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == CRD_COLUMNS
    assert len(table["rows"]) == source.count("workloads") == 300
    assert all(len(row["cells"]) == len(CRD_COLUMNS) for row in table["rows"])
    names = [(r["object"]["metadata"]["namespace"], r["object"]["metadata"]["name"]) for r in table["rows"]]
    assert len(set(names)) == 300
    assert {r["object"]["kind"] for r in table["rows"]} == {"PartialObjectMetadata"}  # includeObject's default
    admitted = [r for r in table["rows"] if r["cells"][3] == "True"]
    assert len(admitted) == sum(1 for i in range(292) if i % 5 < 2)
    assert all(r["cells"][2] for r in admitted) and all(r["cells"][4] is None for r in table["rows"])


def test_the_queue_cell_follows_spec_queue_name(source) -> None:
    hot = get(source, HOT)
    assert queue_cells(hot) == {f"bench-{i:02d}": "q-0" for i in range(8)}
    made = source.change_now(40, hot_share=1.0)
    latest = {m["name"]: m["value"] for m in made}
    assert len(latest) == 8
    assert queue_cells(get(source, HOT)) == latest
    whole = get(source, f"{HOT}?includeObject=Object")
    assert all(r["object"]["spec"]["queueName"] == r["cells"][1] for r in whole["rows"])
    assert all("object" not in r for r in get(source, f"{HOT}?includeObject=None")["rows"])
    one = get(source, f"{HOT}/bench-05")
    assert [r["cells"][:2] for r in one["rows"]] == [["bench-05", latest["bench-05"]]]


def test_table_pages_hold_every_row_once(source) -> None:
    names, token, pages = [], "", 0
    while True:
        page = get(source, f"{WORKLOADS}?limit=37" + (f"&continue={token}" if token else ""))
        pages += 1
        names += [r["object"]["metadata"]["name"] for r in page["rows"]]
        source.change_now(3)
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert pages == 9  # ceil(300 / 37)
    assert len(names) == len(set(names)) == 300


def test_a_table_watch_sends_a_one_row_table_per_event(source) -> None:
    version = get(source, HOT, accept="application/json")["metadata"]["resourceVersion"]
    made = [m for m in source.change_now(24) if m["hot"]]
    request = urllib.request.Request(f"{source.url}{HOT}?watch=1&resourceVersion={version}&timeoutSeconds=1",
                                     headers={"Accept": TABLE})
    with urllib.request.urlopen(request, timeout=30) as answer:
        events = [json.loads(line) for line in answer.read().splitlines() if line.strip()]
    assert [e["type"] for e in events] == ["MODIFIED"] * len(made) == ["MODIFIED"] * 12
    assert all(e["object"]["kind"] == "Table" and len(e["object"]["rows"]) == 1 for e in events)
    assert [e["object"]["rows"][0]["cells"][1] for e in events] == [m["value"] for m in made]
    assert [(c["name"], c["type"]) for c in events[0]["object"]["columnDefinitions"]] == CRD_COLUMNS
    assert not any("columnDefinitions" in e["object"] for e in events[1:])


def test_the_workload_crd_and_an_access_review_are_served(source) -> None:
    crds = get(source, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", accept="application/json")["items"]
    by_name = {c["metadata"]["name"]: c for c in crds}
    assert "workloads.kueue.x-k8s.io" in by_name and "localqueues.kueue.x-k8s.io" in by_name
    version = by_name["workloads.kueue.x-k8s.io"]["spec"]["versions"][0]
    assert version["name"] == "v1beta2"
    assert [(c["name"], c["type"]) for c in version["additionalPrinterColumns"]] == CRD_COLUMNS[1:]
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"group": "kueue.x-k8s.io", "resource": "workloads", "verb": "list"}}}
    request = urllib.request.Request(source.url + "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                     data=json.dumps(review).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert json.load(answer)["status"]["allowed"] is True
