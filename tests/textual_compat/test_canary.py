"""The canary for Textual's private names: one module that checks each name behind
``tau_tui/textual_compat/`` still exists and behaves as its hook assumes (written against Textual
8.2.8), so a Textual upgrade that moves one fails here, in one place, naming it.

Sections: the app (``textual_compat/app.py``), the screen and footer (``screen.py``, ``footer.py``),
the table (``table.py``), the probes the tests observe through (``probes.py``).  ``test_private_names_confined.py`` checks that no other module uses one."""

from __future__ import annotations

import asyncio
import inspect
from unittest.mock import patch
from weakref import WeakSet

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer
from textual.types import NoActiveAppError
from textual.widget import Widget
from textual.widgets import Footer, Static

from tau_tui.textual_compat import footer as footer_compat
from tau_tui.textual_compat import probes
from tau_tui.textual_compat import screen as screen_compat
from tau_tui.textual_compat.app import hold_repaints, mode_started, mode_top_screen, mount_screen_ahead, repaint_holds
from tau_tui.textual_compat.screen import CompatScreen, FramePacer, css_update_count
from tau_tui.textual_compat.table import update_scrollbars
from tests.app.helpers import wait_until


def run(coroutine_function) -> None:
    asyncio.run(coroutine_function())


# ==== the app ====

class Pane(Screen):
    def compose(self) -> ComposeResult:
        yield Static("pane", id="pane-text")


class ModesApp(App):
    MODES = {"first": Pane, "second": Pane, "third": Pane}
    DEFAULT_MODE = "first"

    def on_mount(self) -> None:
        self.switch_mode("first")



# -- hold_repaints: App._begin_batch, App._end_batch, App._batch_count


def test_the_batch_counter_counts_batch_update_and_delay_update_holds() -> None:
    async def check() -> None:
        app = ModesApp()
        async with app.run_test(size=(40, 10)) as pilot:
            await pilot.pause()
            assert app._batch_count == 0
            with app.batch_update():
                assert app._batch_count == 1
                with app.batch_update():
                    assert app._batch_count == 2
            assert app._batch_count == 0
            app._begin_batch()
            assert app._batch_count == 1
            app._end_batch()
            assert app._batch_count == 0
            # delay_update is the same counter, released by a timer
            app.delay_update(0.01)
            assert app._batch_count == 1 == repaint_holds(app)
            await pilot.pause(0.1)
            assert app._batch_count == 0 == repaint_holds(app)

    run(check)


def test_hold_repaints_holds_until_its_first_release_and_refreshes_the_screen_after_the_last() -> None:
    async def check() -> None:
        app = ModesApp()
        async with app.run_test(size=(40, 10)) as pilot:
            await pilot.pause()
            refreshed: list[int] = []
            screen = app.screen
            screen_refresh = screen.refresh

            def noting_refresh(*args, **kwargs):
                refreshed.append(app._batch_count)
                return screen_refresh(*args, **kwargs)

            screen.refresh = noting_refresh  # type: ignore[method-assign]
            outer = hold_repaints(app)
            inner = hold_repaints(app)
            assert app._batch_count == 2
            inner()
            inner()  # only the first release counts
            assert app._batch_count == 1 and refreshed == []  # another hold is still on
            outer()
            assert app._batch_count == 0 and refreshed == [0]

    run(check)


def test_switch_mode_holds_its_repaints_through_delay_update() -> None:
    """The app's ``delay_update`` override is where a mode switch's hold begins."""

    class CountingApp(ModesApp):
        delays: list[float] = []

        def delay_update(self, delay: float = 0.05) -> None:
            self.delays.append(delay)
            super().delay_update(delay)

    async def check() -> None:
        app = CountingApp()
        async with app.run_test(size=(40, 10)) as pilot:
            await pilot.pause()
            before = len(app.delays)
            app.switch_mode("second")
            assert len(app.delays) == before + 1 and app._batch_count == 1
            await pilot.pause(0.2)
            assert app._batch_count == 0

    assert "self.delay_update()" in inspect.getsource(App.switch_mode)
    run(check)


# -- mode_started, mode_top_screen: App._screen_stacks


