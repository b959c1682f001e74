"""The API server's JSON is decoded in C (orjson), and what orjson refuses but json takes by json."""

from __future__ import annotations

import json

from tau_tui.core.cluster import wire_json


def test_a_watch_event_decodes_as_the_standard_library_decodes_it():
    line = json.dumps({"type": "MODIFIED", "object": {"metadata": {"name": "wl", "resourceVersion": "7"},
                                                      "spec": {"priority": -3, "ratio": 0.5, "active": True, "x": None},
                                                      "status": {"conditions": [{"type": "Admitted", "message": "é ✓"}]}}})
    assert wire_json.loads(line.encode()) == json.loads(line)


def test_64_bit_integers_are_exact_and_a_string_orjson_refuses_is_decoded_by_json():
    for n in (9_223_372_036_854_775_807, -9_223_372_036_854_775_808, 18_446_744_073_709_551_615):
        assert wire_json.loads(json.dumps({"n": n})) == {"n": n}
    assert wire_json.loads(b'{"s": "\\ud800"}') == {"s": "\ud800"}  # a lone surrogate: orjson refuses it
