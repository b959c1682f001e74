"""Retry and resume of a failed run (taugrid.md §1.2 ``resilience.*``, §2.4 ``tau run resume``).

Pure decisions over one run's objects and the clock; the mutations in
:mod:`tau_tui.mutations.recovery` apply them.  Everything a decision needs is recorded on the
objects themselves (annotations under ``tau.azure.com/``), so it survives restarting the app and
is the same whether the app or ``tau-tui runs retry`` acts:

* the policy: ``maxRetries``, ``retryOn``, ``backoffInitial``, ``backoffMax`` in the
  ``tau.azure.com/workloadspec-execution`` annotation the renderer writes;
* the attempt: ``tau.azure.com/retry-attempt`` (0 or absent on the first submission) and
  ``tau.azure.com/retry-of`` (the first attempt's name) on every retry;
* that it was acted on: ``tau.azure.com/retried-as`` / ``tau.azure.com/resumed-as`` on the failed
  object, naming its successor.  Successor names and submission ids are derived, never random,
  so two actors that decide the same thing create the same object once (the second gets
  "already submitted").

A retry resubmits the same objects with ``TAU_RETRY_ATTEMPT``/``TAU_RETRY_REASON`` set, only for
a failure in ``retry_on`` (``Preempted``, ``Evicted``; ``OOMKilled`` only when listed), at most
``max_retries`` times, each after ``backoff_initial · 2^(attempt-1)`` capped at ``backoff_max``
since the failure.  A resume is a new submission from the last checkpoint (``TAU_RESUME_FROM``),
linked to the original, refused after an OOMKilled without ``force``, with a warning when the
config hash changed; it keeps the pods off the nodes whose GPU fault hit the run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.names import SUBMISSION_ID_LABEL, TAU_LABEL_PREFIX
from tau_tui.core.cluster.view_types import JobView, PodView, RayJobView
from tau_tui.core.operations.gpufaults import NodeGpuFault, gpu_hits
from tau_tui.core.operations.recovery_manifests import (
    AVOID_NODES_ANNOTATION,
    RESUMED_AS_ANNOTATION,
    RETRIED_AS_ANNOTATION,
    as_served,
    containers_of,
    copy_of_live,
    derive_manifests,
    derived_name,
)
from tau_tui.core.operations.run_objects import RunObjects
from tau_tui.core.runconfig.rules import duration_seconds

EXECUTION_ANNOTATION = f"{TAU_LABEL_PREFIX}workloadspec-execution"
CONFIG_HASH_ANNOTATION = f"{TAU_LABEL_PREFIX}config-hash"
RETRY_ATTEMPT_ANNOTATION = f"{TAU_LABEL_PREFIX}retry-attempt"
RETRY_REASON_ANNOTATION = f"{TAU_LABEL_PREFIX}retry-reason"
RETRY_OF_ANNOTATION = f"{TAU_LABEL_PREFIX}retry-of"
RESUMED_FROM_ANNOTATION = f"{TAU_LABEL_PREFIX}resumed-from"
RESUMED_FROM_SUBMISSION_ANNOTATION = f"{TAU_LABEL_PREFIX}resumed-from-submission-id"
#: On every resume: the first run of the line and how many resumes it took to get here.
ORIGINAL_RUN_ANNOTATION = f"{TAU_LABEL_PREFIX}original-run"
RESUME_INDEX_ANNOTATION = f"{TAU_LABEL_PREFIX}resume-index"
#: Where a run's checkpoints are, when the renderer did not put it in TAU_RESUME_FROM (taugrid.md §6).
CHECKPOINT_URI_ANNOTATION = f"{TAU_LABEL_PREFIX}checkpoint-uri"

RetryReason = Literal["Preempted", "Evicted", "OOMKilled"]
DEFAULT_RETRY_ON: tuple[str, ...] = ("Preempted", "Evicted")
#: Pod ``DisruptionTarget`` reasons (Kubernetes pod disruption conditions) by retry reason.
PREEMPTION_REASONS = ("PreemptionByScheduler", "PreemptionByKubeScheduler", "Preempted")
EVICTION_REASONS = ("EvictionByEvictionAPI", "DeletionByTaintManager", "TerminationByKubelet", "DeletionByPodGC")
#: Kueue Workload ``Evicted`` reasons that mean another workload took the quota.
KUEUE_PREEMPTION_REASONS = ("Preempted", "InClusterQueue", "InCohortReclamation", "InCohortFairSharing")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 0
    retry_on: tuple[str, ...] = DEFAULT_RETRY_ON
    backoff_initial_s: float = 30.0
    backoff_max_s: float = 300.0
    #: Why the policy could not be read (then no retry is offered: fail closed).
    problem: str = ""

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt`` (1-based): 30s, 60s, 120s ... capped at backoff_max."""
        return float(min(self.backoff_initial_s * 2.0 ** max(0, attempt - 1), self.backoff_max_s))


