"""Test-wide setup: the control-plane harness fixtures (t1, t2, t3) live in tests/harness."""

import pytest

pytest_plugins = ["tests.harness.fixtures"]


@pytest.fixture(autouse=True)
def _evidence_store_isolated(tmp_path_factory, monkeypatch):
    """Evidence records (SQLite under $XDG_DATA_HOME) and the audit signing key (0600 files under
    $XDG_STATE_HOME, allowed by TAU_TUI_ALLOW_FILE_KEY_STORE) never land in the home directory or the
    developer's OS keyring during tests: the test and the CLIs it starts see no keyring
    (``memory_keyring`` gives one)."""
    import keyring
    from keyring.backends import fail

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    # Without a keyring the signing key may live in 0600 files only when the user says so.
    monkeypatch.setenv("TAU_TUI_ALLOW_FILE_KEY_STORE", "1")
    keyring.set_keyring(fail.Keyring())


@pytest.fixture
def tiny_scenario(tmp_path):
    """The tiny scenario (tests/scenarios.TINY) written to tmp_path/tiny.yaml; its path."""
    from tests.scenarios import write_tiny_scenario

    return write_tiny_scenario(tmp_path)


@pytest.fixture
def lab(tmp_path):
    """The simulated MultiKueue fleet (tests/multikueue_lab.py): the demo manager and two workers."""
    from tests.multikueue_lab import make_lab

    return make_lab(tmp_path)


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
