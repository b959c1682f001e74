"""T3, #44 items 1, 2 and 6: on a real manager and two workers that run pods, through `tau-tui` as a
subprocess, as an owner and a tenant would. What the tests check is read with the kubernetes client
(raw objects; Kueue's own conditions), never through tau-tui's code.

1. A setup stopped at the dependency matrix (`gpusPerWorker: 64`, exit 4) leaves the dedicated
   LocalQueue held (Kueue reports it `Active=False`, `Stopped`), and a tenant naming the reserved team
   `tau-multikueue-not-yet-authorized` (in tau.yaml, with `--team`, with `TAU_TEAM`) is refused by
   `tau-tui submit`: no Job is created. After drain step 1 the same holds for `tau-multikueue-drained`.
   (Before: submit exited 0 and created the Job in the dedicated queue.)
2. A MultiKueueCluster added to the dedicated MultiKueueConfig after setup (the plan does not list it):
   `multikueue status --flow setup` refuses step 2 naming it, exit 3. (Before: five ✓, exit 0.)
6. `tau-tui cancel --wait` of a run whose pod on the worker is Pending (not scheduled) and whose Job
   there is held by a finalizer: "releasing compute" until both are gone, then "compute released".
   (Before: "cancelled; compute released" at once.)

No TauGrid controller runs in the harness: `tests/harness/taugrid_status.py` writes TauCluster status
(MultiKueueReady from the seed's rule over the raw objects, the resolved profiles) in a background
thread while the CLI runs."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest
import yaml
from kubernetes import client as k8s

from tests.harness.controlplane import KUEUE_NAMESPACE
from tests.harness.multikueue import mint_worker_credential
from tests.harness.waiting import wait_for
from tests.integration.mk_owner import (
    CLI_TIMEOUT,
    EXIT_NOT_VERIFIED,
    EXIT_OK,
    EXIT_REFUSED,
    KUEUE,
    NAMESPACE,
    WAIT,
    Background,
    Names,
    Owner,
    Run,
    condition,
    gone_ok,
    hold,
    let_go,
    manager_jobs,
    manager_workloads,
    mint,
    mk_args,
    multikueue_ready_on_tau_cluster,
    owner_of_module,
    survey_line,
    tau_cluster,
    tau_tui,
    worker_jobs,
    worker_pods,
    write_plan,
    write_run,
)

pytestmark = [pytest.mark.harness, pytest.mark.t3]

NAMES = Names("bnd", "azure.research.multicluster.boundary")
NOT_YET, DRAINED = "tau-multikueue-not-yet-authorized", "tau-multikueue-drained"
EXIT_DECLINED = 5
ROGUE = "bnd-rogue"


@pytest.fixture(scope="module")
def owner(t3, tmp_path_factory):
    with owner_of_module(t3, tmp_path_factory.mktemp("mk-boundary"), NAMES, "bnd-") as who:
        yield who


@pytest.fixture
def transcript(owner):
    try:
        yield owner
    except BaseException:
        print("\n\n".join(owner.transcript[-10:]))  # the owner's last commands and what they printed
        raise


def local_queue(owner: Owner) -> dict:
    return k8s.CustomObjectsApi(owner.manager_api()).get_namespaced_custom_object(*KUEUE, NAMESPACE, "localqueues",
                                                                                   NAMES.queue)


def enabled(owner: Owner) -> None:
    """The owner's setup, verified (new credentials first when a drain revoked the old ones)."""
    core = k8s.CoreV1Api(owner.manager_api())
    if any(not [s for s in core.list_namespaced_secret(KUEUE_NAMESPACE).items if s.metadata.name == f"{c}-kubeconfig"]
           for c in owner.workers):
        for cluster in owner.workers:
            mint(owner, cluster)
    setup = tau_tui(owner, *mk_args(owner, "setup", "--yes", "--timeout", "180"))
    assert setup.rc == EXIT_OK, setup
    ready = multikueue_ready_on_tau_cluster(owner)  # TauCluster's own condition, not the tool's record
    assert ready.get("status") == "True" and ready.get("observedGeneration") == ready["generation"], ready


