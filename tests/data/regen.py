"""Regenerate the profile snapshots and the golden outputs under tests/data.

Run after an intended change to rendering or messages, then read the diff:
    .venv/bin/python tests/data/regen.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parents[1]))

from tau_tui.core.runconfig.profiles import snapshot_document  # noqa: E402
from tests.data.cases import CASES_DIR, case_argv, run_cli  # noqa: E402

GENERATION = 7


def ready(*failing: tuple[str, str], generation: int = GENERATION) -> list[dict]:
    subs = ["LocalQueuesResolved", "ClusterQueuesReady", "ExecutionReady", "ResourceFlavorsReady", "TopologiesReady", "PriorityClassesReady"]
    bad = dict(failing)
    conditions = [
        {"type": t, "status": "False" if t in bad else "True", "reason": bad.get(t, "Ready"), "message": "",
         "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"}
        for t in subs
    ]
    overall = "False" if bad else "True"
    conditions.append({"type": "Ready", "status": overall, "reason": "WorkloadProfileNotReady" if bad else "WorkloadProfileReady", "message": "",
                       "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    return conditions


def profile(name: str, gpus: int, workers: int = 1, *, lanes=("training",), teams=(), namespaces=("taugrid-default",),
            queue="jobqueue", cq="jobqueue", target="singleCluster", placement="unconstrained", topologies=(), failing=(),
            generation: int = GENERATION) -> dict:
    return {
        "name": name,
        "description": f"{name} ({gpus} GPU x {workers})",
        "applicability": {"teams": list(teams), "lanes": list(lanes), "namespaces": list(namespaces)},
        "gpusPerWorker": gpus,
        "workerCount": workers,
        "mode": "fixed",
        "placement": placement,
        "defaultLocalQueue": queue,
        "executionTarget": target,
        "priorities": {"workloadPriorityClassName": "taugrid-default", "podPriorityClassName": "taugrid-default"},
        "localQueues": [{"namespace": ns, "name": queue, "clusterQueue": cq} for ns in namespaces],
        "clusterQueues": [cq],
        "resourceFlavors": ["taugrid-a100-80gb"] if gpus else ["taugrid-default-cpu"],
        "topologies": list(topologies),
        "workloadPriorityClasses": ["taugrid-default"],
        "podPriorityClasses": ["taugrid-default"],
        "conditions": ready(*failing, generation=generation),
    }


def build_catalog(generation: int = GENERATION) -> list[dict]:
    g = {"generation": generation}
    return [
        profile("azure.research.training.l", 1, **g),
        profile("azure.research.training.xl", 8, **g),
        profile("azure.research.training.2node", 8, 2, placement="same-network-domain", topologies=["taugrid-gpu-topology"], **g),
        profile("azure.research.eval.gpu", 1, lanes=("eval",), teams=("research",), **g),
        profile("azure.research.ray.4x", 4, 2, **g),
        profile("azure.research.multikueue", 2, queue="mk-queue", cq="mk-cq", target="multiKueue", **g),
        profile("azure.experimental.broken", 1, failing=(("ClusterQueuesReady", "ClusterQueueInactive"),), **g),
        profile("azure.vision.training.l", 1, teams=("vision",), **g),
        profile("kind-cpu-job", 0, namespaces=("ray",), queue="kind-cpu", cq="kind-cpu", **g),
    ]


CATALOG = build_catalog()


def write_snapshots() -> None:
    profiles_dir = ROOT / "profiles"
    profiles_dir.mkdir(exist_ok=True)
    (profiles_dir / "snapshot.yaml").write_text(yaml.safe_dump(snapshot_document(GENERATION, CATALOG), sort_keys=False))
    (profiles_dir / "empty.yaml").write_text(yaml.safe_dump(snapshot_document(GENERATION, []), sort_keys=False))
    tampered = snapshot_document(GENERATION, CATALOG)
    tampered["profiles"][0]["gpusPerWorker"] = 2  # edited after export: the hash no longer matches
    examples = ROOT.parents[1] / "tau_tui" / "examples"
    (examples / "profiles-snapshot.yaml").write_text(yaml.safe_dump(snapshot_document(GENERATION, CATALOG), sort_keys=False))
    (profiles_dir / "tampered.yaml").write_text(yaml.safe_dump(tampered, sort_keys=False))


def write_goldens() -> None:
    for case in sorted(p for p in CASES_DIR.iterdir() if p.is_dir()):
        code, out, err = run_cli(case_argv(case))
        if code == 0:
            (case / "expected.yaml").write_text(out)
            (case / "expected.txt").unlink(missing_ok=True)
        else:
            (case / "expected.txt").write_text(err)
            (case / "expected.yaml").unlink(missing_ok=True)
        print(f"{case.name}: exit {code}")


if __name__ == "__main__":
    write_snapshots()
    write_goldens()
