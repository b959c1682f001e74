"""`multikueue`: the MultiKueue setup, drain, rollback and rotation flows, headless."""

from __future__ import annotations

import argparse
import sys

from .parser import EXIT_DECLINED, EXIT_FAILED, EXIT_INVALID, EXIT_NO_KEYRING, EXIT_NOT_VERIFIED, EXIT_OK, EXIT_REFUSED


def multikueue_environment(args: argparse.Namespace):
    """(manager backend, worker connector, wait) for a real cluster; tests replace this."""
    import time

    from ..core.cluster.real import KubernetesBackend
    from ..core.operations.multikueue_steps.credentials import KubeconfigConnector

    backend = KubernetesBackend(args.kubeconfig, context=args.context)
    return backend, KubeconfigConnector(args.kubeconfig), time.sleep


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


def cmd_multikueue(args: argparse.Namespace) -> int:
    import json

    from ..core.operations.multikueue_steps import open_exercise
    from ..core.operations.multikueue_steps.engine import Outcome
    from ..core.operations.multikueue_steps.plan import load_plan
    from ..core.operations.multikueue_steps.records import list_records
    from ..core.operations.multikueue_steps.rotate import CredentialVault

    if args.action == "records":
        records = list_records()
        for rec in records:
            if args.json:
                print(json.dumps({"path": str(rec.path), "flow": rec.flow, "cluster": rec.cluster, "started": rec.started,
                                  "outcome": rec.outcome, "steps": rec.steps, "identity": rec.identity}))
            else:
                print(f"{rec.started}  {rec.flow:<8} {rec.cluster:<20} {rec.outcome:<13} {rec.steps:>3} steps  {rec.path}")
        if not records and not args.json:
            print("no exercise records yet", file=sys.stderr)
        return EXIT_OK
    if not args.plan:
        print(f"tau-tui: multikueue {args.action} needs --plan FILE (see docs/multikueue.md)", file=sys.stderr)
        return EXIT_INVALID
    plan = load_plan(args.plan)
    backend, connector, wait = multikueue_environment(args)
    if args.action == "status":
        for flow in ("setup", "drain"):
            exercise = open_exercise(flow, backend, connector, plan, wait=wait, record=False)
            print(f"{exercise.flow.title}:")
            for status in exercise.survey():
                print(f"  {status.mark} {status.step.title}" + (f"\n      {status.check.reason}" if status.check.reason else ""))
        return EXIT_OK
    inputs: dict = {}
    vault = None
    if args.action == "drain":
        inputs["cancel"] = "all-pending" if args.cancel_pending else list(args.cancel)
    if args.action == "rotate":
        vault = CredentialVault(backend.current_context or "cluster")
        if not vault.usable():
            try:
                vault.require()
            except Exception as err:
                print(f"tau-tui: {getattr(err, 'message', err)}", file=sys.stderr)
            return EXIT_NO_KEYRING
        inputs.update(worker=args.worker, new_kubeconfig=args.new_kubeconfig, new_context=args.new_context)
    exercise = open_exercise(args.action, backend, connector, plan, wait=wait, inputs=inputs, vault=vault)
    outcome = exercise.run(_print_and_apply if args.yes else _ask, timeout=args.timeout)
    for status in exercise.survey():
        print(f"{status.mark} {status.step.title}" + (f"\n    {status.check.reason}" if status.check.reason else ""))
    print(f"{exercise.flow.title}: {outcome.value}; record {exercise.recorder.path if exercise.recorder else '-'}")
    return {Outcome.VERIFIED: EXIT_OK, Outcome.REFUSED: EXIT_REFUSED, Outcome.NOT_VERIFIED: EXIT_NOT_VERIFIED,
            Outcome.DECLINED: EXIT_DECLINED, Outcome.FAILED: EXIT_FAILED}[outcome]
