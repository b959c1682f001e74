"""Test-wide setup: the control-plane harness fixtures (t1, t2, t3) live in tests/harness."""

import pytest

pytest_plugins = ["tests.harness.fixtures"]


@pytest.fixture(autouse=True)
def _evidence_store_isolated(tmp_path_factory, monkeypatch):
    """Evidence records (SQLite under $XDG_DATA_HOME) never land in the home directory during tests."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


@pytest.fixture
def memory_keyring():
    """The OS keyring replaced by one in memory (tests/multikueue_lab.MemoryKeyring) for one test."""
    import keyring

    from tests.multikueue_lab import MemoryKeyring

    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)
