"""The signature of an evidence bundle's manifest: ``MANIFEST.sig`` holds the signer's
fingerprint, public key and an Ed25519 signature of ``MANIFEST.json``'s bytes, made with the
user's signing key (``audit_keys``).  The manifest names the same fingerprint, so a bundle
re-signed by someone else either fails the signature or names another signer.

Which signer is accepted: the one given with ``--key`` (fingerprint or base64 public key), or
else any key in the user's own key store.  A key the user retired proves only bundles of records
captured before its retirement, and one rotated as compromised proves nothing (``--key`` too, when
the store knows the key).  An unsigned bundle (format v1) proves nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tau_tui.core.operations.audit_keys import (
    KnownKey,
    Signer,
    fingerprint,
    public_key_bytes,
    retirement_problem,
    signature_valid,
)

SIGNATURE_NAME = "MANIFEST.sig"
MAX_SIGNATURE_BYTES = 4096


def signature_document(manifest: bytes, signer: Signer) -> bytes:
    doc = {"key": signer.fingerprint, "publicKey": signer.public_b64, "signature": signer.sign(manifest)}
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def expected_fingerprint(key: str) -> str | None:
    """The fingerprint ``--key`` names (a ``SHA256:`` fingerprint or a base64 public key), or None."""
    key = key.strip()
    if key.startswith("SHA256:"):
        return key
    raw = public_key_bytes(key)
    return fingerprint(raw) if raw is not None else None


@dataclass
class SignatureCheck:
    #: The fingerprint the bundle says signed it ("" when unsigned or unreadable).
    signed_by: str = ""
    #: Why the signature does not prove the manifest, or "" when it does.
    problem: str = ""
    #: True for a bundle without any signature (format v1).
    unsigned: bool = False
    #: How the signer was accepted: "your key", "the key you named".
    trusted_as: str = ""


def check_signature(raw_signature: bytes | None, raw_manifest: bytes, manifest: dict[str, Any],
                    expected_key: str | None, known: dict[str, KnownKey] | None, signed_at: object) -> SignatureCheck:
    """Check the signature and who made it: the key named by ``expected_key``, else one of ``known``
    (the user's keys; None: they could not be read), and a retired key only for a bundle made
    (``signed_at``: its record's capture time) before its retirement, a compromised one never."""
    check = SignatureCheck()
    if raw_signature is None:
        check.unsigned = True
        check.problem = ("unsigned: cannot prove the manifest was not recomputed or that you wrote it "
                         "(a bundle made before bundles were signed)")
        return check
    try:
        doc = json.loads(raw_signature.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        doc = None
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), str) for k in ("key", "publicKey", "signature")):
        check.problem = f"{SIGNATURE_NAME} is not a signature document (key, publicKey, signature)"
        return check
    raw_public = public_key_bytes(doc["publicKey"])
    if raw_public is None or fingerprint(raw_public) != doc["key"]:
        check.problem = f"{SIGNATURE_NAME}: the public key does not match its fingerprint"
        return check
    check.signed_by = doc["key"]
    signer = manifest.get("signer")
    if not isinstance(signer, dict) or signer.get("key") != check.signed_by:
        check.problem = f"the manifest does not name the key of {SIGNATURE_NAME} ({check.signed_by}) as its signer"
        return check
    if not signature_valid(raw_public, raw_manifest, doc["signature"]):
        check.problem = ("signature does not match the manifest: it was recomputed or edited after "
                         f"{check.signed_by} signed it")
        return check
    if expected_key is not None:
        wanted = expected_fingerprint(expected_key)
        if wanted is None:
            check.problem = "--key is neither a SHA256: fingerprint nor a base64 Ed25519 public key"
            return check
        if wanted != check.signed_by:
            check.problem = f"signed by another key: {check.signed_by}, not the key you named ({wanted})"
            return check
        check.trusted_as = "the key you named"
    elif known is None or check.signed_by not in known:
        check.problem = (f"signed by another key: {check.signed_by}, which is not one of yours; if you expect "
                         "it, confirm the fingerprint with its owner and pass --key")
        return check
    else:
        check.trusted_as = "your key" if not known[check.signed_by].retired else "your retired key"
    own = (known or {}).get(check.signed_by)
    if own is not None:
        check.problem = retirement_problem(own, signed_at)
    return check
