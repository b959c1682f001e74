"""Drain and rollback, the seed's five steps in order, enforced:

1. remove tenant authorization and stop new submissions to every dedicated
   profile/queue: every multiKueue profile is limited to a reserved team
   select() matches to no caller, every LocalQueue of a MultiKueue ClusterQueue is held; the default
   queue is never touched;
2. HoldAndDrain every dedicated ClusterQueue and cancel the pending owners the
   operator picks; verified by each ClusterQueue's counts at zero *and* by the
   dedicated Workloads counted directly (Kueue's counts leave out a workload
   evicted into a held LocalQueue): none may be non-terminal;
3. wait for every manager Workload to be terminal and check each worker
   directly: dispatched Jobs, RayJobs, RayClusters and Workloads, objects
   stuck on finalizers, and the pods themselves (terminating ones, and those
   whose owner was dispatched or is gone);
4. remove the multiKueue profiles, then the AdmissionCheck and queue wiring
   once no workload references them;
5. revoke and delete the worker credentials (``revocation.py``), refused
   while any remote workload still needs them (:func:`remote_needs`).

Discovery, not trust: every step first discovers the MultiKueue footprint live on the
manager and compares it with the plan (``drain_discovery.py``).

Re-enabling after a drain is the setup flow (it resumes from the first step
that no longer verifies)."""

from __future__ import annotations

import json
from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.operations.multikueue_steps.access import AccessError, BackendAccess
from tau_tui.core.operations.multikueue_steps.checks import condition
from tau_tui.core.operations.multikueue_steps.credential_ledger import ledger_entry
from tau_tui.core.operations.multikueue_steps.credentials import CredentialError
from tau_tui.core.operations.multikueue_steps.drain_discovery import (
    REMOVED_ANNOTATION,
    Discovery,
    discover,
    discovery_check,
    discovery_refusal,
    is_terminal,
    object_name,
    spec_of,
    teams_of,
)
from tau_tui.core.operations.multikueue_steps.engine import (
    Change,
    Check,
    Deadline,
    Flow,
    Step,
    StepContext,
    apply_change,
)
from tau_tui.core.operations.multikueue_steps.revocation import RevokeStep
from tau_tui.core.operations.multikueue_steps.tenancy import HELD, declared_profiles, refused_to_every_tenant
from tau_tui.core.runconfig.profiles import DRAINED_TEAM

R = ResourceKind
RAY_CLUSTER = ResourceType(R.RAY_JOB.type.group, R.RAY_JOB.type.version, "rayclusters", "RayCluster", True)
#: How long step 2 waits for HoldAndDrain's evictions before it cancels the picked owners (on the context's clock).
EVICTION_TIMEOUT = 30.0
EVICTION_POLL = 2.0
#: How long step 4 waits for TauCluster's status to stop publishing the removed profiles before the wiring goes.
UNPUBLISH_TIMEOUT = 30.0
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
CANCELLABLE = {"Job": R.JOB.type, "RayJob": R.RAY_JOB.type}


def tenant_namespaces(ctx: StepContext, found: Discovery | None = None) -> list[str]:
    """The plan's namespaces and those of every dedicated LocalQueue discovered."""
    found = found or discover(ctx)
    return sorted(set(ctx.plan.namespaces) | {ns for ns, _ in found.local_queues})


def dedicated_workloads(ctx: StepContext, found: Discovery | None = None) -> list[dict[str, Any]]:
    """Manager Workloads of every dedicated queue (by LocalQueue, ClusterQueue or MultiKueue check), counted directly."""
    found = found or discover(ctx)
    plan = ctx.plan
    queues = set(found.local_queues) | {(ns, plan.local_queue) for ns in plan.namespaces
                                        if f"LocalQueue {ns}/{plan.local_queue}" in found.gone}
    cqs = set(found.cluster_queues) | ({plan.cluster_queue} if f"ClusterQueue {plan.cluster_queue}" in found.gone else set())
    checks = set(found.checks) | ({plan.admission_check} if f"AdmissionCheck {plan.admission_check}" in found.gone else set())
    out = []
    for ns in tenant_namespaces(ctx, found):
        for wl in ctx.manager.list(R.WORKLOAD.type, ns):
            st = wl.get("status") or {}
            if ((ns, spec_of(wl).get("queueName")) in queues
                    or (st.get("admission") or {}).get("clusterQueue") in cqs
                    or any(c.get("name") in checks for c in st.get("admissionChecks") or ())):
                out.append(wl)
    return out


