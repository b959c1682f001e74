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
from tau_tui.core.operations.multikueue_steps.credential_ledger import (
    FINGERPRINT_ANNOTATION,
    ledger_change,
    ledger_entry,
    where,
)
from tau_tui.core.operations.multikueue_steps.credentials import WorkerCredential, credential_from_secret
from tau_tui.core.operations.multikueue_steps.engine import (
    Change,
    Check,
    Deadline,
    Flow,
    Refused,
    Step,
    StepContext,
    apply_change,
)
from tau_tui.core.operations.multikueue_steps.plan import WorkerPlan
from tau_tui.core.operations.multikueue_steps.revocation import journal, prove_revoked, revoke_on_worker
from tau_tui.core.operations.multikueue_steps.worker_access import review_worker_access

R = ResourceKind
SERVICE = "tau-tui-multikueue"
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
        raise Refused(unknown_worker(ctx.plan, name))
    return wp


def unknown_worker(plan: Any, name: str) -> str:
    return f"worker {name!r} is not in the plan; its workers: {', '.join(w.name for w in plan.workers)}"


def _given(ctx: StepContext, wp: WorkerPlan) -> WorkerCredential | None:
    """The new credential the owner names now (a kubeconfig file or context), or None."""
    if not ctx.inputs.get("new_kubeconfig") and not ctx.inputs.get("new_context"):
        return None
    given: WorkerCredential = ctx.connector.load(wp.name, ctx.inputs.get("new_kubeconfig"), ctx.inputs.get("new_context"))
    return given


def _conflict(pending: WorkerCredential | None, given: WorkerCredential | None, worker: str, where: str) -> str | None:
    """Why a pending credential left by an earlier, stopped rotation must not stand in for the one named now."""
    if pending is None or given is None or pending.kubeconfig == given.kubeconfig:
        return None
    return (f"an earlier rotation of {worker}, stopped before it ended, left {pending.fingerprint} pending in "
            f"{where}; you named {given.fingerprint}. Finish that rotation first (`tau-tui multikueue rotate --worker "
            f"{worker}` with no new credential resumes it), then rotate to {given.fingerprint}; or, if it was never "
            f"written to the Secret, delete the keyring entry {SERVICE} <cluster>/{worker}/pending and start again")


def _pending(ctx: StepContext, wp: WorkerPlan) -> WorkerCredential | None:
    """The rotation's new credential in flight: the keyring's pending one. Refused when the owner names another."""
    pending: WorkerCredential | None = ctx.keyring.get(wp.name, "pending") if ctx.keyring else None
    why = _conflict(pending, _given(ctx, wp), wp.name, ctx.keyring.where if ctx.keyring else "the OS keyring")
    if why:
        raise Refused(why)
    return pending


def _stored(ctx: StepContext, wp: WorkerPlan) -> WorkerCredential | None:
    return credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace))


def completed_rotation(ctx: StepContext, wp: WorkerPlan) -> tuple[WorkerCredential, str] | None:
    """(the credential the last rotation of ``wp`` stored, the fingerprint it replaced), when the manager's
    ledger says a rotation stored what the Secret holds now; None otherwise."""
    entry = ledger_entry(ctx, wp.name)
    stored = _stored(ctx, wp)
    if stored is not None and entry.get("replaced") and entry.get("stored") == stored.fingerprint:
        return stored, entry["replaced"]
    return None


def rotation_summary(ctx: StepContext) -> str:
    """What a verified rotation verified, by fingerprint."""
    wp = _worker(ctx)
    entry = ledger_entry(ctx, wp.name)
    return (f"worker {wp.name} uses {entry.get('stored') or 'an unknown credential'}; "
            f"{entry.get('replaced') or 'the old credential'} rejected by the worker (401)")


