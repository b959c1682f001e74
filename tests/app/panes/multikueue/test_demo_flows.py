"""`tau-tui --demo`'s MultiKueue flows walked to the end in the app, as a platform owner would
(issue 43, defect 9): the drain's five steps (its plan names the demo's own workers, so step 1 is no
longer refused), and a rotation with the demo's keyring, in memory and saying so, on a machine
without an OS keyring.  On a cluster nothing falls back to that keyring."""

from __future__ import annotations

from contextlib import asynccontextmanager

import keyring
import pytest
from keyring.backends.fail import Keyring as NoKeyring

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.rotate import KeyringUnavailable
from tau_tui.screens.multikueue_wizard import MultiKueueWizardScreen
from tau_tui.startup.backends import start_demo_backend
from tau_tui.startup.multikueue_env import environment_for
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tests.app.helpers import async_test, make_app, of_type, settle, settle_until_done

DEMO_KEYRING = "demo keyring, in memory: nothing is stored"


@pytest.fixture
def no_os_keyring(tmp_path, monkeypatch):
    """A machine without an OS keyring, and the app's records under the test's own directory."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    previous = keyring.get_keyring()
    keyring.set_keyring(NoKeyring())
    yield
    keyring.set_keyring(previous)


def marks(app) -> list[str]:
    table = app.screen.query_one("#wizard-steps")
    return [str(table.get_row_at(i)[0]).split()[0] for i in range(table.row_count)]


def title(app) -> str:
    return str(app.screen.query_one("#wizard-title").render())


async def walk_every_step(pilot, messages, steps: int) -> None:
    """``a`` then ``y`` on the next step until every step is verified (a step with nothing to apply,
    such as the drain's wait for terminal workloads, verifies by itself once the one before does)."""
    app = pilot.app
    for _ in range(steps):
        if marks(app) == ["✓"] * steps:
            break
        done, applied = marks(app).count("✓"), len(of_type(messages, TauApp.MutationApplied))
        await pilot.press("a")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), f"the preview of step {done + 1}")
        assert app.screen.can_confirm, f"step {done + 1} refused: {app.screen.preview.plain}"
        await pilot.press("y")
        await settle_until_done(pilot, lambda applied=applied: len(of_type(messages, TauApp.MutationApplied)) > applied,
                                f"step {done + 1} applied")
        result = of_type(messages, TauApp.MutationApplied)[-1]
        assert result.ok, f"step {done + 1}: {result.text}"
        await settle_until_done(pilot, lambda done=done: isinstance(app.screen, MultiKueueWizardScreen)
                                and marks(app).count("✓") > done, f"step {done + 1} verified")
    assert marks(app) == ["✓"] * steps, marks(app)


@asynccontextmanager
async def demo_wizard(tmp_path, keys: tuple[str, ...], what: str):
    """`tau-tui --demo --pane multikueue`, ``keys`` pressed, the wizard they open showing its steps:
    (backend, pilot, the app's messages)."""
    backend = start_demo_backend("demo", None, realtime=False)
    app = make_app(tmp_path, backend, start_pane="multikueue")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        await settle_until_done(pilot, lambda: isinstance(app.screen, MultiKueueWizardScreen)
                                and app.screen.last_statuses, what)
        yield backend, pilot, messages
    backend.close()


@async_test
async def test_the_demo_drain_walks_all_five_steps(tmp_path, no_os_keyring):
    async with demo_wizard(tmp_path, ("C",), "the drain checklist") as (backend, pilot, messages):
        assert marks(pilot.app) == ["▶", "○", "○", "○", "○"], marks(pilot.app)  # step 1 no longer refused
        assert DEMO_KEYRING in title(pilot.app)
        await pilot.press("c")  # cancel the pending owners of the dedicated queues (mixtral-distill)
        await settle(pilot)
        await walk_every_step(pilot, messages, 5)
        world = backend.world
        assert world.store.read(ResourceKind.MULTIKUEUE_CLUSTER.type, "westus3-worker") is None
        assert world.store.read(SECRET, "westus3-worker-kubeconfig", "kueue-system") is None


@async_test
async def test_the_demo_rotates_a_credential_with_its_in_memory_keyring(tmp_path, no_os_keyring):
    keys = ("colon", *"mk rotate westus3-worker westus3-worker-new", "enter")
    async with demo_wizard(tmp_path, keys, "the rotation wizard") as (_, pilot, messages):
        assert marks(pilot.app) == ["▶", "○", "○"], marks(pilot.app)  # not refused for want of an OS keyring
        assert DEMO_KEYRING in title(pilot.app)
        await walk_every_step(pilot, messages, 3)


def test_on_a_cluster_the_keyring_is_the_os_one_or_none(tmp_path, no_os_keyring):
    """Only the demo's fleet hands out the in-memory keyring: without a fleet (a cluster) the rotation's
    vault is the OS keyring, and with none usable it refuses."""

    class ClusterBackend:  # what the environment reads of a real backend: no simulated world
        current_context = "prod"

    env = environment_for(ClusterBackend(), None, tmp_path)
    vault = env.vault_for("rotate", "prod")
    assert vault is not None and vault.store is None and env.keyring_note("rotate") == ""
    with pytest.raises(KeyringUnavailable, match="no usable OS keyring backend"):
        vault.require()
