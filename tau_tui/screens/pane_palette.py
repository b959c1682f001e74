"""The command palette scoped to the pane on screen: its verbs as its bindings say, and pane switching."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from tau_tui.widgets.header_bar import PANES

#: Panes reached by ``:name`` and the palette only (no digit key, no tab in the header).
COMMAND_ONLY_PANES = (("evidence", "Evidence"), ("workspaces", "Workspaces"))


@runtime_checkable
class PaneVerbs(Protocol):
    """What the palette reads of a pane (PaneScreen); a pane is not imported here, it imports this."""

    PANE_TITLE: str

    def active_bindings_list(self) -> list[Binding]: ...

    async def run_action(self, action: str) -> Any: ...


class PaneCommands(Provider):
    """The current pane's verbs (as its bindings say) plus pane switching."""

    def _commands(self) -> list[tuple[str, str, Any]]:
        screen = self.screen
        app = screen.app
        out: list[tuple[str, str, Any]] = []
        if isinstance(screen, PaneVerbs):
            for binding in screen.active_bindings_list():
                out.append((f"{screen.PANE_TITLE}: {binding.description}", f"key {binding.key_display or binding.key}",
                            (screen, binding.action)))
        for key, mode, label in PANES:
            out.append((f"Go to {label}", f"pane {key} (:{mode})", (app, f"switch_pane('{mode}')")))
        for mode, label in COMMAND_ONLY_PANES:
            out.append((f"Go to {label}", f":{mode}", (app, f"switch_pane('{mode}')")))
        out.append(("Help for this pane", "? or F1", (app, "help")))
        return out

    async def discover(self) -> Hits:
        for title, help_text, target in self._commands():
            yield DiscoveryHit(title, self._runner(target), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, target in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), self._runner(target), help=help_text)

    @staticmethod
    def _runner(target: tuple[Any, str]) -> Callable[[], Awaitable[None]]:
        node, action = target

        async def run() -> None:
            await node.run_action(action)

        return run
