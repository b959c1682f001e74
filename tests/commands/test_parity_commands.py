"""The rest of TauGrid's `tau` researcher job, headless (issue 45), on the simulated cluster: `schema`,
`explain-config`, the image-tag warning and `--strict`, the queue position in `status`, `runs --queue`
and `--include-external`, `cancel` waiting by default, `profiles export` and its round trip through
`render --profiles`, `workspace list|status|check|quota show` and their exit codes.  The same commands
against the real control plane: tests/integration/test_researcher_parity_t1.py."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from tau_tui.cli import main
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.profile_export import ExportRefused, export_snapshot
from tau_tui.core.operations.run_position import read_queue_place
from tau_tui.core.operations.rundocument import read_run, read_run_owners
from tau_tui.core.runconfig.explain import leaf_paths
from tau_tui.core.runconfig.loader import load_config
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import compute_profile_set_hash, profile_set_from_taucluster
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.core.runconfig.workspace import WorkspaceDefaults
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tests.degraded_workspace import with_degraded_workspace

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tau_tui" / "examples" / "tau.yaml"


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TAU_TEAM", raising=False)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(folder: Path, text: str) -> Path:
    (folder / "train.py").write_text("print('hi')\n")
    path = folder / "tau.yaml"
    path.write_text(textwrap.dedent(text))
    return path


# -- schema -----------------------------------------------------------------------------------------

def test_schema_is_json_schema_2020_12_with_every_key_and_its_status(capsys):
    code, out, _ = run(capsys, "schema")
    assert code == 0
    schema = json.loads(out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    defs = schema["$defs"]
    for path in leaf_paths():
        section = defs[schema["properties"][path[0]]["$ref"].rsplit("/", 1)[1]]
        assert section["additionalProperties"] is False
        prop = section["properties"][path[1]]
        assert prop["x-tau-status"] in ("supported", "client-only"), path
    assert defs["PolicySection"]["properties"]["mode"]["x-tau-status"] == "client-only"
    assert schema["properties"]["image"]["x-tau-alias-of"] == "runtime.image"
    assert defs["PolicySection"]["properties"]["priority"]["x-tau-alias-of"] == "policy.priority_tier"
    assert "ray" in defs["RunSection"]["properties"]["engine"]["anyOf"][0]["enum"]
    assert "runtime.env_kv" in schema["x-tau-refused"]


def test_every_key_of_the_shipped_examples_is_in_the_schema(capsys):
    """A small independent walk: each key written in the examples names a property of the schema."""
    schema = json.loads(run(capsys, "schema")[1])

    def walk(data, node):
        props = node.get("properties", {})
        for key, value in data.items():
            assert key in props, key
            target = props[key]
            if "$ref" in target:
                target = schema["$defs"][target["$ref"].rsplit("/", 1)[1]]
            if isinstance(value, dict) and "properties" in target:
                walk(value, target)

    walk(yaml.safe_load(EXAMPLE.read_text()), schema)


# -- explain-config -----------------------------------------------------------------------------------

def test_explain_config_says_where_each_value_came_from(capsys):
    code, out, _ = run(capsys, "explain-config", str(EXAMPLE), "--demo", "-o", "json")
    assert code == 0
    doc = json.loads(out)
    values = {v["key"]: v for v in doc["values"]}
    assert values["run.name"]["source"].endswith("tau.yaml:2 (as name)")
    assert values["policy.queue"] == {"key": "policy.queue", "value": "jobqueue", "source": "profile azure.research.training.xl"}
    assert values["compute.gpus"]["value"] == 8 and values["compute.gpus"]["source"].startswith("profile ")
    assert values["run.ttl_seconds_after_finished"] == {"key": "run.ttl_seconds_after_finished", "value": 3600,
                                                         "source": "workspace taugrid-default"}
    assert values["resilience.backoff_initial"]["source"] == "default"
    assert values["policy.mode"]["source"] == "profile azure.research.training.xl"
    assert "client-only" in values["execution.allow_nccl_override"]["note"]
    assert "workspace taugrid-default (primary)" in doc["basis"]


def test_explain_config_with_a_snapshot_reads_no_workspace(capsys):
    code, out, _ = run(capsys, "explain-config", str(EXAMPLE), "--profiles", str(REPO / "tau_tui/examples/profiles-snapshot.yaml"))
    assert code == 0
    assert "no workspace is read" in out.splitlines()[0]
    assert "run.ttl_seconds_after_finished     28800  ← default" in out


# -- image tags ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("image", ["python", "python:latest", "registry.example:5000/team/app:latest"])
def test_latest_or_untagged_images_warn_and_strict_refuses(tmp_path, capsys, image):
    config = write(tmp_path, f"""\
        name: tagged
        image: {image}
        entrypoint: train.py
        compute: {{gpus: 0}}
        policy: {{namespace: ns1, queue: q1}}
        """)
    empty = str(REPO / "tests/data/profiles/empty.yaml")
    code, _, err = run(capsys, "validate", str(config))
    assert code == 0 and " image: " in err and ("is untagged" in err or "is tagged latest" in err)
    code, out, err = run(capsys, "render", str(config), "--profiles", empty)
    assert code == 0 and out.startswith("---") and "pin a version tag" in err
    code, out, err = run(capsys, "render", str(config), "--profiles", empty, "--strict")
    assert code == 2 and out == "" and " image: " in err and "warning" not in err
    code, _, err = run(capsys, "validate", str(config), "--strict")
    assert code == 2


@pytest.mark.parametrize("image", ["python:3.12-slim", "registry.example/app@sha256:" + "a" * 64, "localhost:5000/app:1.2"])
def test_pinned_images_do_not_warn(tmp_path, capsys, image):
    config = write(tmp_path, f"""\
        name: pinned
        image: {image}
        entrypoint: train.py
        compute: {{gpus: 0}}
        policy: {{namespace: ns1, queue: q1}}
        """)
    code, _, err = run(capsys, "validate", str(config), "--strict")
    assert code == 0 and "warning" not in err


def test_a_multikueue_profile_with_a_data_pvc_warns_that_the_data_stays_on_one_cluster():
    tau_cluster = _tau_cluster()
    status = tau_cluster["status"]["workloadProfiles"]
    for profile in status["profiles"]:  # the demo's MultiKueue profile serves lane multicluster, not a tau.yaml lane
        profile.get("applicability", {}).pop("lanes", None)
    status["profileSetHash"] = compute_profile_set_hash(status["profiles"])
    profiles = profile_set_from_taucluster(tau_cluster)
    loaded = load_config(write_tmp(textwrap.dedent("""\
        name: mk-with-pvc
        engine: rayjob
        image: python:3.12-slim
        entrypoint: train.py
        policy: {namespace: team-nlp, profile: azure.research.multicluster.h100}
        storage: {data_pvc: blob-training}
        """)))
    resolution = render_run(loaded, profiles, RenderOptions()).resolution
    (warning,) = resolution.warnings
    assert warning.path == "storage.data_pvc" and "MultiKueue (Alpha)" in warning.message and "stay on one cluster" in warning.message


def write_tmp(text: str) -> Path:
    import tempfile

    folder = Path(tempfile.mkdtemp())
    (folder / "train.py").write_text("print('hi')\n")
    (folder / "tau.yaml").write_text(text)
    return folder / "tau.yaml"


# -- status: queue position ---------------------------------------------------------------------------

def test_status_of_a_queued_run_shows_its_position_and_why_it_waits(capsys):
    code, out, _ = run(capsys, "status", "llama-8b-dpo", "-n", "taugrid-default", "--demo")
    assert code == 0
    assert "  queue: position #1 of 3 pending in LocalQueue taugrid-default/jobqueue (#1 in ClusterQueue jobqueue)" in out
    assert "  why pending: Pending: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu" in out
    code, out, _ = run(capsys, "status", "llama-8b-dpo", "-n", "taugrid-default", "--demo", "-o", "json")
    place = json.loads(out)["status"]["queuePosition"]
    assert place["position"] == 1 and place["estimated"] is False and "insufficient unused quota" in place["whyPending"]
    code, out, _ = run(capsys, "status", "nccl-allreduce-check", "-n", "taugrid-default", "--demo", "-o", "json")
    assert json.loads(out)["status"]["queuePosition"] is None  # running: no place in line


def test_without_the_visibility_api_the_position_is_estimated_from_a_live_read():
    backend = SimulatedBackend(build_world("demo"))
    backend.use_visibility_api = False
    place = read_queue_place(backend, read_run(backend, "taugrid-default", "tiny-ablation"), backend.world.now())
    assert place is not None and place.estimated and place.position is not None
    assert place.line.startswith("position ~") and "switched off" in place.estimate_reason


# -- runs --queue / --include-external ------------------------------------------------------------------

def test_runs_queue_filter(capsys):
    code, out, _ = run(capsys, "runs", "--demo", "--queue", "vision-queue", "-o", "json")
    runs = json.loads(out)["runs"]
    assert code == 0 and {r["name"] for r in runs} == {"vit-huge-pretrain", "segmenter-v2", "detector-finetune"}
    assert all(r["queue"] == "vision-queue" for r in runs)


def test_include_external_adds_jobs_tau_did_not_submit_but_never_submitters():
    world = build_world("demo")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "hand-made", "namespace": "team-nlp",
           "labels": {"kueue.x-k8s.io/queue-name": "jobqueue"}}, "spec": {"template": {"spec": {"containers": []}}}}
    submitter = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ray-rlhf-ppo-submitter", "namespace": "team-nlp",
                 "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "ray-rlhf-ppo", "uid": "u1"}]},
                 "spec": {"template": {"spec": {"containers": []}}}}
    world.store.put(ResourceKind.JOB.type, job)
    world.store.put(ResourceKind.JOB.type, submitter)
    backend = SimulatedBackend(world)
    plain = {o.name for o in read_run_owners(backend, "team-nlp")}
    wide = {o.name for o in read_run_owners(backend, "team-nlp", include_external=True)}
    assert "hand-made" not in plain and wide - plain == {"hand-made"}
    assert "ray-rlhf-ppo-submitter" not in wide
    assert {o.name for o in read_run_owners(backend, "team-nlp", queue="jobqueue", include_external=True)} >= {"hand-made"}


# -- cancel waits by default -----------------------------------------------------------------------------

def test_cancel_waits_for_the_release_by_default(capsys):
    code, out, _ = run(capsys, "cancel", "llama-70b-sft", "-n", "taugrid-default", "--demo", "--interval", "5s")
    assert code == 0
    lines = out.splitlines()
    assert "releasing compute" in lines[1] and lines[-1] == "taugrid-default/llama-70b-sft: cancelled; compute released"


def test_cancel_no_wait_returns_after_the_delete(capsys):
    code, out, _ = run(capsys, "cancel", "llama-70b-sft", "-n", "taugrid-default", "--demo", "--no-wait")
    assert code == 0 and out.splitlines() == ["Job taugrid-default/llama-70b-sft cancelled; Kueue releases its quota"]


def test_cancel_gives_up_after_the_teardown_timeout(capsys):
    code, out, err = run(capsys, "cancel", "llama-70b-sft", "-n", "taugrid-default", "--demo", "--interval", "5s",
                         "--teardown-timeout", "10s")
    assert code == 1 and "still releasing compute after 10s" in err and "compute released" not in out


# -- profiles export -------------------------------------------------------------------------------------

def test_profiles_export_then_render_with_it_gives_what_the_live_profiles_give(tmp_path, capsys):
    snap = tmp_path / "snap.yaml"
    code, _, err = run(capsys, "profiles", "export", "--demo", "-o", str(snap))
    assert code == 0 and "wrote" in err
    document = yaml.safe_load(snap.read_text())
    assert document["kind"] == "TauWorkloadProfileSnapshot" and document["tauClusterGeneration"] == 1
    assert document["profileSetHash"] == compute_profile_set_hash(document["profiles"])
    code, rendered, err = run(capsys, "render", str(EXAMPLE), "--profiles", str(snap))
    assert code == 0, err
    live = profile_set_from_taucluster(build_world("demo").store.read(ResourceKind.TAU_CLUSTER.type, "cluster"))
    from tau_tui.core.runconfig.manifests import to_yaml

    assert rendered == to_yaml(render_run(load_config(EXAMPLE), live, RenderOptions()).manifests)
    code, _, err = run(capsys, "profiles", "export", "--demo", "-o", str(snap))
    assert code == 2 and "exists; left unchanged" in err


def _tau_cluster() -> dict:
    return build_world("demo").store.read(ResourceKind.TAU_CLUSTER.type, "cluster")


def _set_condition(tau_cluster: dict) -> dict:
    return next(c for c in tau_cluster["status"]["conditions"] if c["type"] == "WorkloadProfilesReady")


@pytest.mark.parametrize(("spoil", "reason"), [
    (lambda tc: tc["status"]["workloadProfiles"].__setitem__("observedGeneration", 0), "has not caught up"),
    (lambda tc: _set_condition(tc).__setitem__("observedGeneration", 0), "is stale"),
    (lambda tc: tc["status"]["workloadProfiles"].__setitem__("profileSetHash", "0" * 64), "does not match"),
    (lambda tc: tc["status"].pop("workloadProfiles"), "status.workloadProfiles is missing"),
    (lambda tc: tc["status"]["workloadProfiles"].__setitem__("observed", False), "observed is false"),
    (lambda tc: tc["status"]["conditions"].remove(_set_condition(tc)), "WorkloadProfilesReady is missing"),
])
def test_profiles_export_fails_closed(spoil, reason):
    tau_cluster = _tau_cluster()
    spoil(tau_cluster)
    with pytest.raises(ExportRefused) as refused:
        export_snapshot(tau_cluster)
    assert any(reason in p for p in refused.value.problems), refused.value.problems


def test_profiles_not_ready_are_exported_as_not_ready_and_named(tmp_path, capsys):
    """As TauGrid's provider: the set condition's value does not refuse the export; the profiles that are
    not Ready keep Ready=False in the snapshot (unselectable offline) and the export names them."""
    tau_cluster = _tau_cluster()
    status = tau_cluster["status"]
    profile = status["workloadProfiles"]["profiles"][0]
    next(c for c in profile["conditions"] if c["type"] == "Ready").update(status="False", reason="WorkloadProfileNotReady")
    _set_condition(tau_cluster).update(status="False", reason="WorkloadProfilesNotReady")
    export = export_snapshot(tau_cluster)
    assert export.not_ready == (profile["name"],) and export.set_condition.startswith("WorkloadProfilesReady=False")
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump(export.document))
    from tau_tui.core.runconfig.profiles import Caller, explain, load_snapshot

    offline = {e.name: e for e in explain(load_snapshot(snap), Caller("taugrid-default", "research", "training"))}
    assert not offline[profile["name"]].selectable and "Ready=False" in offline[profile["name"]].reasons[0]


def test_profiles_export_refused_writes_nothing_and_says_why(tmp_path, capsys, monkeypatch):
    world = build_world("demo")
    world.store.update(ResourceKind.TAU_CLUSTER.type, "cluster", None,
                       lambda o: o["status"]["workloadProfiles"].__setitem__("profileSetHash", "0" * 64))
    monkeypatch.setattr("tau_tui.core.sim.scenario.build_world", lambda name: world)
    code, out, err = run(capsys, "profiles", "export", "--demo", "-o", str(tmp_path / "snap.yaml"))
    assert code == 1 and out == "" and not (tmp_path / "snap.yaml").exists()
    assert "profiles export refused" in err and "profileSetHash does not match" in err and "nothing was written" in err


# -- workspaces ------------------------------------------------------------------------------------------

def test_workspace_check_exit_codes(capsys, monkeypatch):
    with_degraded_workspace(monkeypatch)
    assert run(capsys, "workspace", "check", "--demo")[0] == 0  # the primary one, Ready
    code, _, err = run(capsys, "workspace", "check", "team-nlp", "--demo")
    assert code == 3 and "phase is Degraded" in err and "DriftDetected=True" in err
    code, _, err = run(capsys, "workspace", "check", "no-such", "--demo")
    assert code == 1 and "TauWorkspace no-such not found in tau-system" in err


def test_a_stale_workspace_status_is_not_ready():
    world = build_world("demo")
    obj = world.store.read(ResourceKind.TAU_WORKSPACE.type, "taugrid-default", "tau-system")
    obj["metadata"]["generation"] = 2  # the spec changed; the controller has not looked yet
    problems = WorkspaceDefaults.from_object(obj).readiness_problems()
    assert problems and "status is stale" in problems[0]


def test_workspace_list_status_and_quota(capsys, monkeypatch):
    with_degraded_workspace(monkeypatch)
    code, out, _ = run(capsys, "workspace", "list", "--demo", "-o", "json")
    doc = json.loads(out)
    assert code == 0 and [w["name"] for w in doc["workspaces"]] == ["taugrid-default", "team-nlp"]
    assert [w["primary"] for w in doc["workspaces"]] == [True, False]
    code, out, _ = run(capsys, "workspace", "status", "team-nlp", "--demo")
    assert code == 0 and "DriftDetected          True  RoleBindingEdited" in out
    code, out, _ = run(capsys, "workspace", "quota", "show", "--demo", "--team", "research", "-o", "json")
    quota = json.loads(out)
    assert code == 0 and quota["clusterQueue"] == "jobqueue" and quota["teamCohort"] == "tau-team-research"
    gpus = [q for q in quota["quota"] if q["resource"] == "nvidia.com/gpu"]
    assert gpus and all(q["used"] is not None for q in gpus)


def test_workspace_namespace_for_run_commands(capsys, monkeypatch):
    with_degraded_workspace(monkeypatch)
    code, out, _ = run(capsys, "runs", "--demo", "--workspace", "team-nlp", "-o", "json")
    assert code == 0 and {r["namespace"] for r in json.loads(out)["runs"]} == {"team-nlp"}
    code, _, err = run(capsys, "runs", "--demo", "--workspace", "nope")
    assert code == 1 and "TauWorkspace nope not found" in err