@dataclass(frozen=True)
class Failure:
    """Why the run's current attempt failed, classified as ``resilience.retry_on`` names it."""

    reason: str  # Preempted, Evicted, OOMKilled, or Failed (anything else)
    detail: str
    at: datetime | None


RETRY_MARKS = {"retry": "↻", "wait": "◷", "refused": "–"}


@dataclass(frozen=True)
class RetryDecision:
    #: retry: do it now; wait: allowed at ``not_before``; refused: never (``message`` says why).
    verdict: Literal["retry", "wait", "refused"]
    message: str
    attempt: int = 0  # the attempt a retry would start (1 = the first retry)
    max_retries: int = 0
    reason: str = ""
    not_before: datetime | None = None
    new_name: str = ""

    @property
    def allowed(self) -> bool:
        return self.verdict != "refused"

    @property
    def line(self) -> str:
        """``↻ retry: …`` (now), ``◷ retry: …`` (after the backoff), ``– retry: …`` (never, and why)."""
        return f"{RETRY_MARKS[self.verdict]} retry: {self.message}"


#: Why a resume is refused, for a face to say what to do in its own terms.
ResumeRefusal = Literal["", "gone", "linked", "active", "oom", "no-checkpoint"]


@dataclass(frozen=True)
class ResumePlan:
    allowed: bool
    message: str
    new_name: str = ""
    checkpoint: str | None = None
    warnings: tuple[str, ...] = ()
    avoid_nodes: tuple[str, ...] = ()
    #: Nodes a GPU fault hit the run on, with the fault (what the preview names).
    faults: tuple[NodeGpuFault, ...] = ()
    manifests: tuple[dict[str, Any], ...] = field(default=())
    refusal: ResumeRefusal = ""
    #: With ``refusal == "no-checkpoint"``: where the run's checkpoints may be, best first (to offer, never to assume).
    candidates: tuple[str, ...] = ()


# --------------------------------------------------------------------------
# reading the objects
# --------------------------------------------------------------------------


def retry_policy(owner: JobView | RayJobView) -> RetryPolicy:
    """The run's ``resilience.*`` as the renderer recorded it on the object."""
    text = owner.annotations.get(EXECUTION_ANNOTATION)
    if text is None:
        return RetryPolicy(problem=f"no {EXECUTION_ANNOTATION} annotation (not submitted by tau or tau-tui)")
    try:
        spec = json.loads(text)
        policy = RetryPolicy(
            max_retries=int(spec.get("maxRetries") or 0),
            retry_on=tuple(str(r) for r in spec.get("retryOn", DEFAULT_RETRY_ON)),
            backoff_initial_s=duration_seconds(str(spec.get("backoffInitial") or "30s")),
            backoff_max_s=duration_seconds(str(spec.get("backoffMax") or "5m")),
        )
    except (ValueError, TypeError, AttributeError) as err:
        return RetryPolicy(problem=f"annotation {EXECUTION_ANNOTATION} is not readable ({err}); fix or resubmit the run")
    if policy.max_retries < 0:
        return RetryPolicy(problem=f"annotation {EXECUTION_ANNOTATION}: maxRetries is negative")
    return policy


def attempt_of(owner: JobView | RayJobView) -> int:
    """0 for a first submission, N for the Nth retry (an unreadable value counts as exhausted: fail closed)."""
    text = owner.annotations.get(RETRY_ATTEMPT_ANNOTATION)
    if text is None:
        return 0
    try:
        return max(0, int(text))
    except ValueError:
        return 1 << 30


