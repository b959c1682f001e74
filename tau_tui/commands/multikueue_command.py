"""`multikueue`: the MultiKueue setup, drain (the seed's "Drain and rollback") and
rotation flows, and the status of the flow in force, headless."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .parser import (
    EXIT_DECLINED,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_NO_KEYRING,
    EXIT_NOT_VERIFIED,
    EXIT_OK,
    EXIT_REFUSED,
    MULTIKUEUE_ACTIONS,
)

#: What --demo says first: nothing of it outlives the process.
DEMO_NOTE = ("demo: the simulated demo cluster and its simulated workers (lab-worker-1, lab-worker-2 to set up; "
             "westus3-worker, eastus2-worker already serving) live only in this process; credentials in flight are "
             "kept in the demo keyring, in memory: nothing is stored; no exercise record is written")


def multikueue_environment(args: argparse.Namespace):
    """(manager backend, worker connector, wait) for a real cluster, or with --demo for the simulated
    demo cluster and its simulated workers; tests replace this."""
    if args.demo:
        return demo_environment()
    import time

    from ..core.cluster.kueue_api_support import refuse_unsupported_kueue
    from ..core.cluster.real import KubernetesBackend
    from ..core.operations.multikueue_steps.credentials import KubeconfigConnector

    backend = KubernetesBackend(args.kubeconfig, context=args.context)
    refuse_unsupported_kueue(backend)  # the manager's Kueue: without v1beta2, one line and exit 7
    return backend, KubeconfigConnector(args.kubeconfig), time.sleep


def demo_environment():
    """The app's --demo MultiKueue fleet, built in this process: its clock moves only when a step waits."""
    from ..core.operations.multikueue_steps.demo_fleet import build_demo_fleet
    from ..core.operations.multikueue_steps.simulated_fleet import SimFleetConnector
    from ..core.sim.backend import SimulatedBackend
    from ..core.sim.scenario import build_world

    world = build_world("demo")
    fleet = build_demo_fleet(world)
    backend = SimulatedBackend(world)
    backend.start()
    return backend, SimFleetConnector(fleet), world.advance