class TakeNewCredentialStep(Step):
    key = "take-new"
    kind = "credential"
    title = "1. Take the new worker credential"
    explanation = (
        "The new kubeconfig (a file or context you name) is checked like setup's: secure, with the verbs Kueue "
        "needs and no more. Until the rotation ends, the new and the old credential are kept in the OS keyring "
        "only, so a restart resumes the rotation; without a keyring the flow asks again rather than write a file.")

    def _new(self, ctx: StepContext, wp: WorkerPlan) -> WorkerCredential | None:
        return _pending(ctx, wp) or _given(ctx, wp)

    def refusal(self, ctx: StepContext) -> str | None:
        wp = _worker(ctx)
        if ctx.keyring is None:
            return "no keyring was configured for this rotation"
        try:
            ctx.keyring.require()
        except KeyringUnavailable as exc:
            return exc.message
        try:
            new = self._new(ctx, wp)
        except Refused as exc:
            return exc.message
        if new is None:
            return "name the new credential: a kubeconfig file or a kubeconfig context"
        old = _stored(ctx, wp)
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
        new = self._new(ctx, wp)
        if new is None:
            raise Refused("name the new credential: a kubeconfig file or a kubeconfig context")
        if dry_run:
            return [f"would keep {new.fingerprint} (new) and the current credential (old) in {ctx.keyring.where}"]
        old = _stored(ctx, wp)
        ctx.keyring.put(wp.name, "pending", new)
        if old is not None:
            ctx.keyring.put(wp.name, "old", old)
        return [f"{ctx.keyring.where}: pending {new.fingerprint}, old {old.fingerprint if old else 'none'}"]

    def verify(self, ctx: StepContext) -> Check:
        wp = _worker(ctx)
        pending = _pending(ctx, wp)
        if pending is not None:
            old = ctx.keyring.get(wp.name, "old")
            return verified((f"{ctx.keyring.where} holds pending {pending.fingerprint} and old {old.fingerprint if old else 'none'}",))
        given, done = _given(ctx, wp), completed_rotation(ctx, wp)
        if done is not None and (given is None or given.kubeconfig == done[0].kubeconfig):
            return verified((f"the last rotation of {wp.name} took {done[0].fingerprint} (replacing {done[1]}); "
                             f"the manager stores it ({where()}); its keyring entries were forgotten when it ended",))
        if given is not None:
            return refuted(f"take {given.fingerprint} for {wp.name}: no rotation to it in flight")
        return refuted(f"no rotation of {wp.name} in flight (no pending credential in the keyring) and none recorded "
                       f"on the manager ({where()})")


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
        pending = _pending(ctx, wp)
        if pending is None:
            return []
        old = ctx.keyring.get(wp.name, "old")
        ns = ctx.plan.kueue_namespace
        withhold = Change("patch", SECRET, wp.secret_name, ns, {
            "data": {"kubeconfig": None},
            "metadata": {"annotations": {FINGERPRINT_ANNOTATION: None, DISCONNECTED_ANNOTATION: None, WRITTEN_ANNOTATION: None}}})
        write = Change("patch", SECRET, wp.secret_name, ns, {
            "data": {"kubeconfig": pending.secret_data()},
            "metadata": {"annotations": {FINGERPRINT_ANNOTATION: pending.fingerprint, WRITTEN_ANNOTATION: written_at,
                                         DISCONNECTED_ANNOTATION: disconnected_at}}}, redact=("data.kubeconfig",))
        # The manager notes what it stores now and what it replaced: step 3's proof binds to the replaced one.
        noted = ledger_change(ctx, {wp.name: {"stored": pending.fingerprint, **({"replaced": old.fingerprint} if old else {})}})
        return [withhold, write, noted]

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
        lines += [apply_change(ctx, change, False) for change in self._changes(ctx, disconnected_at or "", written_at)[1:]]
        return lines

    def verify(self, ctx: StepContext) -> Check:
        wp = _worker(ctx)
        pending = _pending(ctx, wp)
        done = completed_rotation(ctx, wp) if pending is None else None
        new = pending or (done[0] if done else None)
        secret = ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace)
        stored = credential_from_secret(wp.name, secret)
        if new is None or stored is None or stored.kubeconfig != new.kubeconfig:
            return refuted(f"Secret {wp.secret_name} does not hold the new credential yet")
        old = ctx.keyring.get(wp.name, "old") if pending is not None else None
        entry = ledger_entry(ctx, wp.name)
        if entry.get("stored") != stored.fingerprint or (old is not None and entry.get("replaced") != old.fingerprint):
            return refuted(f"the manager notes {entry or 'nothing'} for {wp.name} ({where()}), not {stored.fingerprint} "
                           f"replacing {old.fingerprint if old else 'the old credential'}: apply this step again")
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
        replaced = ledger_entry(ctx, wp.name).get("replaced")
        if old is not None and replaced is not None and old.fingerprint != replaced:
            raise Refused(f"the keyring's old credential {old.fingerprint} is not the one the manager replaced "
                          f"({replaced}, {where()}): another rotation ran since; revoke both in your identity system")
        bound = replaced or (old.fingerprint if old is not None else None)
        if bound is None:
            return refuted("no old credential in flight")
        return prove_revoked(ctx, wp.name, old, bound, admin=bool(wp.admin_context))


def rotate_flow() -> Flow:
    return Flow("rotate", "MultiKueue credential rotation", [TakeNewCredentialStep(), ReplaceSecretStep(), RevokeOldStep()],
                on_complete=lambda ctx: ctx.keyring.forget(_worker(ctx).name), summary=rotation_summary)
