"""The simulated cluster's (``--demo``) own audit log and signing key, apart from the user's.

What is done to the simulated cluster is audited and its evidence signed, but never into the
user's real audit log nor with the user's real key: the demo's key is kept in 0600 files (it needs
no OS keyring, and it proves nothing about a real cluster on purpose), and a bundle it signs is
marked as the demo's and verifies only with ``tau-tui evidence verify --demo``.
"""

from __future__ import annotations

from pathlib import Path

from tau_tui.core.operations.audit import AUDIT_FILE, AuditLog, state_dir
from tau_tui.core.operations.audit_keys import SigningKeys
from tau_tui.core.operations.audit_keystore import FileStore

DEMO_DIR = "demo"
DEMO_WARNING = ("DEMO: checked against the simulated cluster's own key (files under the state directory): it "
                "proves nothing about a real cluster")


def demo_state_dir() -> Path:
    return state_dir() / DEMO_DIR


def demo_keys() -> SigningKeys:
    directory = demo_state_dir() / "keys"
    return SigningKeys(directory, FileStore(directory, "the simulated cluster's own key", DEMO_WARNING, announce=False))


def demo_audit_log(source: str = "app") -> AuditLog:
    return AuditLog(demo_state_dir() / AUDIT_FILE, source=source, keys=demo_keys())


def audit_log_for(demo: bool, source: str) -> AuditLog:
    """The audit log a command writes: the demo's own for ``--demo``, else the user's."""
    return demo_audit_log(source) if demo else AuditLog(source=source)
