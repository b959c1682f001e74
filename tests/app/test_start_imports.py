"""What the app loads before its first frame (issue #12, start to the first frame ≤ 1 s on
``--demo``): the interactive path imports neither the kubernetes client nor the headless
commands, and of the panes only what the first one needs; each pane's module loads when the pane
is first made, and every mode still makes its screen."""

from __future__ import annotations

import json
import subprocess
import sys

from tau_tui.app_parts.pane_modes import PANE_MODES, PANE_SCREENS, screen_class

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
    probe = ("import json, sys; import tau_tui.cli, tau_tui.app; "
             "from tau_tui.app_parts.pane_modes import LATER_MODULES, import_pane_modules; "
             "loaded = import_pane_modules(); "
             "print(json.dumps([sorted(loaded), sorted(m for m in LATER_MODULES if m in sys.modules), import_pane_modules()]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded, present, again = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(loaded) >= {"tau_tui.screens.compose", "tau_tui.screens.logs", "tau_tui.screens.multikueue_wizard"}
    assert len(present) == len(set(PANE_SCREENS.values())) + 1 and again == []