def _failed_at(objs: RunObjects) -> tuple[bool, datetime | None, str]:
    if objs.job is not None:
        cond = objs.job.condition("Failed")
        if cond is not None and cond.is_true:
            return True, cond.last_transition_time, f"{cond.reason}: {cond.message}".strip(": ")
        return False, None, ""
    if objs.ray_job is not None:
        rj = objs.ray_job
        status = rj.raw.get("status") or {}
        failed = (rj.job_status or "").upper() == "FAILED" or rj.job_deployment_status == "Failed" or (
            isinstance(status.get("failed"), int) and status["failed"] > 0)
        return failed, parse_time(status.get("endTime")), str(status.get("message") or rj.job_status or "")
    return False, None, ""


def _pod_failure(pod: PodView) -> tuple[str, str] | None:
    status = pod.raw.get("status") or {}
    for c in status.get("conditions") or ():
        if c.get("type") == "DisruptionTarget" and c.get("status") == "True":
            reason = str(c.get("reason") or "")
            if reason in PREEMPTION_REASONS:
                return "Preempted", f"pod {pod.name} preempted ({reason})"
            if reason in EVICTION_REASONS:
                return "Evicted", f"pod {pod.name} evicted ({reason})"
    if status.get("reason") == "Evicted":
        return "Evicted", f"pod {pod.name} evicted by the kubelet: {status.get('message') or 'node pressure'}"
    if status.get("reason") == "Preempting":
        return "Preempted", f"pod {pod.name} preempted"
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        for key in ("state", "lastState"):
            if ((cs.get(key) or {}).get("terminated") or {}).get("reason") == "OOMKilled":
                return "OOMKilled", f"{pod.name}/{cs.get('name', '')} was OOMKilled"
    return None


def classify_failure(objs: RunObjects) -> Failure | None:
    """None while the run has not failed; otherwise why, as ``retry_on`` names it.  The most
    specific cause wins: OOMKilled over Preempted over Evicted over a plain failure (an OOM is the
    run's own fault even when a node was drained afterwards)."""
    failed, at, message = _failed_at(objs)
    if not failed:
        return None
    found: dict[str, str] = {}
    for pod in objs.pods:
        cause = _pod_failure(pod)
        if cause is not None:
            found.setdefault(cause[0], cause[1])
    for w in objs.workloads:
        evicted = w.condition("Evicted")
        if evicted is not None and evicted.is_true:
            kind = "Preempted" if evicted.reason in KUEUE_PREEMPTION_REASONS else "Evicted"
            found.setdefault(kind, f"Workload {w.name} evicted ({evicted.reason}): {evicted.message}".rstrip(": "))
    for reason in ("OOMKilled", "Preempted", "Evicted"):
        if reason in found:
            return Failure(reason, found[reason], at)
    return Failure("Failed", message or "the run failed", at)


# --------------------------------------------------------------------------
# names and ids
# --------------------------------------------------------------------------


def derived_submission_id(owner: JobView | RayJobView, verb: str, number: int) -> str:
    """Same failed object, same action: same id, so the app and the CLI cannot both create one."""
    seed = f"{owner.uid or owner.name}\n{verb}\n{number}"
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


def _owner(objs: RunObjects) -> JobView | RayJobView | None:
    return objs.job or objs.ray_job


# --------------------------------------------------------------------------
# retry
# --------------------------------------------------------------------------


