"""`audit verify|key|rotate-key|start-over`: check the audit log's signed hash chain and its
recorded head, show the signing key's fingerprint, replace the key (itself an audit entry;
``--compromised`` when it may have been read), or begin a new log after the old one was moved aside.

``verify`` exits 0 only when the log is intact against the OS keyring; 4 when it is intact against
key files (``TAU_TUI_ALLOW_FILE_KEY_STORE=1``), which anyone running as the user can replace; 1 when
it is not intact, or no trust store is usable."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .parser import EXIT_FAILED, EXIT_NOT_VERIFIED, EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    from ..core.operations.audit import default_audit_path
    from ..core.operations.audit_keystore import KeyStoreError

    path = Path(args.file) if getattr(args, "file", None) else default_audit_path()
    try:
        if args.audit_command == "key":
            return _key()
        if args.audit_command == "rotate-key":
            return _rotate(path, getattr(args, "compromised", False))
        if args.audit_command == "start-over":
            return _start_over(path)
        return _verify(path)
    except KeyStoreError as err:
        print(f"tau-tui: key store: {err}", file=sys.stderr)
        return EXIT_FAILED


def _verify(path: Path) -> int:
    from ..core.operations.audit import verify
    from ..core.operations.audit_keystore import KeyStoreError
    from ..core.runconfig.diagnostics import escape_control

    try:
        result = verify(path)
    except KeyStoreError:
        raise
    except OSError as err:
        print(f"tau-tui: cannot read audit log {path}: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILED
    print(escape_control(result.summary()), file=sys.stdout if result.ok else sys.stderr)
    if result.ok and result.anchor_warning:
        print(escape_control(f"tau-tui: not verified against the OS keyring: {result.anchor_warning}"), file=sys.stderr)
        return EXIT_NOT_VERIFIED
    return EXIT_OK if result.ok else EXIT_FAILED


def _key() -> int:
    from ..core.operations.audit import keys_dir
    from ..core.operations.audit_keys import SigningKeys

    keys = SigningKeys(keys_dir())
    signer = keys.signer()
    print(f"signing key {signer.fingerprint} (Ed25519, kept in {keys.store.where})")
    print(f"public key  {signer.public_b64}")
    for known in keys.known().values():
        if known.retired:
            print(f"retired     {known.fingerprint} (retired {known.retired})")
    return EXIT_OK


def _rotate(path: Path, compromised: bool) -> int:
    from ..core.operations.audit import AuditLog
    from ..core.operations.audit_keystore import KeyStoreError

    try:
        old, new = AuditLog(path, source="cli").rotate_key(compromised=compromised)
    except KeyStoreError:
        raise
    except OSError as err:
        print(f"tau-tui: cannot write audit log {path}: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILED
    if compromised:
        print(f"signing key rotated: {old} -> {new} (recorded in {path}); {old} is marked compromised: nothing it "
              "signed verifies any more, so move this log aside, run `tau-tui audit start-over` and export the "
              "evidence you need again")
    else:
        print(f"signing key rotated: {old} -> {new} (recorded in {path}); entries and bundles {old} signed before "
              "now still verify, nothing it signs later does")
    return EXIT_OK


def _start_over(path: Path) -> int:
    from ..core.operations.audit import AuditLog
    from ..core.operations.audit_keystore import KeyStoreError

    try:
        old = AuditLog(path, source="cli").start_over()
    except KeyStoreError:
        raise
    except OSError as err:
        print(f"tau-tui: {err}", file=sys.stderr)
        return EXIT_FAILED
    if old is not None:
        print(f"the log moved aside ended at {old.count} entries, head {old.hash}: keep that with it")
    print(f"{path}: a new signed log begins")
    return EXIT_OK
