"""manifests/rbac against the requests tau-tui's own code makes, recorded at the backend's API
primitives (get, list, create, patch, delete, evict, the visibility API, logs) while each user's work
runs on the simulated cluster through the same code as on a real one:

- researcher: `tau-tui runs|status|cancel|runs retry|runs resume` and submit, logs and queue positions
  in the team's namespace;
- on-call: the drain plan, cordon, uncordon, the drain-started annotation and the drain (evictions);
- platform owner: `multikueue setup`, a drain with a live run (`--cancel-pending`), setup again and a
  rotation, on the MultiKueue manager (tests/multikueue_lab.py).

Each recorded request must be granted by that user's roles as the example bindings bind them (a
RoleBinding grants only in its namespace), and each rule must be used: by a recorded request, by the
list and watch of a kind a pane of that user shows (the screens' VIEW_KINDS), or by a request named in
UNREACHED below with the code that makes it. The real API server's authorizer checks the same roles in
tests/integration/test_rbac_roles_t2.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import keyring
import pytest
import yaml

from tau_tui.cli import main
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.logspool.log_requests import LogChunkRequest
from tau_tui.core.operations.multikueue_steps.engine import Outcome
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tau_tui.core.runconfig.loader import load_config
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import ProfileSet
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.screens.compose import ComposeScreen
from tau_tui.screens.multikueue import MultiKueueScreen
from tau_tui.screens.node_detail import NodeDetailScreen
from tau_tui.screens.nodes import NodesScreen
from tau_tui.screens.profiles import ProfilesScreen
from tau_tui.screens.queue import QueueScreen
from tau_tui.screens.runs import RunsScreen
from tests.commands.test_recovery_commands import SCENARIO as RECOVERY_SCENARIO
from tests.multikueue_lab import YES, MemoryKeyring, dispatch, make_lab, retire_demo_multikueue

RBAC = Path(__file__).resolve().parents[2] / "manifests" / "rbac"
ALL = "*"  # a list or watch across every namespace
TEAM = "team-a"
KUEUE_NAMESPACE = "kueue-system"


@dataclass(frozen=True)
class Call:
    verb: str
    group: str
    resource: str  # plural, or plural/subresource
    namespace: str | None  # None: cluster-scoped; ALL: every namespace


# -- recording --------------------------------------------------------------------------------


def _where(rt: ResourceType, namespace: str | None) -> str | None:
    return (namespace or ALL) if rt.namespaced else None


class Recording(set):
    """The calls (a set of Call), and which backend made each."""

    def __init__(self) -> None:
        super().__init__()
        self.by: dict[Call, set[int]] = {}
        self.backends: set[int] = set()  # the backends built while the block runs

    def made(self, backend: object, call: Call) -> None:
        if id(backend) not in self.backends:
            return  # a backend an earlier test left running (its threads outlive it), not this block's
        self.add(call)
        self.by.setdefault(call, set()).add(id(backend))

    def of(self, backend: object) -> set[Call]:
        return {c for c in self if id(backend) in self.by.get(c, ())}

    def clear(self) -> None:
        super().clear()
        self.by.clear()


@contextmanager
def recorded(*backends: SimulatedBackend) -> Iterator[Recording]:
    """Every request that ``backends`` and each SimulatedBackend built while the block runs make in it
    (the class is restored after it)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from _recording(monkeypatch, backends)


