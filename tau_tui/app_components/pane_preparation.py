"""The largest panes (Runs, Nodes) made, read and mounted before they are first opened, so that
their first open shows rows at once instead of reading and styling while the person waits.

Both wait for a moment without keys, since they share the processor with them; a read waits only
up to :data:`LONGEST_WAIT_FOR_QUIET_S`.  A pane that was opened reads only while it is on screen.
A pane not opened is read once: the Runs pane's read ahead reads its first part of the runs only and
goes on with the others once it is opened (``run_rows.py``), so no pane nobody opened costs the
cluster's size.
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from tau_tui.app_components.pane_modes import import_pane_modules
from tau_tui.app_components.shell import run_in_thread, textual_app
from tau_tui.core.pacing import give_way
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.pane_reader import MAX_KEY_NAPS_S, read_place
from tau_tui.textual_compat.app import mode_started, mount_screen_ahead

if TYPE_CHECKING:
    from tau_tui.app_components.key_activity import KeyActivity
    from tau_tui.app_components.shell import AppShell
    from tau_tui.core.cluster.interfaces import ClusterBackend

#: Panes read before they are first opened.
PREPARED_PANES = ("runs", "nodes")
#: Seconds without a key before the panes are read ahead.
QUIET_BEFORE_READING_S = 1.5
#: Seconds the panes wait for such a quiet moment, from when the pane on screen first has rows, so
#: that a person who keeps pressing keys does not open Runs to a long read.
LONGEST_WAIT_FOR_QUIET_S = 1.0
#: Seconds without a key before a prepared pane is mounted (a key pressed meanwhile waits for it),
#: and between one pane's mount and the next, or a look again.
QUIET_BEFORE_MOUNTING_S = 0.5
MOUNT_RETRY_S = 0.25
#: After the first frame, the other panes' modules wait this long for the first pane's rows, so
#: that a small cluster's rows come before the imports.
PANE_IMPORTS_WAIT_FOR_FIRST_ROWS_S = 1.0


class PanePreparation:
    """Makes the prepared panes' screens ahead of their first open, reads and mounts them."""

    def __init__(self, app: AppShell, keys: KeyActivity) -> None:
        self.app = app
        self.keys = keys
        #: mode -> its screen, made and read ahead, until the mode is first opened
        self.unopened_panes: dict[str, PaneScreen] = {}
        #: When the pane on screen first had its rows while the read ahead waited (None: not yet).
        self.waits_since: float | None = None
        self.longest_wait_for_quiet_s = LONGEST_WAIT_FOR_QUIET_S
        #: Until when (monotonic) the pane modules wait for the first pane's rows.
        self.imports_wait_until = 0.0

    def use_prepared_panes(self) -> None:
        """Make the modes of :data:`PREPARED_PANES` open the screen read ahead, when there is one.
        The app's event loop runs (``remove_mode`` makes a future), and no mode was switched to yet."""
        app = self.app
        for mode in PREPARED_PANES:
            make = app.MODES[mode]
            app.remove_mode(mode)
            app.add_mode(mode, partial(self._open_pane_screen, mode, make))

    def _open_pane_screen(self, mode: str, make: Any) -> Screen:
        prepared = self.unopened_panes.pop(mode, None)
        return prepared if prepared is not None else make()

    def prepare_panes(self, backend: ClusterBackend) -> None:
        """UI thread, after the first sync: read each prepared pane not opened yet (once)."""
        app = self.app
        if backend is not app.backend or not app.screen_stack:  # another cluster, or the app is closing
            return
        shown = app.screen
        now = time.monotonic()
        quiet = now - self.keys.last_key_at
        if isinstance(shown, PaneScreen) and shown.refreshes_applied == 0:
            # the pane on screen first: its first rows are what the user waits for
            app.set_timer(0.5, partial(self.prepare_panes, backend))
            return
        if self.waits_since is None:
            self.waits_since = now
        waited = now - self.waits_since
        if quiet < QUIET_BEFORE_READING_S and waited < self.longest_wait_for_quiet_s:
            # keys share the processor with no read they did not ask for, for a while
            app.set_timer(max(0.5, min(QUIET_BEFORE_READING_S - quiet, self.longest_wait_for_quiet_s - waited)),
                          partial(self.prepare_panes, backend))
            return
        for mode in PREPARED_PANES:
            if mode_started(textual_app(app), mode):  # opened already: it reads itself while shown
                continue
            screen = self._unopened_screen(mode)
            if screen is not None and not screen.read_ahead_running:
                screen.start_read_ahead()
                run_in_thread(app, partial(self._read_unopened_pane, screen, backend, read_place(backend)),
                              group="pane-prepare", exclusive=False)

    def _unopened_screen(self, mode: str) -> PaneScreen | None:
        """The screen of a prepared pane not opened yet, made now if it was not."""
        screen = self.unopened_panes.get(mode)
        if screen is None:
            make = self.app.MODES[mode]
            made = make() if callable(make) else None
            if not isinstance(made, PaneScreen):
                return None
            screen = self.unopened_panes[mode] = made
        return screen

    def import_pane_modules_soon(self) -> None:
        """UI thread, once the first frame is drawn: the other panes' modules load in a worker while
        the cluster's first list (or the demo's world) is on its way, so that no pane's first open
        imports on the UI thread, and no import shares the processor with the first rows."""
        self.imports_wait_until = time.monotonic() + PANE_IMPORTS_WAIT_FOR_FIRST_ROWS_S
        self.app.call_after_refresh(run_in_thread, self.app, self._import_pane_modules,
                                    group="pane-modules", exclusive=True)

    def _import_pane_modules(self) -> None:
        """Worker thread."""
        import_pane_modules(between=lambda: give_way(self._pane_imports_hold_until, MAX_KEY_NAPS_S))
        self.app.call_from_thread(self.mount_unopened_panes)

    def _pane_imports_hold_until(self) -> float:
        """As for the recorder (a key's hold, or a pane's first read), but a first read only once the
        cluster is synced (its rows are being read) or in the first moment (a small cluster's list,
        the small demo's world, is in by then: its first screen comes first; a large one's is not)."""
        backend = self.app.backend
        if time.monotonic() < self.imports_wait_until or (backend is not None and backend.wait_synced(timeout=0)):
            return self.keys.person_waits_until()
        return self.keys.key_hold_until

    def _read_unopened_pane(self, screen: PaneScreen, backend: ClusterBackend, where: tuple) -> None:
        """Worker thread."""
        read = None
        try:
            read = screen.prepare_read(self.app)
        finally:
            self.app.call_from_thread(screen.keep_prepared, backend, where, read)

    def mount_unopened_panes(self) -> None:
        """UI thread, once the pane modules are loaded: mount the next prepared pane not opened nor
        mounted yet, when nobody waits for the UI thread (no key for a moment, and no first rows
        being read); Textual's first switch to its mode then finds it running and only shows it."""
        app = self.app
        if not app.screen_stack:  # the app is closing
            return
        for mode in PREPARED_PANES:
            if mode_started(textual_app(app), mode):
                continue  # opened
            mounted = self.unopened_panes.get(mode)
            if mounted is not None and mounted.is_attached:
                if mounted.laid_out_ahead or not mounted.is_mounted:
                    continue  # laid out already, or its widgets are not all in yet
                if not self._ui_thread_free():
                    app.set_timer(MOUNT_RETRY_S, self.mount_unopened_panes)
                    return
                mounted.lay_out_ahead(app.size)
                app.set_timer(MOUNT_RETRY_S, self.mount_unopened_panes)
                return
            if not self._ui_thread_free():
                app.set_timer(MOUNT_RETRY_S, self.mount_unopened_panes)
                return
            screen = self._unopened_screen(mode)
            if screen is None:
                continue
            screen.mounted_ahead = True
            mount_screen_ahead(textual_app(app), screen)
            app.set_timer(MOUNT_RETRY_S, self.mount_unopened_panes)  # the next one once this one is in
            return

    def _ui_thread_free(self) -> bool:
        """No key for :data:`QUIET_BEFORE_MOUNTING_S`, and no pane's first rows being read (its
        cluster's list is in): while that list is on its way, the UI thread only waits."""
        if time.monotonic() - self.keys.last_key_at < QUIET_BEFORE_MOUNTING_S:
            return False
        backend = self.app.backend
        return not (self.keys.first_rows_awaited and backend is not None and backend.wait_synced(timeout=0))
