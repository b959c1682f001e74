"""Make the screenshots of the user guides (docs/guide/images/*.svg) from the app itself.

Each walk of docs/guide/researcher.md, platform-owner.md and on-call.md is driven headless with
Textual's pilot on the demo scenarios at a frozen clock, as the snapshot tests build the app, so
the pictures match what `tau-tui --demo` shows and come out the same on every run.

    .venv/bin/python scripts/guide_screenshots.py            # all three walks
    .venv/bin/python scripts/guide_screenshots.py on-call    # one walk
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "guide" / "images"
SIZE = (120, 36)
WIDE = (160, 48)

sys.path.insert(0, str(ROOT))

from textual.widgets import Input  # noqa: E402

from tests.app.helpers import make_app, settle, settle_until, wait_workers  # noqa: E402


def simulated_backend(scenario: str):
    """The named demo scenario as `tau-tui --demo` starts it, at its start instant with a frozen
    clock: time moves only via ``world.advance``."""
    from tau_tui.startup.backends import start_demo_backend

    backend: Any = start_demo_backend(scenario, None, realtime=False)
    return backend.world, backend


class Walk:
    """One app session of a guide: press keys, wait for the app, save numbered screenshots."""

    def __init__(self, pilot, prefix: str) -> None:
        self.pilot = pilot
        self.app = pilot.app
        self.prefix = prefix

    async def settle(self, until: Callable[[], object] | None = None) -> None:
        if until is None:
            await settle(self.pilot)
        elif not await settle_until(self.pilot, until):
            self.app.save_screenshot(filename=f"{self.prefix}-stuck.svg", path=tempfile.gettempdir())
            raise AssertionError(f"{self.prefix}: the app never reached the state the next picture shows")
        await self.pilot.pause(0.2)

    async def press(self, *keys: str) -> None:
        await self.pilot.press(*keys)
        await self.settle()

    async def command(self, text: str) -> None:
        """``:`` then the command, as typed."""
        await self.pilot.press("colon")
        await self.pilot.pause(0.2)
        await self.pilot.press(*text, "enter")
        await self.settle()

    async def filter(self, text: str) -> None:
        """``/`` then the filter, as typed."""
        await self.pilot.press("slash")
        await self.pilot.pause(0.2)
        await self.pilot.press(*text, "enter")
        await self.settle()

    def focus_row(self, table_id: str, key: str) -> None:
        table = self.app.screen.query_one(f"#{table_id}")
        table.focus()
        table.move_cursor(row=table.get_row_index(key))

    async def shot(self, name: str) -> None:
        for screen in self.app.screen_stack:  # a blinking cursor would make the picture depend on timing
            for field in screen.query(Input):
                field.cursor_blink = False
        await self.pilot.pause(0.3)
        path = self.app.save_screenshot(filename=f"{self.prefix}-{name}.svg", path=str(IMAGES))
        print(Path(path).relative_to(ROOT))


async def session(tmp: Path, prefix: str, body: Callable[[Walk], Awaitable[None]], *, scenario: str = "demo",
                  start_pane: str = "queue", compose_file: str | None = None, size=SIZE, backend=None) -> None:
    if backend is None:
        _, backend = simulated_backend(scenario)
    app = make_app(tmp, backend, start_pane=start_pane, compose_file=compose_file)
    async with app.run_test(size=size) as pilot:
        walk = Walk(pilot, prefix)
        await walk.settle(lambda: getattr(app.screen, "refreshes_applied", 2) >= 2)
        await body(walk)
        await wait_workers(app)
    backend.close()


# ---------------------------------------------------------------- researcher


async def researcher(tmp: Path) -> None:
    from tau_tui.cli import main as cli_main

    workspace = tmp / "ws"
    workspace.mkdir()
    os.chdir(workspace)
    assert cli_main(["init"]) == 0  # the example tau.yaml and train.py, as `tau-tui init` writes them

    async def compose(walk: Walk) -> None:
        await walk.press("1")
        await walk.settle(lambda: getattr(getattr(walk.app.screen, "validation", None), "ok", False))
        await walk.shot("1-compose")
        await walk.press("ctrl+t")  # server dry-run
        await walk.settle(lambda: "server dry-run passed" in _result_text(walk))
        await walk.shot("2-server-dry-run")
        await walk.press("ctrl+g")  # submit: the confirmation shows what will be created
        await walk.shot("3-submit-confirm")
        await walk.press("y")
        await walk.settle(lambda: "submitted" in _result_text(walk).lower())
        world.advance(5)  # Kueue's turn: the run's Workload gets its place in line
        await walk.press("escape")
        await walk.press("2")  # profiles
        await walk.shot("4-profiles")
        await walk.press("3")  # queue
        await walk.settle(lambda: any("example-train" in key for key in walk.app.screen.query_one("#workloads-table").keys))
        walk.focus_row("workloads-table", next(key for key in walk.app.screen.query_one("#workloads-table").keys
                                               if "example-train" in key))
        await walk.settle()
        await walk.shot("5-queue-position")
        await walk.press("4")  # runs
        await walk.filter("example-train")
        walk.focus_row("runs-table", "taugrid-default/example-train")
        await walk.settle()
        await walk.shot("6-runs-phases")

    world, backend = simulated_backend("demo")
    await session(tmp, "researcher", compose, compose_file="tau.yaml", size=WIDE, backend=backend)

    async def logs(walk: Walk) -> None:
        walk.focus_row("runs-table", "taugrid-default/nccl-allreduce-check")
        await walk.press("l")
        await walk.settle(lambda: walk.app.screen.query("LogView") and walk.app.screen.query_one("LogView").lines_seen > 20)
        await walk.shot("7-logs")
        await walk.press("4")
        walk.focus_row("runs-table", "team-nlp/eval-mmlu-0301")
        await walk.settle()
        await walk.shot("8-failed-run")
        await walk.press("r")
        await walk.shot("9-retry-refused")

    await session(tmp, "researcher", logs, start_pane="runs")

    from tests.recovery_world import fail_by_xid79, recovery_world

    (tmp / "recovery").mkdir()
    world, backend = recovery_world(tmp / "recovery", realtime=False)
    fail_by_xid79(world, backend)
    backend.start()
    assert backend.wait_synced(10)

    async def resume(walk: Walk) -> None:
        walk.focus_row("runs-table", "team-a/finetune")
        await walk.settle()
        await walk.shot("10-gpu-fault-run")
        await walk.press("R")
        await walk.shot("11-resume-preview")

    await session(tmp, "researcher", resume, start_pane="runs", backend=backend)


def _result_text(walk: Walk) -> str:
    """What the compose pane's result line says now."""
    screen = walk.app.screen
    return " ".join(str(widget.content) for widget in screen.query("#compose-result"))


