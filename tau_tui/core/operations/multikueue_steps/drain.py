"""Drain and rollback, the seed's five steps in order, enforced:

1. remove tenant authorization (the profile is limited to a team no tenant is
   in, the dedicated LocalQueues are held); the default queue is never touched;
2. HoldAndDrain the dedicated ClusterQueue and cancel the pending owners the
   operator picks, verified by pending/reserving/admitted counts at zero;
3. wait for every manager Workload to be terminal and check each worker
   directly (its Jobs, RayJobs, pods, Workloads and stuck finalizers);
4. remove the profile, then the AdmissionCheck and queue wiring once no
   workload references them;
5. revoke and delete the worker credentials, refused while any remote
   workload still needs them (named).

Rollback is the setup flow again (it resumes from the first step that no
longer verifies)."""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.access import SECRET, AccessError, BackendAccess
from tau_tui.core.operations.multikueue_steps.credentials import WorkerCredential, credential_from_secret
from tau_tui.core.operations.multikueue_steps.engine import Change, Check, Flow, Step, StepContext, apply_change
from tau_tui.core.operations.multikueue_steps.setup import (
    DRAINED_TEAM,
    condition,
    declared_profiles,
    default_queues,
    tau_cluster,
)

R = ResourceKind
EVICTION_POLLS = 15
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"


def _terminal(wl: dict[str, Any]) -> bool:
    return (condition(wl, "Finished") or {}).get("status") == "True"


def dedicated_workloads(ctx: StepContext) -> list[dict[str, Any]]:
    """Manager Workloads of the dedicated queue (by LocalQueue, ClusterQueue or the AdmissionCheck)."""
    plan = ctx.plan
    out = []
    for ns in plan.namespaces:
        for wl in ctx.manager.list(R.WORKLOAD.type, ns):
            st = wl.get("status") or {}
            if ((wl.get("spec") or {}).get("queueName") == plan.local_queue
                    or (st.get("admission") or {}).get("clusterQueue") == plan.cluster_queue
                    or any(c.get("name") == plan.admission_check for c in st.get("admissionChecks") or ())):
                out.append(wl)
    return out


