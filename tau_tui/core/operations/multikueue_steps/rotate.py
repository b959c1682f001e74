"""Credential rotation, its own flow:

1. take the new worker credential (file or context), checked like setup's;
   the pending credential and the old one are kept in the OS keyring (through
   ``keyring`` only) until the rotation ends, so a restart resumes it;
2. replace the Secret on the manager and prove Kueue reconnected with it.
   Kueue (v0.17 ``multikueuecluster.go``) rebuilds its worker client when the
   Secret changes but leaves ``Active=True`` untouched when the new one works
   (``updateStatus`` writes only a changed status, reason or message), so an
   ``Active=True`` after the patch may be the old connection's.  The step forces
   a visible reconnect instead: it withholds the kubeconfig until Kueue reports
   ``Active=False`` (``BadKubeConfig``), then writes the new one, and verifies
   only an ``Active=True`` whose ``lastTransitionTime`` is not older than that
   drop.  The drop's time is kept on the Secret (annotation), so a restart
   resumes with it.  The worker is disconnected for those seconds: running
   work is untouched (Kueue's ``workerLostTimeout`` is 15 min), new dispatches
   to it wait;
3. revoke the old credential on the worker and verify it no longer works
   (401, written to the exercise record), then forget both from the keyring.
   Without adminContext: ⚠ revoke it in your identity system; not verified
   until the worker rejects it.

Without a usable keyring backend nothing is written anywhere: the flow asks
for the credential again instead of writing a file."""

from __future__ import annotations

import base64
import types
from datetime import UTC, datetime
from typing import Any

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.keyring_policy import chosen_keyring
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.checks import condition, describe_condition, refuted, verified
from tau_tui.core.operations.multikueue_steps.credentials import WorkerCredential, credential_from_secret
from tau_tui.core.operations.multikueue_steps.engine import (
    Change,
    Check,
    Deadline,
    Flow,
    Step,
    StepContext,
    apply_change,
)
from tau_tui.core.operations.multikueue_steps.plan import WorkerPlan
from tau_tui.core.operations.multikueue_steps.revocation import journal, prove_revoked, revoke_on_worker
from tau_tui.core.operations.multikueue_steps.worker_access import review_worker_access

R = ResourceKind
SERVICE = "tau-tui-multikueue"
FINGERPRINT_ANNOTATION = "tau.azure.com/credential-fingerprint"
#: When the new credential was written (this machine's clock; for the reader).
WRITTEN_ANNOTATION = "tau.azure.com/credential-written-at"
#: The lastTransitionTime of the Active=False that Kueue reported while the kubeconfig was withheld (the server's clock).
DISCONNECTED_ANNOTATION = "tau.azure.com/rotation-disconnected-at"
#: Seconds to wait for Kueue to report the withheld kubeconfig (it reconciles on the Secret's change at once).
DISCONNECT_TIMEOUT_S = 30.0


