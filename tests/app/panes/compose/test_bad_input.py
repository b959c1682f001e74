"""The compose pane never sticks on "…": a file the loader refuses, or a check that fails in an
unexpected way, still ends in messages on the left and a preview that says why there is none."""

from __future__ import annotations

import tau_tui.screens.compose_check as compose_check
from tau_tui.screens import messages as screen_messages
from tau_tui.screens.compose import ComposeScreen
from tests.app.conftest import VALID_TAU_YAML
from tests.app.helpers import async_test, demo_app, of_type, settle, wait_until


def _preview_text(screen: ComposeScreen) -> str:
    return str(screen.query_one("#yaml-preview-body").render())


async def _open_compose(tmp_path, workspace, text: str, until: type) -> tuple[list, str, str]:
    """Open `text` in the compose pane and wait for the first `until` message.

    Returns the messages, and the preview and message texts as the pane then shows them."""
    (workspace / "tau.yaml").write_text(text)
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", message_hook=messages.append, settled=False) as (_, backend, app, pilot):
        await wait_until(pilot, lambda: of_type(messages, until), what=until.__name__)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ComposeScreen)
        return messages, _preview_text(screen), str(screen.query_one("#compose-messages").render())


async def _validated(tmp_path, workspace, text: str):
    messages, preview, shown = await _open_compose(tmp_path, workspace, text, screen_messages.Validated)
    return of_type(messages, screen_messages.Validated)[-1].result, preview, shown


@async_test
async def test_a_value_the_loader_cannot_read_shows_its_position_not_a_stuck_preview(tmp_path, workspace):
    text = VALID_TAU_YAML.replace("gpus_per_worker: 8", "gpus_per_worker: 1:30")  # YAML 1.1 would read 90
    result, preview, _ = await _validated(tmp_path, workspace, text)
    assert not result.ok
    problem = next(d for d in result.diagnostics if d.path == "compute.gpus_per_worker")
    assert problem.position is not None and "must be a whole number" in problem.message
    assert preview != "…" and "no preview" in preview


@async_test
async def test_a_file_that_cannot_be_opened_says_so_in_the_preview(tmp_path, workspace):
    text = VALID_TAU_YAML.replace("gpus_per_worker: 8", "gpus_per_worker: !!int abc")
    messages, preview, shown = await _open_compose(tmp_path, workspace, text, screen_messages.FileOpened)
    assert of_type(messages, screen_messages.FileOpened)[-1].document is None  # the round-trip editor cannot read it either
    assert preview.startswith("no preview: ") and "not valid YAML" in preview
    assert "not valid YAML" in shown


@async_test
async def test_an_unexpected_failure_in_the_check_still_posts_a_result(tmp_path, workspace, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(compose_check, "load_config_text", broken)
    result, preview, messages = await _validated(tmp_path, workspace, VALID_TAU_YAML)
    assert not result.ok
    assert any("cannot check this file: RuntimeError: boom" in d.message for d in result.diagnostics)
    assert preview != "…" and "no preview" in preview
    assert "cannot check this file" in messages
