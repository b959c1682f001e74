"""The manager's own note of which worker credential it last stored: what a revocation proof binds to.

A 401 proves that *one* credential no longer works.  Which one a step must prove revoked is a fact
about the manager, not about this machine's records: setup step 1 stores a credential, rotation step 2
replaces it, a drain's step 5 deletes it, from whatever machine and records directory.  Each writes the
SHA-256 fingerprint (never the credential) of what it stored, replaced or deleted onto
``TauCluster/cluster``, annotation :data:`LEDGER_ANNOTATION`, a JSON object per worker:

    {"worker-1": {"stored": "sha256:…", "replaced": "sha256:…"}}

``stored`` is the credential the worker's Secret holds (or held, when a drain deleted it); ``replaced``
the one the last rotation took out.  The Secret carries the same fingerprint (annotation
``tau.azure.com/credential-fingerprint``) while it exists.  A recorded 401 verifies only when its
fingerprint is the one this ledger names, so a proof about an earlier credential, or one from
another machine's setup, proves nothing about the credential stored since."""

from __future__ import annotations

import json
from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.engine import Change, Refused, StepContext

R = ResourceKind
LEDGER_ANNOTATION = "tau.azure.com/multikueue-credentials"
#: The Secret's own note of the fingerprint it holds (for the reader; the ledger is what proofs bind to).
FINGERPRINT_ANNOTATION = "tau.azure.com/credential-fingerprint"


class LedgerUnreadable(Refused):
    """The annotation is not what this module writes: no proof can bind to it (the step is refused)."""


def read_ledger(tc: dict[str, Any] | None) -> dict[str, dict[str, str]]:
    """Per worker, the fingerprints the manager noted; {} when TauCluster/cluster has none.  Raises
    :class:`LedgerUnreadable` when the annotation is not the JSON this module writes (fail closed)."""
    raw = (((tc or {}).get("metadata") or {}).get("annotations") or {}).get(LEDGER_ANNOTATION)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise LedgerUnreadable(f"TauCluster/cluster annotation {LEDGER_ANNOTATION} is not a JSON object of workers: "
                               "the manager's note of its stored credentials cannot be read")
    return {str(w): {str(k): str(v) for k, v in entry.items() if isinstance(v, str)} for w, entry in value.items()}


def ledger_entry(ctx: StepContext, worker: str) -> dict[str, str]:
    """What the manager noted for ``worker`` ({} when nothing)."""
    return read_ledger(ctx.manager.get(R.TAU_CLUSTER.type, "cluster")).get(worker, {})


def ledger_change(ctx: StepContext, entries: dict[str, dict[str, str]]) -> Change:
    """Patch TauCluster/cluster so the ledger notes ``entries`` (whole entries per worker; others kept)."""
    tc = ctx.manager.get(R.TAU_CLUSTER.type, "cluster")
    try:
        current = read_ledger(tc)
    except LedgerUnreadable:
        current = {}  # rewritten whole, from what this step stores
    merged = {**current, **entries}
    return Change("patch", R.TAU_CLUSTER.type, "cluster", None,
                  {"metadata": {"annotations": {LEDGER_ANNOTATION: json.dumps(merged, sort_keys=True)}}})


def where() -> str:
    return f"TauCluster/cluster annotation {LEDGER_ANNOTATION}"
