"""Credential rotation, its own flow:

1. take the new worker credential (file or context), checked like setup's;
   the pending credential and the old one are kept in the OS keyring (through
   ``keyring`` only) until the rotation ends, so a restart resumes it;
2. replace the Secret on the manager and wait for the MultiKueueCluster to
   return to Active=True with it;
3. revoke the old credential on the worker and verify it no longer works
   (401), then forget both from the keyring.

Without a usable keyring backend nothing is written anywhere: the flow asks
for the credential again instead of writing a file."""

from __future__ import annotations

import base64
import types

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.credentials import WorkerCredential, credential_from_secret
from tau_tui.core.operations.multikueue_steps.drain import credential_rejected, revoke_on_worker
from tau_tui.core.operations.multikueue_steps.engine import Change, Check, Flow, Step, StepContext
from tau_tui.core.operations.multikueue_steps.plan import WorkerPlan
from tau_tui.core.operations.multikueue_steps.setup import condition, describe_condition
from tau_tui.core.operations.multikueue_steps.worker_access import review_worker_access

R = ResourceKind
SERVICE = "tau-tui-multikueue"


class KeyringUnavailable(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class CredentialVault:
    """Rotation state in the OS keyring: ``<cluster>/<worker>/pending`` and ``/old``."""

    def __init__(self, cluster: str):
        self.cluster = cluster

    @staticmethod
    def require() -> types.ModuleType:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
            raise KeyringUnavailable(
                "no usable OS keyring backend (keyring reports "
                f"{type(backend).__name__}); the rotation keeps nothing on disk, so it will ask for the new "
                "credential again. Install or unlock a keyring (Secret Service, macOS Keychain, Windows Credential Locker)")
        return keyring

    def usable(self) -> bool:
        try:
            self.require()
            return True
        except KeyringUnavailable:
            return False

    def _key(self, worker: str, slot: str) -> str:
        return f"{self.cluster}/{worker}/{slot}"

    def put(self, worker: str, slot: str, credential: WorkerCredential) -> None:
        self.require().set_password(SERVICE, self._key(worker, slot), base64.b64encode(credential.kubeconfig).decode())

    def get(self, worker: str, slot: str) -> WorkerCredential | None:
        try:
            raw = self.require().get_password(SERVICE, self._key(worker, slot))
        except KeyringUnavailable:
            return None
        if not raw:
            return None
        fake_secret = {"metadata": {"name": f"keyring {slot}"}, "data": {"kubeconfig": raw}}
        return credential_from_secret(worker, fake_secret)

    def forget(self, worker: str) -> None:
        import keyring.errors

        backend = self.require()
        for slot in ("pending", "old"):
            try:
                backend.delete_password(SERVICE, self._key(worker, slot))
            except keyring.errors.PasswordDeleteError:
                pass


def _worker(ctx: StepContext) -> WorkerPlan:
    name = ctx.inputs.get("worker") or ctx.plan.workers[0].name
    wp: WorkerPlan | None = ctx.plan.worker(name)
    if wp is None:
        raise KeyError(name)
    return wp


class TakeNewCredentialStep(Step):
    key = "take-new"
    kind = "credential"
    title = "1. Take the new worker credential"
    explanation = (
        "The new kubeconfig (a file or context you name) is checked like setup's: secure, with the verbs Kueue "
        "needs and no more. Until the rotation ends, the new and the old credential are kept in the OS keyring "
        "only, so a restart resumes the rotation; without a keyring the flow asks again rather than write a file.")

    def _new(self, ctx: StepContext) -> WorkerCredential:
        wp = _worker(ctx)
        pending: WorkerCredential | None = ctx.keyring.get(wp.name, "pending") if ctx.keyring else None
        if pending is not None:
            return pending
        loaded: WorkerCredential = ctx.connector.load(wp.name, ctx.inputs.get("new_kubeconfig"), ctx.inputs.get("new_context"))
        return loaded

    def refusal(self, ctx: StepContext) -> str | None:
        wp = _worker(ctx)
        if ctx.keyring is None:
            return "no keyring was configured for this rotation"
        try:
            ctx.keyring.require()
        except KeyringUnavailable as exc:
            return exc.message
        if not ctx.inputs.get("new_kubeconfig") and not ctx.inputs.get("new_context") and ctx.keyring.get(wp.name, "pending") is None:
            return "name the new credential: a kubeconfig file or a kubeconfig context"
        new = self._new(ctx)
        old = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace))
        if old is None:
            return f"Secret {ctx.plan.kueue_namespace}/{wp.secret_name} does not exist: run setup first"
        if old.kubeconfig == new.kubeconfig:
            return f"the new credential is the one already stored ({old.fingerprint})"
        report = review_worker_access(ctx.connector.connect(new), list(ctx.plan.namespaces))
        if not report.acceptable:
            return f"worker {wp.name}: the new credential is refused: " + "; ".join(report.missing[:4] + report.excess)
        return None

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        wp = _worker(ctx)
        new = self._new(ctx)
        if dry_run:
            return [f"would keep {new.fingerprint} (new) and the current credential (old) in the OS keyring"]
        old = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace))
        ctx.keyring.put(wp.name, "pending", new)
        if old is not None:
            ctx.keyring.put(wp.name, "old", old)
        return [f"keyring: pending {new.fingerprint}, old {old.fingerprint if old else 'none'}"]

    def verify(self, ctx: StepContext) -> Check:
        wp = _worker(ctx)
        pending = ctx.keyring.get(wp.name, "pending") if ctx.keyring else None
        if pending is None:
            return Check(False, "no rotation in flight: no pending credential in the keyring")
        old = ctx.keyring.get(wp.name, "old")
        return Check(True, "", (f"keyring holds pending {pending.fingerprint} and old {old.fingerprint if old else 'none'}",))


