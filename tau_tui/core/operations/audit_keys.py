"""The per-user Ed25519 signing key of the audit log and evidence bundles, the public keys it
has had, and the audit log's recorded head (hash and count), all in one key store
(:mod:`audit_keystore`: the OS keyring, or 0600 files when there is none).

The key is created on first use.  A rotation keeps the old public key, marked retired at the time
of the signed audit entry that records the rotation, so old entries and bundles still verify
against it, but only what it signed before that time; a key rotated as compromised verifies
nothing.  Only fingerprints
(``SHA256:`` + base64 of the public key's SHA-256, as ssh prints them) are ever shown; the
private key leaves the store only to sign in memory.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau_tui.core.operations.audit_keystore import (
    KeyStore,
    KeyStoreError,
    open_store,
    say_where_a_new_key_went,
    store_lock,
)

if TYPE_CHECKING:  # cryptography loads at the first signature, not at the app's start
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

PRIVATE_SLOT = "signing-key"
PUBLIC_SLOT = "signing-public-keys"
HEAD_SLOT = "audit-head:"


def fingerprint(public_raw: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(public_raw).digest()).decode("ascii").rstrip("=")


def public_key_bytes(text: str) -> bytes | None:
    """A raw 32-byte Ed25519 public key from its base64 text, or None."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def signature_valid(public_raw: bytes, data: bytes, signature_b64: object) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if not isinstance(signature_b64, str):
        return False
    try:
        signature = base64.b64decode(signature_b64, validate=True)
        Ed25519PublicKey.from_public_bytes(public_raw).verify(signature, data)
    except (binascii.Error, ValueError, InvalidSignature):
        return False
    return True


@dataclass(frozen=True)
class Signer:
    private: Ed25519PrivateKey
    public_raw: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_raw)

    @property
    def public_b64(self) -> str:
        return base64.b64encode(self.public_raw).decode("ascii")

    def sign(self, data: bytes) -> str:
        return base64.b64encode(self.private.sign(data)).decode("ascii")

    def __repr__(self) -> str:  # never the private key
        return f"Signer({self.fingerprint})"


@dataclass(frozen=True)
class KnownKey:
    fingerprint: str
    public_raw: bytes
    created: str
    retired: str | None = None
    #: Rotated as compromised (`audit rotate-key --compromised`): it proves nothing any more.
    compromised: bool = False


def retirement_problem(key: KnownKey, signed_at: object) -> str:
    """Why ``key``'s signature made at ``signed_at`` (ISO 8601) proves nothing, or "": a key rotated
    as compromised proves nothing; a retired one only what it signed before its retirement (an
    unreadable time counts as after)."""
    if key.compromised:
        return (f"signed by key {key.fingerprint}, which was rotated as compromised at {key.retired}: "
                "nothing it signed proves anything")
    if key.retired and _after(signed_at, key.retired):
        shown = str(signed_at)[:40] if signed_at else "an unknown time"
        return (f"signed by key {key.fingerprint} at {shown}, after it was retired at {key.retired}: a retired key "
                "proves only what it signed before its retirement")
    return ""


def _after(at: object, retired: str) -> bool:
    try:
        return datetime.fromisoformat(str(at)) > datetime.fromisoformat(retired)
    except (TypeError, ValueError):
        return True


@dataclass(frozen=True)
class Head:
    hash: str
    count: int
    #: Set when a writer found the log not ending at the recorded head (cut, emptied or rewritten
    #: since the last write); kept in every later head, so appending does not hide it.
    note: str = ""
    #: The entry being written: recorded before its line, so a key store that fails after the
    #: line leaves a log that ends at the pending head, not one that reads as cut.
    pending_hash: str = ""
    pending_count: int = 0


def _signer_of(private: Ed25519PrivateKey) -> Signer:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return Signer(private, private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))


def _new_signer() -> Signer:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return _signer_of(Ed25519PrivateKey.generate())


def _private_text(signer: Signer) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    raw = signer.private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return base64.b64encode(raw).decode("ascii")


def _head_slot(path: Path) -> str:
    """The head's slot, by the log's absolute path as given, links not followed: a link put in the
    log's place is looked up under the log's own head (and refused), never under its target's."""
    return HEAD_SLOT + os.path.abspath(path)