def refused_every_way(owner: Owner, team: str, name: str) -> None:
    """A tenant claims ``team`` in tau.yaml, with --team and with TAU_TEAM: `tau-tui submit` refuses each
    and no Job reaches the manager."""
    claims = [("submit", str(write_run(owner, name, team=team)), "--context", "manager")]
    plain = str(write_run(owner, f"{name}-b", team=None))
    claims.append(("submit", plain, "--context", "manager", "--team", team))
    for args in claims:
        run = tau_tui(owner, *args)
        assert run.rc != EXIT_OK and "reserved" in run.text and NAMES.profile in run.text, run
    run = tau_tui(owner, "submit", plain, "--context", "manager", env={**owner.env, "TAU_TEAM": team})
    assert run.rc != EXIT_OK and NAMES.profile in run.text, run
    assert manager_jobs(owner, name) == [] and manager_jobs(owner, f"{name}-b") == []


def test_a_tenant_claiming_the_reserved_team_is_refused_and_the_queue_admits_nothing(transcript):
    owner = transcript
    too_big = write_plan(owner.root / "too-big.yaml", NAMES, owner.workers, gpusPerWorker=64)
    stopped = tau_tui(owner, *mk_args(owner, "setup", "--yes", "--timeout", "120", plan=too_big))
    assert stopped.rc == EXIT_NOT_VERIFIED, stopped
    assert survey_line(stopped, 4)[0] == "✓" and survey_line(stopped, 5)[0] != "✓", stopped
    # Kueue's own word: the dedicated LocalQueue admits nothing (held, Active=False Stopped)
    assert (local_queue(owner).get("spec") or {}).get("stopPolicy") == "Hold"
    stopped_cond = wait_for(lambda: (c := condition(local_queue(owner), "Active")) and c.get("status") == "False"
                            and c.get("reason") == "Stopped" and c, "the dedicated LocalQueue reported Stopped", WAIT)
    assert stopped_cond["status"] == "False"
    refused_every_way(owner, NOT_YET, "bnd-claim")

    # The owner, at a terminal, applies drain step 1 and stops before step 2 (the ClusterQueue still runs,
    # the profile stays Ready): only the reserved team stands between a tenant and the profile.
    drain = at_a_terminal(owner, ["y", "n"], *mk_args(owner, "drain", "--timeout", "120", plan=too_big))
    assert drain.rc == EXIT_DECLINED, drain
    assert "✓ 1. Remove tenant authorization, stop new submissions" in drain.out, drain  # after the prompt, same line
    wait_for(lambda: drained_profile_published(owner), "TauCluster status publishing the drained profile, Ready", WAIT)
    refused_every_way(owner, DRAINED, "bnd-drained-claim")
    done = tau_tui(owner, *mk_args(owner, "drain", "--yes", "--cancel-pending", "--timeout", "180", plan=too_big))
    assert done.rc == EXIT_OK, done


def at_a_terminal(owner: Owner, answers: list[str], *args: str) -> Run:
    """`tau-tui` with a terminal on its stdin (a pty) that answers each step's question in turn."""
    controller, terminal = pty.openpty()
    try:
        os.write(controller, "".join(f"{a}\n" for a in answers).encode())
        proc = subprocess.run([sys.executable, "-m", "tau_tui", *args], stdin=terminal, capture_output=True, text=True,
                              env=owner.env, timeout=CLI_TIMEOUT, cwd=owner.root)
    finally:
        os.close(terminal)
        os.close(controller)
    run = Run(tuple(args), proc.returncode, proc.stdout, proc.stderr)
    owner.transcript.append(str(run))
    return run


def drained_profile_published(owner: Owner) -> bool:
    """TauCluster's status is current and publishes the profile limited to the drained team, Ready."""
    tc = tau_cluster(owner)
    status = (tc.get("status") or {}).get("workloadProfiles") or {}
    profile = next((p for p in status.get("profiles") or () if p.get("name") == NAMES.profile), {})
    return (status.get("observedGeneration") == tc["metadata"]["generation"]
            and (profile.get("applicability") or {}).get("teams") == [DRAINED] and condition({"status": profile}, "Ready").get("status") == "True")


