"""T3, #32 defect 8: a platform owner enables MultiKueue, drains it while a run is live on a
worker, and enables it again, on a real manager and two workers that run pods, everything through
`tau-tui` as a subprocess (the `t3` fixture of tests/harness).

The story, in one test, in the order an owner works:

1. enable from nothing: `tau-tui multikueue setup --plan PLAN --yes` (the plan names each worker's
   least-privilege context and the owner's adminContext);
2. `tau-tui submit tau.yaml`: the run is placed on a worker and its pod Running on that worker's
   KWOK node (the harness keeps tau-tui runs Running until deleted; the test holds the pod with a
   finalizer of its own, so it decides when the pod goes);
3. `drain --timeout 20` while it runs: step 1 removes tenant authorization (a new `tau-tui submit`
   is refused), step 2's HoldAndDrain evicts the run (its Job goes from the worker, its pod is
   terminating) and does not verify while the evicted Workload lives, naming the owner to cancel:
   exit 4; the credentials are not revoked (the Secrets stay, the credential still answers 200;
   step 5's own refusal is not reachable through the CLI while the run lives, because step 3 waits
   for the same remote work and steps run in order);
4. `drain --cancel-pending`: the owner is cancelled, step 2 verifies; step 3 waits for the pod
   still terminating on the worker (`multikueue status` names it); during step 3 the other
   worker's kube-apiserver is killed and the pod released: step 3 is not verified, naming the
   unreachable worker: exit 4;
5. the worker back, `drain` again: step 3 verifies on both workers directly, step 4 removes the
   profile and wiring, step 5 revokes both credentials with the adminContexts (each rejected, 401):
   exit 0; checked directly on both workers;
6. `setup` with the revoked credentials is refused (401); with freshly minted credentials it
   verifies, and a new run is dispatched again; a last drain cleans up.

The exercise records (`tau-tui multikueue records --json` and the record files) list each step with
its evidence. No TauGrid controller runs in the harness: `tests/harness/taugrid_status.py` writes
TauCluster status (MultiKueueReady from the seed's rule, computed from the raw objects, and the
resolved profiles) in a background thread while the CLI runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tests.harness.controlplane import KUEUE_NAMESPACE
from tests.harness.waiting import wait_for
from tests.integration.mk_owner import (
    EXIT_NOT_VERIFIED,
    EXIT_OK,
    EXIT_REFUSED,
    KUEUE,
    NAMESPACE,
    WAIT,
    Background,
    Names,
    Owner,
    condition,
    hold,
    let_go,
    manager_workloads,
    mint,
    mk_args,
    multikueue_ready_on_tau_cluster,
    owner_of_module,
    survey_line,
    tau_tui,
    worker_jobs,
    worker_pods,
    write_run,
)

pytestmark = [pytest.mark.harness, pytest.mark.t3]

NAMES = Names("live", "azure.research.multicluster.live")
PROFILE, QUEUE, CLUSTER_QUEUE, CHECK = NAMES.profile, NAMES.queue, NAMES.cluster_queue, NAMES.check


@pytest.fixture(scope="module")
def owner(t3, tmp_path_factory):
    with owner_of_module(t3, tmp_path_factory.mktemp("mk-live"), NAMES, "live-") as who:
        yield who


def dispatched_left(owner: Owner, cluster: str) -> list[str]:
    """Jobs, Workloads and pods of tau-tui runs still on a worker, read there with the admin client."""
    api = owner.worker_api(cluster)
    left = [f"Job {j.metadata.name}" for j in k8s.BatchV1Api(api).list_namespaced_job(NAMESPACE).items
            if j.metadata.name.startswith("live-")]
    left += [f"Pod {p.metadata.name}" for p in k8s.CoreV1Api(api).list_namespaced_pod(NAMESPACE).items
             if (p.metadata.labels or {}).get("job-name", "").startswith("live-")]
    left += [f"Workload {w['metadata']['name']}" for w in k8s.CustomObjectsApi(api).list_namespaced_custom_object(
        *KUEUE, NAMESPACE, "workloads")["items"]
        if any(o.get("name", "").startswith("live-") for o in w["metadata"].get("ownerReferences") or ())]
    return left


def secret_exists(owner: Owner, cluster: str) -> bool:
    try:
        k8s.CoreV1Api(owner.t3.manager.api_client()).read_namespaced_secret(f"{cluster}-kubeconfig", KUEUE_NAMESPACE)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def submit_running(owner: Owner, name: str) -> tuple[str, str]:
    """`tau-tui submit` a run; wait until it is placed on a worker and its pod Running on that
    worker's KWOK node. Returns (MultiKueueCluster, pod)."""
    submitted = tau_tui(owner, "submit", str(write_run(owner, name)), "--context", "manager")
    assert submitted.rc == EXIT_OK, submitted
    assert f"Job {NAMESPACE}/{name}" in submitted.text or name in submitted.out, submitted
    placed = wait_for(lambda: next((w["status"]["clusterName"] for w in manager_workloads(owner, name)
                                    if (w.get("status") or {}).get("clusterName")), None),
                      f"run {name} placed on a worker", WAIT)
    assert placed in owner.workers, placed
    pod = wait_for(lambda: next((p for p in worker_pods(owner, placed, name) if p.status.phase == "Running"), None),
                   f"a Running pod of {name} on {placed}", WAIT)
    assert pod.spec.node_name in owner.workers[placed].gpu_nodes, pod.spec.node_name
    return placed, pod.metadata.name


