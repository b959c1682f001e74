"""Snapshots of the dialogs issue 43 added, at 80x24 and 160x48: unsaved changes (save / discard /
cancel), a kept draft (restore / discard / keep for later), and the second confirmation after a
failed server dry-run.  Update with ``--snapshot-update`` and look at each as a PNG (docs/testing.md)."""

from __future__ import annotations

import json

import pytest

from tau_tui.core.cluster.mutations import MutationResult
from tests.app.helpers import demo_backend, make_app, settle, settle_until_done
from tests.app.panes.compose.compose_keys import dialog_open, field_input, form_ready, type_into
from tests.app.panes.compose.test_drafts import draft_path
from tests.app.test_snapshots import SIZES, freeze_cursors


def _still(pilot) -> None:
    freeze_cursors(pilot.app)


@pytest.mark.parametrize("size", SIZES)
def test_unsaved_changes_dialog(snap_compare, tmp_path, workspace, size):
    app = make_app(tmp_path, start_pane="compose", compose_file="tau.yaml")

    async def run_before(pilot):
        screen = await form_ready(pilot)
        await type_into(pilot, screen, "run.name", "-2", clear=False)
        await type_into(pilot, screen, "runtime.env", "WANDB_MODE=offline, broken")
        await settle(pilot)
        await pilot.press("ctrl+q")
        await dialog_open(pilot, "Unsaved changes")
        _still(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_draft_offered_on_open_dialog(snap_compare, tmp_path, workspace, size):
    path = draft_path(workspace / "tau.yaml")
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(json.dumps({"format": 1, "file": str(workspace / "tau.yaml"),
                                "fields": {"run.name": "snap-train-2", "runtime.env": "WANDB_MODE=offline"},
                                "text": "", "base_sha256": "0" * 64, "kept_at": "2026-05-04T10:20:30+00:00",
                                "reason": "SIGTERM"}))
    path.chmod(0o600)
    app = make_app(tmp_path, start_pane="compose", compose_file="tau.yaml")

    async def run_before(pilot):
        await dialog_open(pilot, "Draft of tau.yaml")
        await settle(pilot)
        _still(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_submit_after_a_failed_server_dry_run_dialog(snap_compare, tmp_path, workspace, size):
    _, backend = demo_backend()
    submit = backend.submit

    def dry_run_fails(manifests, dry_run=False):
        if dry_run:
            return [MutationResult(False, "create", "RayJob", "snap-train", "taugrid-default",
                                   'admission webhook "vrayjob.kb.io" denied the request: spec.rayClusterSpec: '
                                   "worker group is required", True)]
        return submit(manifests, dry_run=dry_run)

    backend.submit = dry_run_fails
    app = make_app(tmp_path, backend, start_pane="compose", compose_file="tau.yaml")

    async def run_before(pilot):
        screen = await form_ready(pilot)
        await settle_until_done(pilot, lambda: screen.validation.ok, "a valid form")
        field_input(screen, "run.name").focus()
        await pilot.press("ctrl+g")
        await settle_until_done(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmDialog", "the confirmation")
        await pilot.press("y")
        await settle_until_done(pilot, lambda: "although" in getattr(pilot.app.screen, "title_text", ""),
                                "the second confirmation")
        _still(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