def test_screen_stacks_hold_a_mode_once_it_was_switched_to() -> None:
    async def check() -> None:
        app = ModesApp()
        async with app.run_test(size=(40, 10)) as pilot:
            await pilot.pause()
            assert isinstance(app._screen_stacks, dict)
            assert mode_started(app, "first") and not mode_started(app, "second")
            assert mode_top_screen(app, "first") is app.screen and mode_top_screen(app, "second") is None
            first = app.screen
            app.switch_mode("second")
            await pilot.pause()
            assert mode_started(app, "second") and mode_top_screen(app, "second") is app.screen
            assert mode_top_screen(app, "first") is first  # the mode left keeps its stack
            pushed = Pane()
            await app.push_screen(pushed)
            assert mode_top_screen(app, "second") is pushed

    run(check)


# -- mount_screen_ahead: App._load_screen_css, App._register


def test_a_screen_mounted_ahead_is_attached_and_its_modes_first_switch_only_shows_it() -> None:
    ahead = Pane()

    class AheadApp(ModesApp):
        MODES = {**ModesApp.MODES, "ahead": lambda: ahead}

    async def check() -> None:
        app = AheadApp()
        async with app.run_test(size=(40, 10)) as pilot:
            await pilot.pause()
            assert callable(app._load_screen_css) and callable(app._register)
            mount_screen_ahead(app, ahead)
            await pilot.pause()
            assert ahead.is_attached and ahead.is_mounted and app.screen is not ahead
            assert ahead.query_one("#pane-text", Static)  # its widgets were composed and mounted
            assert not mode_started(app, "ahead")
            app.switch_mode("ahead")
            await pilot.pause()
            assert app.screen is ahead and mode_top_screen(app, "ahead") is ahead

    run(check)


# -- public App behaviour the components lean on


def test_a_mode_can_be_replaced_once_the_app_runs_before_its_first_switch() -> None:
    """PanePreparation swaps a mode's factory with remove_mode and add_mode, in ``on_mount``
    (``remove_mode`` makes a future, which needs the running loop)."""
    made: list[str] = []

    class ReplacingApp(ModesApp):
        def on_mount(self) -> None:
            self.remove_mode("second")
            self.add_mode("second", self.make_second)
            super().on_mount()

        def make_second(self) -> Pane:
            made.append("second")
            return Pane()

    async def check() -> None:
        app = ReplacingApp()
        async with app.run_test(size=(40, 10)) as pilot:
            await pilot.pause()
            app.switch_mode("second")
            await pilot.pause()
            assert made == ["second"] and isinstance(app.screen, Pane)

    run(check)


# ==== the screen and the footer ====

class Probe(CompatScreen):
    BINDINGS = [Binding("x", "probe", "Probe", show=False), Binding("y", "probe", "Shown")]

    def compose(self) -> ComposeResult:
        yield Static("probe", id="probe-text")
        yield Footer()


class ProbeApp(App):
    def on_mount(self) -> None:
        self.push_screen(Probe())



# -- the frame pacer: Timer._run, Timer._tick, Timer._active, Timer._interval, Timer._start, textual._time


def test_timer_run_is_a_private_coroutine_method_without_arguments() -> None:
    assert inspect.iscoroutinefunction(Timer._run)
    assert list(inspect.signature(Timer._run).parameters) == ["self"]
    assert inspect.iscoroutinefunction(Timer._run_timer)  # what awaits _run (started by _start)
    assert "await self._run()" in inspect.getsource(Timer._run_timer)


def test_timer_tick_takes_next_timer_and_count_by_keyword() -> None:
    parameters = inspect.signature(Timer._tick).parameters
    assert inspect.iscoroutinefunction(Timer._tick)
    assert parameters["next_timer"].kind is inspect.Parameter.KEYWORD_ONLY
    assert parameters["count"].kind is inspect.Parameter.KEYWORD_ONLY


def test_timer_keeps_its_interval_and_an_active_event() -> None:
    class Target:
        pass

    async def check() -> None:
        target = Target()
        timer = Timer(target, 0.5, name="canary", pause=True)
        assert timer._interval == 0.5
        assert isinstance(timer._active, asyncio.Event) and not timer._active.is_set()  # paused
        timer.resume()
        assert timer._active.is_set()
        assert callable(timer._start)

    run(check)


