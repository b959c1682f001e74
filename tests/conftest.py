"""Test-wide setup: the control-plane harness fixtures (t1, t2, t3) live in tests/harness."""

import os

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


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        # An xdist worker has COLUMNS=80 and LINES=24 set; an app a test starts in tmux would take
        # them over the terminal's own size.
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)


#: The session-scoped control planes (tests/harness/fixtures.py), heaviest first.
_PLANES = ("t3", "t2", "t1")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (scripts/test.sh runs two workers, ``--dist loadgroup``): every test that
    uses a control plane runs in the one worker that starts it, every other file's tests in one
    worker (its module fixtures are built once), and the planes' groups are handed out first so the
    longest work does not start last."""
    if not hasattr(config, "workerinput"):
        return
    for item in items:
        # The tier marker (required on every test that uses a plane, also where a parametrized
        # fixture asks for it by name, as the contract suite's ``env`` does), or the fixture.
        plane = next((p for p in _PLANES if item.get_closest_marker(p) or p in getattr(item, "fixturenames", ())), None)
        item.add_marker(pytest.mark.xdist_group(plane or item.nodeid.split("::", 1)[0]))
    rank = {p: i for i, p in enumerate(_PLANES)}
    items.sort(key=lambda item: rank.get(item.get_closest_marker("xdist_group").args[0], len(rank)))