class ReplaceSecretStep(Step):
    key = "replace-secret"
    kind = "rotate"
    title = "2. Replace the Secret; the worker returns to Active=True"
    explanation = (
        "The Secret's kubeconfig is replaced by the new credential. Verification waits for the MultiKueueCluster "
        "to report Active=True again with it.")

    def changes(self, ctx: StepContext) -> list[Change]:
        wp = _worker(ctx)
        pending = ctx.keyring.get(wp.name, "pending")
        if pending is None:
            return []
        return [Change("patch", SECRET, wp.secret_name, ctx.plan.kueue_namespace,
                       {"data": {"kubeconfig": pending.secret_data()},
                        "metadata": {"annotations": {"tau.azure.com/credential-fingerprint": pending.fingerprint}}},
                       redact=("data.kubeconfig",))]

    def verify(self, ctx: StepContext) -> Check:
        wp = _worker(ctx)
        pending = ctx.keyring.get(wp.name, "pending")
        stored = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace))
        if pending is None or stored is None or stored.kubeconfig != pending.kubeconfig:
            return Check(False, f"Secret {wp.secret_name} does not hold the new credential yet")
        active = condition(ctx.manager.get(R.MULTIKUEUE_CLUSTER.type, wp.name), "Active")
        evidence = (f"Secret {wp.secret_name} holds {stored.fingerprint}", f"MultiKueueCluster {wp.name}: {describe_condition(active)}")
        if (active or {}).get("status") != "True":
            return Check(False, f"MultiKueueCluster {wp.name} is not Active with the new credential: {describe_condition(active)}", evidence)
        return Check(True, "", evidence)


class RevokeOldStep(Step):
    key = "revoke-old"
    kind = "revoke"
    title = "3. Revoke the old credential"
    explanation = (
        "With the worker's admin context from the plan, the ServiceAccount token behind the old credential is "
        "deleted on the worker. Verification: the old credential is rejected (401). Then both are forgotten from "
        "the keyring.")

    def refusal(self, ctx: StepContext) -> str | None:
        wp = _worker(ctx)
        if ctx.keyring.get(wp.name, "old") is None:
            return "the old credential is not in the keyring; revoke it in your identity system"
        return None

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        wp = _worker(ctx)
        old = ctx.keyring.get(wp.name, "old")
        if dry_run:
            return [f"would revoke {old.fingerprint} on {wp.name}" + ("" if wp.admin_context else " (no adminContext: by hand)")]
        if not wp.admin_context:
            return [f"no adminContext for {wp.name} in the plan: revoke {old.fingerprint} in your identity system"]
        return revoke_on_worker(ctx.connector.admin(wp.admin_context), old)

    def verify(self, ctx: StepContext) -> Check:
        wp = _worker(ctx)
        old = ctx.keyring.get(wp.name, "old")
        if old is None:
            return Check(False, "no old credential in flight")
        rejected, text = credential_rejected(ctx, old)
        return Check(rejected, "" if rejected else text, (text,))


def rotate_flow() -> Flow:
    return Flow("rotate", "MultiKueue credential rotation", [TakeNewCredentialStep(), ReplaceSecretStep(), RevokeOldStep()],
                on_complete=lambda ctx: ctx.keyring.forget(_worker(ctx).name))
