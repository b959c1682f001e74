"""JSON from the API server, decoded with orjson (in C, under half the standard library's time: a
watch event is decoded on an informer thread that shares the interpreter with the UI), and with
:mod:`json` where orjson refuses a document that json takes (a lone surrogate escape in a string).
Integers are exact up to 64 bits, as the API server's own decoding keeps them (past that it holds
a float64, and so does orjson)."""

from __future__ import annotations

import json
from typing import Any

import orjson


def loads(data: bytes | bytearray | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
