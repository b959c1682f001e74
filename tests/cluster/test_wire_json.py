"""The API server's JSON is decoded in C (orjson), and what orjson refuses by the standard library."""

from __future__ import annotations

import json

from tau_tui.core.cluster import wire_json


def test_a_watch_event_decodes_as_the_standard_library_decodes_it():
    line = json.dumps({"type": "MODIFIED", "object": {"metadata": {"name": "wl", "resourceVersion": "7"},
                                                      "spec": {"priority": -3, "ratio": 0.5, "active": True, "x": None},
                                                      "status": {"conditions": [{"type": "Admitted", "message": "é ✓"}]}}})
    assert wire_json.loads(line.encode()) == json.loads(line)


def test_an_integer_past_64_bits_is_decoded_all_the_same():
    assert wire_json.loads(b'{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