class SigningKeys:
    """The user's signing key, its public history and the audit heads in one key store."""

    def __init__(self, directory: Path, store: KeyStore | None = None, clock: Any = None) -> None:
        self.directory = directory  # the file fallback and the cross-process lock
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))

    @property
    def store(self) -> KeyStore:
        if self._store is None:
            self._store = open_store(self.directory)
        return self._store

    def current(self) -> Signer | None:
        """The signing key if one exists (never creates one)."""
        text = self.store.get(PRIVATE_SLOT)
        if not text:
            return None
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        try:
            private = Ed25519PrivateKey.from_private_bytes(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            raise KeyStoreError(f"the signing key in {self.store.where} is not an Ed25519 key") from None
        return _signer_of(private)

    def signer(self) -> Signer:
        """The signing key, created and stored on first use."""
        existing = self.current()
        if existing is not None:
            return existing
        with store_lock(self.directory):
            existing = self.current()  # another process may have made it meanwhile
            if existing is not None:
                return existing
            signer = _new_signer()
            self._remember(signer, retire=None)
            self.store.put(PRIVATE_SLOT, _private_text(signer))
            say_where_a_new_key_went(self.store)
            return signer

    def rotate(self, at: str | None = None, compromised: bool = False) -> tuple[Signer, Signer]:
        """A new signing key replaces the current one, whose public key is kept, retired at ``at``
        (the time of the audit entry that records the rotation), or marked compromised."""
        old = self.signer()
        with store_lock(self.directory):
            new = _new_signer()
            self._remember(new, retire=old.fingerprint, at=at, compromised=compromised)
            self.store.put(PRIVATE_SLOT, _private_text(new))
        return old, new

    def known(self) -> dict[str, KnownKey]:
        """Every public key this user has signed with, by fingerprint (current and retired)."""
        text = self.store.get(PUBLIC_SLOT)
        if not text:
            return {}
        try:
            doc = json.loads(text)
        except ValueError:
            raise KeyStoreError(f"the public key list in {self.store.where} is not JSON") from None
        keys: dict[str, KnownKey] = {}
        for fp, entry in (doc.items() if isinstance(doc, dict) else []):
            raw = public_key_bytes(str(entry.get("public", ""))) if isinstance(entry, dict) else None
            if raw is not None and fingerprint(raw) == fp:
                keys[fp] = KnownKey(fp, raw, str(entry.get("created", "")), entry.get("retired"),
                                    entry.get("compromised") is True)
        return keys

    def _remember(self, signer: Signer, retire: str | None, at: str | None = None, compromised: bool = False) -> None:
        """Add the public key to the list (caller holds the store lock)."""
        now = self._clock().isoformat()
        doc: dict[str, dict[str, Any]] = {
            k.fingerprint: {"public": base64.b64encode(k.public_raw).decode("ascii"), "created": k.created,
                            "retired": k.retired, **({"compromised": True} if k.compromised else {})}
            for k in self.known().values()}
        if retire is not None and retire in doc:
            doc[retire]["retired"] = at or now
            if compromised:
                doc[retire]["compromised"] = True
        doc[signer.fingerprint] = {"public": signer.public_b64, "created": now, "retired": None}
        self.store.put(PUBLIC_SLOT, json.dumps(doc, sort_keys=True))

    def head(self, path: Path) -> Head | None:
        text = self.store.get(_head_slot(path))
        if not text:
            return None
        try:
            doc = json.loads(text)
            head = Head(str(doc["hash"]), int(doc["count"]), str(doc.get("note") or ""),
                        str(doc.get("pendingHash") or ""), int(doc.get("pendingCount") or 0))
        except (ValueError, KeyError, TypeError):
            raise KeyStoreError(f"the audit head for {path} in {self.store.where} is not readable") from None
        return head

    def set_head(self, path: Path, head: Head) -> None:
        doc: dict[str, Any] = {"hash": head.hash, "count": head.count}
        if head.note:
            doc["note"] = head.note
        if head.pending_hash:
            doc["pendingHash"], doc["pendingCount"] = head.pending_hash, head.pending_count
        self.store.put(_head_slot(path), json.dumps(doc))
