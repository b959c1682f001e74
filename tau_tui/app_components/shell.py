"""What the app's components may ask of the app that owns them (:class:`AppShell`).

A component holds the app as an :class:`AppShell`, never as :class:`tau_tui.app.TauApp`: the app
imports its components, never the other way round.  The protocol is the panes' host
(:class:`tau_tui.screens.host.PaneHost`), the app's own navigation, and the part of Textual's
``App`` the components call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from textual.app import App

from tau_tui.screens.host import PaneHost

if TYPE_CHECKING:
    from textual.await_complete import AwaitComplete
    from textual.geometry import Size
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.theme import Theme
    from textual.timer import Timer, TimerCallback
    from textual.widget import Widget
    from textual.worker import Worker

    from tau_tui.core.operations.audit import AuditLog


class AppShell(PaneHost, Protocol):
    audit: AuditLog
    theme: str

    def refresh_tick(self) -> None:
        """Read the cluster's state again now (as the refresh tick does)."""
        ...

    def action_switch_pane(self, mode: str) -> None: ...

    def action_help(self) -> None: ...

    async def action_quit(self) -> None: ...

    def tau_theme_names(self) -> list[str]: ...

    # -- Textual's App ---------------------------------------------------------------------------

    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]]

    def add_mode(self, mode: str, base_screen: str | Callable[[], Screen[Any]]) -> None: ...

    def remove_mode(self, mode: str) -> AwaitComplete: ...

    @property
    def screen(self) -> Screen[object]: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    @property
    def focused(self) -> Widget | None: ...

    @property
    def size(self) -> Size: ...

    @property
    def available_themes(self) -> dict[str, Theme]: ...

    def notify(self, message: str, *, title: str = ..., severity: SeverityLevel = ...,
               timeout: float | None = ..., markup: bool = ...) -> None: ...

    def set_timer(self, delay: float, callback: TimerCallback | None = ..., *, name: str | None = ...,
                  pause: bool = ...) -> Timer: ...

    def set_interval(self, interval: float, callback: TimerCallback | None = ..., *, name: str | None = ...,
                     repeat: int = ..., pause: bool = ...) -> Timer: ...

    def call_after_refresh(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def call_from_thread(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

    def post_message(self, message: Any) -> bool: ...

    def run_worker(self, work: Any, name: str | None = ..., group: str = ..., description: str = ...,
                   exit_on_error: bool = ..., start: bool = ..., exclusive: bool = ...,
                   thread: bool = ...) -> Worker[Any]: ...


def run_in_thread(app: AppShell, work: Callable[[], object], *, group: str, exclusive: bool) -> None:
    """Run ``work`` in a thread worker of the app, as ``@work(thread=True, exit_on_error=False, group=…,
    exclusive=…)`` on an App method would: a component is no DOM node, so it cannot carry ``@work``."""
    name = getattr(work, "__name__", None) or getattr(getattr(work, "func", None), "__name__", "")
    app.run_worker(work, name=name, group=group, exclusive=exclusive, exit_on_error=False, thread=True)


def textual_app(app: AppShell) -> App[Any]:
    """The shell as Textual's App (it is one), for the compat hooks that take an App."""
    assert isinstance(app, App)
    return app
