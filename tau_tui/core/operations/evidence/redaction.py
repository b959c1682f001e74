"""Redaction of what goes into an evidence record: the audit log's rules, plus environment lists.

Strings go through the audit log's :func:`~tau_tui.core.operations.audit.redact` (bearer tokens,
``password=...``, private keys); values under credential-like keys are blanked; and a container's
``env`` is a list of ``{name, value}`` items, where the credential-like word is in ``name`` and the
secret in ``value``, so those values are blanked too.  A ``secretKeyRef`` (a reference, no secret)
is kept: it says which Secret the run read.
"""

from __future__ import annotations

import re
from typing import Any

from tau_tui.core.operations.audit import redact

_SECRET_NAME = re.compile(r"(?i)token|password|passwd|secret|api[_-]?key|private[_-]?key|credential|authorization")
REDACTED = "<redacted>"


def redact_object(value: Any) -> Any:
    """A JSON-able object (a manifest, a status) with credentials removed."""
    if isinstance(value, dict):
        name = value.get("name")
        if isinstance(name, str) and "value" in value and _SECRET_NAME.search(name):
            value = {**value, "value": REDACTED}
        return {str(k): REDACTED if _SECRET_NAME.search(str(k)) and not isinstance(v, (dict, list)) else redact_object(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_object(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


def redact_text(text: str) -> str:
    """Free text (a tau.yaml, a log) with credentials removed, line by line."""
    return "\n".join(redact(line) for line in text.split("\n"))