def _ref(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind', '')} {meta.get('namespace')}/{meta.get('name')}"


def _workload_state(wl: dict[str, Any]) -> str:
    st = wl.get("status") or {}
    parts = []
    if (condition(wl, "Evicted") or {}).get("status") == "True":
        parts.append("evicted")
    if (condition(wl, "Requeued") or {}).get("status") == "True":
        parts.append("requeued")
    parts.append("admitted" if st.get("admission") else "pending")
    if st.get("clusterName"):
        parts.append(f"on {st['clusterName']}")
    return f"Workload {(wl.get('metadata') or {}).get('namespace')}/{object_name(wl)} ({', '.join(parts)})"


def owners_of(workloads: list[dict[str, Any]], *, admitted: bool = False) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of the owners of the non-terminal ``workloads`` (pending ones, or all with ``admitted``)."""
    out = set()
    for wl in workloads:
        if is_terminal(wl) or ((wl.get("status") or {}).get("admission") and not admitted):
            continue
        for owner in (wl.get("metadata") or {}).get("ownerReferences") or ():
            out.add((str(owner.get("kind")), str((wl.get("metadata") or {}).get("namespace")), str(owner.get("name"))))
    return sorted(out)


def _owner_list(owners: list[tuple[str, str, str]]) -> str:
    return ", ".join(f"{ns}/{kind}/{name}" + ("" if kind in CANCELLABLE else " (not a Job or RayJob: cancel it by hand)")
                     for kind, ns, name in owners)


# -- the workers, checked directly ---------------------------------------------------------------

def _labels(obj: dict[str, Any]) -> dict[str, Any]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _dispatched(obj: dict[str, Any]) -> bool:
    return ORIGIN_LABEL in _labels(obj) or PREBUILT_LABEL in _labels(obj)


def _owner(obj: dict[str, Any], fallback_labels: tuple[tuple[str, str], ...] = ()) -> tuple[str, str] | None:
    refs = list((obj.get("metadata") or {}).get("ownerReferences") or ())
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    if ref is not None:
        return str(ref.get("kind")), str(ref.get("name"))
    labels = _labels(obj)
    return next(((kind, str(labels[key])) for key, kind in fallback_labels if labels.get(key)), None)


def _stuck(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    if not meta.get("deletionTimestamp"):
        return ""
    return f" (deleting since {meta['deletionTimestamp']}, finalizers {meta.get('finalizers') or []})"


POD_OWNER_LABELS = (("batch.kubernetes.io/job-name", "Job"), ("job-name", "Job"), ("ray.io/cluster", "RayCluster"))


def _pod_state(pod: dict[str, Any], why: str) -> str:
    meta, spec, st = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    parts = [str(st.get("phase") or "phase unknown")]
    if meta.get("deletionTimestamp"):
        grace = meta.get("deletionGracePeriodSeconds", spec.get("terminationGracePeriodSeconds"))
        parts.append(f"terminating since {meta['deletionTimestamp']}" + (f", grace period {grace} s" if grace is not None else ""))
    if meta.get("finalizers"):
        parts.append(f"finalizers {meta['finalizers']}")
    if spec.get("nodeName"):
        parts.append(f"on node {spec['nodeName']}")
    return f"Pod {meta.get('namespace')}/{meta.get('name')} ({', '.join(parts)}; {why})"


def remote_leftovers(worker: BackendAccess, namespaces: list[str]) -> list[str]:
    """Dispatched objects still on a worker, checked directly there: Workloads, Jobs, RayJobs and
    RayClusters Kueue dispatched (its labels, or owned by a dispatched RayJob), and every pod in the
    namespaces whose owner was dispatched or no longer exists, or that is terminating."""
    left: list[str] = []
    for ns in namespaces:
        present: dict[str, set[str]] = {}
        dispatched: dict[str, set[str]] = {}
        for rt in (R.WORKLOAD.type, R.RAY_JOB.type, RAY_CLUSTER, R.JOB.type):
            objs = worker.list(rt, ns)
            present[rt.kind] = {object_name(o) for o in objs}
            for obj in objs:
                owner = _owner(obj)
                if _dispatched(obj) or (owner is not None and owner[0] == "RayJob" and owner[1] in dispatched.get("RayJob", set())):
                    dispatched.setdefault(rt.kind, set()).add(object_name(obj))
                    left.append(f"{rt.kind} {ns}/{object_name(obj)}{_stuck(obj)}")
        for pod in worker.list(R.POD.type, ns):
            owner = _owner(pod, POD_OWNER_LABELS)
            why = []
            if _dispatched(pod):
                why.append("dispatched")
            if owner is not None and owner[0] in ("Job", "RayCluster"):
                if owner[1] in dispatched.get(owner[0], set()):
                    why.append(f"its {owner[0]} {owner[1]} was dispatched")
                elif owner[1] not in present.get(owner[0], set()):
                    why.append(f"its {owner[0]} {owner[1]} is gone")
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                why.append("still terminating")
            if why:
                left.append(_pod_state(pod, "; ".join(why)))
    return left


def drained_away(found: Discovery, worker: str) -> bool:
    """Whether a drain's step 4 removed ``worker``'s MultiKueueCluster and none came back since."""
    return f"MultiKueueCluster {worker}" in found.removed and worker not in found.clusters


def _drained_credential(ctx: StepContext, wp: Any) -> str | None:
    """The fingerprint of the credential step 3 reads ``wp`` with, when that is the one the drain revoked (no
    adminContext, and the manager's ledger notes it as the credential it stored); None otherwise: a 401 then
    says the reader does not work, nothing about the worker."""
    if wp.admin_context:
        return None
    try:
        reader = ctx.worker_credential(wp.name).fingerprint
    except CredentialError:
        return None
    return reader if ledger_entry(ctx, wp.name).get("stored") == reader else None


def _workers_directly(ctx: StepContext, found: Discovery | None = None) -> tuple[list[str], list[str], list[str]]:
    """(evidence, leftovers, unreachable) over every worker of the plan, asked directly."""
    found = found or discover(ctx)
    namespaces = tenant_namespaces(ctx, found)
    evidence, leftovers, unreachable = [], [], []
    for wp in ctx.plan.workers:
        try:
            worker = ctx.inspector(wp.name)
            left = remote_leftovers(worker, namespaces)
        except AccessError as exc:
            drained = _drained_credential(ctx, wp) if exc.code == 401 and drained_away(found, wp.name) else None
            if drained:
                # Read with the very credential the drain revoked (no adminContext): it was checked clean before
                # step 4 could remove its MultiKueueCluster, and nothing reaches the worker since.
                evidence.append(f"worker {wp.name} rejects the drained credential {drained} (401): its MultiKueueCluster "
                                "was removed by this drain's step 4, after step 3 had checked it clean; not read again")
                continue
            unreachable.append(f"{wp.name}: {exc.message}")
            continue
        except Exception as exc:  # no credential left to reach it
            unreachable.append(f"{wp.name}: {getattr(exc, 'message', exc)}")
            continue
        leftovers += [f"{wp.name}: {item}" for item in left]
        evidence.append(f"worker {wp.name} checked directly in {', '.join(namespaces)}: "
                        + ("no dispatched Job, RayJob, RayCluster, Workload or pod, no terminating pod"
                           if not left else f"{len(left)} objects left"))
    return evidence, leftovers, unreachable


# -- the steps ------------------------------------------------------------------------------------

class DiscoveryGuardedStep(Step):
    """A drain step, refused while discovery finds what only the owner can fix."""

    def refusal(self, ctx: StepContext) -> str | None:
        return discovery_refusal(discover(ctx))


class DeauthorizeStep(DiscoveryGuardedStep):
    key = "deauthorize"
    kind = "deauthorize"
    title = "1. Remove tenant authorization, stop new submissions"
    explanation = (
        f"Every multiKueue profile found on the manager (the plan's and any other) is limited to team {DRAINED_TEAM}, "
        "a reserved name select() matches to no caller (whoever claims it), so the client refuses new TauGrid "
        "submissions through it, and every LocalQueue of a MultiKueue "
        "ClusterQueue is held. Existing runs keep their status, logs and cancel. The default queue is never "
        "repointed or touched.")

    def changes(self, ctx: StepContext) -> list[Change]:
        found = discover(ctx)
        out = []
        if found.tau_cluster is not None:
            patch: dict[str, Any] = {}
            profiles = declared_profiles(found.tau_cluster)
            if any(p.get("name") in found.profiles and teams_of(p) != [DRAINED_TEAM] for p in profiles):
                patch["spec"] = {"workloadProfiles": [
                    dict(p, applicability=dict(p.get("applicability") or {}, teams=[DRAINED_TEAM]))
                    if p.get("name") in found.profiles else p for p in profiles]}
                if found.removed:  # a new drain: what an earlier one removed explains no absence any more
                    patch["metadata"] = {"annotations": {REMOVED_ANNOTATION: None}}
            if patch:
                out.append(Change("patch", R.TAU_CLUSTER.type, "cluster", None, patch))
        for (ns, name), lq in sorted(found.local_queues.items()):
            if spec_of(lq).get("stopPolicy") not in HELD:
                out.append(Change("patch", R.LOCAL_QUEUE.type, name, ns, {"spec": {"stopPolicy": "Hold"}}))
        return out

    def verify(self, ctx: StepContext) -> Check:
        found = discover(ctx)
        evidence, problems = [], []
        for name, profile in sorted(found.profiles.items()):
            if teams_of(profile) != [DRAINED_TEAM]:
                problems.append(f"profile {name} still applies to teams {teams_of(profile) or 'all'}")
            else:
                evidence.append(f"profile {name} limited to team {DRAINED_TEAM}: tenants can no longer select it")
        if found.status_current:
            for name, profile in sorted(found.published.items()):
                if teams_of(profile) != [DRAINED_TEAM]:
                    problems.append(f"profile {name} is still published to tenants in TauCluster status "
                                    f"(teams {teams_of(profile) or 'all'})")
        elif found.published:
            evidence.append("TauCluster status is not current: the client refuses every profile until TauGrid catches up")
        # What the client answers now, to the plan's tenants and to anyone claiming a reserved team.
        for name in sorted(set(found.profiles) | set(found.published)):
            accepted, line = refused_to_every_tenant(found.tau_cluster or {}, ctx.plan, name)
            if accepted:
                problems.append(f"select() still gives profile {name} to " + ", ".join(accepted))
            else:
                evidence.append(f"profile {name}: {line}")
        for (ns, name), lq in sorted(found.local_queues.items()):
            policy = spec_of(lq).get("stopPolicy")
            if policy not in HELD:
                problems.append(f"LocalQueue {ns}/{name} is not held (stopPolicy {policy or 'None'})")
            else:
                evidence.append(f"LocalQueue {ns}/{name} stopPolicy {policy}")
        evidence.append(f"default queue {', '.join(sorted(found.defaults))} left as it is")
        return discovery_check(found, problems, evidence, ctx.plan)


class HoldAndDrainStep(DiscoveryGuardedStep):
    key = "hold-and-drain"
    kind = "drain"
    title = "2. HoldAndDrain the dedicated ClusterQueues, cancel pending owners"
    explanation = (
        "Every dedicated ClusterQueue and its LocalQueues get stopPolicy HoldAndDrain (admitted workloads are evicted, which on the "
        "worker deactivates their copies). Pending owners you pick are cancelled (deleted). Verification: each "
        "ClusterQueue's pending, reserving and admitted counts are zero, and no dedicated Workload, counted "
        "directly, is still pending, evicted or admitted.")

    def pending_owners(self, ctx: StepContext) -> list[tuple[str, str, str]]:
        """(kind, namespace, name) of the owners of pending (or evicted) dedicated workloads."""
        return owners_of(dedicated_workloads(ctx))

    def _to_cancel(self, ctx: StepContext) -> list[tuple[str, str, str]]:
        """The owners this step cancels, as its preview shows them: with ``all-pending`` the admitted ones too,
        since HoldAndDrain evicts them back to pending before the cancellation."""
        chosen = ctx.inputs.get("cancel")
        if chosen == "all-pending":
            return [o for o in owners_of(dedicated_workloads(ctx), admitted=True) if o[0] in CANCELLABLE]
        owners = [o for o in self.pending_owners(ctx) if o[0] in CANCELLABLE]
        picked = set(chosen or ())
        return [o for o in owners if f"{o[1]}/{o[0]}/{o[2]}" in picked or f"{o[1]}/{o[2]}" in picked]

    def changes(self, ctx: StepContext) -> list[Change]:
        found = discover(ctx)
        out = [Change("patch", R.CLUSTER_QUEUE.type, name, None, {"spec": {"stopPolicy": "HoldAndDrain"}})
               for name, cq in sorted(found.cluster_queues.items())
               if name not in found.default_cqs and spec_of(cq).get("stopPolicy") != "HoldAndDrain"]
        # Kueue drops a held LocalQueue from its queue manager, and then a ClusterQueue's HoldAndDrain no
        # longer finds the ClusterQueue of that queue's admitted workloads: it never evicts them (seen on
        # T3 with Kueue v0.17). The LocalQueue's own HoldAndDrain evicts them.
        out += [Change("patch", R.LOCAL_QUEUE.type, name, ns, {"spec": {"stopPolicy": "HoldAndDrain"}})
                for (ns, name), lq in sorted(found.local_queues.items())
                if spec_of(lq).get("clusterQueue") not in found.default_cqs and spec_of(lq).get("stopPolicy") != "HoldAndDrain"]
        out += [Change("delete", CANCELLABLE[kind], name, ns) for kind, ns, name in self._to_cancel(ctx)]
        return out

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        if dry_run:
            return super().apply(ctx, dry_run)
        # What is cancelled is fixed now, as the confirmed preview listed it: an owner that turns up later is
        # named by the verification, never cancelled unseen.
        cancel = self._to_cancel(ctx)
        lines = [apply_change(ctx, change, False) for change in self.changes(ctx) if change.action != "delete"]
        if not cancel:
            return lines
        # HoldAndDrain evicts admitted workloads back to pending; the owners picked
        # for cancellation are cancelled once the evictions have happened (or the time is up).
        deadline = Deadline(ctx, EVICTION_TIMEOUT)
        while any((w.get("status") or {}).get("admission") and not is_terminal(w) for w in dedicated_workloads(ctx)):
            if not deadline.wait(EVICTION_POLL):
                break
        for kind, ns, name in cancel:
            lines.append(apply_change(ctx, Change("delete", CANCELLABLE[kind], name, ns), False))
        return lines

    def verify(self, ctx: StepContext) -> Check:
        found = discover(ctx)
        evidence, problems = [], []
        for name, cq in sorted(found.cluster_queues.items()):
            if name in found.default_cqs:
                continue
            policy, st = spec_of(cq).get("stopPolicy"), cq.get("status") or {}
            counts = {k: int(st.get(k) or 0) for k in ("pendingWorkloads", "reservingWorkloads", "admittedWorkloads")}
            evidence.append(f"ClusterQueue {name} stopPolicy {policy or 'None'}, " + ", ".join(f"{k} {v}" for k, v in counts.items()))
            if policy != "HoldAndDrain":
                problems.append(f"ClusterQueue {name} is not HoldAndDrain")
            if any(counts.values()):
                problems.append(f"ClusterQueue {name} counts not zero: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
        workloads = dedicated_workloads(ctx, found)
        live = [w for w in workloads if not is_terminal(w)]
        evidence.append(f"dedicated Workloads counted directly in {', '.join(tenant_namespaces(ctx, found))}: "
                        f"{len(workloads)}, {len(live)} not terminal")
        if live:
            problems.append("dedicated Workloads not terminal: " + ", ".join(_workload_state(w) for w in live))
            pending = owners_of(live)
            if pending:
                problems.append(f"pending owners you may cancel: {_owner_list(pending)} "
                                "(drain --cancel-pending, or --cancel NS/KIND/NAME)")
        return discovery_check(found, problems, evidence, ctx.plan)


class WaitTerminalStep(DiscoveryGuardedStep):
    key = "wait-terminal"
    kind = "wait"
    title = "3. Every manager Workload terminal; workers clean, checked directly"
    explanation = (
        "Waits until every Workload of the dedicated queues on the manager is finished or gone, then asks each "
        "worker directly (with the plan's adminContext, else its stored credential) for the dispatched Jobs, "
        "RayJobs, RayClusters, Workloads and their pods, for pods still terminating or whose owner is gone, and "
        "for objects stuck on finalizers. An unreachable worker is not clean.")

    def verify(self, ctx: StepContext) -> Check:
        found = discover(ctx)
        live = [w for w in dedicated_workloads(ctx, found) if not is_terminal(w)]
        evidence, leftovers, unreachable = _workers_directly(ctx, found)
        problems = []
        if live:
            problems.append("manager Workloads not terminal: " + ", ".join(_workload_state(w) for w in live))
            owners = owners_of(live, admitted=True)
            if owners:
                problems.append(f"owners to cancel: {_owner_list(owners)} (drain --cancel-pending, or --cancel NS/KIND/NAME)")
        if leftovers:
            problems.append("left on workers (remote cleanup not complete): " + ", ".join(leftovers))
        if unreachable:
            problems.append("cannot check directly: " + "; ".join(unreachable))
        evidence.insert(0, f"manager: {len(live)} non-terminal Workloads of the dedicated queues")
        return discovery_check(found, problems, evidence, ctx.plan)


class RemoveRoutingStep(Step):
    key = "remove-routing"
    kind = "remove"
    title = "4. Remove the profiles, then the AdmissionCheck and queue wiring"
    explanation = (
        "Removes every multiKueue profile from TauCluster/cluster, waits (up to 30 s) until TauCluster's status is "
        "current and publishes none of them, then removes the dedicated LocalQueues, ClusterQueues, AdmissionChecks, "
        "MultiKueueConfigs and MultiKueueClusters found on the manager, and notes on TauCluster/cluster what the drain "
        "removed. Refused while any Workload still references them. Verification: nothing left, and a current status "
        "that publishes no multiKueue profile.")

    def refusal(self, ctx: StepContext) -> str | None:
        found = discover(ctx)
        if found.untouchable:
            return discovery_refusal(found)
        users = [_ref(dict(w, kind="Workload")) for w in dedicated_workloads(ctx, found) if not is_terminal(w)]
        if users:
            return "refused: these Workloads still reference the dedicated queues or AdmissionChecks: " + ", ".join(users)
        return None

    def changes(self, ctx: StepContext) -> list[Change]:
        found = discover(ctx)
        out = []
        if found.tau_cluster is not None:
            removing = sorted(found.removed | set(found.present_refs()))
            patch: dict[str, Any] = {"metadata": {"annotations": {REMOVED_ANNOTATION: json.dumps(removing)}}}
            profiles = declared_profiles(found.tau_cluster)
            if any(p.get("name") in found.profiles for p in profiles):
                patch["spec"] = {"workloadProfiles": [p for p in profiles if p.get("name") not in found.profiles]}
            out.append(Change("patch", R.TAU_CLUSTER.type, "cluster", None, patch))
        out += [Change("delete", R.LOCAL_QUEUE.type, name, ns) for ns, name in sorted(found.local_queues)]
        out += [Change("delete", R.CLUSTER_QUEUE.type, name) for name in sorted(found.cluster_queues)
                if name not in found.default_cqs]
        out += [Change("delete", R.ADMISSION_CHECK.type, name) for name in sorted(found.checks)]
        out += [Change("delete", R.MULTIKUEUE_CONFIG.type, name) for name in sorted(found.configs)]
        out += [Change("delete", R.MULTIKUEUE_CLUSTER.type, name) for name in sorted(found.clusters)]
        return out

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        changes = self.changes(ctx)
        if dry_run:
            return [apply_change(ctx, change, True) for change in changes]
        profiles = [c for c in changes if c.rt == R.TAU_CLUSTER.type]
        wiring = [c for c in changes if c.rt != R.TAU_CLUSTER.type]
        lines = [apply_change(ctx, change, False) for change in profiles]
        if not wiring:
            return lines
        # Seed: remove the profiles, *then* the wiring: TauGrid must have stopped publishing them first.
        deadline = Deadline(ctx, UNPUBLISH_TIMEOUT)
        why = _still_published(discover(ctx))
        while why and deadline.wait(EVICTION_POLL):
            why = _still_published(discover(ctx))
        if why:
            return lines + [f"{why} after {UNPUBLISH_TIMEOUT:g} s: the queue and AdmissionCheck wiring is left in place; "
                            "apply this step again once TauGrid has caught up"]
        lines.append("TauCluster status is current and publishes no multiKueue profile")
        return lines + [apply_change(ctx, change, False) for change in wiring]

    def verify(self, ctx: StepContext) -> Check:
        found = discover(ctx)
        problems = []
        left = found.present_refs()
        if left:
            problems.append("still present: " + ", ".join(left))
        published = _still_published(found)
        if published:
            problems.append(published)
        evidence = ["no multiKueue profile, dedicated LocalQueue or ClusterQueue, MultiKueue AdmissionCheck, "
                    "MultiKueueConfig or MultiKueueCluster is left on the manager"] if not left else []
        if found.removed:
            evidence.append(f"removed by the drain ({REMOVED_ANNOTATION} on TauCluster/cluster): {', '.join(sorted(found.removed))}")
        return discovery_check(found, problems, evidence, ctx.plan)


def _still_published(found: Discovery) -> str:
    """Why TauCluster's status may still offer a multiKueue profile: it publishes one, or it is not current
    (an older status proves nothing about the spec now); "" when neither."""
    if found.tau_cluster is None:
        return ""
    if not found.status_current:
        status = (found.tau_cluster.get("status") or {}).get("workloadProfiles") or {}
        return (f"TauCluster status is not current (workloadProfiles observedGeneration {status.get('observedGeneration')}, "
                f"generation {(found.tau_cluster.get('metadata') or {}).get('generation')}): it cannot show the profiles gone")
    if found.published:
        return "still published in TauCluster status: " + ", ".join(f"profile {n}" for n in sorted(found.published))
    return ""


def remote_needs(ctx: StepContext) -> list[str]:
    """Remote workloads that still need a worker credential: non-terminal manager
    Workloads placed on a worker, and dispatched objects on the workers themselves."""
    workers = {w.name for w in ctx.plan.workers}
    found = discover(ctx)
    needs = []
    for ns in tenant_namespaces(ctx, found):
        for wl in ctx.manager.list(R.WORKLOAD.type, ns):
            where = (wl.get("status") or {}).get("clusterName")
            if where in workers and not is_terminal(wl):
                needs.append(f"Workload {ns}/{wl['metadata']['name']} running on {where}")
    _, leftovers, unreachable = _workers_directly(ctx, found)
    needs += [f"{item} (on the worker)" for item in leftovers]
    needs += [f"worker {u} cannot be checked; its remote workloads may still need the credential" for u in unreachable]
    return needs


def drain_flow() -> Flow:
    return Flow("drain", "MultiKueue drain and rollback checklist",
                [DeauthorizeStep(), HoldAndDrainStep(), WaitTerminalStep(), RemoveRoutingStep(), RevokeStep(remote_needs)])
