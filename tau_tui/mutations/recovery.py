"""Retry and resume of a failed run as :class:`~tau_tui.mutations.mutation.Mutation` objects.

The decision is core's (:mod:`tau_tui.core.operations.recovery`), made on the run's objects as
read at the moment of the preview and again when applying, so what the dialog showed is what
happens, and the app decides exactly as ``tau-tui runs retry`` does.  The preview server-dry-runs
the new objects; a refused decision (not in retry_on, retries exhausted, backoff not over, OOM
without force) shows why, in the app's keys, and offers no "yes".

A run cancelled from the Runs pane is gone from the cluster: the pane keeps its object and pods
as they were (:class:`CancelledCopy`), and the resume is planned on that copy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.mutations import MutationResult
from tau_tui.core.cluster.view_types import JobView, PodView, RayJobView
from tau_tui.core.operations.recovery import (
    ResumePlan,
    healthy_nodes_offered,
    perform_resume,
    perform_retry,
    plan_lines,
    resume_plan,
    retry_decision,
)
from tau_tui.core.operations.run_objects import RunObjects
from tau_tui.core.operations.rundocument import read_gpu_faults, read_run
from tau_tui.mutations.mutation import ClusterHost, Mutation, describe_result


@dataclass(frozen=True)
class CancelledCopy:
    """A run as it was when the Runs pane cancelled it: its Job or RayJob and its pods (which GPU
    fault hit it is judged again on them, with the faults of now)."""

    owner: JobView | RayJobView
    pods: Sequence[PodView] = ()


def _backend(app: ClusterHost) -> BaseBackend:
    backend = app.backend
    if not isinstance(backend, BaseBackend):
        raise RuntimeError("no cluster connected")
    return backend


def _read(app: ClusterHost, namespace: str, name: str, cancelled: CancelledCopy | None = None) -> RunObjects:
    backend = _backend(app)
    faults = read_gpu_faults(backend, app.now())
    if cancelled is None:
        return read_run(backend, namespace, name, faults)
    owner = cancelled.owner
    return RunObjects(namespace, name, job=owner if isinstance(owner, JobView) else None,
                      ray_job=owner if isinstance(owner, RayJobView) else None, pods=tuple(cancelled.pods),
                      gpu_faults=dict(faults), cancelled=True)


def in_app_terms(plan: ResumePlan, namespace: str, name: str) -> str:
    """Why the app does not resume, with what to do in the app (the core's words name CLI flags)."""
    if plan.refusal == "active":
        return f"{namespace}/{name} is still active: cancel it first (ctrl+d in Runs), then press R to resume it"
    if plan.refusal == "no-checkpoint":
        return f"{namespace}/{name} carries no checkpoint path (TAU_RESUME_FROM): press R and type where its checkpoints are"
    if plan.refusal == "oom":
        return plan.message.replace("or resume with --force", "or press R again to resume anyway")
    return plan.message


def retry_mutation(app: ClusterHost, namespace: str, name: str) -> Mutation:
    def run(dry_run: bool):
        decision, results = perform_retry(_backend(app), _read(app, namespace, name), app.now(), dry_run)
        if not results:
            return MutationResult(False, "create", "Job", name, namespace, f"not retried: {decision.message}", dry_run)
        return results

    def preview() -> tuple[bool, str, bool]:
        objs = _read(app, namespace, name)
        decision = retry_decision(objs, app.now())
        if decision.verdict != "retry":
            return False, f"no retry now: {decision.message}", False
        _, results = perform_retry(_backend(app), objs, app.now(), dry_run=True)
        ok, text = describe_result(results)
        return ok, f"{decision.message}\n{text}", ok

    return Mutation(verb="retry", target=f"run {namespace}/{name}",
                    title=f"Retry run {namespace}/{name}? The same objects are submitted again as the next attempt.",
                    run=run, namespace=namespace, preview=preview, decline="Back")


def resume_mutation(app: ClusterHost, namespace: str, name: str, force: bool = False, *,
                    checkpoint: str | None = None, cancelled: CancelledCopy | None = None) -> Mutation:
    """``checkpoint``: the path the user gave (``--from``); ``cancelled``: the copy of a run the pane cancelled."""

    def plan_now():
        objs = _read(app, namespace, name, cancelled)
        plan = resume_plan(objs, force=force, checkpoint=checkpoint)
        if plan.allowed and cancelled is not None:
            # The cancelled object is gone, so nothing records its successor: the successor itself does.
            kind = ResourceKind.JOB if isinstance(cancelled.owner, JobView) else ResourceKind.RAY_JOB
            if any(o.name == plan.new_name for o in _backend(app).fetch(kind, namespace)):
                return objs, ResumePlan(False, f"already resumed as {plan.new_name}; follow that run", refusal="linked")
        return objs, plan

    def run(dry_run: bool):
        objs, plan = plan_now()
        if not plan.allowed:
            return MutationResult(False, "create", "Job", name, namespace,
                                  f"not resumed: {in_app_terms(plan, namespace, name)}", dry_run)
        return perform_resume(_backend(app), objs, plan, dry_run)

    def preview() -> tuple[bool, str, bool]:
        objs, plan = plan_now()
        if not plan.allowed:
            return False, f"no resume: {in_app_terms(plan, namespace, name)}", False
        backend = _backend(app)
        offered = healthy_nodes_offered(backend.nodes(), objs.gpu_faults, plan.avoid_nodes) if plan.avoid_nodes else []
        ok, text = describe_result(perform_resume(backend, objs, plan, dry_run=True))
        return ok, "\n".join(plan_lines(plan, offered)) + f"\n{text}", ok

    if force:
        # After an OOMKilled the CLI asks for --force; here the confirmation is that opt-in, so it says so.
        return Mutation(verb="force-resume", target=f"run {namespace}/{name}",
                        title=f"Resume run {namespace}/{name} anyway? It was OOMKilled: with the same memory and batch "
                              "size it will likely run out of memory again (this is `tau-tui runs resume --force`).",
                        run=run, namespace=namespace, preview=preview, decline="Back")
    where = f" from {checkpoint}" if checkpoint else " from its last checkpoint"
    return Mutation(verb="resume", target=f"run {namespace}/{name}",
                    title=f"Resume run {namespace}/{name}{where} under a new submission?",
                    run=run, namespace=namespace, preview=preview, decline="Back")
