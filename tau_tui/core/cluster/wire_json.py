"""JSON from the API server, decoded with orjson (in C, under half the standard library's time: a
watch event is decoded on an informer thread that shares the interpreter with the UI), and with
:mod:`json` where orjson refuses a document (an integer past 64 bits)."""

from __future__ import annotations

import json
from typing import Any

import orjson


def loads(data: bytes | bytearray | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