# ---------------------------------------------------------------- platform owner


async def _apply_every_step(walk: Walk, name: str | None = None) -> None:
    """``a`` then ``y`` on each step until every step is verified; ``name``: the first preview's picture."""
    from tau_tui.widgets.confirm_dialog import ConfirmDialog

    wizard = walk.app.screen
    for step in range(len(_marks(walk))):
        if _all_verified(walk):
            return
        done = _marks(walk).count("✓")
        await walk.settle(lambda: wizard.exercise is not None and wizard.last_statuses)
        await walk.pilot.press("a")
        await walk.settle(lambda: isinstance(walk.app.screen, ConfirmDialog))
        if step == 0 and name:
            await walk.shot(name)
        await walk.pilot.press("y")

        def step_verified(done: int = done) -> bool:
            return walk.app.screen is wizard and _marks(walk).count("✓") > done

        await walk.settle(step_verified)
    await walk.settle(lambda: _all_verified(walk))


def _marks(walk: Walk) -> list[str]:
    """The wizard's step marks (✓ ▶ ○ ✗ ⚠), top to bottom."""
    table = walk.app.screen.query_one("#wizard-steps")
    return [str(table.get_row_at(i)[0]).split()[0] for i in range(table.row_count)]


def _all_verified(walk: Walk) -> bool:
    marks = _marks(walk)
    return bool(marks) and all(mark == "✓" for mark in marks)