class KeyringUnavailable(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class CredentialVault:
    """Rotation state in the OS keyring: ``<cluster>/<worker>/pending`` and ``/old``.

    ``store``: a keyring of the simulated demo's own (``DemoKeyring``, in memory), given only by the
    demo's environment; without it the OS keyring is used or the flow refuses, never a fallback."""

    def __init__(self, cluster: str, store: Any = None):
        self.cluster = cluster
        self.store = store

    @property
    def where(self) -> str:
        """Where the credentials are kept, in words for the screen."""
        return str(getattr(self.store, "DESCRIPTION", "the OS keyring")) if self.store is not None else "the OS keyring"

    def require(self) -> Any:
        if self.store is not None:
            return self.store
        keyring, _backend, refusal = chosen_keyring()
        if refusal is not None:
            raise KeyringUnavailable(
                f"{refusal}; the rotation keeps nothing on disk, so it will ask for the new "
                "credential again. Install or unlock a keyring (Secret Service, macOS Keychain, Windows Credential Locker)")
        module: types.ModuleType = keyring
        return module

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
        for slot in ("pending", "old"):
            self.drop(worker, slot)

    def drop(self, worker: str, slot: str) -> None:
        import keyring.errors

        try:
            self.require().delete_password(SERVICE, self._key(worker, slot))
        except (keyring.errors.PasswordDeleteError, KeyError):
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
            return [f"would keep {new.fingerprint} (new) and the current credential (old) in {ctx.keyring.where}"]
        old = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace))
        ctx.keyring.put(wp.name, "pending", new)
        if old is not None:
            ctx.keyring.put(wp.name, "old", old)
        return [f"{ctx.keyring.where}: pending {new.fingerprint}, old {old.fingerprint if old else 'none'}"]

    def verify(self, ctx: StepContext) -> Check:
        wp = _worker(ctx)
        pending = ctx.keyring.get(wp.name, "pending") if ctx.keyring else None
        if pending is None:
            return refuted("no rotation in flight: no pending credential in the keyring")
        old = ctx.keyring.get(wp.name, "old")
        return verified((f"{ctx.keyring.where} holds pending {pending.fingerprint} and old {old.fingerprint if old else 'none'}",))


def _disconnected(mkc: dict[str, Any] | None) -> str | None:
    """The lastTransitionTime of an Active=False that says Kueue read the withheld kubeconfig."""
    active = condition(mkc, "Active") or {}
    if active.get("status") == "False" and active.get("reason") == "BadKubeConfig":
        return str(active.get("lastTransitionTime") or "") or None
    return None