def retry_decision(objs: RunObjects, now: datetime) -> RetryDecision:
    """Whether the failed run may be retried now, later or never; pure over the objects and ``now``."""
    owner = _owner(objs)
    if owner is None:
        return RetryDecision("refused", f"no Job or RayJob {objs.namespace}/{objs.name}")
    kind = "Job" if objs.job is not None else "RayJob"
    successor = owner.annotations.get(RETRIED_AS_ANNOTATION) or owner.annotations.get(RESUMED_AS_ANNOTATION)
    if successor:
        return RetryDecision("refused", f"already retried or resumed as {successor}")
    failure = classify_failure(objs)
    if failure is None:
        return RetryDecision("refused", "the run has not failed; nothing to retry")
    policy = retry_policy(owner)
    attempt = attempt_of(owner) + 1
    refused = RetryDecision("refused", "", attempt=attempt, max_retries=policy.max_retries, reason=failure.reason)
    if policy.problem:
        return replace(refused, message=policy.problem)
    if failure.reason not in policy.retry_on:
        opt_in = " (OOMKilled is retried only when resilience.retry_on lists it; resume with --force instead)" \
            if failure.reason == "OOMKilled" else ""
        return replace(refused, message=f"failed with {failure.reason}, which resilience.retry_on "
                       f"({', '.join(policy.retry_on) or 'empty'}) does not list{opt_in}: {failure.detail}")
    if policy.max_retries == 0:
        return replace(refused, message="resilience.max_retries is 0: retry is off for this run")
    if attempt > policy.max_retries:
        return replace(refused, message=f"retries exhausted: {attempt - 1} of resilience.max_retries "
                       f"{policy.max_retries} used ({failure.reason})")
    base = owner.annotations.get(RETRY_OF_ANNOTATION) or owner.name
    new_name = derived_name(base, f"retry-{attempt}", kind)
    delay = policy.backoff(attempt)
    not_before = (failure.at or now) + timedelta(seconds=delay)
    what = f"retry {attempt}/{policy.max_retries} after {failure.reason} as {new_name}"
    if now < not_before:
        wait = int((not_before - now).total_seconds() + 0.999)
        return replace(refused, verdict="wait", message=f"{what}: backoff {delay:g}s, in {wait}s",
                       not_before=not_before, new_name=new_name)
    return replace(refused, verdict="retry", message=f"{what} (backoff {delay:g}s passed)", not_before=not_before,
                   new_name=new_name)


def retry_manifests(objs: RunObjects, decision: RetryDecision) -> list[dict[str, Any]]:
    """The retry's objects: the failed run's, renamed, with the attempt recorded and in the env."""
    owner = _owner(objs)
    assert owner is not None and decision.verdict != "refused"
    base = owner.annotations.get(RETRY_OF_ANNOTATION) or owner.name
    notes = {RETRY_ATTEMPT_ANNOTATION: str(decision.attempt), RETRY_REASON_ANNOTATION: decision.reason,
             RETRY_OF_ANNOTATION: base}
    env = {"TAU_RETRY_ATTEMPT": str(decision.attempt), "TAU_RETRY_REASON": decision.reason,
           "TAU_RETRY_MAX": str(decision.max_retries)}
    return derive_manifests(copy_of_live(owner), new_name=decision.new_name,
                            submission_id=derived_submission_id(owner, "retry", decision.attempt),
                            annotations=notes, env=env, avoid_nodes=())


# --------------------------------------------------------------------------
# resume
# --------------------------------------------------------------------------


def checkpoint_of(owner: JobView | RayJobView) -> str | None:
    """The run's ``TAU_RESUME_FROM`` (``resilience.checkpoint_path``, rendered into the env)."""
    for container in containers_of(as_served(owner)):
        for entry in container.get("env") or ():
            if entry.get("name") == "TAU_RESUME_FROM" and entry.get("value"):
                return str(entry["value"])
    return None


def checkpoint_candidates(owner: JobView | RayJobView) -> tuple[str, ...]:
    """Where a run without ``TAU_RESUME_FROM`` may have written its checkpoints, best first: its
    ``tau.azure.com/checkpoint-uri``, then the default of ``resilience.checkpoint_path``
    (``/data/checkpoints/finetunes/<name>``) when a volume is mounted at ``/data``."""
    found = [owner.annotations.get(CHECKPOINT_URI_ANNOTATION) or ""]
    obj = as_served(owner)
    if any(m.get("mountPath") == "/data" for c in containers_of(obj) for m in c.get("volumeMounts") or ()):
        root = owner.annotations.get(ORIGINAL_RUN_ANNOTATION) or owner.annotations.get(RETRY_OF_ANNOTATION) or owner.name
        found.append(f"/data/checkpoints/finetunes/{root}")
    return tuple(dict.fromkeys(path for path in found if path))