def records(owner: Owner) -> list[dict]:
    listed = tau_tui(owner, "multikueue", "records", "--json")
    assert listed.rc == EXIT_OK, listed
    return [json.loads(line) for line in listed.out.splitlines() if line.strip()]


def record_file(path: str) -> dict:
    return json.loads(Path(path).read_text())


def steps_of(record: dict, prefix: str) -> list[dict]:
    """The record's entries for the step whose title starts with `prefix` ("3." ...)."""
    return [s for s in record["steps"] if s["title"].startswith(prefix)]


def evidence(entries: list[dict]) -> str:
    return "\n".join(line for s in entries for line in [s.get("reason") or "", *s["evidence"], *s.get("applied", [])])


# ----- the exercise -------------------------------------------------------------------------------
def test_live_drain_through_the_cli_with_a_worker_outage_then_reenable(owner):
    try:
        exercise(owner)
    except BaseException:
        print("\n\n".join(owner.transcript[-12:]))  # the owner's last commands and what they printed
        raise
    finally:
        for cluster in owner.workers:
            let_go(owner.worker_api(cluster))


def exercise(owner: Owner) -> None:
    t3 = owner.t3
    clusters = list(owner.workers)

    # 1. Enable from nothing.
    setup = tau_tui(owner, *mk_args(owner, "setup", "--yes", "--timeout", "180"))
    assert setup.rc == EXIT_OK, setup
    assert "setup" in setup.out and ": verified" in setup.out, setup
    first_fingerprints = {c: fingerprint_in(owner, c) for c in clusters}
    status = tau_tui(owner, *mk_args(owner, "status"))
    assert status.rc == EXIT_OK, status
    ready = multikueue_ready_on_tau_cluster(owner)  # the TauCluster object's own word, not the tool's record
    assert ready.get("status") == "True" and ready.get("observedGeneration") == ready["generation"], ready

    # 2. A run, live on a worker.
    running_on, pod = submit_running(owner, "live-train")
    other = next(c for c in clusters if c != running_on)
    hold(owner.worker_api(running_on), "Pod", pod)

    # 3. Drain while it runs, with a short deadline: step 2 evicts it and names the owner to cancel.
    first = tau_tui(owner, *mk_args(owner, "drain", "--yes", "--timeout", "20"))
    assert first.rc == EXIT_NOT_VERIFIED, first
    assert "live-train" in first.out, first  # the owner to cancel is named
    assert "cancel" in first.out, first
    evicted = wait_for(lambda: next((w for w in manager_workloads(owner, "live-train")
                                     if condition(w, "Evicted").get("status") == "True"), None),
                       "the run's Workload evicted by HoldAndDrain", WAIT)
    assert condition(evicted, "QuotaReserved").get("status") != "True", evicted["status"]
    wait_for(lambda: not worker_jobs(owner, running_on, "live-train"), f"the run's Job gone from {running_on}", WAIT)
    terminating = wait_for(lambda: [p for p in worker_pods(owner, running_on, "live-train") if p.metadata.deletion_timestamp],
                           f"the run's pod on {running_on} deleted (held by the test's finalizer)", WAIT)
    assert [p.metadata.name for p in terminating] == [pod]
    # Tenant authorization is gone: a new submission through the profile is refused.
    refused = tau_tui(owner, "submit", str(write_run(owner, "live-late")), "--context", "manager")
    assert refused.rc != EXIT_OK and PROFILE in refused.text, refused
    # Nothing was revoked while the run lives: the Secrets stay and the credentials still work.
    assert all(secret_exists(owner, c) for c in clusters)
    assert all(owner.credentials[c].probe() == 200 for c in clusters)

    # 4. Cancel the pending owner; kill the other worker's apiserver during step 3.
    drain = Background(owner, *mk_args(owner, "drain", "--yes", "--cancel-pending", "--timeout", "45"))
    try:
        drain.wait_for_line(lambda line: line.startswith("3."), "step 3's preview")
        waiting = tau_tui(owner, *mk_args(owner, "status", "--flow", "drain"))
        assert waiting.rc == EXIT_NOT_VERIFIED, waiting
        assert pod in waiting.out and running_on in waiting.out, waiting  # the terminating pod, checked directly
        t3.stop_worker_apiserver(other.removeprefix("live-"))
        let_go(owner.worker_api(running_on))
        wait_for(lambda: not worker_pods(owner, running_on, "live-train"), f"the run's pod gone from {running_on}", WAIT)
    finally:
        outage = drain.finish()
    assert outage.rc == EXIT_NOT_VERIFIED, outage
    mark, reason = survey_line(outage, 3)
    assert mark != "✓" and other in reason, outage  # step 3 is not verified and names the unreachable worker
    assert not manager_workloads(owner, "live-train")  # cancelled: the owner and its Workload are gone
    assert all(secret_exists(owner, c) for c in clusters)

    # 5. The worker back: the drain finishes, checked directly on both workers, credentials revoked.
    t3.start_worker_apiserver(other.removeprefix("live-"))
    done = tau_tui(owner, *mk_args(owner, "drain", "--yes", "--timeout", "180"))
    assert done.rc == EXIT_OK, done
    assert {c: dispatched_left(owner, c) for c in clusters} == {c: [] for c in clusters}
    assert not any(secret_exists(owner, c) for c in clusters)
    assert all(owner.credentials[c].probe() == 401 for c in clusters)
    revoked = dict(owner.credentials)
    drained = tau_tui(owner, *mk_args(owner, "status"))
    assert drained.rc == EXIT_OK and "drain" in drained.out, drained  # the flow in force: the drain, verified

    # 6. Re-enable: the revoked credentials are refused; freshly minted ones verify; a run dispatches again.
    stale = tau_tui(owner, *mk_args(owner, "setup", "--yes", "--timeout", "60"))
    assert stale.rc == EXIT_REFUSED, stale
    assert "401" in stale.text or "Unauthorized" in stale.text, stale
    for cluster in clusters:
        mint(owner, cluster)
    again = tau_tui(owner, *mk_args(owner, "setup", "--yes", "--timeout", "180"))
    assert again.rc == EXIT_OK, again
    fresh_fingerprints = {c: fingerprint_in(owner, c) for c in clusters}
    ready = multikueue_ready_on_tau_cluster(owner)
    assert ready.get("status") == "True" and ready.get("observedGeneration") == ready["generation"], ready
    assert all(fresh_fingerprints[c] != first_fingerprints[c] for c in clusters), (first_fingerprints, fresh_fingerprints)
    assert all(revoked[c].probe() == 401 for c in clusters)
    submit_running(owner, "live-train-2")
    last = tau_tui(owner, *mk_args(owner, "drain", "--yes", "--cancel-pending", "--timeout", "180"))
    assert last.rc == EXIT_OK, last
    assert {c: dispatched_left(owner, c) for c in clusters} == {c: [] for c in clusters}

    check_records(owner, clusters, running_on, other, first_fingerprints, fresh_fingerprints)


