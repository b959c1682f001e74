"""Pilot tests of whole user flows against the simulated backend (frozen clock):
they drive keys and assert on the messages the app posted and on cluster state."""

from __future__ import annotations

import json

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.audit import verify
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.screens import messages as screen_messages
from tau_tui.screens.compose import ComposeScreen
from tau_tui.screens.logs import LogsScreen
from tau_tui.screens.node_detail import NodeDetailScreen
from tau_tui.screens.queue import QueueScreen
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.form_field import FormField
from tau_tui.widgets.input_dialog import InputDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tau_tui.widgets.log_view import LogView
from tests.app.conftest import VALID_TAU_YAML
from tests.app.helpers import async_test, demo_app, demo_backend, of_type, settle, wait_until, wait_workers


@async_test
async def test_compose_fix_error_server_dry_run_submit_then_queue_position(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(VALID_TAU_YAML.replace("gpus_per_worker: 8", "gpus_per_worker: 9"))
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", message_hook=messages.append, settled=False) as (world, backend, app, pilot):
        screen = app.screen
        assert isinstance(screen, ComposeScreen)
        await wait_until(pilot, lambda: of_type(messages, screen_messages.Validated), what="first validation")
        await settle(pilot)
        first = of_type(messages, screen_messages.Validated)[-1].result
        assert not first.ok
        assert any(d.path == "compute.gpus_per_worker" for d in first.diagnostics)
        gpus = screen.query_one("#field-compute-gpus-per-worker", FormField)
        assert gpus.has_class("-error")  # the message sits under its field
        assert "at most 8" in str(gpus.query_one(".field-error").render())

        # fix it in the form: debounced re-validation, the message goes away, the preview renders
        count = len(of_type(messages, screen_messages.Validated))
        gpus.input.value = "8"
        await wait_until(pilot, lambda: len(of_type(messages, screen_messages.Validated)) > count, what="re-validation")
        await settle(pilot)
        fixed = of_type(messages, screen_messages.Validated)[-1].result
        assert fixed.ok and fixed.manifests
        assert not gpus.has_class("-error")
        kind = fixed.manifests[-1]["kind"]
        name = fixed.manifests[-1]["metadata"]["name"]
        assert name == "snap-train"

        # server dry-run: passes, creates nothing
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: of_type(messages, screen_messages.ServerDryRunDone), what="server dry-run")
        assert of_type(messages, screen_messages.ServerDryRunDone)[-1].ok
        rk = ResourceKind.JOB if kind == "Job" else ResourceKind.RAY_JOB
        assert backend.get(rk, name, "taugrid-default") is None

        # submit: preview (server dry-run) → confirm → created → audited
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirm dialog")
        await pilot.press("y")
        await wait_until(pilot, lambda: of_type(messages, TauApp.MutationApplied), what="submit")
        applied = of_type(messages, TauApp.MutationApplied)[-1]
        assert applied.ok and applied.mutation.verb == "submit", applied.text
        await wait_until(pilot, lambda: backend.get(rk, name, "taugrid-default") is not None, what="object in cache")

        # Kueue (simulated) creates the Workload; the queue pane shows it with a position
        world.advance(5)
        await pilot.press("3")
        await settle(pilot)
        queue = app.screen
        assert isinstance(queue, QueueScreen)
        await wait_until(pilot, lambda: any(wl.owner_name == name for wl in queue.data.workloads.values()), what="workload row")
        key = next(k for k, wl in queue.data.workloads.items() if wl.owner_name == name)
        cells = queue.query_one("#workloads-table", KeyedTable).cells_of(key)
        assert cells is not None
        assert cells[0].plain.endswith("pending")
        position = cells[1].plain
        assert position[:1] in "#~" and position[1:].isdigit() and int(position[1:]) >= 1, f"no position: {position!r}"
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    # the preview, the intent before the call, the outcome after it
    assert [(e["phase"], e["verb"], e["ok"]) for e in audit] == [
        ("preview", "submit", True), ("intent", "submit", None), ("outcome", "submit", True)]
    assert all(e["identity"] == {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
               for e in audit)
    assert verify(tmp_path / "audit.jsonl").ok
    assert "STEPS" not in (tmp_path / "audit.jsonl").read_text()
    # The cluster keeps no tau.yaml: the submit kept it for the run's evidence record.
    kept = EvidenceStore.demo().submission("taugrid-default", name, fixed.submission_id)  # the demo's own store
    assert kept is not None and kept.source == "app" and "name: snap-train" in (kept.tau_yaml or "")
    assert kept.config_hash and f"name: {name}" in kept.manifests


@async_test
async def test_logs_follow_pause_search_save(tmp_path):
    messages: list = []
    async with demo_app(tmp_path, start_pane="runs", size=(120, 30), message_hook=messages.append) as (world, backend, app, pilot):
        await pilot.press(":")
        await pilot.press(*"logs taugrid-default/llama-70b-sft", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None, what="stream")
        screen = app.screen
        view = screen.query_one(LogView)
        await wait_until(pilot, lambda: view.lines_seen > 100, what="history")
        assert view.following
        assert "following" in str(screen.query_one("#logs-info").render())

        # follow: new lines arrive as time passes, the view stays at the end
        before = view.lines_seen
        world.advance(20)
        await wait_until(pilot, lambda: view.lines_seen > before, what="new lines while following")
        await pilot.pause(0.3)
        assert view.scroll_offset.y == view.max_scroll_y

        # pause: new lines are counted, the view does not move
        await pilot.press("f")
        assert not view.following
        offset = view.scroll_offset.y
        paused_at = view.lines_seen
        world.advance(20)
        await wait_until(pilot, lambda: view.pending_new > 0, what="paused (+N new)")
        await pilot.pause(0.3)
        assert view.scroll_offset.y == offset
        assert view.lines_seen > paused_at
        info = str(screen.query_one("#logs-info").render())
        assert f"paused (+{view.pending_new} new)" in info
        assert "dropped 0" in info

        # search covers the whole spool (not just the screen)
        await pilot.press("slash")
        await pilot.press(*"checkpoint saved", "enter")
        await wait_until(pilot, lambda: of_type(messages, screen_messages.SearchDone), what="search")
        hits = of_type(messages, screen_messages.SearchDone)[-1].hits
        spool = view.spool
        expected = [i for i, line in enumerate(spool.lines(0, spool.line_count)) if "checkpoint saved" in line.lower()]
        assert hits and hits[: len(expected)] == expected[: len(hits)]
        assert view.hits == hits

        # save: every line of the spool, as it is (markup-looking text included)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, InputDialog), what="save dialog")
        target = tmp_path / "saved.log"
        dialog_input = app.screen.query_one("#input-dialog-value")
        dialog_input.value = str(target)
        await pilot.press("enter")
        await wait_until(pilot, lambda: of_type(messages, screen_messages.Saved), what="save")
        saved = of_type(messages, screen_messages.Saved)[-1]
        assert not saved.error and saved.lines >= paused_at
        text = target.read_text()
        assert len(text.splitlines()) == saved.lines
        assert "[bold]dataloader[/bold]" in text  # never parsed as markup


@async_test
async def test_node_drill_down_cordon_confirm_audit(tmp_path):
    messages: list = []
    async with demo_app(tmp_path, start_pane="nodes", message_hook=messages.append) as (world, backend, app, pilot):
        table = app.screen.query_one("#nodes-table", KeyedTable)
        assert table.keys[0] == "h100-node-5"  # unhealthy sorts first
        table.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen), what="drill-down")
        await settle(pilot)
        detail = app.screen
        assert detail.node_name == "h100-node-5"
        gpu3 = detail.query_one("#gpus-table", KeyedTable).cells_of("3")
        assert gpu3 is not None and "unhealthy" in gpu3[2].plain and "Xid79" in gpu3[3].plain

        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirm")
        preview = str(app.screen.query_one("#confirm-preview").render())
        assert "server dry-run passed" in preview and "cordoned (server dry-run)" in preview
        assert backend.get(ResourceKind.NODE, "h100-node-5").unschedulable is False  # dry-run changed nothing
        await pilot.press("y")
        await wait_until(pilot, lambda: of_type(messages, TauApp.MutationApplied), what="cordon")
        assert of_type(messages, TauApp.MutationApplied)[-1].ok
        await wait_until(pilot, lambda: backend.get(ResourceKind.NODE, "h100-node-5").unschedulable, what="node cordoned")
        # esc goes back to the list, which now says cordoned
        await pilot.press("escape")
        await settle(pilot)
        cells = app.screen.query_one("#nodes-table", KeyedTable).cells_of("h100-node-5")
        assert "cordoned" in cells[9].plain
    entries = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [e["phase"] for e in entries] == ["preview", "intent", "outcome"]
    entry = entries[-1]
    assert entry["verb"] == "cordon" and entry["target"] == "Node h100-node-5" and entry["ok"] is True
    assert entry["dry_run"] is False and entry["context"] == "sim-demo"


