"""What the app loads before its first frame (start to the first frame ≤ 1 s on
``--demo``): the interactive path imports neither the kubernetes client nor the headless
commands, and of the panes only what the first one needs; each pane's module loads when the pane
is first made, and every mode still makes its screen."""

from __future__ import annotations

import json
import subprocess
import sys

from tau_tui.app_components.pane_modes import PANE_MODES, PANE_SCREENS, screen_class
from tau_tui.textual_compat import probes
from tests.app.helpers import async_test, demo_app, make_app, settle, settle_until

#: Loaded later, by what needs them: a kubeconfig's cluster, a sub-command, a pane, the recorder.
NOT_BEFORE_THE_FIRST_FRAME = (
    "kubernetes",
    "tau_tui.commands.registry",
    "tau_tui.commands.config_commands",
    "tau_tui.core.operations.multikueue_steps",
    "tau_tui.core.operations.evidence.recorder",
    "tau_tui.core.operations.recording.writer",
    "tau_tui.core.operations.gpufaults",
    "tau_tui.screens.compose",
    "tau_tui.screens.logs",
    "tau_tui.screens.runs",
    "tau_tui.screens.nodes",
    "tau_tui.screens.multikueue_wizard",
)


def test_the_interactive_path_loads_neither_the_kubernetes_client_nor_other_panes():
    probe = ("import json, sys; import tau_tui.cli, tau_tui.app; "
             f"print(json.dumps([m for m in {list(NOT_BEFORE_THE_FIRST_FRAME)!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_every_mode_makes_its_own_pane_screen():
    from tau_tui.app import TauApp

    assert TauApp.MODES is PANE_MODES
    for mode, (_module, name) in PANE_SCREENS.items():
        assert screen_class(mode).__name__ == name
        make = PANE_MODES[mode]
        assert callable(make) and make.__name__ == f"make_{mode}_screen"


def test_the_other_panes_load_ahead_of_their_first_open():
    """Each after ``between`` (the app's worker naps there while keys come)."""
    probe = ("import json, sys; import tau_tui.cli, tau_tui.app; "
             "from tau_tui.app_components.pane_modes import LATER_MODULES, import_pane_modules; "
             "seen = []; loaded = import_pane_modules(between=lambda: seen.append(1)); "
             "print(json.dumps([sorted(loaded), sorted(m for m in LATER_MODULES if m in sys.modules), "
             "import_pane_modules(), len(seen)]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded, present, again, between = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(loaded) >= {"tau_tui.screens.compose", "tau_tui.screens.logs", "tau_tui.screens.multikueue_wizard"}
    assert len(present) == len(set(PANE_SCREENS.values())) + 1 and again == [] and between == len(loaded)


@async_test
async def test_the_other_panes_load_while_the_first_list_is_on_its_way(tmp_path, monkeypatch):
    """After the first frame, not after the first sync: the panes' modules load while the cluster's
    first list (the demo's world) comes, one at a time, each after a nap for keys if one came."""
    import tau_tui.app_components.pane_preparation as preparation

    calls: list[bool] = []

    def recorded(between=None):
        calls.append(callable(between))
        return []

    monkeypatch.setattr(preparation, "import_pane_modules", recorded)
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: calls)
        assert calls == [True]


@async_test
async def test_a_panes_first_open_does_not_restyle_the_whole_app(tmp_path, monkeypatch):
    """Textual re-parses the stylesheet and restyles the screen being left when it first switches to
    a mode whose screen is not marked as styled: half of a pane's first open.  A pane made while the
    app runs is marked; a theme change meanwhile still restyles it."""
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        refreshes: list[str] = []
        refresh_css = app.refresh_css

        def counted(animate: bool = True) -> None:
            refreshes.append(app.current_mode)
            refresh_css(animate)

        monkeypatch.setattr(app, "refresh_css", counted)
        for key in ("7", "2", "3"):
            await pilot.press(key)
            await settle(pilot)
        assert refreshes == []
        assert app.current_mode == "queue"
        made = PANE_MODES["compose"]()  # made ahead, as the Runs and Nodes panes are
        assert probes.styled_with_current_stylesheet(made)
        theme = app.theme
        app.theme = next(name for name in app.available_themes if name != theme)
        assert not probes.styled_with_current_stylesheet(made)  # that screen is restyled when it opens
        app.theme = theme
        await settle(pilot)
