"""FrozenMap and OrderedKeys, the versions a pane's reader hands the table: each version reads as a
dict and a list changed the same way would, and a version made by a few changes copies a bounded
part of the old one, not all of it (counted by the layers and chunks it shares)."""

from __future__ import annotations

import random

import pytest

from tau_tui.core import ordered_keys
from tau_tui.core.frozen_map import FrozenMap, flat
from tau_tui.core.ordered_keys import OrderedKeys


def test_a_frozen_map_reads_as_the_dict_changed_the_same_way_would():
    rng = random.Random(46)
    for _ in range(100):
        wanted = {f"k{i}": i for i in range(rng.randint(0, 30))}
        versions = [(FrozenMap(dict(wanted)), dict(wanted))]
        for _ in range(25):
            changed = {f"k{rng.randint(0, 60)}": rng.random() for _ in range(rng.randint(0, 5))}
            removed = [rng.choice([*wanted, "absent"]) for _ in range(rng.randint(0, 3))]
            for key in removed:
                if key not in changed:
                    wanted.pop(key, None)
            wanted.update(changed)
            versions.append((versions[-1][0].with_changes(changed, removed), dict(wanted)))
        for version, held in versions:  # every older version still reads as it did
            assert len(version) == len(held) and dict(version.items()) == held
            assert all(version.get(key) == value and key in version for key, value in held.items())
            assert "absent" not in version and version.get("absent", 7) == 7
            assert flat(version) == held


def test_a_draft_reads_its_own_changes_and_freezes_them():
    base = FrozenMap({"a": 1, "b": 2})
    draft = base.draft()
    draft["c"] = 3
    assert draft.pop("a") == 1 and draft.get("a") is None and "a" not in draft and "c" in draft
    assert dict(draft.freeze().items()) == {"b": 2, "c": 3} and dict(base.items()) == {"a": 1, "b": 2}


def test_a_version_made_by_a_few_changes_of_a_large_map_shares_its_old_layers():
    big = FrozenMap({f"k{i}": i for i in range(20_000)})
    version = big
    for step in range(200):
        version = version.with_changes({f"k{step}": -step})
        assert version._layers[-1] is big._layers[0]  # the 20,000 entries are never copied
        assert len(version._layers) <= 15  # log2 of the entries: a look-up reads a few small layers


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(ordered_keys, "CHUNK", 4)


def test_ordered_keys_read_as_the_list_moved_the_same_way_would(small_chunks):
    rng = random.Random(36)
    for _ in range(200):
        wanted = [f"k{i}" for i in range(rng.randint(0, 40))]
        keys, made = OrderedKeys(wanted), len(wanted)
        for _ in range(20):
            moves: list = []
            for _ in range(rng.randint(0, 8)):
                if wanted and rng.random() < 0.5:
                    key = rng.choice(wanted)
                    wanted.remove(key)
                    moves.append(("remove", key))
                else:
                    key, at = f"n{made}", rng.randint(0, len(wanted))
                    made += 1
                    wanted.insert(at, key)
                    moves.append(("insert", at, key))
            keys = keys.moved(moves)
            assert list(keys) == wanted and len(keys) == len(wanted)
            assert all(keys.position(key) == at and keys[at] == key for at, key in enumerate(wanted))
            assert keys.position("absent") is None and keys.key_at(len(wanted)) is None


def test_a_few_moves_make_only_the_chunks_they_touched():
    keys = OrderedKeys(f"k{i:05d}" for i in range(20_000))
    moved = keys.moved([("remove", "k10000"), ("insert", 3, "k10000")])
    shared = {id(chunk) for chunk in keys._chunks} & {id(chunk) for chunk in moved._chunks}
    assert len(shared) >= len(keys._chunks) - 2  # two chunks made again, of about 80
    assert moved[3] == "k10000" and moved.position("k10000") == 3 and keys.position("k10000") == 10_000
