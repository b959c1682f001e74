"""The harness's ports: two pytest-xdist workers starting planes at once never choose the same one."""

from __future__ import annotations

import pytest

from tests.harness import processes


def ports_of(monkeypatch, worker: str | None, count: str | None, picks: int = 300) -> set[int]:
    for name, value in (("PYTEST_XDIST_WORKER", worker), ("PYTEST_XDIST_WORKER_COUNT", count)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(processes, "_ports_handed_out", set())  # each worker remembers only its own
    return {processes.free_port() for _ in range(picks)}


def test_two_workers_choose_from_disjoint_ports_below_the_ephemeral_range(monkeypatch):
    first = ports_of(monkeypatch, "gw0", "2")
    second = ports_of(monkeypatch, "gw1", "2")
    assert len(first) == len(second) == 300
    assert not first & second
    ephemeral_low = processes._ephemeral_low()
    assert all(processes._LOWEST_PORT <= port < ephemeral_low for port in first | second)
    middle = (processes._LOWEST_PORT + ephemeral_low) // 2
    assert max(first) <= middle <= min(second)  # each its half, not a few ports


@pytest.mark.parametrize(("worker", "count", "expected"), [
    ("gw0", "2", (10_000, 21_383)), ("gw1", "2", (21_384, 32_767)),
    ("gw0", "3", (10_000, 17_588)), ("gw1", "3", (17_589, 25_177)), ("gw2", "3", (25_178, 32_766)),
])
def test_the_slices_touch_and_never_overlap(monkeypatch, worker, count, expected):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
    assert processes.worker_port_range(10_000, 32_767) == expected


@pytest.mark.parametrize(("worker", "count"), [(None, None), ("gw0", "1"), ("master", "2")])
def test_with_one_worker_or_none_every_port_below_the_ephemeral_range_may_be_chosen(monkeypatch, worker, count):
    ports = ports_of(monkeypatch, worker, count)
    middle = (processes._LOWEST_PORT + processes._ephemeral_low()) // 2
    assert min(ports) < middle <= max(ports)
