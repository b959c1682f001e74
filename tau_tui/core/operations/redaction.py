"""The one redactor for everything the app keeps: session recordings, evidence records and the audit log.

By structure first (:func:`redact_object`), so that whole classes of values never reach a file,
whatever their names: every environment value (a container's ``env`` items, a probe's
``httpHeaders``, a RayJob's ``runtimeEnvYAML`` ``env_vars``) keeps only its name, a Secret keeps
only the names of its ``data`` and ``stringData``, a string holding JSON (the
``last-applied-configuration`` annotation) is parsed and redacted as an object, values under
credential-like keys are blanked, and a ``--password X`` flag in an argument list loses ``X``.
A ``secretKeyRef`` (a reference, no secret) is kept: it says which Secret the run read.
:func:`redact_yaml_values` does the same for env mappings in a YAML file's text (a tau.yaml).

Then by pattern, for free text (log lines, messages, every other string): :data:`TEXT_PATTERNS`
is the table of secret forms (each with an example the tests run).  Patterns catch only the forms
they know: a secret in free text with no recognisable shape or name before it is kept.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

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
#: Shapes of well-known tokens, whatever stands before them: GitHub, GitLab, Slack, AWS access key
#: ids, Hugging Face, OpenAI-style, NGC, and JSON Web Tokens.
_TOKEN_SHAPES = (r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
                 r"|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}|hf_[A-Za-z0-9]{20,}"
                 r"|sk-[A-Za-z0-9_-]{20,}|nvapi-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")


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
    TextPattern("credentials in a URL, password with / # ?",  # the last @ of the URL ends them (AWS keys hold /)
                re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s:/@'\"<>]*:[^\s'\"<>]*@(?=[^\s@'\"<>]*(?:[\s'\"<>]|$))"),
                lambda m: f"{m.group(1)}{REDACTED}@", "s3://AKIAEXAMPLE:wJalr/K7MDENG#bPx?RfiCY@bucket/key",
                "wJalr/K7MDENG#bPx?RfiCY"),
    TextPattern("credentials in a URL", re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@?#'\"<>]+@"),
                lambda m: f"{m.group(1)}{REDACTED}@", "dial https://admin:hunter2@10.0.0.1:6443: refused", "hunter2"),
    TextPattern("authorization header, any scheme",
                re.compile(r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*)(?:([a-z][\w.-]*)\s+)?([^\s'\"]+)"),
                lambda m: f"{m.group(1)}{REDACTED}",
                "curl -H 'Authorization: token ghp_abcdefghij0123456789'", "ghp_abcdefghij0123456789"),
    TextPattern("user:password after -u or --user",
                re.compile(r"(\s|^)(-u\s*|--(?:proxy-)?user[=\s]\s*)(['\"]?)([^\s:'\"]+):([^\s'\"]+)"),
                lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{m.group(4)}:{REDACTED}",
                "curl -u admin:s3cretPw https://registry.example/v2/", "s3cretPw"),
    TextPattern("well-known token shapes", re.compile(rf"\b(?:{_TOKEN_SHAPES})"), lambda m: REDACTED,
                "the run printed hf_abcdefghijklmnopqrstuv0123 by mistake", "hf_abcdefghijklmnopqrstuv0123"),
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
                           r"|://\S*@|(?:^|\s)-u|--(?:proxy-)?user"
                           r"|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|AKIA|ASIA|hf_|sk-|nvapi-|eyJ")
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


#: Keys whose ``{name, value}`` items keep only the name (and ``valueFrom``, a reference).
_NAME_ONLY_ITEMS = frozenset({"env", "httpHeaders"})


def redact_object(value: Any, *, blank_containers: bool = False) -> Any:
    """A JSON-able object (a manifest, a status) with credentials removed: by structure (env values,
    Secret data, JSON in strings), then by pattern for every other string.

    ``blank_containers`` also blanks lists and mappings under a secret key whole (an identity's
    ``extra``); otherwise they are walked, so a ``secretKeyRef`` keeps the Secret's name."""
    if isinstance(value, dict):
        if value.get("kind") == "Secret":
            value = {**value, **{k: dict.fromkeys(v, REDACTED) for k in ("data", "stringData")
                                 if isinstance(v := value.get(k), dict)}}
        name = value.get("name")
        if isinstance(name, str) and "value" in value and _secret_name(name):
            value = {**value, "value": REDACTED}
        out: dict[str, Any] = {}
        for key, item in value.items():
            key = str(key)
            if _secret_name(key) and (blank_containers or not isinstance(item, (dict, list))):
                out[key] = REDACTED
            elif key in _NAME_ONLY_ITEMS and isinstance(item, list):
                out[key] = [_name_only(entry, blank_containers) for entry in item]
            elif key == "runtimeEnvYAML" and isinstance(item, str):
                out[key] = _redacted_runtime_env(item)
            else:
                out[key] = redact_object(item, blank_containers=blank_containers)
        return out
    if isinstance(value, (list, tuple)):
        out_list = [redact_object(v, blank_containers=blank_containers) for v in value]
        for i in range(len(out_list) - 1):
            if isinstance(value[i], str) and isinstance(value[i + 1], str) and _secret_flag(value[i]):
                out_list[i + 1] = REDACTED
        return out_list
    if isinstance(value, str):
        if value[:1] in ("{", "["):  # JSON in a string (last-applied-configuration): by structure too
            return _redacted_json(value, blank_containers)
        if len(value) <= _MEMO_LENGTH:
            return _redacted_short(value)
        return redact(value)
    return value


def _name_only(entry: Any, blank_containers: bool) -> Any:
    """An env item (or HTTP header) without its value: the name and any ``valueFrom`` stay."""
    if not isinstance(entry, dict):
        return redact_object(entry, blank_containers=blank_containers)
    kept = redact_object({k: v for k, v in entry.items() if k != "value"}, blank_containers=blank_containers)
    return {**kept, "value": REDACTED} if "value" in entry else kept


def _redacted_runtime_env(text: str) -> str:
    """A RayJob's ``runtimeEnvYAML`` with its ``env_vars`` values blanked (whole, if it is not YAML)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return REDACTED
    if not isinstance(doc, dict):
        return redact(text)
    if isinstance(doc.get("env_vars"), dict):
        doc = {**doc, "env_vars": dict.fromkeys(doc["env_vars"], REDACTED)}
    return yaml.safe_dump(redact_object(doc), sort_keys=True)


def redact_yaml_values(text: str, paths: Sequence[tuple[str, ...]]) -> str | None:
    """``text`` (one YAML document) with every value of the mappings at ``paths`` (``("runtime",
    "env")``) replaced by ``'<redacted>'``, everything else byte for byte, then the free-text
    patterns; None when it is not YAML (the values could not be found, so nothing is kept)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    spans: list[tuple[int, int]] = []
    for path in paths:
        node = root
        for key in path:
            node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None) \
                if isinstance(node, yaml.MappingNode) else None
        if isinstance(node, yaml.MappingNode):
            spans += [(v.start_mark.index, v.end_mark.index) for _, v in node.value]
    for start, end in sorted(spans, reverse=True):
        span = text[start:end]
        text = text[:start] + f"'{REDACTED}'" + span[len(span.rstrip("\r\n")):] + text[end:]  # a block scalar's line end stays
    return redact_text(text)


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