def resume_plan(objs: RunObjects, *, force: bool = False, checkpoint: str | None = None,
                config_hash: str | None = None, manifests: Sequence[Mapping[str, Any]] | None = None) -> ResumePlan:
    """A resume of a finished, failed or cancelled run (``objs.cancelled``: the app's copy of a run it
    deleted): a new submission from the last checkpoint, linked to the original, away from the nodes a
    GPU fault hit it on.  ``manifests`` (rendered from a tau.yaml)
    replace the live object's copy; ``config_hash`` is theirs, compared with the run's for drift."""
    owner = _owner(objs)
    if owner is None:
        return ResumePlan(False, f"no Job or RayJob {objs.namespace}/{objs.name}", refusal="gone")
    kind = "Job" if objs.job is not None else "RayJob"
    successor = owner.annotations.get(RESUMED_AS_ANNOTATION) or owner.annotations.get(RETRIED_AS_ANNOTATION)
    if successor:
        return ResumePlan(False, f"already retried or resumed as {successor}; resume that one instead", refusal="linked")
    failure = classify_failure(objs)
    running = failure is None and not _finished(objs)
    if running:
        return ResumePlan(False, f"the run is still active; cancel it first (tau-tui cancel {objs.name} -n "
                          f"{objs.namespace} --wait), then resume", refusal="active")
    if failure is not None and failure.reason == "OOMKilled" and not force:
        return ResumePlan(False, f"the last failure was OOMKilled ({failure.detail}); the same config will run out "
                          "of memory again: raise the memory or lower the batch size, or resume with --force",
                          refusal="oom")
    path = checkpoint or checkpoint_of(owner)
    if not path:
        return ResumePlan(False, "the run has no checkpoint path (resilience.checkpoint_path, or storage.data_pvc "
                          "for the default); pass --from PATH", refusal="no-checkpoint",
                          candidates=checkpoint_candidates(owner))
    warnings: list[str] = []
    old_hash = owner.annotations.get(CONFIG_HASH_ANNOTATION)
    if config_hash is not None and old_hash is not None and config_hash != old_hash:
        warnings.append(f"config drift: the config hash changed ({old_hash[:12]}… → {config_hash[:12]}…); "
                        "the checkpoint may not fit the new config")
    elif config_hash is not None and old_hash is None:
        warnings.append(f"the run carries no {CONFIG_HASH_ANNOTATION}: drift cannot be checked")
    if failure is not None and failure.reason == "OOMKilled":
        warnings.append("resuming after an OOMKilled (--force)")
    hits = gpu_hits(objs.pods, objs.gpu_faults)
    faults = tuple({h.fault.node: h.fault for h in hits}.values())
    avoid = tuple(sorted({f.node for f in faults} | _already_avoided(owner)))
    root = owner.annotations.get(ORIGINAL_RUN_ANNOTATION) or owner.annotations.get(RETRY_OF_ANNOTATION) or owner.name
    index = _int(owner.annotations.get(RESUME_INDEX_ANNOTATION)) + 1
    new_name = derived_name(root, f"resume-{index}", kind)
    notes = {RESUMED_FROM_ANNOTATION: owner.name, ORIGINAL_RUN_ANNOTATION: root, RESUME_INDEX_ANNOTATION: str(index),
             RESUMED_FROM_SUBMISSION_ANNOTATION: owner.labels.get(SUBMISSION_ID_LABEL, "")}
    source = [dict(m) for m in manifests] if manifests is not None else copy_of_live(owner)
    derived = derive_manifests(source, new_name=new_name, submission_id=derived_submission_id(owner, "resume", index),
                               annotations=notes, env={"TAU_RESUME_FROM": path}, avoid_nodes=avoid,
                               # a resume starts its own retries: the attempt count of the line it left does not carry
                               drop=(RETRY_ATTEMPT_ANNOTATION, RETRY_REASON_ANNOTATION, RETRY_OF_ANNOTATION),
                               drop_env=("TAU_RETRY_ATTEMPT", "TAU_RETRY_REASON"))
    where = f"; avoids {', '.join(avoid)}" if avoid else ""
    return ResumePlan(True, f"resume {objs.namespace}/{owner.name} as {new_name} from {path}{where}", new_name, path,
                      tuple(warnings), avoid, faults, tuple(derived))


