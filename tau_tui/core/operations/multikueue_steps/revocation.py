"""Revoking worker credentials, shared by drain step 5 and rotation step 3:
delete, on the worker, the Secret a credential's token is bound to, and prove
the credential is rejected (401) by asking the worker with it.

Only that 401 proves a revocation; deleting the Secret on the manager does
not (the credential may still work).  Without the plan's ``adminContext``
the tool cannot revoke: the step ends ⚠ "revoke it in your identity system"
and is not verified until the worker rejects the credential.

What survives a restart, with no secret on disk: the exercise record keeps,
per worker, the revoked credential's fingerprint and the proof (time, HTTP
status); the credential itself is kept only in the OS keyring (slot
``revoking``, or rotation's ``old``) while its proof is pending, so a rerun
can still ask the worker.  Without a keyring, a proof still pending after a
restart cannot be made: the step says so (⚠), it never passes.

Which credential must be proven revoked is the manager's to say: the ledger on
TauCluster/cluster (``credential_ledger.py``) names the fingerprint last stored
(drain step 5) or replaced (rotation step 3); a 401 recorded or seen for any
other fingerprint proves nothing."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from tau_tui.core.operations.multikueue_steps.access import SECRET, AccessError, BackendAccess
from tau_tui.core.operations.multikueue_steps.checks import check_from, refuted, verified
from tau_tui.core.operations.multikueue_steps.credential_ledger import ledger_change, ledger_entry, where
from tau_tui.core.operations.multikueue_steps.credentials import WorkerCredential, credential_from_secret
from tau_tui.core.operations.multikueue_steps.engine import Change, Check, Step, StepContext, apply_change
from tau_tui.core.operations.multikueue_steps.records import RecordJournal, RevocationEvidence

#: The OS keyring slot that holds a drained credential until the worker is seen rejecting it.
KEYRING_SLOT = "revoking"


def _bound_secret(token: str) -> tuple[str, str] | None:
    """(namespace, name) of the Secret a TokenRequest token is bound to (its ``kubernetes.io`` claim)."""
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


def probe(ctx: StepContext, credential: WorkerCredential) -> tuple[str, str]:
    """("rejected" | "works" | "unknown", what the worker said) when asked with ``credential`` itself."""
    try:
        who = ctx.connector.connect(credential).whoami()
    except AccessError as exc:
        if exc.code == 401:
            return "rejected", f"{credential.fingerprint} is rejected by worker {credential.worker} (401 Unauthorized)"
        return "unknown", f"cannot tell whether {credential.fingerprint} still works: {exc.message}"
    return "works", f"{credential.fingerprint} still authenticates on {credential.worker} as {who}"


def credential_rejected(ctx: StepContext, credential: WorkerCredential) -> tuple[bool, str]:
    state, text = probe(ctx, credential)
    return state == "rejected", text


def journal(ctx: StepContext) -> RevocationEvidence:
    """The exercise record's revocation evidence (in memory when no record is kept)."""
    if ctx.journal is None:
        ctx.journal = RecordJournal([])
    found: RevocationEvidence = ctx.journal
    return found


def by_hand(fingerprint: str, worker: str) -> str:
    return (f"revoke {fingerprint} of worker {worker} in your identity system (no adminContext in the plan), "
            "then run again: it verifies on the worker's 401")


def prove_revoked(ctx: StepContext, worker: str, credential: WorkerCredential | None, bound: str, *, admin: bool) -> Check:
    """Verified only by a 401 from ``worker`` for the credential of fingerprint ``bound`` (the one the
    manager's ledger names), seen now with that credential or kept in an exercise record.  A credential at
    hand with another fingerprint, or a recorded 401 of another, proves nothing about it."""
    evidence = journal(ctx)
    entry = evidence.proof(worker, bound)
    if entry is not None:
        return verified((f"{bound} was rejected by worker {worker} (HTTP 401) at {entry['proven_at']} "
                         "(exercise record)",))
    if credential is None or credential.fingerprint != bound:
        return refuted(f"revocation unproven: worker {worker}'s credential {bound} (the last the manager stored, "
                       f"{where()}) is not at hand to ask the worker with (no keyring entry survived), and no record "
                       "here holds its 401", action=f"make sure {bound} is revoked in your identity system")
    state, text = probe(ctx, credential)
    if state == "rejected":
        proven = evidence.note_proof(worker, credential.fingerprint, 401, text)
        return verified((f"{text} at {proven['proven_at']}",))
    if state == "unknown" or admin:
        return refuted(text, (text,))
    return refuted(f"revocation unproven: {text}", (text,), action=by_hand(credential.fingerprint, worker))


