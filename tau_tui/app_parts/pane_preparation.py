"""The largest panes read before they are first opened, so opening them shows rows at once.

A part of :class:`tau_tui.app.TauApp`, which inherits it.  Once the first sync is done, the Runs and
Nodes panes (20,000 runs and 2,000 nodes at ``--demo large``: a second or more of reading each) are
made and read once in a worker, when the pane on screen has its rows and no key came for a moment
(the read takes a processor the keys would share), or, when keys keep coming, once the panes have
waited :data:`LONGEST_WAIT_FOR_QUIET_S` (a read ahead rests between short slices and naps while keys
come, so it uses the gaps between them); the pane holds that read and shows it when it is first opened, and
the refresh that opening starts follows with what changed since.  A pane that is open, or was, reads
only while it is on screen, as before; nothing is read again in the background.

Such a pane is also mounted ahead, once the pane modules are loaded: while the cluster's first list
is on its way (the UI thread has nothing else to do then), or later in a moment without keys. Its
widgets are made and styled, and the stylesheet takes in their classes' CSS, before it is shown:
about 0.1 s on the UI thread that its first open would otherwise spend while the person waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from textual import work
from textual.app import App
from textual.screen import Screen

from tau_tui.app_parts.pane_modes import import_pane_modules
from tau_tui.core.cluster.give_way import give_way
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.screens.base import MAX_KEY_NAPS_S, PaneScreen, read_place
from tau_tui.screens.host import PaneHost

#: Panes read before they are first opened.
PREPARED_PANES = ("runs", "nodes")
#: Seconds without a key before the panes are read ahead.
QUIET_BEFORE_READING_S = 1.5
#: Seconds the panes wait for such a quiet moment, from when the pane on screen first has rows: a
#: person who keeps pressing keys would otherwise open Runs to a read of a second or more.
LONGEST_WAIT_FOR_QUIET_S = 1.0
#: Seconds without a key before a prepared pane is mounted (a key pressed meanwhile waits for it),
#: and between one pane's mount and the next, or a look again.
QUIET_BEFORE_MOUNTING_S = 0.5
MOUNT_RETRY_S = 0.25
#: After the first frame, the other panes' modules wait this long for the first pane's rows (while
#: it waits for a cluster's first list): a small cluster's rows come first, a large one's list is
#: still on its way when they load.
PANE_IMPORTS_WAIT_FOR_FIRST_ROWS_S = 1.0


class PanePreparation(App):
    """Makes the prepared panes' screens ahead of their first open, and reads them."""

    backend: ClusterBackend | None
    #: mode -> its screen, made and read ahead, until the mode is first opened
    _unopened_panes: dict[str, PaneScreen]
    #: When the last key came (monotonic, kept by KeyActivity): read ahead only after a quiet moment.
    _last_key_at: float
    #: Until when (monotonic, kept by KeyActivity) work in threads naps for keys, and for keys or a
    #: pane's first read (KeyActivity's).
    key_hold_until: float
    person_waits_until: Callable[[], float]
    first_rows_awaited: bool
    #: When the pane on screen first had its rows while the read ahead waited (None: not yet).
    _preparation_waits_since: float | None = None
    longest_wait_for_quiet_s = LONGEST_WAIT_FOR_QUIET_S
    #: Until when (monotonic) the pane modules wait for the first pane's rows.
    _pane_imports_wait_until = 0.0

    def use_prepared_panes(self) -> None:
        """Make the modes of :data:`PREPARED_PANES` open the screen read ahead, when there is one."""
        self._unopened_panes = {}
        for mode in PREPARED_PANES:
            self._modes[mode] = partial(self._open_pane_screen, mode, self._modes[mode])

    def _open_pane_screen(self, mode: str, make: Any) -> Screen:
        prepared = self._unopened_panes.pop(mode, None)
        return prepared if prepared is not None else make()

    def prepare_panes(self, backend: ClusterBackend) -> None:
        """UI thread, after the first sync: read each prepared pane not opened yet (once)."""
        if backend is not self.backend or not self.screen_stack:  # another cluster, or the app is closing
            return
        shown = self.screen
        now = time.monotonic()
        quiet = now - self._last_key_at
        if isinstance(shown, PaneScreen) and shown.refreshes_applied == 0:
            # the pane on screen first: its first rows are what the user waits for
            self.set_timer(0.5, partial(self.prepare_panes, backend))
            return
        if self._preparation_waits_since is None:
            self._preparation_waits_since = now
        waited = now - self._preparation_waits_since
        if quiet < QUIET_BEFORE_READING_S and waited < self.longest_wait_for_quiet_s:
            # keys share the processor with no read they did not ask for, for a while
            self.set_timer(max(0.5, min(QUIET_BEFORE_READING_S - quiet, self.longest_wait_for_quiet_s - waited)),
                           partial(self.prepare_panes, backend))
            return
        for mode in PREPARED_PANES:
            if mode in self._screen_stacks:  # opened already: it reads itself while shown
                continue
            screen = self._unopened_screen(mode)
            if screen is not None and not screen.read_ahead_running:
                screen.start_read_ahead()
                self._read_unopened_pane(screen, backend, read_place(backend))

    def _unopened_screen(self, mode: str) -> PaneScreen | None:
        """The screen of a prepared pane not opened yet, made now if it was not."""
        screen = self._unopened_panes.get(mode)
        if screen is None:
            make = self.MODES[mode]
            made = make() if callable(make) else None
            if not isinstance(made, PaneScreen):
                return None
            screen = self._unopened_panes[mode] = made
        return screen

    def import_pane_modules_soon(self) -> None:
        """UI thread, once the first frame is drawn: the other panes' modules load in a worker while
        the cluster's first list (or the demo's world) is on its way, so that no pane's first open
        imports on the UI thread, and no import shares the processor with the first rows."""
        self._pane_imports_wait_until = time.monotonic() + PANE_IMPORTS_WAIT_FOR_FIRST_ROWS_S
        self.call_after_refresh(self._import_pane_modules)

    @work(thread=True, exclusive=True, exit_on_error=False, group="pane-modules")
    def _import_pane_modules(self) -> None:
        import_pane_modules(between=lambda: give_way(self._pane_imports_hold_until, MAX_KEY_NAPS_S))
        self.call_from_thread(self.mount_unopened_panes)

    def _pane_imports_hold_until(self) -> float:
        """As for the recorder (a key's hold, or a pane's first read), but a first read only once the
        cluster is synced (its rows are being read) or in the first moment (a small cluster's list,
        the small demo's world, is in by then: its first screen comes first; a large one's is not)."""
        backend = self.backend
        if time.monotonic() < self._pane_imports_wait_until or (backend is not None and backend.wait_synced(timeout=0)):
            return self.person_waits_until()
        return self.key_hold_until

    @work(thread=True, exclusive=False, exit_on_error=False, group="pane-prepare")
    def _read_unopened_pane(self, screen: PaneScreen, backend: ClusterBackend, where: tuple) -> None:
        read = None
        try:
            read = screen.prepare_read(cast(PaneHost, self))
        finally:
            self.call_from_thread(screen.keep_prepared, backend, where, read)

    def mount_unopened_panes(self) -> None:
        """UI thread, once the pane modules are loaded: mount the next prepared pane not opened nor
        mounted yet, when nobody waits for the UI thread (no key for a moment, and no first rows
        being read); Textual's first switch to its mode then finds it running and only shows it."""
        if not self.screen_stack:  # the app is closing
            return
        for mode in PREPARED_PANES:
            if mode in self._screen_stacks:
                continue  # opened
            mounted = self._unopened_panes.get(mode)
            if mounted is not None and mounted.is_attached:
                if mounted.laid_out_ahead or not mounted.is_mounted:
                    continue  # laid out already, or its widgets are not all in yet
                if not self._ui_thread_free():
                    self.set_timer(MOUNT_RETRY_S, self.mount_unopened_panes)
                    return
                mounted.lay_out_ahead(self.size)
                self.set_timer(MOUNT_RETRY_S, self.mount_unopened_panes)
                return
            if not self._ui_thread_free():
                self.set_timer(MOUNT_RETRY_S, self.mount_unopened_panes)
                return
            screen = self._unopened_screen(mode)
            if screen is None:
                continue
            screen.mounted_ahead = True
            self._load_screen_css(screen)  # as App._init_mode does before it shows a mode's screen
            self._register(self, screen)
            self.set_timer(MOUNT_RETRY_S, self.mount_unopened_panes)  # the next one once this one is in
            return

    def _ui_thread_free(self) -> bool:
        """No key for :data:`QUIET_BEFORE_MOUNTING_S`, and no pane's first rows being read (its
        cluster's list is in): while that list is on its way, the UI thread only waits."""
        if time.monotonic() - self._last_key_at < QUIET_BEFORE_MOUNTING_S:
            return False
        backend = self.backend
        return not (self.first_rows_awaited and backend is not None and backend.wait_synced(timeout=0))