def fingerprint_in(owner: Owner, cluster: str) -> str:
    secret = k8s.CoreV1Api(owner.t3.manager.api_client()).read_namespaced_secret(f"{cluster}-kubeconfig", KUEUE_NAMESPACE)
    fingerprint = (secret.metadata.annotations or {}).get("tau.azure.com/credential-fingerprint")
    assert fingerprint and fingerprint.startswith("sha256:"), secret.metadata.annotations
    return fingerprint


def check_records(owner: Owner, clusters: list[str], running_on: str, other: str,
                  first_fingerprints: dict[str, str], fresh_fingerprints: dict[str, str]) -> None:
    listed = records(owner)
    assert [(r["flow"], r["outcome"]) for r in listed] == [
        ("setup", "verified"), ("drain", "verified"), ("setup", "verified"), ("drain", "verified")], listed
    setup, drain, reenable, last = (record_file(r["path"]) for r in listed)
    for record in (setup, drain, reenable, last):
        assert record["identity"] and record["finished"], record
        assert all(s["evidence"] or s["reason"] for s in record["steps"]), record["steps"]
    # setup: each worker's credential by fingerprint, the matrix per worker (MultiKueueReady is asserted on
    # the TauCluster object itself, after each setup, not taken from the record).
    for fingerprints, record in ((first_fingerprints, setup), (fresh_fingerprints, reenable)):
        text = evidence(record["steps"])
        assert all(fingerprints[c] in text for c in clusters), text
        assert all(c in evidence(steps_of(record, "5.")) for c in clusters), record["steps"]
    # the refused re-enable with the revoked credentials is in the same record, before it verified
    assert any(s["result"] == "refused" and ("401" in s["reason"] or "Unauthorized" in s["reason"])
               for s in reenable["steps"]), reenable["steps"]
    # drain: resumed twice; each step with its evidence
    assert len(drain.get("resumed") or ()) == 2, drain
    step1, step2, step3, step4, step5 = (steps_of(drain, f"{n}.") for n in range(1, 6))
    assert PROFILE in evidence(step1) and QUEUE in evidence(step1), step1  # the objects seen
    assert any(s["result"] == "not verified" and "live-train" in s["reason"] for s in step2), step2
    assert any(s["result"] in ("verified", "already verified") for s in step2), step2
    assert CLUSTER_QUEUE in evidence(step2) and "0" in evidence(step2), step2  # the counts
    assert any(s["result"] == "not verified" and other in s["reason"] for s in step3), step3
    verified3 = [s for s in step3 if s["result"] in ("verified", "already verified")]
    assert verified3 and all(c in evidence(verified3) for c in clusters), step3  # both workers, directly
    assert CHECK in evidence(step4) and CLUSTER_QUEUE in evidence(step4), step4
    revoked = [s for s in step5 if s["result"] == "verified"]
    assert revoked, step5
    for cluster in clusters:
        assert first_fingerprints[cluster] in evidence(revoked), revoked
        assert any(first_fingerprints[cluster] in line and "401" in line for line in revoked[0]["evidence"]), revoked
    assert running_on in evidence(drain["steps"]), drain["steps"]
    # the 401 of each revoked credential, kept in the record with its time
    proofs = {e["worker"]: e for e in drain.get("revocations") or ()}
    assert set(proofs) == set(clusters), drain.get("revocations")
    for cluster in clusters:
        assert proofs[cluster]["fingerprint"] == first_fingerprints[cluster], proofs
        assert proofs[cluster]["http_status"] == 401 and proofs[cluster]["proven_at"], proofs
    assert "401" in evidence(steps_of(last, "5.")), last["steps"]
    assert {e["worker"]: (e["fingerprint"], e["http_status"]) for e in last.get("revocations") or ()} == {
        c: (fresh_fingerprints[c], 401) for c in clusters}, last.get("revocations")