def _recording(monkeypatch, backends) -> Iterator[Recording]:
    calls = Recording()
    calls.backends.update(id(b) for b in backends)
    cls = SimulatedBackend
    init = cls.__init__

    def constructing(self, *args, **kwargs):
        calls.backends.add(id(self))
        init(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__init__", constructing)

    def wrap(name: str, verb: str, namespace_at: int):
        original = getattr(cls, name)

        def call(self, rt, *args, **kwargs):
            namespace = args[namespace_at] if len(args) > namespace_at else kwargs.get("namespace")
            calls.made(self, Call(verb, rt.group, rt.plural, _where(rt, namespace)))
            return original(self, rt, *args, **kwargs)

        monkeypatch.setattr(cls, name, call)

    wrap("_api_get", "get", 1)
    wrap("_api_list", "list", 0)
    wrap("_api_create", "create", 0)
    wrap("_api_delete", "delete", 1)
    wrap("_api_patch", "patch", 1)
    evict, visibility, logs = cls._api_evict, cls._visibility_get, cls.open_container_log

    def evicting(self, name, namespace, *args, **kwargs):
        calls.made(self, Call("create", "", "pods/eviction", namespace))
        return evict(self, name, namespace, *args, **kwargs)

    def positions(self, path, query):
        parts = path.strip("/").split("/")  # apis/visibility.kueue.x-k8s.io/v1beta2/[namespaces/NS/]KIND/NAME/pendingworkloads
        namespace = parts[4] if parts[3] == "namespaces" else None
        calls.made(self, Call("get", parts[1], f"{parts[-3]}/{parts[-1]}", namespace))
        return visibility(self, path, query)

    def reading_logs(self, request):
        calls.made(self, Call("get", "", "pods/log", request.namespace))
        return logs(self, request)

    monkeypatch.setattr(cls, "_api_evict", evicting)
    monkeypatch.setattr(cls, "_visibility_get", positions)
    monkeypatch.setattr(cls, "open_container_log", reading_logs)
    yield calls


# -- the roles --------------------------------------------------------------------------------


def roles() -> dict[str, list[dict]]:
    docs = [d for f in ("researcher.yaml", "oncall.yaml", "platform-owner.yaml")
            for d in yaml.safe_load_all((RBAC / f).read_text()) if d]
    return {d["metadata"]["name"]: d["rules"] for d in docs}


def bindings() -> dict[str, list[tuple[str, str | None]]]:
    """Each ClusterRole the example bindings bind, per subject: (role, the RoleBinding's namespace or None)."""
    bound: dict[str, list[tuple[str, str | None]]] = {}
    for doc in yaml.safe_load_all((RBAC / "example-bindings.yaml").read_text()):
        namespace = doc["metadata"].get("namespace") if doc["kind"] == "RoleBinding" else None
        for subject in doc["subjects"]:
            bound.setdefault(subject["name"], []).append((doc["roleRef"]["name"], namespace))
    return bound


def _rule_grants(rule: dict, call: Call) -> bool:
    return call.group in rule.get("apiGroups", ()) and call.resource in rule.get("resources", ()) and call.verb in rule["verbs"]


def granted(call: Call, bound: list[tuple[str, str | None]]) -> bool:
    rules = roles()
    for role, namespace in bound:
        in_scope = namespace is None or (call.namespace == namespace)
        if in_scope and any(_rule_grants(rule, call) for rule in rules[role]):
            return True
    return False


def unused_grants(bound: list[tuple[str, str | None]], used: set[Call]) -> list[str]:
    """Every (verb, resource) a role of ``bound`` grants that no call in ``used`` needs."""
    rules = roles()
    unused = []
    for role, _ in bound:
        for rule in rules[role]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        if not any(c.group == group and c.resource == resource and c.verb == verb for c in used):
                            unused.append(f"{role}: {verb} {resource}.{group}" if group else f"{role}: {verb} {resource}")
    return unused


def pane_reads(screens, namespace: str) -> set[Call]:
    """The list and watch of each kind the screens show (their informers)."""
    kinds = {kind for screen in screens for kind in screen.VIEW_KINDS}
    return {Call(verb, k.type.group, k.type.plural, _where(k.type, namespace)) for k in kinds for verb in ("list", "watch")}


def assert_role_fits(subject: str, calls: set[Call], reads: set[Call], unreached: set[Call]) -> None:
    bound = bindings()[subject]
    refused = sorted(f"{c.verb} {c.resource}.{c.group} in {c.namespace}" for c in calls | reads if not granted(c, bound))
    assert not refused, f"{subject}'s roles refuse what tau-tui does: {refused}"
    unused = unused_grants(bound, calls | reads | unreached)
    assert not unused, f"{subject}'s roles grant what tau-tui never does: {unused}"


# -- researcher -------------------------------------------------------------------------------

#: Researcher requests the simulated runs below do not reach, with the code that makes each.
RESEARCHER_UNREACHED = {
    # core/cluster/profile_reader.py reads TauCluster/cluster with its own GET (the real backend only).
    Call("get", "tau.azure.com", "clusters", None),
    # The submission of a RayJob (a RayJob run; the scenario's runs are Jobs): create, and patch by retry.
    Call("create", "ray.io", "rayjobs", TEAM), Call("patch", "ray.io", "rayjobs", TEAM),
    Call("delete", "ray.io", "rayjobs", TEAM), Call("get", "ray.io", "rayjobs", TEAM),
    # common.submit's re-submission check reads an object that already exists under the run's name.
    Call("get", "batch", "jobs", TEAM), Call("get", "", "services", TEAM),
    # The Queue and Runs panes' GPU-fault warning reads nodes and their GPU health from the informers'
    # cache (core/operations/live_gpu_problems.py), which list and watch them.
    Call("watch", "", "nodes", None), Call("watch", "tau-tui.io", "gpunodehealths", None),
}


def researcher_calls(tmp_path: Path, monkeypatch) -> Recording:
    """What a researcher's work in TEAM asks of the API (the CLI and the app's calls on a simulated cluster)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(RECOVERY_SCENARIO.replace("team-a", TEAM))
    demo = ["-n", TEAM, "--demo", str(scenario)]
    with recorded() as calls:
        assert main(["runs", *demo, "-o", "json"]) == 0
        assert main(["status", "pretrain", *demo, "-o", "json"]) == 0
        assert main(["runs", "retry", "pretrain", *demo, "--yes"]) == 0
        assert main(["runs", "resume", "last-try", *demo, "--yes", "--from", "/data/ckpt"]) == 0
        assert main(["cancel", "pretrain", *demo]) == 0
        backend = SimulatedBackend(build_world(str(scenario)), namespace=TEAM)
        (tmp_path / "tau.yaml").write_text("name: probe\nimage: python:3.12-slim\nentrypoint: train.py\ncompute:\n  gpus: 8\n"
                                           "execution:\n  launcher: torchrun\n  nodes: 2\npolicy:\n  queue: q\n")
        (tmp_path / "train.py").write_text("print(1)\n")
        run = render_run(load_config(tmp_path / "tau.yaml"), ProfileSet("none", None, "", []), RenderOptions(TEAM, None, None, None))
        assert all(r.ok for r in backend.submit(run.manifests)), "submit"
        backend.pending_positions_local_queue(TEAM, "q")
        pod = next(p for p in backend.fetch(ResourceKind.POD, TEAM))
        backend.container_finished(TEAM, pod.name, pod.containers[0])
        backend.open_container_log(LogChunkRequest(TEAM, pod.name, pod.containers[0], follow=False))
    return calls


RESEARCHER_SCREENS = (ComposeScreen, ProfilesScreen, QueueScreen, RunsScreen)
ONCALL_SCREENS = (NodesScreen, NodeDetailScreen)
PLATFORM_OWNER_SCREENS = (MultiKueueScreen, QueueScreen)


def test_the_researcher_roles_fit_what_the_researcher_does(tmp_path, monkeypatch, capsys):
    calls = researcher_calls(tmp_path, monkeypatch)
    capsys.readouterr()
    reads = pane_reads(RESEARCHER_SCREENS, TEAM)
    assert Call("create", "batch", "jobs", TEAM) in calls and Call("get", "", "pods/log", TEAM) in calls
    assert all(c.namespace in (TEAM, None) for c in calls), sorted(repr(c) for c in calls if c.namespace not in (TEAM, None))
    assert_role_fits("team-a-researchers", calls, reads, RESEARCHER_UNREACHED)


# -- on-call ----------------------------------------------------------------------------------

#: On-call requests the simulated drain below does not reach, with the code that makes each.
ONCALL_UNREACHED = {
    # The Nodes pane's `l` on a pod of the node detail opens its logs.
    Call("get", "", "pods/log", ALL),
    # drain_inputs lists each namespace's PodDisruptionBudgets (the demo has pods only in namespaces without one).
    Call("list", "policy", "poddisruptionbudgets", ALL),
    # The runs a GPU fault hit are read from the cache the informers fill (core/operations/live_runs_hit.py).
    *(Call(verb, group, plural, ALL) for verb in ("list", "watch")
      for group, plural in (("batch", "jobs"), ("ray.io", "rayjobs"), ("kueue.x-k8s.io", "workloads"))),
}


def oncall_calls(monkeypatch) -> set[Call]:
    """What on-call's cordon, drain and uncordon of a node ask of the API, every namespace widened to ALL."""
    backend = SimulatedBackend(build_world("demo"))
    node = next(n.name for n in backend.fetch(ResourceKind.NODE)
                if any(p.node_name == n.name for p in backend.fetch(ResourceKind.POD)))
    with recorded(backend) as calls:
        backend.drain_inputs(node)
        assert backend.cordon(node).ok and backend.annotate_node(node, {"tau-tui.io/drain-started": "now"}).ok
        assert backend.drain(node, dry_run=True).ok
        assert backend.drain(node).ok
        assert backend.uncordon(node).ok
        backend.fetch(ResourceKind.POD)  # the node detail's pods, by name
    assert Call("create", "", "pods/eviction", next(iter({c.namespace for c in calls if c.resource == "pods/eviction"}))) in calls
    widened = {Call(c.verb, c.group, c.resource, ALL if c.namespace not in (None, ALL) else c.namespace) for c in calls}
    return widened | {Call("get", "", "pods", ALL)}  # the drain reads each pod again by name before its eviction


def test_the_oncall_role_fits_what_on_call_does(monkeypatch):
    assert_role_fits("gpu-oncall", oncall_calls(monkeypatch), pane_reads(ONCALL_SCREENS, ALL), ONCALL_UNREACHED)


# -- platform owner ---------------------------------------------------------------------------

#: Platform-owner requests the simulated flows below do not reach, with the code that makes each.
PLATFORM_OWNER_UNREACHED = {
    # The dependency matrix reads a flavor's Topology when the plan's flavor names one (matrix.py).
    Call("get", "kueue.x-k8s.io", "topologies", None),
    # ... and the controller Deployments when a CRD carries no version label (matrix.py, _release).
    Call("list", "apps", "deployments", ALL),
    # Setup step 4 creates the plan's flavor when the manager has none (setup.py); the lab's exists.
    Call("create", "kueue.x-k8s.io", "resourceflavors", None),
    # Drain step 2 cancels a pending RayJob owner as it does a Job (drain.py, CANCELLABLE); the lab's run is a Job.
    Call("delete", "ray.io", "rayjobs", ALL),
    # The wizard's change of a MultiKueueConfig's cluster list (set_multikueue_config_clusters).
    Call("patch", "kueue.x-k8s.io", "multikueueconfigs", None),
    # The Queue pane's hold and drain of a queue and the wiring's reads by name (BackendAccess.get).
    Call("get", "kueue.x-k8s.io", "clusterqueues", None), Call("get", "kueue.x-k8s.io", "localqueues", ALL),
    Call("get", "kueue.x-k8s.io", "resourceflavors", None), Call("get", "kueue.x-k8s.io", "multikueueclusters", None),
    Call("get", "kueue.x-k8s.io", "multikueueconfigs", None), Call("get", "kueue.x-k8s.io", "admissionchecks", None),
    # The Queue pane's reads of flavors and ClusterQueues (its informers).
    Call("list", "kueue.x-k8s.io", "resourceflavors", None), Call("watch", "kueue.x-k8s.io", "resourceflavors", None),
    Call("list", "tau.azure.com", "clusters", None), Call("watch", "tau.azure.com", "clusters", None),
}


def platform_owner_calls(tmp_path: Path, monkeypatch) -> set[Call]:
    """What setup, a drain with a live run, setup again and a rotation ask of the MultiKueue manager
    (the workers are reached with the plan's own identities), namespaces but Kueue's widened to ALL."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        with recorded() as calls:
            lab = make_lab(tmp_path / "one")
            retire_demo_multikueue(lab)
            assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
            calls.clear()  # only the flows' own requests from here (the lab's set-up and the dispatch are not)
            assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
            run_calls = calls.of(lab.backend)
            dispatch(lab)
            calls.clear()
            assert lab.exercise("drain", inputs={"cancel": "all-pending"}).run(YES, timeout=60) is Outcome.VERIFIED
            run_calls |= calls.of(lab.backend)
            other = make_lab(tmp_path / "two")
            retire_demo_multikueue(other)
            calls.clear()
            assert other.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
            other.fleet.mint("lab-worker-1", context="lab-worker-1-new")
            rotate = other.exercise("rotate", vault=CredentialVault(other.backend.current_context),
                                    inputs={"worker": "lab-worker-1", "new_context": "lab-worker-1-new"})
            assert rotate.run(YES, timeout=30) is Outcome.VERIFIED
            run_calls |= calls.of(other.backend)
    finally:
        keyring.set_keyring(previous)
    # The manager's requests only: the workers are reached with the plan's own worker identities.
    manager = {c for c in run_calls if not c.resource.startswith("selfsubject")}
    assert Call("create", "", "secrets", KUEUE_NAMESPACE) in manager and Call("delete", "batch", "jobs", "team-nlp") in manager
    assert {c.namespace for c in manager if c.resource == "secrets"} == {KUEUE_NAMESPACE}
    return {Call(c.verb, c.group, c.resource, c.namespace if c.resource == "secrets" or c.namespace is None else ALL)
            for c in manager}


def test_the_platform_owner_roles_fit_setup_drain_and_rotate(tmp_path, monkeypatch):
    assert_role_fits("platform-owners", platform_owner_calls(tmp_path, monkeypatch), pane_reads(PLATFORM_OWNER_SCREENS, ALL),
                     PLATFORM_OWNER_UNREACHED)


def test_the_example_bindings_bind_each_role_of_the_three_users():
    bound = bindings()
    assert sorted(bound) == ["gpu-oncall", "platform-owners", "team-a-researchers"]
    assert bound["team-a-researchers"] == [("tau-tui-researcher", TEAM), ("tau-tui-researcher-cluster", None)]
    assert bound["platform-owners"] == [("tau-tui-platform-owner", None), ("tau-tui-platform-owner-secrets", KUEUE_NAMESPACE)]
    for name, rules in roles().items():
        for rule in rules:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], (name, rule)
    # the namespaced researcher role holds no cluster-scoped resource (a RoleBinding could not grant it)
    cluster_scoped = {k.type.plural for k in ResourceKind if not k.type.namespaced}
    assert not cluster_scoped & {r for rule in roles()["tau-tui-researcher"] for r in rule["resources"]}
    assert json.dumps(roles())  # plain data
