"""How a tau.yaml value reads in a Compose field, and how a field's text becomes a value again.

The two are inverse for every value a field can write: typed, written to the file and read back,
a value shows as it was typed (up to the spaces around commas).  Text that cannot become a value
of its field's kind is an :class:`EntryError` that names the bad part; nothing is guessed (a
duplicated KEY would drop one of the user's entries, ``007`` in a number field is not 7).
No Textual here: the document compares values through :func:`field_text` too."""

from __future__ import annotations

import re
from typing import Any

#: field kinds: text, int, list ("a, b"), map ("KEY=value, KEY2=value")
FIELD_KINDS = ("text", "int", "list", "map")
_WHOLE_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)")


class EntryError(ValueError):
    """A field's text cannot become a value (shown under the field; the file is left alone)."""


def field_text(value: Any) -> str:
    """What a field shows for ``value`` (None: an empty field)."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(field_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={field_text(v)}" for k, v in value.items())
    return str(value)


def parse_key_values(raw: str) -> dict[str, str]:
    """``KEY=value, OTHER=value`` → dict; raises :class:`EntryError` naming a bad entry."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise EntryError(f"{part!r} is not KEY=value; write entries as KEY=value, separated by commas")
        if key.strip() in out:
            raise EntryError(f"{key.strip()} is given twice; keep one KEY=value for it")
        out[key.strip()] = value.strip()
    return out


def parse_field_text(kind: str, raw: str) -> Any:
    """The value a field of ``kind`` holds when it shows ``raw`` (None: the key is removed).
    A number field keeps text that is not a plain whole number as text: validation names it."""
    text = raw.strip()
    if not text:
        return None
    if kind == "int":
        return int(text) if _WHOLE_NUMBER.fullmatch(text) else text
    if kind == "list":
        return [part.strip() for part in text.split(",") if part.strip()] or None
    if kind == "map":
        return parse_key_values(text) or None
    return text
