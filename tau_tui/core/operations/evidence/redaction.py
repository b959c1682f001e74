"""Redaction of what goes into an evidence record: the audit log's rules, plus environment lists.

Strings go through the audit log's :func:`~tau_tui.core.operations.audit.redact` (bearer tokens,
``password=...``, private keys); values under credential-like keys are blanked; and a container's
``env`` is a list of ``{name, value}`` items, where the credential-like word is in ``name`` and the
secret in ``value``, so those values are blanked too.  A ``secretKeyRef`` (a reference, no secret)
is kept: it says which Secret the run read.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from tau_tui.core.operations.audit import redact

_SECRET_NAME = re.compile(r"(?i)token|password|passwd|secret|api[_-]?key|private[_-]?key|credential|authorization")
#: Every word :func:`redact` looks for: a string without one is left as it is, unscanned (a session
#: recording redacts whole cluster snapshots).
_MAYBE_SECRET = re.compile(r"(?i)token|passw|secret|api[_-]?key|private|credential|authoriz|bearer|basic|client[_-]?key")
REDACTED = "<redacted>"


def redact_object(value: Any) -> Any:
    """A JSON-able object (a manifest, a status) with credentials removed."""
    if isinstance(value, dict):
        name = value.get("name")
        if isinstance(name, str) and "value" in value and _secret_name(name):
            value = {**value, "value": REDACTED}
        return {str(k): REDACTED if _secret_name(str(k)) and not isinstance(v, (dict, list)) else redact_object(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_object(v) for v in value]
    if isinstance(value, str):
        if len(value) <= _MEMO_LENGTH:
            return _redacted_short(value)
        return redact(value) if _MAYBE_SECRET.search(value) else value
    return value


#: Keys and short values repeat across objects (a session recording redacts whole cluster
#: snapshots): their answers are remembered.
_MEMO_LENGTH = 200


@functools.lru_cache(maxsize=8192)
def _secret_name(key: str) -> bool:
    return _SECRET_NAME.search(key) is not None


@functools.lru_cache(maxsize=65536)
def _redacted_short(text: str) -> str:
    return redact(text) if _MAYBE_SECRET.search(text) else text


def redact_text(text: str) -> str:
    """Free text (a tau.yaml, a log) with credentials removed, line by line."""
    return "\n".join(redact(line) for line in text.split("\n"))
