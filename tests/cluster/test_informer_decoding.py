"""What the informers do with the API server's JSON: decoded in C (orjson; json for what orjson refuses),
an update shares what did not change with the version cached, a relisted object at that version is it."""

from __future__ import annotations

import json
import sys

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


def test_a_watch_update_shares_what_did_not_change_with_the_version_cached_and_interns_the_rest():
    from tau_tui.core.cluster.convert import share_strings
    from tau_tui.core.cluster.unchanged_parts import share_with_previous

    template = {"spec": {"containers": [{"name": "main", "image": "registry.local/tau/train:1"}]}}
    cached = wire_json.loads(json.dumps({"metadata": {"name": "wl", "resourceVersion": "1", "labels": {"a": "b"}},
                                         "spec": {"podSets": [{"name": "main", "template": template}]},
                                         "status": {"conditions": [{"type": "QuotaReserved", "message": "waiting"}]}}))
    share_strings(cached)
    update = wire_json.loads(json.dumps({**cached, "metadata": {**cached["metadata"], "resourceVersion": "2"},
                                         "status": {"conditions": [{"type": "QuotaReserved", "message": "no quota"}]}}))
    decoded = json.loads(json.dumps(update))
    share_with_previous(update, cached)
    assert update == decoded  # the same values
    assert update["spec"] is cached["spec"] and update["metadata"]["labels"] is cached["metadata"]["labels"]
    condition = update["status"]["conditions"][0]
    assert condition["type"] is cached["status"]["conditions"][0]["type"]  # equal: the cached string
    assert condition["message"] is sys.intern("no quota")  # new: interned, as share_strings does
    fresh = wire_json.loads(json.dumps(cached))
    share_with_previous(fresh, None)  # a new object: every short string interned
    assert fresh["metadata"]["name"] is sys.intern("wl")


def test_a_relisted_object_at_the_version_cached_is_the_cached_object_and_a_changed_one_shares_with_it():
    from tau_tui.core.cluster.convert import share_strings
    from tau_tui.core.cluster.unchanged_parts import listed

    cached = wire_json.loads(b'{"metadata": {"name": "wl", "resourceVersion": "7"}, "spec": {"queueName": "lq"}}')
    share_strings(cached)
    again = wire_json.loads(b'{"metadata": {"name": "wl", "resourceVersion": "7"}, "spec": {"queueName": "lq"}}')
    assert listed(again, cached) is cached  # the decoded copy is dropped at once, page by page
    moved = wire_json.loads(b'{"metadata": {"name": "wl", "resourceVersion": "8"}, "spec": {"queueName": "lq"}}')
    assert listed(moved, cached) is moved and moved["spec"] is cached["spec"]
    fresh = wire_json.loads(b'{"metadata": {"name": "new", "resourceVersion": "9"}}')
    assert listed(fresh, None) is fresh and fresh["metadata"]["name"] is sys.intern("new")