def test_textual_time_has_the_clock_and_sleep_the_pacer_uses() -> None:
    from textual import _time

    assert callable(_time.get_time)
    assert inspect.iscoroutinefunction(screen_compat.sleep)
    assert screen_compat.sleep is _time.sleep
    before = _time.get_time()
    run(lambda: screen_compat.sleep(0.002))
    assert _time.get_time() >= before


# -- a live screen: _Screen__update_timer, _on_timer_update, _timers, _compositor_refresh,
#    _css_update_count, _refresh_layout, _compositor.render_update, _bindings


def test_a_live_screen_has_the_private_names_the_hooks_use() -> None:
    async def check() -> None:
        app = ProbeApp()
        async with app.run_test(size=(60, 10)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, Probe)
            assert isinstance(Screen.__dict__["_update_timer"], property)
            assert "_Screen__update_timer" in vars(screen)
            timer = screen._update_timer
            assert isinstance(timer, FramePacer) and screen._Screen__update_timer is timer
            assert timer in screen._timers and isinstance(screen._timers, WeakSet)
            assert callable(screen._on_timer_update)
            # a frame drawn calls _compositor_refresh, which runs what waits for a frame
            drawn: list[bool] = []
            compositor_refresh = screen._compositor_refresh
            screen._compositor_refresh = lambda: (drawn.append(True), compositor_refresh())  # type: ignore[method-assign]
            ran: list[bool] = []
            with patch.object(screen_compat, "FRAME_WAIT_S", 3600.0):  # only a frame runs it, however late
                screen.call_after_frame(lambda: ran.append(bool(drawn)))
                await wait_until(pilot, lambda: ran, what="the callback after the frame")  # a busy machine draws it late
            assert drawn and ran == [True]
            # the stylesheet's update count: an int on the app, copied to a screen by mark_styled
            assert isinstance(app._css_update_count, int) and css_update_count(app) == app._css_update_count
            app._invalidate_css()
            assert screen._css_update_count != app._css_update_count
            screen.mark_styled()
            assert screen._css_update_count == app._css_update_count
            # own bindings by key, keymap applied
            assert [b.action for b in screen.bindings_of_key("x")] == ["probe"]
            assert "probe" in [b.action for b in screen.all_own_bindings()]
            assert isinstance(screen._bindings.key_to_bindings, dict)

    run(check)


def test_a_screen_not_shown_is_laid_out_and_drawn_into_nothing() -> None:
    assert "size" in inspect.signature(Screen._refresh_layout).parameters

    async def check() -> None:
        app = ProbeApp()
        async with app.run_test(size=(60, 10)) as pilot:
            await pilot.pause()
            hidden = Probe()
            app.install_screen(hidden, "hidden")
            await app.push_screen(hidden)
            await app.pop_screen()
            await pilot.pause()
            assert app.screen is not hidden
            assert "full" in inspect.signature(hidden._compositor.render_update).parameters
            hidden.lay_out_unshown(Size(40, 8))
            assert hidden.query_one("#probe-text", Static).size.width == 40

    run(check)


def test_a_screen_made_outside_an_app_cannot_be_marked_styled() -> None:
    with pytest.raises(NoActiveAppError):
        CompatScreen().mark_styled()


# -- the footer: textual.widgets._footer.FooterKey, Footer._bindings_ready


def test_footer_key_takes_the_parameters_and_keeps_key_and_action() -> None:
    parameters = list(inspect.signature(footer_compat.FooterKey.__init__).parameters)
    assert parameters[:5] == ["self", "key", "key_display", "description", "action"]
    key = footer_compat.FooterKey("colon", ":", "Command", "command")
    assert (key.key, key.action) == ("colon", "command")


def test_a_footer_says_when_its_keys_are_built_and_builds_footer_keys() -> None:
    async def check() -> None:
        app = ProbeApp()
        async with app.run_test(size=(60, 10)) as pilot:
            await pilot.pause()
            footer = app.screen.query_one(Footer)
            assert footer_compat.bindings_ready(footer) is True
            keys = list(footer.query("FooterKey"))
            assert keys and all(isinstance(key, footer_compat.FooterKey) for key in keys)
            assert "y" in [key.key for key in keys]
            assert not footer_compat.bindings_ready(Footer())

    run(check)


