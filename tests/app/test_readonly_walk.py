"""Read-only mode over EVERY action and key binding of every pane.

The bindings are enumerated from each screen's BINDINGS and the app's, never
listed by hand, so a new binding is walked without touching this test.  Each
binding runs through Textual (``run_action``, which honours ``check_action``),
and every ``action_*`` method of each pane is also called directly (as a
keymap or command palette bug would).  Any dialog that opens is answered with
its most dangerous choice ("y" on a confirmation, enter on an input).

Asserted: no call reaches a mutating API primitive of the simulated backend
(create, delete, patch, evict) other than a server dry-run, no file outside the app's
state directory is created or changed, every refusal is a MutationBlocked and
an audit entry."""

from __future__ import annotations

import json
import os
from pathlib import Path

from textual.screen import ModalScreen

from tau_tui.app import TauApp
from tau_tui.core.operations.audit import AuditLog, state_dir, verify
from tau_tui.core.operations.evidence.capture import capture_live
from tau_tui.core.operations.evidence.cluster_identity import cluster_identity
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.pane_palette import COMMAND_ONLY_PANES
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.header_bar import PANES
from tau_tui.widgets.input_dialog import InputDialog
from tests.app.helpers import async_test, demo_backend, settle, wait_workers

MUTATING_PRIMITIVES = ("_api_create", "_api_delete", "_api_patch", "_api_evict")
#: Actions that end the session or the walk rather than act on the cluster or files.
NOT_WALKED = {"quit"}