class RecordUnreadable(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def flow_in_force(cluster: str, directory: Path | None = None) -> tuple[str, str]:
    """The flow `status` reports for ``cluster``, and why: the flow of its latest setup or drain
    record (the one last written to, finished or not), else setup."""
    from ..core.operations.multikueue_steps.records import list_records

    latest: tuple[tuple[str, int], Path, str, str] | None = None
    for rec in list_records(directory):
        if rec.unreadable and any(f"-{flow}-{cluster.replace('/', '_')}" in rec.path.name for flow in ("setup", "drain", "rollback")):
            raise RecordUnreadable(f"cannot tell the flow in force on {cluster}: record {rec.path} cannot be read "
                                   f"({rec.unreadable}); move it aside, or name the flow with --flow setup|drain|rotate")
        if rec.cluster != cluster or rec.flow not in ("setup", "drain", "rollback"):
            continue
        try:
            data = json.loads(rec.path.read_text())
            written_ns = rec.path.stat().st_mtime_ns
        except (OSError, ValueError) as exc:
            raise RecordUnreadable(f"cannot tell the flow in force on {cluster}: record {rec.path} cannot be read "
                                   f"({exc}); move it aside, or name the flow with --flow setup|drain|rotate") from None
        # Last written to: a resumed record keeps the name of its start. Times in a record are to the
        # second; the file's own time tells apart two records written within one.
        touched = max([str(data.get("started") or ""), str(data.get("finished") or ""),
                       *map(str, data.get("resumed") or ()), *(str(s.get("at") or "") for s in data.get("steps") or ())])
        if latest is None or (touched, written_ns) > latest[0]:
            # A record of the removed `rollback` flow was setup again.
            latest = ((touched, written_ns), rec.path, "setup" if rec.flow == "rollback" else rec.flow, rec.outcome)
    if latest is None:
        return "setup", "no setup or drain record for this cluster"
    return latest[2], f"the latest record {latest[1]} ({latest[3]})"


def status_exit_code(states) -> int:
    """0 only when every step verifies; 3 when a guard refuses one; 1 when the cluster could not be
    asked; else 4 (not verified)."""
    from ..core.operations.multikueue_steps.engine import StepState

    if all(state is StepState.VERIFIED for state in states):
        return EXIT_OK
    if StepState.REFUSED in states:
        return EXIT_REFUSED
    if StepState.ERROR in states:
        return EXIT_FAILED
    return EXIT_NOT_VERIFIED


def _print_and_apply(preview) -> bool:
    print(preview.text())
    return True


def _ask(preview) -> bool:
    print(preview.text())
    if not sys.stdin.isatty():
        print("not confirmed: no terminal to ask on; pass --yes to apply without asking", file=sys.stderr)
        return False
    answer = input(f"apply '{preview.step.title}'? [y/N] ").strip().lower()
    return answer in ("y", "yes")


def _unknown_worker(args: argparse.Namespace, plan) -> bool:
    """--worker names a worker the plan does not list: said on stderr (exit 2, not a KeyError later)."""
    if not args.worker or plan.worker(args.worker) is not None:
        return False
    from ..core.operations.multikueue_steps.rotate import unknown_worker

    print(f"tau-tui: multikueue {args.action} --worker: {unknown_worker(plan, args.worker)}", file=sys.stderr)
    return True


def cmd_multikueue(args: argparse.Namespace) -> int:
    from ..core.operations.multikueue_steps import REMOVED_FLOW, open_exercise, removed_flow_message
    from ..core.operations.multikueue_steps.engine import Outcome
    from ..core.operations.multikueue_steps.plan import load_plan
    from ..core.operations.multikueue_steps.records import list_records
    from ..core.operations.multikueue_steps.rotate import CredentialVault

    if args.action == REMOVED_FLOW:
        print("tau-tui: " + removed_flow_message("tau-tui multikueue drain", "tau-tui multikueue setup"), file=sys.stderr)
        return EXIT_INVALID
    if args.action not in MULTIKUEUE_ACTIONS:
        print(f"tau-tui: multikueue: unknown action {args.action!r}; one of {', '.join(MULTIKUEUE_ACTIONS)}", file=sys.stderr)
        return EXIT_INVALID
    if args.action == "records":
        records = list_records()
        for rec in records:
            if rec.unreadable:
                print(f"tau-tui: {rec.path}: not a readable exercise record ({rec.unreadable})", file=sys.stderr)
            elif args.json:
                print(json.dumps({"path": str(rec.path), "flow": rec.flow, "cluster": rec.cluster, "started": rec.started,
                                  "outcome": rec.outcome, "steps": rec.steps, "identity": rec.identity}))
            else:
                print(f"{rec.started}  {rec.flow:<8} {rec.cluster:<20} {rec.outcome:<13} {rec.steps:>3} steps  {rec.path}")
        if not records and not args.json:
            print("no exercise records yet", file=sys.stderr)
        return EXIT_FAILED if any(rec.unreadable for rec in records) else EXIT_OK
    if args.flow and args.action != "status":
        print(f"tau-tui: multikueue {args.action}: --flow is for status only", file=sys.stderr)
        return EXIT_INVALID
    if not args.plan and not args.demo:
        print(f"tau-tui: multikueue {args.action} needs --plan FILE (see docs/multikueue.md), or --demo for the "
              "simulated demo cluster and its built-in lab plan", file=sys.stderr)
        return EXIT_INVALID
    plan = load_plan(args.plan) if args.plan else None
    if plan is not None and _unknown_worker(args, plan):
        return EXIT_INVALID
    if args.demo:
        print(DEMO_NOTE)
    backend, connector, wait = multikueue_environment(args)
    demo_keyring = None
    if plan is None:  # --demo: the demo's built-in plan for this flow, read from its cluster now
        from ..core.operations.multikueue_steps.demo_fleet import demo_keyring as keyring_of
        from ..core.operations.multikueue_steps.demo_fleet import demo_plan

        fleet = backend.world.multikueue.fleet
        plan = demo_plan(args.flow or ("setup" if args.action == "status" else args.action), backend.world, fleet)
        demo_keyring = keyring_of(fleet)
        if _unknown_worker(args, plan):
            return EXIT_INVALID
    if args.action == "status":
        if args.flow:
            flow, why = args.flow, "--flow"
        elif args.demo:
            flow, why = "setup", "a fresh demo has no records"
        else:
            try:
                flow, why = flow_in_force(backend.current_context or "cluster")
            except RecordUnreadable as err:
                print(f"tau-tui: {err.message}", file=sys.stderr)
                return EXIT_FAILED
        # the keyring: where a revoked credential waits for its 401 (drain step 5, rotation)
        exercise = open_exercise(flow, backend, connector, plan, wait=wait, record=False, inputs={"worker": args.worker},
                                 vault=CredentialVault(backend.current_context or "cluster", store=demo_keyring))
        statuses = exercise.survey()
        which = f" of worker {args.worker or plan.workers[0].name}" if flow == "rotate" else ""
        print(f"{exercise.flow.title}{which} (the flow in force: {why}; --flow setup|drain|rotate for another):")
        for status in statuses:
            print(f"  {status.mark} {status.step.title}" + (f"\n      {status.check.reason}" if status.check.reason else "")
                  + (f"\n      ⚠ to do: {status.check.action}" if status.check.action else ""))
        code = status_exit_code([status.state for status in statuses])
        verdict = {EXIT_OK: "verified", EXIT_REFUSED: "refused", EXIT_FAILED: "the cluster could not be asked"}
        print(f"{exercise.flow.title}: {verdict.get(code, 'not verified')} (exit {code})")
        return code
    inputs: dict = {}
    vault = None
    if args.action == "drain":
        inputs["cancel"] = "all-pending" if args.cancel_pending else list(args.cancel)
        # step 5 keeps a revoked credential there until the worker rejects it (nothing is kept without a keyring)
        vault = CredentialVault(backend.current_context or "cluster", store=demo_keyring)
    if args.action == "rotate":
        vault = CredentialVault(backend.current_context or "cluster", store=demo_keyring)
        if not vault.usable():
            try:
                vault.require()
            except Exception as err:
                print(f"tau-tui: {getattr(err, 'message', err)}", file=sys.stderr)
            return EXIT_NO_KEYRING
        inputs.update(worker=args.worker, new_kubeconfig=args.new_kubeconfig, new_context=args.new_context)
    exercise = open_exercise(args.action, backend, connector, plan, wait=wait, inputs=inputs, vault=vault,
                             record=not args.demo)
    outcome = exercise.run(_print_and_apply if args.yes else _ask, timeout=args.timeout)
    if exercise.unidentified:
        print(f"tau-tui: {exercise.unidentified}", file=sys.stderr)
    for status in exercise.survey():
        print(f"{status.mark} {status.step.title}" + (f"\n    {status.check.reason}" if status.check.reason else "")
              + (f"\n    ⚠ to do: {status.check.action}" if status.check.action else ""))
    summary = exercise.flow.summary(exercise.ctx) if outcome is Outcome.VERIFIED and exercise.flow.summary else ""
    print(f"{exercise.flow.title}: {outcome.value}" + (f" ({summary})" if summary else "") + f"; record {exercise.recorder.path if exercise.recorder else 'none (demo)'}")
    return {Outcome.VERIFIED: EXIT_OK, Outcome.REFUSED: EXIT_REFUSED, Outcome.NOT_VERIFIED: EXIT_NOT_VERIFIED,
            Outcome.DECLINED: EXIT_DECLINED, Outcome.FAILED: EXIT_FAILED}[outcome]
