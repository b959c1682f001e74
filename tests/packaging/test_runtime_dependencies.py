"""What the app needs at run time is in its runtime dependencies, not only in the test extras
(issue #44, item 16): signing the audit log and evidence bundles needs `cryptography`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].strip().lower() for r in requirements}


def test_signing_needs_cryptography_at_run_time():
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    assert "cryptography" in _names(project["dependencies"])
    from tau_tui.core.operations import audit_keys

    source = Path(audit_keys.__file__).read_text()
    assert "from cryptography" in source  # the module that signs needs it