@async_test
async def test_readonly_blocks_cancel(tmp_path):
    messages: list = []
    async with demo_app(tmp_path, start_pane="queue", readonly=True, message_hook=messages.append) as (world, backend, app, pilot):
        screen = app.screen
        footer_keys = {b.action for b in screen.active_bindings_list()}
        assert "cancel" not in footer_keys and "hold" not in footer_keys  # hidden
        table = screen.query_one("#workloads-table", KeyedTable)
        table.focus()
        wl = screen.selected_workload()
        assert wl is not None and wl.owner_name
        await pilot.press("ctrl+d")  # the key does nothing
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog)
        await screen.run_action("cancel")  # Textual refuses it (check_action): palette and keymap too
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog)
        assert not of_type(messages, TauApp.MutationBlocked)
        screen.action_cancel()  # and the app refuses it even if called directly
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog)
        blocked = of_type(messages, TauApp.MutationBlocked)
        assert blocked and blocked[-1].verb == "cancel"
        assert not of_type(messages, TauApp.MutationPreviewed)
        assert backend.get(ResourceKind.JOB, wl.owner_name, wl.namespace) is not None
        assert "READ-ONLY" in str(screen.query_one("#header").render())
    # the refusal itself is audited (and nothing else is)
    entries = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(e["phase"], e["verb"], e["readonly_blocked"]) for e in entries] == [("refused", "cancel", True)]


