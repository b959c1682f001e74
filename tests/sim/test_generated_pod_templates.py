"""The generated scenarios (``large``, ``xl``) share one pod template per GPU count between their
Jobs and Workloads instead of a copy each, and build the same world as when every Job had its own."""

from __future__ import annotations

import hashlib
import json

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.scenario import build_world

R = ResourceKind

#: sha256 of every stored object of ``build_world("large")`` (sorted, as JSON) and the last
#: resourceVersion, computed on the tree before the templates were shared.
LARGE_WORLD_DIGEST = "5894ad7e1e108feb02fdbf35f97bbeabb1f150b06f606c435ba20251b58960b5"


def world_digest(world) -> str:
    store = world.store
    digest = hashlib.sha256(str(store.rv).encode())
    for type_key in sorted(store.objects):
        for key, obj in sorted(store.objects[type_key].items()):
            digest.update(json.dumps([type_key, key, obj], sort_keys=True).encode())
    return digest.hexdigest()


def test_large_builds_the_same_world_with_one_pod_template_per_gpu_count():
    large = build_world("large")
    assert world_digest(large) == LARGE_WORLD_DIGEST
    templates: dict[str, list[int]] = {}
    for job in large.store.items(R.JOB.type):
        gpus = job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]
        templates.setdefault(gpus, []).append(id(job["spec"]["template"]))
    assert sorted(templates, key=int) == ["1", "2", "4", "8"]
    assert all(len(set(ids)) == 1 for ids in templates.values())
    shared = {ids[0] for ids in templates.values()}
    workload_templates = {id(w["spec"]["podSets"][0]["template"]) for w in large.store.items(R.WORKLOAD.type)}
    assert workload_templates == shared
