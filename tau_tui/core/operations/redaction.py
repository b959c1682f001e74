"""The one redactor for everything the app keeps: session recordings, evidence records and the audit log.

:data:`TEXT_PATTERNS` is the table of secret forms in free text (each with an example the tests
run); :data:`SECRET_KEY` and :data:`SECRET_ENV_NAME` say which object keys and which
``{name, value}`` items (a container's ``env``) hold a secret.  :func:`redact_object` walks a
JSON-able object: values under secret keys and secret env names are blanked, a ``--password X``
flag in an argument list loses ``X``, a string holding JSON (``last-applied-configuration``) is
redacted as an object, and every other string goes through :func:`redact`.  A ``secretKeyRef``
(a reference, no secret) is kept: it says which Secret the run read.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

REDACTED = "<redacted>"

#: Words that make a key, a flag or an env name a credential (matched anywhere, any case).
_SECRET_WORDS = (r"token|passw(?:or)?d|secret|api[_-]?key|private[_-]?key|client[_-]?key(?:[_-]?data)?|access[_-]?key"
                 r"|credential|authorization")
#: Environment-style names that end in a credential word: ``NGC_KEY``, ``GITHUB_PAT``; and the
#: submitted files (``TAU_PAYLOAD``, base64 of the user's scripts, which may hold anything).
_ENV_STYLE = r"[A-Z][A-Z0-9_]*_(?:KEY|PAT|PASS|PWD)(?:_ID)?|TAU_PAYLOAD"

SECRET_KEY = re.compile(rf"(?i:{_SECRET_WORDS})|^(?:{_ENV_STYLE})$")
SECRET_ENV_NAME = SECRET_KEY
#: An argument that takes the next one as a secret: ``--password``, ``--api-key``, ``-token``.
SECRET_FLAG = re.compile(rf"^--?[\w.-]*(?i:{_SECRET_WORDS})[\w.-]*$")

_NAME = rf"(?:[\w.-]*(?i:{_SECRET_WORDS})[\w.-]*|\b(?:{_ENV_STYLE})\b)"
_JSON_STRING = r"\"(?:[^\"\\]|\\.)*\""


@dataclass(frozen=True)
class TextPattern:
    """One secret form in free text: what replaces it, and an example whose ``secret`` must go."""

    name: str
    regex: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]
    example: str
    secret: str


TEXT_PATTERNS: tuple[TextPattern, ...] = (
    TextPattern("private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
                lambda m: "<redacted private key>",
                "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA"),
    TextPattern("bearer or basic authorization", re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"),
                lambda m: f"{m.group(1)} {REDACTED}", "Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.abc", "eyJhbGciOiJSUzI1NiJ9"),
    TextPattern("credentials in a URL", re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@?#'\"<>]+@"),
                lambda m: f"{m.group(1)}{REDACTED}@", "dial https://admin:hunter2@10.0.0.1:6443: refused", "hunter2"),
    TextPattern("env item in JSON, name first",
                re.compile(rf"(\"name\"\s*:\s*\"{_NAME}\"\s*,\s*\"value\"\s*:\s*){_JSON_STRING}"),
                lambda m: f'{m.group(1)}"{REDACTED}"', '{"env":[{"name":"HF_TOKEN","value":"hf_abcdef"}]}', "hf_abcdef"),
    TextPattern("env item in JSON, value first",
                re.compile(rf"(\"value\"\s*:\s*){_JSON_STRING}(\s*,\s*\"name\"\s*:\s*\"{_NAME}\")"),
                lambda m: f'{m.group(1)}"{REDACTED}"{m.group(2)}', '{"value":"nvapi-xyz","name":"NGC_KEY"}', "nvapi-xyz"),
    TextPattern("credential field in JSON",
                re.compile(rf"(\"(?:[^\"]*(?i:{_SECRET_WORDS})[^\"]*|{_ENV_STYLE})\"\s*:\s*)({_JSON_STRING}|[^,}}\s]+)"),
                lambda m: f'{m.group(1)}"{REDACTED}"', '{"clientSecret": "s3cr3t-value", "ok": 1}', "s3cr3t-value"),
    TextPattern("credential flag and its argument", re.compile(rf"(\s|^)(--?{_NAME})(\s+)(?![-<])(\"[^\"]*\"|'[^']*'|\S+)"),
                lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}", "python train.py --password hunter2 --epochs 3",
                "hunter2"),
    TextPattern("credential key and value", re.compile(rf"({_NAME})(\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|\S+)"),
                lambda m: m.group(0) if m.group(3).startswith(('"<redacted>', "<redacted")) else f"{m.group(1)}{m.group(2)}{REDACTED}",
                "export AWS_ACCESS_KEY_ID=AKIAEXAMPLE GITHUB_PAT=ghp_abc", "AKIAEXAMPLE"),
)

#: Every form above has one of these: a string without any is left as it is, unscanned (a
#: session recording redacts whole cluster snapshots).
_MAYBE_SECRET = re.compile(rf"(?i:{_SECRET_WORDS}|passw|private|authoriz|bearer|basic)|_(?:KEY|PAT|PASS|PWD)|TAU_PAYLOAD"
                           r"|://[^\s/@]*@")
#: Keys and short values repeat across objects: their answers are remembered.
_MEMO_LENGTH = 200


def redact(text: str) -> str:
    """``text`` with credentials replaced by ``<redacted>`` (free text and JSON alike)."""
    if not _MAYBE_SECRET.search(text):
        return text
    for pattern in TEXT_PATTERNS:
        text = pattern.regex.sub(pattern.replace, text)
    return text


def redact_text(text: str) -> str:
    """Free text (a tau.yaml, a log) with credentials removed: private key blocks whole, the rest
    line by line (a ``key:`` at a line's end never takes the next line)."""
    private_key = TEXT_PATTERNS[0]
    text = private_key.regex.sub(private_key.replace, text)
    return "\n".join(redact(line) for line in text.split("\n"))


def redact_object(value: Any, *, blank_containers: bool = False) -> Any:
    """A JSON-able object (a manifest, a status) with credentials removed.

    ``blank_containers`` also blanks lists and mappings under a secret key whole (an identity's
    ``extra``); otherwise they are walked, so a ``secretKeyRef`` keeps the Secret's name."""
    if isinstance(value, dict):
        name = value.get("name")
        if isinstance(name, str) and "value" in value and _secret_name(name):
            value = {**value, "value": REDACTED}
        return {str(k): REDACTED if _secret_name(str(k)) and (blank_containers or not isinstance(v, (dict, list)))
                else redact_object(v, blank_containers=blank_containers) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out = [redact_object(v, blank_containers=blank_containers) for v in value]
        for i in range(len(out) - 1):
            if isinstance(value[i], str) and isinstance(value[i + 1], str) and _secret_flag(value[i]):
                out[i + 1] = REDACTED
        return out
    if isinstance(value, str):
        if value[:1] in ("{", "[") and _MAYBE_SECRET.search(value):
            return _redacted_json(value, blank_containers)
        if len(value) <= _MEMO_LENGTH:
            return _redacted_short(value)
        return redact(value)
    return value


def redact_value(value: Any) -> Any:
    """The audit log's form of :func:`redact_object`: anything under a secret key goes whole."""
    return redact_object(value, blank_containers=True)


def _redacted_json(text: str, blank_containers: bool) -> str:
    """A string holding JSON (``kubectl.kubernetes.io/last-applied-configuration``) redacted as an object."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return redact(text)
    redacted = redact_object(parsed, blank_containers=blank_containers)
    return text if redacted == parsed else json.dumps(redacted, separators=(",", ":")) + ("\n" if text.endswith("\n") else "")


@functools.lru_cache(maxsize=8192)
def _secret_name(key: str) -> bool:
    return SECRET_KEY.search(key) is not None


@functools.lru_cache(maxsize=8192)
def _secret_flag(argument: str) -> bool:
    return SECRET_FLAG.match(argument) is not None


@functools.lru_cache(maxsize=65536)
def _redacted_short(text: str) -> str:
    return redact(text)