@async_test
async def test_command_mode_filter_and_back(tmp_path):
    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        await pilot.press(":", *"nodes", "enter")
        await settle(pilot)
        assert app.current_mode == "nodes"
        await pilot.press("slash", *"xid7|eccsbe", "enter")  # regex, case-insensitive
        await settle(pilot)
        assert set(app.screen.query_one("#nodes-table", KeyedTable).keys) == {"h100-node-5", "a100-node-3"}
        await pilot.press("slash", *"!healthy", "enter")  # inverted: not matching 'healthy' (unhealthy matches too)
        await settle(pilot)
        keys = set(app.screen.query_one("#nodes-table", KeyedTable).keys)
        assert "h100-node-0" not in keys and "cpu-node-0" in keys
        await pilot.press("slash", *"-l tau.azure.com/gpu-class=a100-80gb", "enter")
        await settle(pilot)
        assert set(app.screen.query_one("#nodes-table", KeyedTable).keys) == {f"a100-node-{i}" for i in range(4)}
        await pilot.press("escape")  # clears the filter
        await settle(pilot)
        assert len(app.screen.query_one("#nodes-table", KeyedTable).keys) == 14
        await pilot.press("escape")  # back to the previous pane
        await settle(pilot)
        assert app.current_mode == "queue"
        await pilot.press(":", *"ns team-nlp", "enter")
        await settle(pilot)
        await wait_workers(app)
        await settle(pilot)
        assert app.backend.namespace == "team-nlp"
        assert all(k.startswith("team-nlp/") for k in app.screen.query_one("#workloads-table", KeyedTable).keys)


@async_test
async def test_refresh_tick_is_skipped_while_one_runs(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        screen = app.screen
        screen.reader.refresh_running = True  # as if a slow refresh were in flight
        skipped = screen.reader.ticks_skipped
        screen.tick()
        screen.tick()
        assert screen.reader.ticks_skipped == skipped + 2
        screen.reader.refresh_running = False
        applied = screen.refreshes_applied
        screen.tick(force=True)
        await settle(pilot, rounds=1)
        assert screen.refreshes_applied > applied


@async_test
async def test_bad_config_file_gives_message_and_defaults(tmp_path, monkeypatch):
    from tau_tui.settings.settings_file import load_settings

    config = tmp_path / "config.yaml"
    config.write_text("theme: tau-light\nrefresh_tick: 0\nkeymap:\n  queue.cancel: ctrl+x\nbogus: 1\n")
    loaded = load_settings(config)
    assert loaded.settings.theme == "tau-dark" and loaded.settings.refresh_tick == 1.0
    assert any("refresh_tick" in p and ":2" in p for p in loaded.problems)
    assert any("bogus" in p and "unknown key" in p for p in loaded.problems)
    config.write_text("theme: [unclosed\n")
    broken = load_settings(config)
    assert broken.settings.theme == "tau-dark" and broken.problems and "config.yaml:" in broken.problems[0]
    config.write_text("theme: tau-high-contrast\nkeymap:\n  queue.cancel: ctrl+x\n")
    good = load_settings(config)
    assert not good.problems and good.settings.keymap == {"queue.cancel": "ctrl+x"}
    _, backend = demo_backend()
    app = TauApp(backend, settings=good, audit=None, start_pane="queue")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert app.theme == "tau-high-contrast"
        assert "ctrl+x" in [b.key for b in app.screen.active_bindings_list() if b.action == "cancel"]
