"""The app's guard over unsaved work: every quit a person asks for (ctrl+q, ctrl+c, ``:q``, the
palette's Quit, the no-cluster screen's quit) asks each pane holding unsaved work first (save /
discard / cancel), and a quit nobody could be asked about (SIGTERM, SIGHUP, SIGINT from outside,
a crash) keeps that work as a draft instead.  The drafts are written on the event loop, before
anything else of the quit: a few small local files, and the process may end right after."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tau_tui.app_components.shell import AppShell
    from tau_tui.screens.host import UnsavedWork


class UnsavedGuard:
    def __init__(self, app: AppShell) -> None:
        self.app = app
        self.holders: list[UnsavedWork] = []
        #: Why the drafts were kept, once they were (the app is ending), and where.
        self.kept_because: str | None = None
        self.kept: list[Path] = []

    def register(self, holder: UnsavedWork) -> None:
        if holder not in self.holders:
            self.holders.append(holder)

    def then(self, doing: str, proceed: Callable[[], None]) -> None:
        """``proceed`` once no holder has unsaved work (each asked in turn); a cancel stops here."""
        for holder in self.holders:
            if holder.has_unsaved_work():
                holder.ask_then(doing, lambda: self.then(doing, proceed))
                return
        proceed()

    def keep_drafts(self, reason: str) -> list[Path]:
        """The app ends without asking: each holder's unsaved work is kept as a draft (once)."""
        if self.kept_because is not None:
            return []
        self.kept_because = reason
        kept: list[Path] = []
        for holder in self.holders:
            try:
                path = holder.keep_draft(reason)
            except Exception as err:  # noqa: BLE001  (the quit goes on; the next holder's draft still counts)
                self._say(f"a draft could not be kept: {type(err).__name__}: {err}")
                continue
            if path is not None:
                kept.append(path)
        self.kept = kept
        return kept

    def app_ended(self, return_code: int | None) -> None:
        """The app's last moment (its unmount, which a crash reaches too): what nobody was asked about is kept."""
        self.keep_drafts("the app ended with an error" if return_code not in (None, 0) else "the app ended without asking")

    def farewell(self) -> list[str]:
        """What the command says on the terminal once the app has ended: where its drafts are."""
        return [f"tau-tui: unsaved Compose changes were kept as a draft ({self.kept_because}) in {path}; "
                "open the same file again (or start a new form, for a new one) to restore them" for path in self.kept]

    def _say(self, text: str) -> None:
        try:
            self.app.notify(text, severity="error")
        except Exception:  # noqa: BLE001  (the app may be past notifying)
            pass
