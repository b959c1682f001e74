"""Retry and resume of a failed run as :class:`~tau_tui.mutations.mutation.Mutation` objects.

The decision is core's (:mod:`tau_tui.core.operations.recovery`), made on the run's objects as
read at the moment of the preview and again when applying, so what the dialog showed is what
happens, and the app decides exactly as ``tau-tui runs retry`` does.  The preview server-dry-runs
the new objects; a refused decision (not in retry_on, retries exhausted, backoff not over, OOM
without force) shows why and offers no "yes"."""

from __future__ import annotations

from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.mutations import MutationResult
from tau_tui.core.operations.recovery import (
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


def _backend(app: ClusterHost) -> BaseBackend:
    backend = app.backend
    if not isinstance(backend, BaseBackend):
        raise RuntimeError("no cluster connected")
    return backend


def _read(app: ClusterHost, namespace: str, name: str) -> RunObjects:
    backend = _backend(app)
    return read_run(backend, namespace, name, read_gpu_faults(backend, app.now()))


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


def resume_mutation(app: ClusterHost, namespace: str, name: str, force: bool = False) -> Mutation:
    def plan_now():
        objs = _read(app, namespace, name)
        return objs, resume_plan(objs, force=force)

    def run(dry_run: bool):
        objs, plan = plan_now()
        if not plan.allowed:
            return MutationResult(False, "create", "Job", name, namespace, f"not resumed: {plan.message}", dry_run)
        return perform_resume(_backend(app), objs, plan, dry_run)

    def preview() -> tuple[bool, str, bool]:
        objs, plan = plan_now()
        if not plan.allowed:
            return False, f"no resume: {plan.message}", False
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
    return Mutation(verb="resume", target=f"run {namespace}/{name}",
                    title=f"Resume run {namespace}/{name} from its last checkpoint under a new submission?",
                    run=run, namespace=namespace, preview=preview, decline="Back")
