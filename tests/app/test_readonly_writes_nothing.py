"""``--readonly`` writes nothing but the app's own state directory: no session recording unless
asked for explicitly (and then the header says so), and no evidence store when a run finishes."""

from __future__ import annotations

from tau_tui.app import TauApp
from tau_tui.commands.app_command import run_app
from tau_tui.commands.parser import EXIT_INVALID
from tau_tui.core.operations.audit import AuditLog
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tau_tui.widgets.header_bar import HeaderBar
from tests.app.helpers import async_test, settle
from tests.scenarios import demo_backend


def settings(tmp_path) -> LoadedSettings:
    return LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml")


def header_text(app) -> str:
    bar = app.query_one(HeaderBar)
    return bar.render_line(0).text


def test_the_command_refuses_record_with_readonly_unless_asked_explicitly(tmp_path, capsys):
    path = tmp_path / "s.rec"
    assert run_app(["--readonly", "--record", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "--record-while-readonly" in err and "Traceback" not in err
    assert not path.exists()


@async_test
async def test_a_readonly_app_records_nothing_and_keeps_no_evidence(tmp_path):
    world, backend = demo_backend()
    path = tmp_path / "s.rec"
    app = TauApp(backend, readonly=True, record=str(path), settings=settings(tmp_path), audit=AuditLog(tmp_path / "audit.jsonl"),
                 evidence=EvidenceStore(tmp_path / "data" / "evidence.sqlite3"))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        world.advance(600)  # runs finish: a recorder would capture their evidence now
        await settle(pilot)
        assert app.evidence_recorder is None and app.session_recorder is None
        assert "RECORDING" not in header_text(app) and "READ-ONLY" in header_text(app)
        await app.action_quit()
    assert not path.exists() and not (tmp_path / "data").exists()


@async_test
async def test_readonly_records_only_as_an_explicit_choice_the_header_shows(tmp_path):
    _, backend = demo_backend()
    path = tmp_path / "s.rec"
    app = TauApp(backend, readonly=True, record=str(path), record_while_readonly=True,
                 settings=settings(tmp_path), audit=AuditLog(tmp_path / "audit.jsonl"), evidence=EvidenceStore(tmp_path / "data" / "evidence.sqlite3"))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "READ-ONLY · RECORDING" in header_text(app)
        assert app.evidence_recorder is None
        await app.action_quit()
    assert path.exists() and not (tmp_path / "data").exists()