def count_mutations(backend) -> list[tuple[str, tuple]]:
    """Calls of the mutating primitives that are not server dry-runs (their last argument)."""
    calls: list[tuple[str, tuple]] = []
    for name in MUTATING_PRIMITIVES:
        original = getattr(backend, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            dry_run = kwargs["dry_run"] if "dry_run" in kwargs else (args[2] if _name == "_api_evict" else args[-1])
            if not dry_run:
                calls.append((_name, args[:2]))
            return _original(*args, **kwargs)

        setattr(backend, name, counted)
    return calls


def files_outside(root: Path, keep: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for directory, dirs, files in os.walk(root):
        if Path(directory).resolve().is_relative_to(keep.resolve()):
            dirs[:] = []
            continue
        for name in files:
            path = Path(directory) / name
            stat = path.stat()
            out[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return out


def bindings_of(node) -> list[tuple[str, str]]:
    """(key, action) of every binding a class declares, its bases' included."""
    seen = []
    for cls in type(node).__mro__:
        for binding in cls.__dict__.get("BINDINGS", ()):
            if isinstance(binding, tuple):
                key, action = binding[0], binding[1]
            else:
                key, action = binding.key, binding.action
            if (key, action) not in seen:
                seen.append((key, action))
    return seen


async def quiet(pilot) -> None:
    await pilot.pause()
    await wait_workers(pilot.app)
    await pilot.pause()


async def answer_dialogs(pilot) -> None:
    """Answer whatever opened with its riskiest choice, then close what is left."""
    app = pilot.app
    for _ in range(6):
        await quiet(pilot)
        screen = app.screen
        if not isinstance(screen, ModalScreen):
            return
        if isinstance(screen, ConfirmDialog):
            await pilot.press("y")
        elif isinstance(screen, InputDialog):
            await pilot.press("enter")
        else:
            await pilot.press("escape")
    while isinstance(app.screen, ModalScreen):
        app.pop_screen()
        await pilot.pause()


def own_actions(screen) -> list[str]:
    """Every ``action_*`` method the pane's classes define (bound or not), PaneScreen's included."""
    names = []
    for cls in type(screen).__mro__:
        if cls.__module__.startswith("tau_tui."):
            names += [n[len("action_"):] for n in cls.__dict__ if n.startswith("action_") and n[7:] not in names]
    return names


async def walk_screen(pilot, screen, walked: list[str]) -> None:
    """Every binding of ``screen`` through Textual (the app's too, on the first pane walked),
    then every action method of the pane called directly."""
    app = pilot.app
    first = not walked
    table = next(iter(screen.query("KeyedTable")), None)
    if table is not None:  # a selected row, so that row actions have a target
        table.focus()
        await quiet(pilot)
    bindings = [(screen, key, action) for key, action in bindings_of(screen)]
    if first:
        bindings += [(app, key, action) for key, action in bindings_of(app)]
    for target, key, action in bindings:
        if action.split("(")[0] in NOT_WALKED or app.screen is not screen:
            continue
        walked.append(f"{type(screen).__name__}:{key}:{action}")
        await target.run_action(action)
        await answer_dialogs(pilot)
        if app.screen is not screen:  # a binding that opened another pane: walk it, then come back
            pushed = app.screen
            if isinstance(pushed, PaneScreen) and type(pushed).__name__ not in {w.split(":")[0] for w in walked}:
                await walk_screen(pilot, pushed, walked)
            await restore(pilot, screen)
    for name in own_actions(screen):
        method = getattr(screen, f"action_{name}")
        if name in NOT_WALKED or method.__code__.co_argcount > 1 or app.screen is not screen:
            continue  # actions with parameters are reached through their bindings above
        walked.append(f"{type(screen).__name__}:direct:{name}")
        result = method()
        if hasattr(result, "__await__"):
            await result
        await answer_dialogs(pilot)
        await restore(pilot, screen)


async def restore(pilot, screen) -> None:
    app = pilot.app
    for _ in range(4):
        if app.screen is screen:
            return
        if isinstance(app.screen, ModalScreen) or len(app.screen_stack) > 1 and screen in app.screen_stack:
            app.pop_screen()
        else:
            mode = getattr(screen, "PANE", "") or app.current_mode
            app.switch_mode(mode)
        await quiet(pilot)


@async_test
async def test_readonly_walks_every_binding_of_every_pane_and_nothing_mutates(tmp_path, workspace):
    from tau_tui.core.cluster.logspool.log_requests import LogRequest  # noqa: F401  (the logs pane is opened on a run below)

    world, backend = demo_backend()
    # A record, so that the evidence pane's export has a target (and is refused).
    capture_live(backend, EvidenceStore.demo(), "team-nlp", "eval-mmlu-0301", world.now(), source="cli",
                 cluster=cluster_identity(backend))
    calls = count_mutations(backend)
    app_state = state_dir()
    app = TauApp(backend, readonly=True, settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
                 audit=AuditLog(app_state / "audit.jsonl"), start_pane="runs", compose_file="tau.yaml")
    before = files_outside(tmp_path, app_state)
    messages: list = []
    walked: list[str] = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        # Runs first: its "logs" binding opens the logs pane on a live stream, so saving has a spool.
        order = ["runs"] + [mode for _, mode, _ in PANES if mode != "runs"] + [mode for mode, _ in COMMAND_ONLY_PANES]
        for mode in order:
            app.switch_mode(mode)
            await settle(pilot)
            screen = app.screen
            if type(screen).__name__ in {w.split(":")[0] for w in walked}:
                continue  # already walked when a pane-switch binding opened it
            await walk_screen(pilot, screen, walked)
        # The logs pane's save, aimed outside the app's state directory, is refused.
        app.switch_mode("logs")
        await settle(pilot)
        logs = app.screen
        if getattr(logs.query_one("LogView"), "spool", None) is not None:
            logs._save_worker(logs.query_one("LogView").spool, str(workspace / "saved.log"))
            await settle(pilot)
        after = files_outside(tmp_path, app_state)

    assert calls == [], f"read-only mode reached the API: {calls}"
    assert after == before, f"files written outside {app_state}: {sorted(set(after) ^ set(before))}"
    screens = {w.split(":")[0] for w in walked}
    assert {"ComposeScreen", "QueueScreen", "RunsScreen", "LogsScreen", "NodesScreen", "NodeDetailScreen",
            "ProfilesScreen", "MultiKueueScreen", "EvidenceScreen", "EvidenceRecordScreen"} <= screens, screens
    # Every mutating action of every walked pane was refused in words and in the audit log.
    blocked = {m.verb for m in messages if isinstance(m, TauApp.MutationBlocked)}
    assert {"cancel", "retry", "hold", "hold-and-drain", "resume", "cordon", "uncordon", "drain", "submit", "save", "export"} <= blocked, blocked
    entries = [json.loads(line) for line in (app_state / "audit.jsonl").read_text().splitlines()]
    assert entries and all(e["phase"] == "refused" and e["readonly_blocked"] for e in entries)
    assert {e["verb"] for e in entries} == blocked
    assert all(e["identity"]["username"] == "kubernetes-admin" for e in entries)
    assert verify(app_state / "audit.jsonl").ok
    assert not (workspace / "saved.log").exists()