def test_a_worker_the_plan_does_not_list_in_the_config_is_refused(transcript):
    owner = transcript
    enabled(owner)
    custom, core = k8s.CustomObjectsApi(owner.manager_api()), k8s.CoreV1Api(owner.manager_api())
    # A rogue MultiKueueCluster, with a working credential of its own, added to the dedicated config by hand.
    rogue = mint_worker_credential(next(iter(owner.workers.values())))
    core.create_namespaced_secret(KUEUE_NAMESPACE, {"metadata": {"name": f"{ROGUE}-kubeconfig"},
                                                    "stringData": {"kubeconfig": rogue.kubeconfig()}})
    custom.create_cluster_custom_object(*KUEUE, "multikueueclusters", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": ROGUE},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"{ROGUE}-kubeconfig"}}}})
    config = custom.get_cluster_custom_object(*KUEUE, "multikueueconfigs", NAMES.check)
    custom.patch_cluster_custom_object(*KUEUE, "multikueueconfigs", NAMES.check,
                                       {"spec": {"clusters": [*config["spec"]["clusters"], ROGUE]}})
    try:
        status = tau_tui(owner, *mk_args(owner, "status", "--flow", "setup"))
        assert status.rc == EXIT_REFUSED, status
        mark, reason = survey_line(status, 2)
        assert mark == "✗" and ROGUE in reason and "the plan does not list" in reason, status
    finally:
        custom.patch_cluster_custom_object(*KUEUE, "multikueueconfigs", NAMES.check, {"spec": {"clusters": config["spec"]["clusters"]}})
        gone_ok(lambda: custom.delete_cluster_custom_object(*KUEUE, "multikueueclusters", ROGUE))
        gone_ok(lambda: core.delete_namespaced_secret(f"{ROGUE}-kubeconfig", KUEUE_NAMESPACE))
    assert tau_tui(owner, *mk_args(owner, "status", "--flow", "setup")).rc == EXIT_OK


def test_cancel_waits_for_a_pending_pod_and_the_job_left_on_the_worker(transcript):
    owner = transcript
    enabled(owner)
    name = "bnd-pending"
    # A run whose pod on the worker can never be scheduled (no node has the label): it stays Pending.
    k8s.BatchV1Api(owner.manager_api()).create_namespaced_job(NAMESPACE, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": NAMES.queue}},
        "spec": {"suspend": True, "template": {"spec": {
            "restartPolicy": "Never", "nodeSelector": {"tau-tui.test/nowhere": "true"},
            "containers": [{"name": "c", "image": "registry.invalid/t:1",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                                          "limits": {"nvidia.com/gpu": "1"}}}]}}}})
    placed = wait_for(lambda: next((w["status"]["clusterName"] for w in manager_workloads(owner, name)
                                    if (w.get("status") or {}).get("clusterName")), None), f"{name} placed", WAIT)
    api = owner.worker_api(placed)
    pod = wait_for(lambda: next((p for p in worker_pods(owner, placed, name) if p.status.phase == "Pending"), None),
                   f"a Pending pod of {name} on {placed}", WAIT)
    assert not pod.spec.node_name
    hold(api, "Pod", pod.metadata.name)
    hold(api, "Job", name)
    config = os.path.join(owner.env["XDG_CONFIG_HOME"], "tau-tui", "config.yaml")
    os.makedirs(os.path.dirname(config), exist_ok=True)
    with open(config, "w") as handle:
        yaml.safe_dump({"worker_contexts": {c: w.name for c, w in owner.workers.items()}}, handle)
    cancel = Background(owner, "cancel", name, "-n", NAMESPACE, "--context", "manager", "--wait", "--interval", "1s")
    try:
        line = cancel.wait_for_line(lambda text: "releasing compute" in text or "compute released" in text,
                                    "the release state")
        assert "releasing compute" in line and placed in line, line
        # MultiKueue deletes the worker's Job; the test's finalizers keep the Job and the Pending pod there
        wait_for(lambda: all(j.metadata.deletion_timestamp for j in worker_jobs(owner, placed, name)),
                 f"the Job of {name} on {placed} deleted by MultiKueue", WAIT)
        assert cancel.proc.poll() is None, cancel.out
        let_go(api)
        run = cancel.finish()
    finally:
        let_go(api)
        if cancel.proc.poll() is None:
            cancel.proc.kill()
    assert run.rc == EXIT_OK, run
    assert run.out.strip().splitlines()[-1] == f"{NAMESPACE}/{name}: cancelled; compute released", run
    assert worker_pods(owner, placed, name) == [] and worker_jobs(owner, placed, name) == []

