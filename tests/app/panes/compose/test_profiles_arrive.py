"""Issue 43 defect 4: Compose gets its profiles whenever they come.  Started before the cluster is
connected, or before the TauCluster view has listed, the form says it waits for them (not "no
cluster connected"), and validates again by itself when they arrive; ctrl+r validates again with
the profiles as they are now.  And defect 6: a profile's reason names the field that is invalid."""

from __future__ import annotations

import threading

import tau_tui.app as app_module
from tau_tui.app import TauApp
from tau_tui.core.cluster.changes import ViewState, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.audit import AuditLog
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.screens import messages as screen_messages
from tau_tui.screens.compose import ComposeScreen
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tests.app.conftest import VALID_TAU_YAML
from tests.app.helpers import async_test, demo_app, of_type, settle, settle_until_done, wait_until
from tests.app.panes.compose.compose_keys import form_ready

R = ResourceKind


def _profiles(screen: ComposeScreen) -> str:
    return str(screen.query_one("#profile-excluded").render())


def _preview(screen: ComposeScreen) -> str:
    return str(screen.query_one("#yaml-preview-body").render())


def _result(screen: ComposeScreen) -> str:
    return str(screen.query_one("#compose-result").render())


@async_test
async def test_profiles_that_come_after_the_pane_opened_are_used_without_a_key(tmp_path, workspace, monkeypatch):
    """The real start: ``--demo --pane compose``; the cluster connects after the form's first validation."""
    connect = threading.Event()
    start_demo_backend = app_module.start_demo_backend

    def slow_cluster(*args, **kwargs):
        connect.wait(120)
        return start_demo_backend(*args, **kwargs)

    monkeypatch.setattr(app_module, "start_demo_backend", slow_cluster)
    messages: list = []
    app = TauApp(demo="demo", demo_realtime=False, start_pane="compose", compose_file="tau.yaml",
                 settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
                 audit=AuditLog(tmp_path / "audit.jsonl"), evidence=EvidenceStore(tmp_path / "evidence.sqlite3"))
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        # no settle here: it waits for every worker, the one connecting too (held until connect is set)
        await wait_until(pilot, lambda: of_type(messages, screen_messages.Validated), what="the first validation")
        screen = app.screen
        assert isinstance(screen, ComposeScreen)
        assert "waiting for TauCluster/cluster… (connecting to the cluster)" in _profiles(screen)
        assert "no preview yet: waiting for TauCluster/cluster" in _preview(screen)
        assert "no cluster connected" not in _profiles(screen)
        connect.set()
        await settle_until_done(pilot, lambda: "profiles from TauCluster/cluster generation" in _profiles(screen),
                                "the profiles, with no key pressed")
        await settle_until_done(pilot, lambda: screen.validation.ok, "a valid form")
        assert screen.validation.rendered and "kind: RayJob" in screen.validation.manifests_yaml
        assert "no preview" not in _preview(screen)


@async_test
async def test_a_tau_cluster_view_still_listing_says_it_waits_then_validates_when_it_is_in(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, backend, app, pilot):
        listing = {"on": True}
        view_state, tau_cluster = backend.view_state, backend.tau_cluster

        def still_listing(kind):
            if kind is R.TAU_CLUSTER and listing["on"]:
                return ViewState(kind, ViewStatus.SYNCING)
            return view_state(kind)

        backend.view_state = still_listing
        backend.tau_cluster = lambda: None if listing["on"] else tau_cluster()
        screen = await form_ready(pilot)
        assert "waiting for TauCluster/cluster… (its first list is still coming in)" in _profiles(screen)
        assert "no profile is ready" not in _profiles(screen)
        listing["on"] = False  # the list is in: the view's state moves, the pane's tick sees it
        await settle_until_done(pilot, lambda: "profiles from TauCluster/cluster generation" in _profiles(screen),
                                "the profiles, with no key pressed")
        assert "✓ azure.research.training.xl" not in _profiles(screen)  # picker options are not in the excluded list
        assert screen.validation.ok


@async_test
async def test_a_tau_cluster_that_appears_later_is_used_and_ctrl_r_reads_it_again(tmp_path, workspace, monkeypatch):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (world, backend, app, pilot):
        removed = world.store.remove(R.TAU_CLUSTER.type, "cluster")
        await settle_until_done(pilot, lambda: backend.tau_cluster() is None, "the TauCluster gone from the cache")
        screen = await form_ready(pilot)
        await settle_until_done(pilot, lambda: "no TauCluster/cluster in this cluster" in _profiles(screen),
                                "no TauCluster said")
        monkeypatch.setattr(ComposeScreen, "apply", lambda self, data: None)  # the tick's check off: ctrl+r alone
        world.store.put(R.TAU_CLUSTER.type, removed)
        await settle_until_done(pilot, lambda: backend.tau_cluster() is not None, "the TauCluster back in the cache")
        await settle(pilot)
        assert "no TauCluster/cluster in this cluster" in _profiles(screen)
        await pilot.press("ctrl+r")
        await settle_until_done(pilot, lambda: "✓ client dry-run: renders" in _result(screen), "ctrl+r's result")
        assert "profiles from TauCluster/cluster generation" in _profiles(screen)


@async_test
async def test_profile_reasons_name_the_field_that_is_invalid(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(VALID_TAU_YAML.replace("entrypoint: train.py\n", "entrypoint: train.py\nengine: foo\n"))
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        screen = await form_ready(pilot)
        await settle_until_done(pilot, lambda: "profiles from TauCluster" in _profiles(screen), "the profiles")
        shown = _profiles(screen)
        assert not screen.validation.ok  # engine: foo is what is wrong, and its field says so
        assert "namespace is not set" not in shown
        assert "not applicable to namespace taugrid-default (allowed: team-nlp)" in shown
        engine_error = str(screen.query_one("#field-run-engine").query_one(".field-error").render())
        assert "foo" in engine_error
        for other in ("#field-run-name", "#field-run-entrypoint"):  # set, and valid: no "is required" under them
            assert "is required" not in str(screen.query_one(other).query_one(".field-error").render())