def _finished(objs: RunObjects) -> bool:
    if objs.cancelled:  # the copy of a run cancelled (deleted) from the app: nothing of it runs any more
        return True
    if objs.job is not None:
        return any(c.type in ("Complete", "Failed") and c.is_true for c in objs.job.conditions)
    if objs.ray_job is not None:
        rj = objs.ray_job
        return (rj.job_status or "").upper() in ("SUCCEEDED", "FAILED", "STOPPED") or rj.job_deployment_status in ("Complete", "Failed")
    return False


def _int(text: str | None) -> int:
    try:
        return max(0, int(text or 0))
    except ValueError:
        return 0


def _already_avoided(owner: JobView | RayJobView) -> set[str]:
    return {n for n in (owner.annotations.get(AVOID_NODES_ANNOTATION) or "").split(",") if n}


def healthy_nodes_offered(nodes: Iterable[Any], faults: Mapping[str, NodeGpuFault], avoid: Iterable[str],
                          gpus_needed: float = 0.0) -> list[str]:
    """Schedulable nodes with no GPU fault and (when known) enough free GPUs: where the resume can land."""
    skip = set(avoid) | set(faults)
    out = []
    for node in nodes:
        if node.name in skip or node.unschedulable or node.ready is False or not node.gpu:
            continue
        free = [u.allocatable - u.allocated for u in node.gpu.values() if u.allocated is not None]
        if gpus_needed and free and max(free) < gpus_needed:
            continue
        out.append(node.name)
    return sorted(out)


# --------------------------------------------------------------------------
# applying (the one place that writes: the app's mutations and the CLI both call these)
# --------------------------------------------------------------------------


def _kind_of(objs: RunObjects) -> Any:
    from tau_tui.core.cluster.kinds import ResourceKind

    return ResourceKind.JOB if objs.job is not None else ResourceKind.RAY_JOB


def _submit_and_link(backend: Any, objs: RunObjects, manifests: Sequence[Mapping[str, Any]], link: str,
                     new_name: str, dry_run: bool) -> list[Any]:
    """Create the successor (server dry-run first when ``dry_run``), then record it on the failed
    object; an already-submitted successor (same derived submission id) is linked too."""
    results = list(backend.submit(manifests, dry_run=dry_run))
    if all(r.ok for r in results) and not objs.cancelled:  # a cancelled run's object is gone: nothing to link on
        results.append(backend.annotate(_kind_of(objs), objs.namespace, objs.name, {link: new_name}, dry_run=dry_run))
    return results


def perform_retry(backend: Any, objs: RunObjects, now: datetime, dry_run: bool) -> tuple[RetryDecision, list[Any]]:
    """Decide on the objects as read now and, when the decision is "retry", apply it."""
    decision = retry_decision(objs, now)
    if decision.verdict != "retry":
        return decision, []
    manifests = retry_manifests(objs, decision)
    return decision, _submit_and_link(backend, objs, manifests, RETRIED_AS_ANNOTATION, decision.new_name, dry_run)


def perform_resume(backend: Any, objs: RunObjects, plan: ResumePlan, dry_run: bool) -> list[Any]:
    if not plan.allowed:
        return []
    return _submit_and_link(backend, objs, plan.manifests, RESUMED_AS_ANNOTATION, plan.new_name, dry_run)


def plan_lines(plan: ResumePlan, offered: Sequence[str] = ()) -> list[str]:
    """The resume preview in words: where from, what it avoids and why, where it may land, warnings."""
    lines = [plan.message]
    for fault in plan.faults:
        lines.append(f"  avoid {fault.node}: GPU {fault.verdict}, {fault.describe()}")
    if plan.avoid_nodes:
        shown = ", ".join(offered[:5]) + (f" (+{len(offered) - 5} more)" if len(offered) > 5 else "")
        lines.append(f"  healthy nodes it can land on: {shown}" if offered else
                     "  no healthy node with free GPUs now: the run waits in the queue until one frees up")
    lines += [f"  ⚠ {w}" for w in plan.warnings]
    return lines