def _ref(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind', '')} {meta.get('namespace')}/{meta.get('name')}"


def remote_leftovers(worker: BackendAccess, namespaces: list[str]) -> list[str]:
    """Dispatched objects still on a worker, checked directly there."""
    left = []
    for ns in namespaces:
        for rt in (R.WORKLOAD.type, R.JOB.type, R.RAY_JOB.type):
            for obj in worker.list(rt, ns):
                labels = (obj.get("metadata") or {}).get("labels") or {}
                if ORIGIN_LABEL in labels or PREBUILT_LABEL in labels:
                    obj.setdefault("kind", rt.kind)
                    stuck = (obj.get("metadata") or {}).get("deletionTimestamp")
                    left.append(_ref(obj) + (f" (deleting, finalizers {obj['metadata'].get('finalizers')})" if stuck else ""))
        jobs = {(o.get("metadata") or {}).get("name") for o in worker.list(R.JOB.type, ns)
                if PREBUILT_LABEL in ((o.get("metadata") or {}).get("labels") or {})}
        for pod in worker.list(R.POD.type, ns):
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if labels.get("job-name") in jobs or PREBUILT_LABEL in labels:
                left.append(f"Pod {ns}/{pod['metadata']['name']}")
    return left


class DeauthorizeStep(Step):
    key = "deauthorize"
    kind = "deauthorize"
    title = "1. Remove tenant authorization, stop new submissions"
    explanation = (
        "The dedicated profile is limited to a team no tenant belongs to, so the client refuses new TauGrid "
        "submissions through it, and each dedicated LocalQueue is held. Existing runs keep their status, logs and "
        "cancel. The default queue is never repointed or touched.")

    def refusal(self, ctx: StepContext) -> str | None:
        if ctx.plan.local_queue in default_queues(ctx, tau_cluster(ctx)):
            return f"refused: {ctx.plan.local_queue} is the default queue; a drain never touches it"
        return None

    def changes(self, ctx: StepContext) -> list[Change]:
        tc = tau_cluster(ctx)
        out = []
        profiles = declared_profiles(tc)
        if any(p.get("name") == ctx.plan.profile for p in profiles):
            patched = []
            for p in profiles:
                if p.get("name") == ctx.plan.profile:
                    p = dict(p, applicability=dict(p.get("applicability") or {}, teams=[DRAINED_TEAM]))
                patched.append(p)
            out.append(Change("patch", R.TAU_CLUSTER.type, "cluster", None, {"spec": {"workloadProfiles": patched}}))
        for ns in ctx.plan.namespaces:
            if ctx.manager.get(R.LOCAL_QUEUE.type, ctx.plan.local_queue, ns) is not None:
                out.append(Change("patch", R.LOCAL_QUEUE.type, ctx.plan.local_queue, ns, {"spec": {"stopPolicy": "Hold"}}))
        return out

    def verify(self, ctx: StepContext) -> Check:
        tc = tau_cluster(ctx)
        evidence, problems = [], []
        declared = next((p for p in declared_profiles(tc) if p.get("name") == ctx.plan.profile), None)
        if declared is None:
            evidence.append(f"profile {ctx.plan.profile} is not declared: no tenant can select it")
        elif (declared.get("applicability") or {}).get("teams") != [DRAINED_TEAM]:
            problems.append(f"profile {ctx.plan.profile} still applies to teams {(declared.get('applicability') or {}).get('teams') or 'all'}")
        else:
            evidence.append(f"profile {ctx.plan.profile} limited to team {DRAINED_TEAM}: tenants can no longer select it")
        for ns in ctx.plan.namespaces:
            lq = ctx.manager.get(R.LOCAL_QUEUE.type, ctx.plan.local_queue, ns)
            policy = ((lq or {}).get("spec") or {}).get("stopPolicy")
            if lq is None:
                evidence.append(f"LocalQueue {ns}/{ctx.plan.local_queue} is gone")
            elif policy not in ("Hold", "HoldAndDrain"):
                problems.append(f"LocalQueue {ns}/{ctx.plan.local_queue} is not held (stopPolicy {policy or 'None'})")
            else:
                evidence.append(f"LocalQueue {ns}/{ctx.plan.local_queue} stopPolicy {policy}")
        return Check(not problems, "; ".join(problems), tuple(evidence))


class HoldAndDrainStep(Step):
    key = "hold-and-drain"
    kind = "drain"
    title = "2. HoldAndDrain the dedicated ClusterQueue, cancel pending owners"
    explanation = (
        "The dedicated ClusterQueue gets stopPolicy HoldAndDrain (admitted workloads are evicted, which on the "
        "worker deactivates their copies). Pending owners you pick are cancelled (deleted). Verification: the "
        "ClusterQueue's pending, reserving and admitted counts are all zero.")

    def pending_owners(self, ctx: StepContext) -> list[tuple[str, str, str]]:
        """(kind, namespace, name) of the owners of pending dedicated workloads."""
        out = []
        for wl in dedicated_workloads(ctx):
            st = wl.get("status") or {}
            if _terminal(wl) or st.get("admission"):
                continue
            for owner in (wl.get("metadata") or {}).get("ownerReferences") or ():
                if owner.get("kind") in ("Job", "RayJob"):
                    out.append((owner["kind"], wl["metadata"]["namespace"], owner["name"]))
        return sorted(out)

    def _to_cancel(self, ctx: StepContext) -> list[tuple[str, str, str]]:
        chosen = ctx.inputs.get("cancel")
        owners = self.pending_owners(ctx)
        if chosen == "all-pending":
            return owners
        picked = set(chosen or ())
        return [o for o in owners if f"{o[1]}/{o[0]}/{o[2]}" in picked or f"{o[1]}/{o[2]}" in picked]

    def changes(self, ctx: StepContext) -> list[Change]:
        out = []
        if ctx.manager.get(R.CLUSTER_QUEUE.type, ctx.plan.cluster_queue) is not None:
            out.append(Change("patch", R.CLUSTER_QUEUE.type, ctx.plan.cluster_queue, None, {"spec": {"stopPolicy": "HoldAndDrain"}}))
        for kind, ns, name in self._to_cancel(ctx):
            rt = R.JOB.type if kind == "Job" else R.RAY_JOB.type
            out.append(Change("delete", rt, name, ns))
        return out

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        lines = super().apply(ctx, dry_run)
        if dry_run or not ctx.inputs.get("cancel"):
            return lines
        # HoldAndDrain evicts admitted workloads back to pending; the owners picked
        # for cancellation are cancelled once the evictions have happened.
        for _ in range(EVICTION_POLLS):
            if not any((w.get("status") or {}).get("admission") and not _terminal(w) for w in dedicated_workloads(ctx)):
                break
            ctx.wait(2.0)
        for kind, ns, name in self._to_cancel(ctx):
            rt = R.JOB.type if kind == "Job" else R.RAY_JOB.type
            lines.append(apply_change(ctx, Change("delete", rt, name, ns), False))
        return lines

    def verify(self, ctx: StepContext) -> Check:
        cq = ctx.manager.get(R.CLUSTER_QUEUE.type, ctx.plan.cluster_queue)
        if cq is None:
            return Check(True, "", (f"ClusterQueue {ctx.plan.cluster_queue} is gone",))
        spec, st = cq.get("spec") or {}, cq.get("status") or {}
        counts = {k: int(st.get(k) or 0) for k in ("pendingWorkloads", "reservingWorkloads", "admittedWorkloads")}
        evidence = [f"ClusterQueue {ctx.plan.cluster_queue} stopPolicy {spec.get('stopPolicy') or 'None'}, "
                    + ", ".join(f"{k} {v}" for k, v in counts.items())]
        problems = []
        if spec.get("stopPolicy") != "HoldAndDrain":
            problems.append(f"ClusterQueue {ctx.plan.cluster_queue} is not HoldAndDrain")
        if any(counts.values()):
            pending = self.pending_owners(ctx)
            problems.append("counts not zero: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v)
                            + (f"; pending owners you may cancel: {', '.join(f'{n}/{k}/{o}' for k, n, o in pending)}" if pending else ""))
        return Check(not problems, "; ".join(problems), tuple(evidence))


def _workers_directly(ctx: StepContext) -> tuple[list[str], list[str], list[str]]:
    """(evidence, leftovers, unreachable) over every worker, asked directly."""
    evidence, leftovers, unreachable = [], [], []
    for wp in ctx.plan.workers:
        try:
            worker = ctx.inspector(wp.name)
            left = remote_leftovers(worker, list(ctx.plan.namespaces))
        except AccessError as exc:
            unreachable.append(f"{wp.name}: {exc.message}")
            continue
        except Exception as exc:  # no credential left to reach it
            unreachable.append(f"{wp.name}: {getattr(exc, 'message', exc)}")
            continue
        leftovers += [f"{wp.name}: {item}" for item in left]
        evidence.append(f"worker {wp.name} checked directly: "
                        + ("no dispatched Job, RayJob, Workload or pod" if not left else f"{len(left)} objects left"))
    return evidence, leftovers, unreachable


class WaitTerminalStep(Step):
    key = "wait-terminal"
    kind = "wait"
    title = "3. Every manager Workload terminal; workers clean, checked directly"
    explanation = (
        "Waits until every Workload of the dedicated queue on the manager is finished or gone, then asks each "
        "worker directly (with its stored credential) for the dispatched Jobs, RayJobs, Workloads and pods and "
        "for objects stuck on finalizers. An unreachable worker is not clean.")

    def verify(self, ctx: StepContext) -> Check:
        active = [_ref(dict(w, kind="Workload")) + (f" on {w['status']['clusterName']}" if (w.get("status") or {}).get("clusterName") else "")
                  for w in dedicated_workloads(ctx) if not _terminal(w)]
        evidence, leftovers, unreachable = _workers_directly(ctx)
        problems = []
        if active:
            problems.append("manager Workloads not terminal: " + ", ".join(active))
        if leftovers:
            problems.append("left on workers: " + ", ".join(leftovers))
        if unreachable:
            problems.append("cannot check directly: " + "; ".join(unreachable))
        evidence.insert(0, f"manager: {len(active)} non-terminal Workloads of the dedicated queue")
        return Check(not problems, "; ".join(problems), tuple(evidence))


class RemoveRoutingStep(Step):
    key = "remove-routing"
    kind = "remove"
    title = "4. Remove the profile, then the AdmissionCheck and queue wiring"
    explanation = (
        "Removes the multiKueue profile from TauCluster/cluster, then the dedicated LocalQueues, ClusterQueue, "
        "AdmissionCheck, MultiKueueConfig and MultiKueueClusters. Refused while any Workload still references "
        "the AdmissionCheck.")

    def refusal(self, ctx: StepContext) -> str | None:
        users = [_ref(dict(w, kind="Workload")) for w in dedicated_workloads(ctx) if not _terminal(w)]
        if users:
            return "refused: these Workloads still reference the dedicated queue or AdmissionCheck: " + ", ".join(users)
        return None

    def changes(self, ctx: StepContext) -> list[Change]:
        plan = ctx.plan
        out = []
        profiles = declared_profiles(tau_cluster(ctx))
        if any(p.get("name") == plan.profile for p in profiles):
            out.append(Change("patch", R.TAU_CLUSTER.type, "cluster", None,
                              {"spec": {"workloadProfiles": [p for p in profiles if p.get("name") != plan.profile]}}))
        out += [Change("delete", R.LOCAL_QUEUE.type, plan.local_queue, ns) for ns in plan.namespaces]
        out += [Change("delete", R.CLUSTER_QUEUE.type, plan.cluster_queue),
                Change("delete", R.ADMISSION_CHECK.type, plan.admission_check),
                Change("delete", R.MULTIKUEUE_CONFIG.type, plan.config)]
        out += [Change("delete", R.MULTIKUEUE_CLUSTER.type, w.name) for w in plan.workers]
        return out

    def verify(self, ctx: StepContext) -> Check:
        plan = ctx.plan
        left = []
        if any(p.get("name") == plan.profile for p in declared_profiles(tau_cluster(ctx))):
            left.append(f"profile {plan.profile}")
        for ns in plan.namespaces:
            if ctx.manager.get(R.LOCAL_QUEUE.type, plan.local_queue, ns) is not None:
                left.append(f"LocalQueue {ns}/{plan.local_queue}")
        for rt, name in ((R.CLUSTER_QUEUE.type, plan.cluster_queue), (R.ADMISSION_CHECK.type, plan.admission_check),
                         (R.MULTIKUEUE_CONFIG.type, plan.config), *((R.MULTIKUEUE_CLUSTER.type, w.name) for w in plan.workers)):
            if ctx.manager.get(rt, name) is not None:
                left.append(f"{rt.kind} {name}")
        if left:
            return Check(False, "still present: " + ", ".join(left))
        return Check(True, "", ("profile, LocalQueues, ClusterQueue, AdmissionCheck, MultiKueueConfig and MultiKueueClusters are gone",))


def _bound_secret(token: str) -> tuple[str, str] | None:
    """(namespace, name) of the Secret a TokenRequest token is bound to (its ``kubernetes.io`` claim)."""
    import base64
    import json

    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    k8s = claims.get("kubernetes.io") or {}
    secret = k8s.get("secret") or {}
    if secret.get("name") and k8s.get("namespace"):
        return str(k8s["namespace"]), str(secret["name"])
    return None


def revoke_on_worker(admin: BackendAccess, credential: WorkerCredential) -> list[str]:
    """Revoke ``credential`` on the worker: delete the Secret its token is bound to (a TokenRequest
    token with ``boundObjectRef``), or the legacy ServiceAccount token Secret that holds it."""
    import base64

    user = (credential.document().get("users") or [{}])[0].get("user") or {}
    token = str(user.get("token") or "")
    if not token:
        return [f"{credential.fingerprint} is a client certificate: revoke it in your identity system"]
    bound = _bound_secret(token)
    if bound is not None:
        namespace, name = bound
        gone = not admin.delete(SECRET, name, namespace)
        return [f"{'bound Secret already gone' if gone else 'deleted the Secret the token is bound to'}: "
                f"{namespace}/{name} on the worker; {credential.fingerprint} revoked"]
    wanted = base64.b64encode(token.encode()).decode()
    done = []
    for secret in admin.list(SECRET, None):
        if secret.get("type") == "kubernetes.io/service-account-token" and (secret.get("data") or {}).get("token") == wanted:
            meta = secret["metadata"]
            admin.delete(SECRET, meta["name"], meta.get("namespace"))
            done.append(f"deleted token Secret {meta.get('namespace')}/{meta['name']} on the worker: {credential.fingerprint} revoked")
    return done or [f"no Secret-bound token for {credential.fingerprint} found on the worker; revoke it in your identity system"]


def credential_rejected(ctx: StepContext, credential: WorkerCredential) -> tuple[bool, str]:
    try:
        who = ctx.connector.connect(credential).whoami()
    except AccessError as exc:
        if exc.code == 401:
            return True, f"{credential.fingerprint} is rejected by worker {credential.worker} (401 Unauthorized)"
        return False, f"cannot tell whether {credential.fingerprint} still works: {exc.message}"
    return False, f"{credential.fingerprint} still authenticates on {credential.worker} as {who}"


def remote_needs(ctx: StepContext) -> list[str]:
    """Remote workloads that still need a worker credential: non-terminal manager
    Workloads placed on a worker, and dispatched objects on the workers themselves."""
    workers = {w.name for w in ctx.plan.workers}
    needs = []
    for ns in ctx.plan.namespaces:
        for wl in ctx.manager.list(R.WORKLOAD.type, ns):
            where = (wl.get("status") or {}).get("clusterName")
            if where in workers and not _terminal(wl):
                needs.append(f"Workload {ns}/{wl['metadata']['name']} running on {where}")
    _, leftovers, unreachable = _workers_directly(ctx)
    needs += [f"{item} (on the worker)" for item in leftovers]
    needs += [f"worker {u} cannot be checked; its remote workloads may still need the credential" for u in unreachable]
    return needs


class RevokeStep(Step):
    key = "revoke"
    kind = "revoke"
    title = "5. Revoke and delete the worker credentials"
    explanation = (
        "Last: with the worker admin context from the plan, the ServiceAccount token behind each credential is "
        "deleted on the worker (so the old credential stops working), then the Secret on the manager is deleted. "
        "Refused while any remote workload still needs the credential; the refusal names them.")

    def refusal(self, ctx: StepContext) -> str | None:
        needs = remote_needs(ctx)
        if needs:
            return "refused: remote workloads still need the worker credentials: " + "; ".join(needs)
        return None

    def changes(self, ctx: StepContext) -> list[Change]:
        return [Change("delete", SECRET, w.secret_name, ctx.plan.kueue_namespace) for w in ctx.plan.workers]

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        lines = []
        if not dry_run:
            revoked = ctx.inputs.setdefault("revoked", {})
            for wp in ctx.plan.workers:
                stored = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace))
                if stored is None:
                    continue
                if wp.admin_context:
                    lines += revoke_on_worker(ctx.connector.admin(wp.admin_context), stored)
                else:
                    lines.append(f"worker {wp.name}: no adminContext in the plan; revoke {stored.fingerprint} in your identity system")
                revoked[wp.name] = stored
        return lines + super().apply(ctx, dry_run)

    def verify(self, ctx: StepContext) -> Check:
        left = [f"Secret {ctx.plan.kueue_namespace}/{w.secret_name}" for w in ctx.plan.workers
                if ctx.manager.get(SECRET, w.secret_name, ctx.plan.kueue_namespace) is not None]
        if left:
            return Check(False, "still present: " + ", ".join(left))
        evidence = ["every worker credential Secret is deleted from the manager"]
        problems = []
        for worker, cred in sorted((ctx.inputs.get("revoked") or {}).items()):
            rejected, text = credential_rejected(ctx, cred)
            evidence.append(text)
            if not rejected and ctx.plan.worker(worker) and ctx.plan.worker(worker).admin_context:
                problems.append(text)
        return Check(not problems, "; ".join(problems), tuple(evidence))


def drain_flow() -> Flow:
    return Flow("drain", "MultiKueue drain and rollback checklist",
                [DeauthorizeStep(), HoldAndDrainStep(), WaitTerminalStep(), RemoveRoutingStep(), RevokeStep()])
