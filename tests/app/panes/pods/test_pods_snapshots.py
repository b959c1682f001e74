"""Snapshots of the Pods and Events views at 80x24 and 160x48 on the demo (frozen clock): every pod,
and the events of a RayJob.  Update with ``--snapshot-update`` and look at each changed baseline
as a PNG before accepting it (docs/testing.md)."""

from __future__ import annotations

import pytest

from tau_tui.screens.events import EventsScreen
from tau_tui.screens.pods import PodsScreen
from tests.app.helpers import make_app, settle, settle_until

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def open_view(command: str, screen_type: type, table_id: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        await settle(pilot)
        await pilot.press(":", *command, "enter")
        await settle_until(pilot, lambda: isinstance(app.screen, screen_type)
                           and bool(app.screen.query_one(f"#{table_id}").keys)
                           and app.screen.refreshes_applied >= 2)
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_pods_view(snap_compare, tmp_path, size):
    app = make_app(tmp_path, start_pane="queue")
    assert snap_compare(app, terminal_size=size, run_before=open_view("pods", PodsScreen, "pods-table"))


@pytest.mark.parametrize("size", SIZES)
def test_events_of_a_rayjob(snap_compare, tmp_path, size):
    app = make_app(tmp_path, start_pane="queue")
    assert snap_compare(app, terminal_size=size,
                        run_before=open_view("events team-nlp/ray-rlhf-ppo", EventsScreen, "events-table"))
