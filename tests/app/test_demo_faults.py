"""`--demo faults`: the GPU faults are on the first screen and in the runs they hit."""

from __future__ import annotations

from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, make_app, settle


def _text_of(widget) -> str:
    """What a widget shows on screen, its lines joined by spaces."""
    return " ".join("".join(seg.text for seg in widget.render_line(y)).strip() for y in range(widget.size.height))


@async_test
async def test_demo_faults_shows_the_faults_from_the_first_screen(tmp_path):
    from tau_tui.core.sim.scenario import build_world
    from tau_tui.screens.runs import render_run_status

    world = build_world("faults")
    backend = SimulatedBackend(world, realtime=False)
    backend.start()
    assert backend.wait_synced(10)
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        banner = app.screen.query_one("#pane-banner")
        assert banner.has_class("-shown")
        text = _text_of(banner)
        assert "⚠ GPU faults: 1 node unhealthy (gpu-node-1), 1 degraded (gpu-node-4)" in text, text

        await pilot.press("4")
        await settle(pilot)
        runs = app.screen
        status = runs.data.statuses["team-oncall/burn-in-0"]
        cells = runs.query_one("#runs-table", KeyedTable).cells_of("team-oncall/burn-in-0")
        assert "pod failed" in cells[0].plain  # never a plain "◐ starting"
        attention = [d for d in status.diagnostics if d.code == "GPU_FAULT"]
        assert attention and "gpu-node-1" in attention[0].message and "Xid48" in attention[0].message
        group = render_run_status(status)
        assert any("Attention" in getattr(part, "plain", "") for part in group.renderables)
    backend.close()