# ==== the table ====

class Lines(ScrollView):
    DEFAULT_CSS = "Lines { height: 10; }"

    def render_line(self, y: int) -> Strip:
        return Strip.blank(self.size.width)


class LinesApp(App):
    def compose(self) -> ComposeResult:
        yield Lines()


def test_scroll_update_is_still_a_widget_method_taking_the_virtual_size() -> None:
    assert list(inspect.signature(Widget._scroll_update).parameters) == ["self", "virtual_size"]


def test_scrollbars_follow_a_virtual_size_stored_without_a_layout() -> None:
    async def run() -> None:
        app = LinesApp()
        async with app.run_test(size=(40, 20)) as pilot:
            lines = app.query_one(Lines)
            await pilot.pause()
            assert not lines.show_vertical_scrollbar
            tall = Size(10, 500)
            lines.set_reactive(Widget.virtual_size, tall)
            update_scrollbars(lines, tall)
            assert lines.show_vertical_scrollbar
            assert lines.vertical_scrollbar.window_virtual_size == 500
            lines.scroll_to(y=400, animate=False, immediate=True)
            await pilot.pause()
            assert lines.scroll_y > 0
            short = Size(10, 5)
            lines.set_reactive(Widget.virtual_size, short)
            update_scrollbars(lines, short)
            assert not lines.show_vertical_scrollbar and lines.scroll_y == 0  # scrolled back within the rows

    asyncio.run(run())


# ==== the probes the tests observe through ====
# -- App._register, Screen._compositor_refresh, _compositor.visible_widgets, Screen._layout_required,
#    Screen._css_update_count


def test_record_mounts_sees_widgets_and_a_modes_first_screen_and_nothing_when_a_made_mode_is_shown() -> None:
    assert "parent" in inspect.signature(App._register).parameters

    async def check() -> None:
        app = ModesApp()
        async with app.run_test(size=(40, 10)) as pilot:
            await pilot.pause()
            mounted = probes.record_mounts(app)
            extra = Static("extra")
            await app.screen.mount(extra)
            assert extra in mounted
            app.switch_mode("second")
            await pilot.pause()
            assert app.screen in mounted  # a mode's first switch mounts its screen
            del mounted[:]
            app.switch_mode("first")
            await pilot.pause()
            assert mounted == []  # a mode already made is only shown

    run(check)


def test_before_each_frame_is_called_as_frames_are_drawn_and_sees_what_they_show() -> None:
    async def check() -> None:
        app = ProbeApp()
        async with app.run_test(size=(60, 10)) as pilot:
            await pilot.pause()
            screen = app.screen
            text = screen.query_one("#probe-text", Static)
            assert text in probes.visible_widgets(screen)
            seen: list[tuple[bool, bool]] = []
            probes.before_each_frame(screen, lambda: seen.append(
                (text in probes.visible_widgets(screen), probes.layout_pending(screen))))
            assert not probes.layout_pending(screen)
            text.display = False
            screen.refresh(layout=True)
            assert probes.layout_pending(screen)  # asked for, done by the next frame
            await pilot.pause(0.1)
            for _ in range(100):  # a frame drawn after the layout's own (which the hook sees before it clears the flag)
                if seen and seen[-1] == (False, False):
                    break
                screen.refresh()
                await pilot.pause(0.05)
            assert seen and seen[-1] == (False, False)  # the frame after the layout shows no text
            assert all(frame == (False, False) for frame in seen if not frame[1])  # no frame but the layout's own shows it
            assert text not in probes.visible_widgets(screen)

    run(check)


def test_styled_with_current_stylesheet_follows_mark_styled_and_a_theme_change() -> None:
    async def check() -> None:
        app = ProbeApp()
        async with app.run_test(size=(60, 10)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, Probe)
            screen.mark_styled()
            assert probes.styled_with_current_stylesheet(screen)
            app.theme = next(name for name in app.available_themes if name != app.theme)
            assert not probes.styled_with_current_stylesheet(screen)

    run(check)
