"""Issue #43 defect 11 (on-call): uncordoning the node that reported Xid 79 gave no warning, and a
cordon had no budget check although a drain has one.

Now an uncordon of a node with an active GPU fault asks on its own first, naming the fault, and only
"Uncordon anyway" goes on to the preview (which names it again) and its confirmation.  A cordon is
previewed against the same drain budget as a drain, with the same words, and refused over it."""

from __future__ import annotations

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, of_type, record_notifications, settle, settle_until_done

FAULTY = "h100-node-5"  # the demo's node whose GPU reports Xid 79
DEGRADED = "a100-node-3"
HEALTHY = "h100-node-0"


async def select_node(pilot, app, name: str) -> None:
    """The cursor to ``name`` with the arrow keys, as a person moves it."""
    table = app.screen.query_one("#nodes-table", KeyedTable)
    await settle_until_done(pilot, lambda: name in table.keys, f"{name} in the nodes table")
    table.focus()
    await pilot.press("g")
    await pilot.press(*["down"] * table.keys.index(name))
    await settle(pilot)
    assert table.selected_key == name, (table.selected_key, name)


def dialog_text(app) -> str:
    dialog = app.screen
    assert isinstance(dialog, ConfirmDialog), dialog
    return f"{dialog.title_text}\n{dialog.query_one('#confirm-preview').render()}"


def cordoned(backend, node: str) -> bool:
    return bool(backend.world.store.read(ResourceKind.NODE.type, node)["spec"].get("unschedulable"))


@async_test
async def test_uncordon_of_a_node_with_a_gpu_fault_names_it_and_needs_an_explicit_yes(tmp_path):
    messages: list = []
    async with demo_app(tmp_path, start_pane="nodes", message_hook=messages.append) as (_, backend, app, pilot):
        backend.cordon(FAULTY)  # on-call cordoned it when the Xid came
        notes = record_notifications(app)
        await select_node(pilot, app, FAULTY)
        await settle_until_done(pilot, lambda: "cordoned" in str(app.screen.query_one("#nodes-table", KeyedTable)
                                                                   .cells_of(FAULTY)), "the cordon shown")
        # u: first a question of its own that names the fault; n keeps it cordoned
        await pilot.press("u")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the GPU fault warning")
        text = dialog_text(app)
        assert "Xid79" in text and "active GPU fault" in text and FAULTY in text, text
        assert "Uncordon anyway (y)" in str(app.screen.query_one("#confirm-yes").render())
        assert not of_type(messages, TauApp.MutationPreviewed)  # nothing previewed before the yes
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog) and cordoned(backend, FAULTY)
        assert any("stays cordoned" in note for note in notes), notes

        # u, y: the usual preview, which names the fault again, then y uncordons
        await pilot.press("u")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the GPU fault warning")
        await pilot.press("y")
        await settle_until_done(pilot, lambda: of_type(messages, TauApp.MutationPreviewed), "the uncordon preview")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the uncordon confirmation")
        text = dialog_text(app)
        assert "⚠ h100-node-5 has an active GPU fault" in text and "Xid79" in text, text
        assert "server dry-run passed" in text, text
        assert cordoned(backend, FAULTY)  # the dry-run changed nothing
        await pilot.press("y")
        await settle_until_done(pilot, lambda: of_type(messages, TauApp.MutationApplied), "the uncordon")
        assert of_type(messages, TauApp.MutationApplied)[-1].ok and not cordoned(backend, FAULTY)


@async_test
async def test_uncordon_of_a_healthy_node_asks_once(tmp_path):
    messages: list = []
    async with demo_app(tmp_path, start_pane="nodes", message_hook=messages.append) as (_, backend, app, pilot):
        backend.cordon(HEALTHY)
        await select_node(pilot, app, HEALTHY)
        await pilot.press("u")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the uncordon confirmation")
        assert of_type(messages, TauApp.MutationPreviewed)  # straight to the preview
        assert "GPU fault" not in dialog_text(app) and "Uncordon (y)" in str(app.screen.query_one("#confirm-yes").render())
        await pilot.press("y")
        await settle_until_done(pilot, lambda: of_type(messages, TauApp.MutationApplied), "the uncordon")
        assert not cordoned(backend, HEALTHY)


@async_test
async def test_cordon_counts_against_the_drain_budget_with_the_drains_preview(tmp_path):
    messages: list = []
    async with demo_app(tmp_path, start_pane="nodes", message_hook=messages.append) as (_, backend, app, pilot):
        # the first cordon fits the budget (10 GPU nodes: one out at a time) and says so
        await select_node(pilot, app, FAULTY)
        await pilot.press("c")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the cordon preview")
        text = dialog_text(app)
        assert "✓ drain budget (a cordon counts as a drain): 0 of 10 GPU nodes unavailable; cordoning h100-node-5 " \
               "makes 1 of at most 1" in text, text
        assert "server dry-run passed" in text
        await pilot.press("y")
        await settle_until_done(pilot, lambda: of_type(messages, TauApp.MutationApplied), "the cordon")
        assert cordoned(backend, FAULTY)

        # a second: over the budget, refused as the drain is, naming the node already out
        await settle(pilot)
        await select_node(pilot, app, DEGRADED)
        await pilot.press("c")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the cordon refusal")
        assert not of_type(messages, TauApp.MutationPreviewed)[-1].allowed
        text = dialog_text(app)
        assert "✗ drain budget (a cordon counts as a drain): 1 of 10 GPU nodes are already cordoned or not Ready " \
               "(h100-node-5)" in text, text
        assert not app.screen.query("#confirm-yes")  # nothing to confirm
        await pilot.press("y")  # no yes to give
        await settle(pilot)
        assert not cordoned(backend, DEGRADED)
        # the drain of that node says the same
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("D")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the drain refusal")
        assert "✗ drain budget: 1 of 10 GPU nodes are already cordoned or not Ready (h100-node-5)" in dialog_text(app)
