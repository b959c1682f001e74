"""A pane draws its frames through the frame pacer (``tests/textual_compat/test_frame_pacer.py``
checks how the pacer paces them)."""

from __future__ import annotations

from tau_tui.textual_compat import screen as screen_compat
from tau_tui.textual_compat.screen import FramePacer
from tests.app.helpers import async_test, make_app, settle_until_done


@async_test
async def test_a_pane_draws_through_the_pacer(tmp_path, monkeypatch):
    timers: dict = {}
    make_timer = screen_compat.paced_update_timer

    def recording(screen):
        timers[screen] = make_timer(screen)
        return timers[screen]

    monkeypatch.setattr(screen_compat, "paced_update_timer", recording)
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle_until_done(pilot, lambda: app.screen.query("#workloads-table"), "the queue pane")
        assert isinstance(timers.get(app.screen), FramePacer)