class ReplaceSecretStep(Step):
    key = "replace-secret"
    kind = "rotate"
    title = "2. Replace the Secret; Kueue reconnects with the new credential"
    explanation = (
        "Kueue swaps a changed credential silently and keeps its old Active=True, so that proves nothing. The "
        "kubeconfig is withheld from the Secret until Kueue reports Active=False (BadKubeConfig), then the new "
        "credential is written. Verification: Active=True again, not older than that drop. The worker is "
        "disconnected for those seconds; running work is untouched, new dispatches to it wait.")

    def _changes(self, ctx: StepContext, disconnected_at: str, written_at: str) -> list[Change]:
        wp = _worker(ctx)
        pending = ctx.keyring.get(wp.name, "pending")
        if pending is None:
            return []
        ns = ctx.plan.kueue_namespace
        withhold = Change("patch", SECRET, wp.secret_name, ns, {
            "data": {"kubeconfig": None},
            "metadata": {"annotations": {FINGERPRINT_ANNOTATION: None, DISCONNECTED_ANNOTATION: None, WRITTEN_ANNOTATION: None}}})
        write = Change("patch", SECRET, wp.secret_name, ns, {
            "data": {"kubeconfig": pending.secret_data()},
            "metadata": {"annotations": {FINGERPRINT_ANNOTATION: pending.fingerprint, WRITTEN_ANNOTATION: written_at,
                                         DISCONNECTED_ANNOTATION: disconnected_at}}}, redact=("data.kubeconfig",))
        return [withhold, write]

    def changes(self, ctx: StepContext) -> list[Change]:
        return self._changes(ctx, "<when Kueue reports Active=False>", "<now>")

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        if dry_run:
            return super().apply(ctx, dry_run)
        wp = _worker(ctx)
        changes = self._changes(ctx, "", "")
        if not changes:
            return []
        lines = [apply_change(ctx, changes[0], False)]
        deadline = Deadline(ctx, DISCONNECT_TIMEOUT_S)
        disconnected_at = _disconnected(ctx.manager.get(R.MULTIKUEUE_CLUSTER.type, wp.name))
        while not disconnected_at and deadline.wait(2.0):
            disconnected_at = _disconnected(ctx.manager.get(R.MULTIKUEUE_CLUSTER.type, wp.name))
        lines.append(f"Kueue dropped the connection to {wp.name} at {disconnected_at} (kubeconfig withheld: BadKubeConfig)"
                     if disconnected_at else
                     f"Kueue did not report the withheld kubeconfig for {wp.name} within {DISCONNECT_TIMEOUT_S:g} s "
                     "(no Active=False, BadKubeConfig): "
                     "is its MultiKueue controller running? The new credential is written; apply again to prove it")
        written_at = datetime.now(UTC).isoformat(timespec="seconds")
        lines.append(apply_change(ctx, self._changes(ctx, disconnected_at or "", written_at)[1], False))
        return lines

    def verify(self, ctx: StepContext) -> Check:
        wp = _worker(ctx)
        pending = ctx.keyring.get(wp.name, "pending")
        secret = ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace)
        stored = credential_from_secret(wp.name, secret)
        if pending is None or stored is None or stored.kubeconfig != pending.kubeconfig:
            return refuted(f"Secret {wp.secret_name} does not hold the new credential yet")
        annotations = ((secret or {}).get("metadata") or {}).get("annotations") or {}
        dropped = annotations.get(DISCONNECTED_ANNOTATION) or ""
        active = condition(ctx.manager.get(R.MULTIKUEUE_CLUSTER.type, wp.name), "Active")
        evidence = [f"Secret {wp.secret_name} holds {stored.fingerprint} (written {annotations.get(WRITTEN_ANNOTATION) or 'at an unknown time'})",
                    f"MultiKueueCluster {wp.name}: {describe_condition(active)}"]
        if not dropped:
            return refuted(f"no reconnect seen: Kueue never reported the withheld kubeconfig for {wp.name}, so an "
                           "Active=True proves nothing about the new credential; apply this step again", evidence)
        evidence.insert(1, f"Kueue dropped the old connection at {dropped} (kubeconfig withheld: BadKubeConfig)")
        if active is None or active.get("status") != "True":
            return refuted(f"MultiKueueCluster {wp.name} is not Active with the new credential: {describe_condition(active)}",
                           evidence)
        since, drop = parse_time(active.get("lastTransitionTime")), parse_time(dropped)
        if since is None or drop is None or since < drop:
            return refuted(f"MultiKueueCluster {wp.name}'s Active=True (since {active.get('lastTransitionTime')}) is "
                           f"older than the drop at {dropped}: not a reconnect with {stored.fingerprint}", evidence)
        evidence.append(f"Kueue reconnected with {stored.fingerprint}: Active=True since {active.get('lastTransitionTime')}")
        return verified(evidence)


class RevokeOldStep(Step):
    key = "revoke-old"
    kind = "revoke"
    title = "3. Revoke the old credential"
    explanation = (
        "With the worker's admin context from the plan, the ServiceAccount token behind the old credential is "
        "deleted on the worker. Verification: the worker rejects the old credential (401), written to the exercise "
        "record; then both are forgotten from the keyring. Without adminContext: ⚠ revoke it in your identity "
        "system; the rotation stays open (the old credential kept in the keyring) until the worker rejects it.")

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
            journal(ctx).note_revocation(wp.name, old.fingerprint, "")
            return [f"no adminContext for {wp.name} in the plan: revoke {old.fingerprint} in your identity system"]
        done = revoke_on_worker(ctx.connector.admin(wp.admin_context), old)
        journal(ctx).note_revocation(wp.name, old.fingerprint, "; ".join(done))
        return done

    def verify(self, ctx: StepContext) -> Check:
        wp = _worker(ctx)
        old = ctx.keyring.get(wp.name, "old")
        if old is None:
            return refuted("no old credential in flight")
        return prove_revoked(ctx, wp.name, old, admin=bool(wp.admin_context))


def rotate_flow() -> Flow:
    return Flow("rotate", "MultiKueue credential rotation", [TakeNewCredentialStep(), ReplaceSecretStep(), RevokeOldStep()],
                on_complete=lambda ctx: ctx.keyring.forget(_worker(ctx).name))