class RevokeStep(Step):
    key = "revoke"
    kind = "revoke"
    title = "5. Revoke and delete the worker credentials"
    explanation = (
        "Last: with the worker admin context from the plan, the ServiceAccount token behind each credential is "
        "deleted on the worker, then the Secret on the manager is deleted. Verified only when each worker rejects "
        "its old credential (401), written to the exercise record with the credential's fingerprint. Without "
        "adminContext: ⚠ revoke it in your identity system (not verified until the 401). Refused while any remote "
        "workload still needs the credential; the refusal names them.")

    def __init__(self, remote_needs: Callable[[StepContext], list[str]]):
        # The drain's check for remote workloads, passed in so this module needs nothing of drain.py.
        self.remote_needs = remote_needs

    def refusal(self, ctx: StepContext) -> str | None:
        needs = self.remote_needs(ctx)
        if needs:
            return "refused: remote workloads still need the worker credentials: " + "; ".join(needs)
        return None

    def changes(self, ctx: StepContext) -> list[Change]:
        return [Change("delete", SECRET, w.secret_name, ctx.plan.kueue_namespace) for w in ctx.plan.workers]

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        lines = []
        if not dry_run:
            evidence = journal(ctx)
            deleting = {}
            for wp in ctx.plan.workers:
                stored = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace))
                if stored is not None:
                    deleting[wp.name] = stored
            if deleting:  # the manager notes what it held before the Secrets go: the proofs bind to it
                lines.append(apply_change(ctx, ledger_change(ctx, {w: {"stored": c.fingerprint} for w, c in deleting.items()}), False))
            for wp in ctx.plan.workers:
                stored = deleting.get(wp.name)
                if stored is None:
                    continue
                self._keep(ctx, stored)
                if wp.admin_context:
                    done = revoke_on_worker(ctx.connector.admin(wp.admin_context), stored)
                    evidence.note_revocation(wp.name, stored.fingerprint, "; ".join(done))
                    lines += done
                else:
                    evidence.note_revocation(wp.name, stored.fingerprint, "")
                    lines.append(f"worker {wp.name}: no adminContext in the plan; revoke {stored.fingerprint} in your identity system")
        return lines + super().apply(ctx, dry_run)

    @staticmethod
    def _keep(ctx: StepContext, credential: WorkerCredential) -> None:
        """Keep the credential until its 401 is seen: in memory, and in the OS keyring for a restart."""
        ctx.inputs.setdefault("revoked", {})[credential.worker] = credential
        if ctx.keyring is not None and ctx.keyring.usable():
            ctx.keyring.put(credential.worker, KEYRING_SLOT, credential)

    @staticmethod
    def _kept(ctx: StepContext, worker: str) -> WorkerCredential | None:
        kept: WorkerCredential | None = (ctx.inputs.get("revoked") or {}).get(worker)
        if kept is None and ctx.keyring is not None:
            kept = ctx.keyring.get(worker, KEYRING_SLOT)
        return kept

    def verify(self, ctx: StepContext) -> Check:
        left = [f"Secret {ctx.plan.kueue_namespace}/{w.secret_name}" for w in ctx.plan.workers
                if ctx.manager.get(SECRET, w.secret_name, ctx.plan.kueue_namespace) is not None]
        if left:
            return refuted("still present: " + ", ".join(left))
        evidence, problems, actions = ["every worker credential Secret is deleted from the manager"], [], []
        for wp in ctx.plan.workers:
            kept = self._kept(ctx, wp.name)
            bound = ledger_entry(ctx, wp.name).get("stored")
            if bound is None:
                check = refuted(f"revocation unproven: the manager notes no credential stored for worker {wp.name} "
                                f"({where()}), so no proof can say the deleted Secret's credential is revoked",
                                action=f"revoke worker {wp.name}'s credential in your identity system; this tool "
                                       "cannot tell which it was")
            else:
                check = prove_revoked(ctx, wp.name, kept, bound, admin=bool(wp.admin_context))
            evidence += check.evidence
            if check.ok:
                # the proof is on disk now: the credential is no longer needed (a read-only survey keeps it)
                if kept is not None and journal(ctx).persistent:
                    ctx.inputs.get("revoked", {}).pop(wp.name, None)
                    if ctx.keyring is not None and ctx.keyring.usable():
                        ctx.keyring.drop(wp.name, KEYRING_SLOT)
                continue
            problems.append(check.reason)
            if check.action:
                actions.append(check.action)
        return check_from(problems, tuple(dict.fromkeys(evidence)), action="; ".join(actions))