async def platform_owner(tmp: Path) -> None:
    import keyring
    from keyring.backends.fail import Keyring as NoKeyring

    keyring.set_keyring(NoKeyring())  # as on a machine without one, whatever this one has

    async def setup_drain_rotate(walk: Walk) -> None:
        await walk.shot("1-multikueue-pane")
        await walk.press("W")
        await walk.settle(lambda: getattr(walk.app.screen, "last_statuses", None))
        await walk.shot("2-setup-wizard")
        await _apply_every_step(walk, "3-step-preview")
        await walk.shot("4-setup-verified")
        await walk.press("escape")
        await walk.press("C")
        await walk.settle(lambda: getattr(walk.app.screen, "last_statuses", None))
        await walk.shot("5-drain-refused")
        await walk.press("escape")
        await walk.command("mk rotate lab-worker-1 lab-worker-1-new")
        await walk.settle(lambda: getattr(walk.app.screen, "last_statuses", None))
        await walk.shot("6-rotate-no-keyring")

    await session(tmp, "platform-owner", setup_drain_rotate, start_pane="multikueue", size=WIDE)

    from tests.multikueue_lab import MemoryKeyring

    keyring.set_keyring(MemoryKeyring())
    world, backend = simulated_backend("demo")
    # the new credential a platform owner would have made in the identity system
    world.multikueue.fleet.mint("lab-worker-1", context="lab-worker-1-new")

    async def rotate(walk: Walk) -> None:
        await walk.press("W")
        await walk.settle(lambda: getattr(walk.app.screen, "last_statuses", None))
        await _apply_every_step(walk)
        await walk.press("escape")
        await walk.command("mk rotate lab-worker-1 lab-worker-1-new")
        await walk.settle(lambda: getattr(walk.app.screen, "last_statuses", None))
        await walk.shot("7-rotate")
        await _apply_every_step(walk, "8-rotate-step-preview")
        await walk.shot("9-rotate-verified")

    await session(tmp, "platform-owner", rotate, start_pane="multikueue", size=WIDE, backend=backend)


# ---------------------------------------------------------------- on-call


async def on_call(tmp: Path) -> None:
    async def triage(walk: Walk) -> None:
        await walk.shot("1-nodes")
        walk.focus_row("nodes-table", "a100-node-3")
        await walk.press("enter")
        await walk.settle(lambda: walk.app.screen.query("#gpus-table"))
        await walk.shot("2-node-detail")
        await walk.press("escape")
        walk.focus_row("nodes-table", "h100-node-5")
        await walk.press("c")
        await walk.shot("3-cordon-confirm")
        await walk.press("y")
        await walk.press("D")
        await walk.shot("4-drain-preview")
        await walk.press("y")
        walk.focus_row("nodes-table", "a100-node-3")
        await walk.press("D")
        await walk.shot("5-drain-budget")
        await walk.press("n")

    await session(tmp, "on-call", triage, start_pane="nodes", size=WIDE)

    async def runs_hit(walk: Walk) -> None:
        await walk.shot("6-runs-hit")
        await walk.press("4")
        walk.focus_row("runs-table", "team-oncall/burn-in-0")
        await walk.settle()
        await walk.shot("7-run-gpu-fault")

    await session(tmp, "on-call", runs_hit, scenario="faults", start_pane="nodes", size=WIDE)


WALKS = {"researcher": researcher, "platform-owner": platform_owner, "on-call": on_call}


def main(argv: list[str]) -> int:
    names = argv or list(WALKS)
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"guide-{name}-") as tmp_dir:
            tmp = Path(tmp_dir)
            os.environ.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CONFIG_HOME=str(tmp / "config"),
                              XDG_DATA_HOME=str(tmp / "data"))
            os.environ.pop("TAU_TUI_CONFIG", None)
            cwd = Path.cwd()
            try:
                asyncio.run(WALKS[name](tmp))
            finally:
                os.chdir(cwd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
