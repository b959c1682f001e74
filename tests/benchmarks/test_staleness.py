"""benchmarks/staleness.py: every change counted until its value or a newer one is on screen."""

from __future__ import annotations

import json
import random
import re

import pytest

from benchmarks.staleness import Change, Observation, look_at_screen, read_changes, staleness


def test_each_value_shown_in_turn() -> None:
    result = staleness([Change("a", "1", 0.0), Change("a", "2", 1.0)],
                       [Observation("a", "1", 0.5), Observation("a", "2", 1.2)])
    assert result.samples == pytest.approx([0.5, 0.2])
    assert (result.never_reflected, result.changes) == (0, 2)


def test_an_overwritten_value_ends_when_a_newer_one_shows() -> None:
    changes = [Change("a", "1", 0.0), Change("a", "2", 0.1), Change("a", "3", 0.2)]
    result = staleness(changes, [Observation("a", "3", 0.7)])  # 1 and 2 never drawn themselves
    assert result.samples == pytest.approx([0.7, 0.6, 0.5])
    assert (result.never_reflected, result.changes) == (0, 3)


def test_changes_after_the_last_look_that_reflects_them_are_never_reflected() -> None:
    changes = [Change("a", "1", 0.0), Change("a", "2", 1.0), Change("a", "3", 2.0), Change("a", "4", 3.0)]
    looks = [Observation("a", "1", 0.1), Observation("a", "2", 1.5), Observation("a", "2", 2.5), Observation("a", "2", 3.5)]
    result = staleness(changes, looks)
    assert result.samples == pytest.approx([0.1, 0.5])
    assert (result.never_reflected, result.changes) == (2, 4)


def test_observations_in_any_order() -> None:
    changes = [Change("a", "1", 0.0), Change("a", "2", 1.0), Change("b", "1", 0.2)]
    looks = [Observation("a", "2", 1.4), Observation("b", "1", 0.3), Observation("a", "1", 0.25)]
    forward = staleness(changes, looks)
    backward = staleness(list(reversed(changes)), list(reversed(looks)))
    assert sorted(forward.samples) == pytest.approx([0.1, 0.25, 0.4])
    assert sorted(backward.samples) == pytest.approx([0.1, 0.25, 0.4])


def test_rows_are_separate_and_unchanged_values_are_ignored() -> None:
    changes = [Change("a", "5", 1.0)]
    looks = [Observation("a", "initial", 0.5), Observation("b", "5", 1.1), Observation("a", "other", 1.2)]
    result = staleness(changes, looks)
    assert (result.samples, result.never_reflected) == ([], 1)


def test_a_value_shown_before_its_change_was_recorded_counts_as_zero() -> None:
    result = staleness([Change("a", "1", 2.0)], [Observation("a", "1", 1.999)])
    assert result.samples == [0.0]


def test_a_value_set_again_is_the_latest_change_that_set_it_by_then() -> None:
    changes = [Change("a", "x", 0.0), Change("a", "y", 1.0), Change("a", "x", 2.0)]
    early = staleness(changes, [Observation("a", "x", 0.5)])
    assert (early.samples, early.never_reflected) == ([0.5], 2)
    late = staleness(changes, [Observation("a", "x", 2.5)])
    assert late.samples == pytest.approx([2.5, 1.5, 0.5])


def test_a_screen_going_back_to_an_older_value_does_not_undo_what_was_shown() -> None:
    changes = [Change("a", "1", 0.0), Change("a", "2", 1.0), Change("a", "3", 2.0)]
    looks = [Observation("a", "2", 1.5), Observation("a", "1", 1.6), Observation("a", "3", 2.2)]
    assert staleness(changes, looks).samples == pytest.approx([1.5, 0.5, 0.2])


def by_definition(changes: list[Change], looks: list[Observation]) -> tuple[list[float], int]:
    """For each change, the earliest look at or after it showing a change of its row made no
    earlier than it and at or before the look: counted out, change by change."""
    samples, never = [], 0
    for change in changes:
        row = [c for c in changes if c.row == change.row]
        newer = {c.value for c in row if c.at >= change.at}
        times = [look.at for look in looks if look.row == change.row and look.value in newer and look.at >= change.at
                 and any(c.value == look.value and change.at <= c.at <= look.at for c in row)]
        if times:
            samples.append(min(times) - change.at)
        else:
            never += 1
    return sorted(samples), never


def test_matches_the_definition_on_random_runs() -> None:
    rng = random.Random(36)
    for _ in range(200):
        changes, looks, t = [], [], 0.0
        for seq in range(rng.randint(0, 40)):  # unique values, as the benchmarks write them
            t += rng.expovariate(20)
            changes.append(Change(rng.choice("abc"), str(seq), round(t, 4)))
        shown: dict[str, str] = {}
        for look in range(rng.randint(0, 60)):
            at = round(look * 0.05 + rng.random() * 0.01, 4)
            made = [c for c in changes if c.at <= at - rng.random() * 0.2]  # the screen lags behind
            for row in "abc":
                mine = [c for c in made if c.row == row]
                if mine and shown.get(row) != mine[-1].value:
                    shown[row] = mine[-1].value
                    looks.append(Observation(row, mine[-1].value, at))
        rng.shuffle(looks)
        result = staleness(changes, looks)
        samples, never = by_definition(changes, looks)
        assert sorted(result.samples) == pytest.approx(samples)
        assert result.never_reflected == never
        assert result.changes == len(changes) == len(result.samples) + result.never_reflected


def test_reads_a_watch_sources_changes_file(tmp_path) -> None:
    path = tmp_path / "changes.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (
        {"seq": 1, "row": "aaa-bench/bench-00", "value": "q-1", "at": 10.5, "wall": 1.0},
        {"seq": 2, "row": "aaa-bench/bench-01", "value": "q-2", "at": 10.75, "wall": 1.0})) + "\n")
    assert read_changes(path) == [Change("aaa-bench/bench-00", "q-1", 10.5), Change("aaa-bench/bench-01", "q-2", 10.75)]


def test_a_look_at_the_screen_records_only_rows_whose_value_moved():
    row_value = re.compile(r"\b(bench-\d\d)\b.*?\b(q-\d+)\b")
    shown: dict[str, str] = {}
    observations: list = []
    look_at_screen("bench-01  q-1\nbench-02  q-7\nheader", row_value, shown, observations, 1.0)
    look_at_screen("bench-01  q-1\nbench-02  q-8", row_value, shown, observations, 2.0)
    assert [tuple(o) for o in observations] == [("bench-01", "q-1", 1.0), ("bench-02", "q-7", 1.0),
                                               ("bench-02", "q-8", 2.0)]
