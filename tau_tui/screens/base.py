"""What every pane shares: header, command line, footer, the refresh tick,
the row filter, contextual help and the screen-scoped command palette.

Refresh model (k9s / dolphie): the app's timer calls :meth:`PaneScreen.tick`.
A tick starts one thread worker that reads the backend's cache and builds
plain rows (:meth:`PaneScreen.collect`); the worker only posts
:class:`PaneScreen.Collected`, and :meth:`PaneScreen.apply` diffs the rows into
the tables inside ``app.batch_update()`` on the UI thread.  A tick that finds
the previous refresh still running is skipped and counted."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from rich.text import Text
from textual import events, on, work
from textual._context import active_app
from textual.app import ComposeResult
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus, ViewState, ViewStatus
from tau_tui.core.cluster.give_way import give_way
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.screens.frame_pacing import paced_update_timer
from tau_tui.screens.host import PaneHost
from tau_tui.startup.heap import collections_held
from tau_tui.widgets.command_line import CommandLine
from tau_tui.widgets.header_bar import PANES, HeaderBar
from tau_tui.widgets.keyed_table import KeyedTable
from tau_tui.widgets.pane_footer import PaneFooter
from tau_tui.widgets.replay_bar import ReplayBar
from tau_tui.widgets.row_filter import RowFilter, parse_filter
from tau_tui.widgets.status_text import style_of
from tau_tui.widgets.table_plan import NOTICE_KEY, Matchable, Row, TablePlan, TableState, plan_rows

# --------------------------------------------------------------------------
# Freshness: fail closed on a dead connection or an unreadable view
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Freshness:
    """The connection state and the view states a pane's data came from.

    A pane never shows an empty table for data it could not read: a table over
    a forbidden / not-installed / still-syncing view shows :meth:`notice`
    instead, and while the connection is down the pane keeps its last data
    under :meth:`banner` ("stale since T — showing last known data")."""

    connection: ConnectionState | None = None
    views: Mapping[ResourceKind, ViewState] = field(default_factory=dict)

    @classmethod
    def read(cls, backend: ClusterBackend | None, kinds: tuple[ResourceKind, ...]) -> Freshness:
        """Thread-safe cache reads (no network)."""
        if backend is None:
            return cls()
        return cls(backend.connection_state(), {kind: backend.view_state(kind) for kind in kinds})

    @property
    def disconnected(self) -> bool:
        return self.connection is not None and self.connection.status is not ConnectionStatus.CONNECTED

    @property
    def syncing(self) -> bool:
        """A view's first list is not finished: what a read shows is "loading", not the rows."""
        return any(v.status is ViewStatus.SYNCING for v in self.views.values())

    @property
    def stale(self) -> bool:
        """The data shown may be out of date (connection down or a view failing)."""
        return self.disconnected or any(v.status is ViewStatus.ERROR for v in self.views.values())

    def stale_since(self) -> str:
        since = self.connection.stale_since if self.connection is not None else None
        if since is None:
            stamps = [v.synced_at for v in self.views.values() if v.status is ViewStatus.ERROR and v.synced_at]
            since = min(stamps) if stamps else None
        return since.strftime("%H:%M:%S") if since is not None else "?"

    def notice(self, *kinds: ResourceKind) -> Text | None:
        """Why a table over ``kinds`` has no data to show, or None when it can show it."""
        for kind in kinds:
            state = self.views.get(kind)
            if state is None:
                continue
            if state.status in (ViewStatus.FORBIDDEN, ViewStatus.NOT_INSTALLED):
                text = state.message or f"{state.status.value}: {kind.type.qualified}"
                return Text(f"✗ {text}", style=style_of("failed"))
            if state.status is ViewStatus.SYNCING:
                return Text(f"◌ loading {kind.type.qualified} (first list not finished)", style=style_of("pending"))
        return None

    def banner(self) -> Text | None:
        """The pane's own status line about data freshness and access, or None."""
        lines: list[Text] = []
        if self.disconnected:
            assert self.connection is not None
            word = "reconnecting" if self.connection.status is ConnectionStatus.RECONNECTING else "connection lost"
            line = Text(f"⚠ stale since {self.stale_since()} — showing last known data ({word}", style=style_of("warning"))
            line.append(f": {self.connection.message})" if self.connection.message else ")")
            lines.append(line)
        else:
            failing = [v for v in self.views.values() if v.status is ViewStatus.ERROR]
            if failing:
                names = ", ".join(v.kind.type.qualified for v in failing)
                lines.append(Text(f"⚠ stale since {self.stale_since()} — showing last known data for {names} "
                                  f"({failing[0].message or 'watch failing'})", style=style_of("warning")))
        for state in self.views.values():  # "not installed" is said by the table that needs it
            if state.status is ViewStatus.FORBIDDEN:
                lines.append(Text(f"✗ {state.message or 'no access: list ' + state.kind.type.qualified}",
                                  style=style_of("failed")))
        return Text("\n").join(lines) if lines else None


# --------------------------------------------------------------------------
# Palette scoped to the screen
# --------------------------------------------------------------------------


#: Panes reached by ``:name`` and the palette only (no digit key, no tab in the header).
COMMAND_ONLY_PANES = (("evidence", "Evidence"),)


class PaneCommands(Provider):
    """The current pane's verbs (as its bindings say) plus pane switching."""

    def _commands(self) -> list[tuple[str, str, Any]]:
        screen = self.screen
        app = screen.app
        out: list[tuple[str, str, Any]] = []
        if isinstance(screen, PaneScreen):
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
    def _runner(target):
        node, action = target

        async def run() -> None:
            await node.run_action(action)

        return run


# --------------------------------------------------------------------------
# The pane base class
# --------------------------------------------------------------------------


#: Below this many columns panes use their narrow layout (80x24 must show every key column and value).
NARROW_WIDTH = 100


#: A read ahead works in slices of this many seconds and rests READ_AHEAD_REST times as long after
#: each: a quarter of one processor, so keys typed meanwhile hardly wait for the interpreter.
READ_AHEAD_SLICE_S = 0.01
READ_AHEAD_REST = 3.0
#: A rest is at most this long, in naps of READ_AHEAD_REST_NAP_S that end once the pane is opened: a
#: slice measured in wall time also counts the time the read waited for the interpreter, and a rest of
#: three times that (2.9 s once) held back the Runs pane opened meanwhile.
READ_AHEAD_LONGEST_REST_S = 0.1
READ_AHEAD_REST_NAP_S = 0.01
#: While another pane's first rows are waited for, a read ahead rests, for at most this long each time.
READ_AHEAD_YIELDS_AT_MOST_S = 2.0
#: While keys come, a read sleeps between its steps (the interpreter released for the UI thread),
#: at most MAX_KEY_NAPS_S in all per read, so it still finishes.
MAX_KEY_NAPS_S = 1.0
#: A pane's read on opening starts this long after its first frame is drawn (the terminal writer
#: thread takes the frame meanwhile), or FRAME_WAIT_S after the open when no frame came by then.
FRAME_WRITE_S = 0.01
FRAME_WAIT_S = 0.25


def read_place(backend: Any) -> tuple:
    """Where a read was made: the context and namespace (``:ctx``/``:ns`` keep the backend object)."""
    try:
        return (backend.current_context, backend.namespace)
    except Exception:
        return (None, None)


class ReadAbandoned(Exception):
    """Raised in a pane's read once the pane has left the screen (:meth:`PaneScreen.keep_reading`)."""


class PaneScreen(Screen):
    """Base of every pane.  Subclasses set PANE/PANE_TITLE/HELP, compose
    :meth:`compose_body`, and implement :meth:`collect` (thread) and
    :meth:`apply` (UI thread)."""

    PANE = ""
    PANE_TITLE = ""
    HELP = ""
    #: Actions that change the cluster or files: hidden and refused in --readonly.
    MUTATING_ACTIONS: frozenset[str] = frozenset()
    #: Cache views this pane's data comes from (their state drives the banner and table notices).
    VIEW_KINDS: tuple[ResourceKind, ...] = ()
    #: Every kind collect reads (defaults to VIEW_KINDS): a tick re-reads only when one's generation moved.
    READ_KINDS: tuple[ResourceKind, ...] = ()
    #: Re-read at least this often even when nothing moved (ages, times in queue).
    MAX_UNCHANGED_S = 5.0
    #: A refresh that took C seconds is followed by the next one no sooner than this many C later
    #: (unless forced): on a big cluster the reads share the interpreter with the UI thread, and
    #: this keeps them to about a third of it, so keys are answered while the cluster churns.
    REFRESH_BACKOFF = 2.0
    #: While a first list still comes in page by page (the rows shown are the part listed so far),
    #: reads are farther apart: at most a sixth of the interpreter, the rest for decoding the list.
    LISTING_BACKOFF = 5.0
    #: Show the cluster's GPU faults in the banner (the panes a user opens first: queue, runs).
    SHOWS_GPU_FAULTS = False
    #: The pane's tables filter themselves (apply gives each row's text and labels): typing in the
    #: filter line re-reads nothing; collect keeps every row.
    TABLE_FILTER = False
    COMMANDS = {PaneCommands}

    DEFAULT_CSS = """
    PaneScreen #pane-status { height: 1; padding: 0 1; color: $text-muted; }
    PaneScreen #pane-body { height: 1fr; }
    PaneScreen #pane-banner { height: auto; max-height: 4; padding: 0 1; display: none; background: $panel; }
    PaneScreen #pane-banner.-shown { display: block; }
    PaneScreen KeyedTable.-stale { tint: $warning 8%; }
    """

    class Collected(Message):
        def __init__(self, data: Any, generation: int, freshness: Freshness | None = None,
                     matched: tuple[int, int] = (0, 0), gpu_faults: str | None = None, seconds: float = 0.0) -> None:
            super().__init__()
            self.seconds = seconds  # how long the read took
            self.gpu_faults = gpu_faults
            self.data = data
            self.generation = generation
            self.freshness = freshness or Freshness()
            self.matched = matched  # (rows matching the filter, rows looked at)

    class CollectFailed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    class CollectAbandoned(Message):
        """The pane left the screen while it read: the read stopped, nothing to show."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.row_filter: RowFilter = RowFilter("")
        #: Filter-line text typed but not applied yet (applied once the keys pause: CommandMode).
        self.typed_filter: str | None = None
        self.refresh_running = False
        #: On screen, or reading ahead: a read goes on only while this holds (:meth:`keep_reading`).
        self._read_wanted = False
        #: Reads stopped because the pane left the screen (tests count them).
        self.reads_abandoned = 0
        #: A read ahead of the first open runs: it rests between steps (:meth:`keep_reading`).
        self._reading_ahead = False
        #: Shown once already: shown again, it keeps its widgets' styles (:meth:`_on_screen_resume`),
        #: unless what of the app they follow changed since it was suspended.
        self.resumed_before = False
        self._suspended_with: tuple | None = None
        #: Mounted by the app before its first open (PanePreparation): styled as it mounted, so its
        #: first open keeps those styles as a later one does, unless what they follow changed since.
        self.mounted_ahead = False
        self.laid_out_ahead = False
        #: Reads to start once the next frame is drawn (:meth:`_after_first_frame`).
        self._waiting_for_frame: list[Callable[[], None]] = []
        #: From the app's start of a read ahead to :meth:`keep_prepared` (UI thread).
        self.read_ahead_running = False
        self._paused_at = 0.0
        #: Seconds the read in progress slept for keys (:meth:`keep_reading`), and how it sleeps.
        self.read_napped_s = 0.0
        self.nap: Callable[[float], None] = time.sleep
        #: The app's key hold when this pane was opened with no rows: its read naps only for keys that
        #: came after (the one that opened it asks for that read); 0.0 once rows are shown.
        self._opened_with_hold = 0.0
        #: A read made with every view synced was shown (rows, or why there are none): not "loading".
        self._rows_shown = False
        self.ticks_skipped = 0
        self.refreshes_applied = 0
        self.ticks_unchanged = 0
        self.collects_started = 0
        self._collect_generation = 0
        self._drawn_signature: tuple | None = None
        self._collected_at = 0.0
        #: How long the last refresh's read took (its worker's clock) and when it finished.
        self._collect_seconds = 0.0
        self._collect_finished_at = 0.0
        self.ticks_backed_off = 0
        #: Refreshes the cluster's changes asked for while a key's hold ran (read once keys pause).
        self.ticks_held_for_keys = 0
        self._rerun = False
        self.filter_matches: tuple[int, int] = (0, 0)
        #: The filter the running collect uses (with its own tally); collect reads it, not row_filter.
        self.collect_filter: RowFilter = self.row_filter
        #: The freshness the running collect read before the data (its tables' notices come from it).
        self.collect_freshness = Freshness()
        #: Each table's state when the running collect started: its plans are made against these.
        self._table_states: dict[str, TableState] = {}
        self.freshness = Freshness()
        #: (backend, where, read, when) from :meth:`prepare_read`, shown when the pane first opens.
        self._prepared: tuple[Any, tuple, PaneScreen.Collected, float] | None = None
        #: Times a read made before the pane was shown was shown (tests count it).
        self.prepared_shown = 0
        self._status = Text("")
        self._host: PaneHost | None = None
        # Made while the app runs: marked as styled now.  Textual's first switch to a mode whose
        # screen is unmarked re-parses the whole stylesheet and restyles the screen being left
        # (``App._init_mode``), half of a pane's first open; this one is styled as it mounts.  A
        # CSS or theme change between now and then still restyles it, as the count differs.
        app = active_app.get(None)
        if app is not None:
            self._css_update_count = app._css_update_count

    @property
    def _update_timer(self) -> Timer:
        """Textual's timer that draws this screen's frames, paced from the last frame (see
        :mod:`tau_tui.screens.frame_pacing`)."""
        timer = self._Screen__update_timer  # type: ignore[has-type]
        if timer is None:
            timer = self._Screen__update_timer = paced_update_timer(self)
        return timer

    @property
    def tau(self) -> PaneHost:
        """The hosting app, seen through what a pane may use of it."""
        if self._host is not None:  # read before it is mounted, from a thread Textual knows no app in
            return self._host
        return cast(PaneHost, self.app)

    # -- layout --------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield Static("", id="pane-banner")
        with Vertical(id="pane-body"):
            yield from self.compose_body()
        yield Static("", id="pane-status")
        yield ReplayBar(id="replay-bar")
        yield CommandLine(covers="pane-status", on_close=self.command_line_closed, id="command-line")
        yield PaneFooter()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        # Textual marks a mode's screen as styled only when it is mounted at the moment the app's
        # CSS is refreshed, which a new mode's screen never is; left unmarked, every later switch
        # to it re-parses the whole stylesheet and restyles every widget (0.2-1 s at `large`).
        # Its widgets were just styled from the current stylesheet, so mark it.
        self._css_update_count = self.app._css_update_count
        if self.mounted_ahead:
            self._suspended_with = self._app_look()
        self.update_header()
        self._fit_width(self.app.size.width)

    def on_resize(self, event) -> None:
        self._fit_width(event.size.width)

    def _fit_width(self, width: int) -> None:
        """Below 100 columns the footer drops its spacing and the palette key (ctrl+p stays bound,
        and help lists it), so the pane's own keys fit at 80 columns."""
        narrow = width < NARROW_WIDTH
        self.set_class(narrow, "-narrow")
        for footer in self.query(PaneFooter):
            if footer.compact != narrow:
                footer.compact = narrow
                footer.show_command_palette = not narrow
                footer.refresh(recompose=True)

    def on_screen_suspend(self) -> None:
        self._read_wanted = False
        self._no_longer_awaited()
        self._suspended_with = self._app_look()

    def lay_out_ahead(self, size: Size) -> None:
        """UI thread, a pane mounted ahead and not shown yet: its widgets are laid out at ``size``
        and drawn once, into nothing, so that its first open finds their sizes and drawn lines made
        (the footer's keys and the tables' headers are most of a first frame)."""
        self.laid_out_ahead = True
        self._refresh_layout(size)  # not the current screen: lays out, shows nothing
        self._compositor.render_update(full=True)

    def _app_look(self) -> tuple:
        """What of the app a pane's styles follow and its own widgets' class changes do not carry."""
        app = self.app
        return frozenset(app.classes), app.app_focus, app.theme, app._css_update_count

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown again (Textual's handler, on Screen, runs next).  Textual restyles every widget of
        a screen it resumes, and the tables then drop every row they had drawn: about half of a pane
        switch at 20,000 rows.  A pane shown before keeps its styles: its widgets were restyled as
        their classes changed while it was away, and a CSS or theme change since is applied by
        ``switch_mode`` (its CSS update count).  When the app's own classes, focus or theme changed
        meanwhile (which restyle only the screen on top), it is restyled as before.  Its refresh
        waits for the first frame, so that the read does not share the interpreter with drawing it.
        (Textual dispatches ``_on_screen_resume`` or ``on_screen_resume`` per class: a subclass that
        needs its own resume handler calls this one.)"""
        if ((self.resumed_before or self.mounted_ahead) and not self.app.SUSPENDED_SCREEN_CLASS
                and self._suspended_with == self._app_look()):
            event.refresh_styles = False
        if not self._rows_shown:  # its first rows are what the person waits for
            self._opened_with_hold = self.tau.key_hold_until
            self.tau.first_rows_awaited_by = self
            if self.reads_rows and not self._status.plain:  # an empty table is not "none": say why
                self.set_status(Text(f"◌ reading {self.PANE_TITLE.lower()}…", style=style_of("pending")))
        self.resumed_before = True
        self._read_wanted = True
        self._reading_ahead = False  # opened while read ahead: that read no longer rests
        self.update_header()
        if self._prepared is not None:
            # once its tables are mounted; the refresh starts after, planned against those rows
            self.call_after_refresh(self._open_prepared)
            return
        self._after_first_frame(partial(self.tick, force=True))

    def _open_prepared(self) -> None:
        self._show_prepared()
        self._after_first_frame(partial(self.tick, force=True))

    def _after_first_frame(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` (a read) once the next frame of this pane is drawn and handed to the
        terminal: ``call_after_refresh`` alone can run before it (on an idle pass), and a read
        started then shares the interpreter with drawing and writing the frame the person waits for.
        When no frame comes (nothing on the pane changed), it runs :data:`FRAME_WAIT_S` after the open."""
        self._waiting_for_frame.append(callback)
        self.refresh()
        self.set_timer(FRAME_WAIT_S, self._run_after_frame)

    def _compositor_refresh(self) -> None:
        super()._compositor_refresh()
        if self._waiting_for_frame and self.is_current:
            # the writer thread takes the frame once the UI thread is idle: a moment for it first
            self.set_timer(FRAME_WRITE_S, self._run_after_frame)

    def _run_after_frame(self) -> None:
        waiting, self._waiting_for_frame = self._waiting_for_frame, []
        for callback in waiting:
            callback()

    def crumbs(self) -> str:
        return self.PANE_TITLE

    def update_header(self) -> None:
        try:
            header = self.query_one(HeaderBar)
        except Exception:
            return
        header.set_state(self.tau.header_state(self.PANE, self.crumbs(), self.row_filter.text))
        for bar in self.query(ReplayBar):
            bar.show(self.tau.replay_status())

    def set_status(self, text: str | Text) -> None:
        self._status = text if isinstance(text, Text) else Text(text)
        try:
            self.query_one("#pane-status", Static).update(self._status)
        except Exception:
            pass

    # -- refresh tick --------------------------------------------------------

    def tick(self, force: bool = False) -> None:
        """Start a refresh when this pane is on screen and its data moved.

        A pane re-reads only when a generation of a kind it reads moved, its
        filter or sort changed, or :attr:`MAX_UNCHANGED_S` passed (ages in the
        rows).  A tick while a refresh runs is remembered and runs after it,
        so the newest filter is never dropped."""
        if not self.is_attached or self.app.screen is not self or self._prepared is not None:
            return
        if self.read_ahead_running:  # opened while read ahead: that read is shown, then a refresh
            return
        if self.tau.backend is None and self.needs_backend():
            return
        if self.refresh_running:
            self.ticks_skipped += 1
            self._rerun = self._rerun or force
            return
        signature = self.data_signature()
        now = time.monotonic()
        if (not force and signature is not None and signature == self._drawn_signature
                and now - self._collected_at < self.MAX_UNCHANGED_S):
            self.ticks_unchanged += 1
            return
        backoff = self.LISTING_BACKOFF if self.freshness.syncing else self.REFRESH_BACKOFF
        if not force and now - self._collect_finished_at < backoff * self._collect_seconds:
            self.ticks_backed_off += 1
            return
        if not force and now < self.tau.key_hold_until:
            # a person is pressing keys: a read now would share the interpreter with them; the change
            # poll looks again every 0.1 s and reads once the keys pause (a forced read, a filter or
            # the pane's first, does not wait)
            self.ticks_held_for_keys += 1
            return
        self._drawn_signature = signature
        self._collected_at = now
        self.refresh_running = True
        self._table_states = {table.id: table.state for table in self.query(KeyedTable) if table.id}
        self._collect_generation += 1
        self.collects_started += 1
        self._collect_worker(self._collect_generation, RowFilter("") if self.TABLE_FILTER else self.row_filter.fresh())

    def tick_if_moved(self) -> None:
        """The app's change poll (every 0.1 s): a refresh once a kind this pane reads moved since
        what is drawn was read; the clock's refresh (ages, ``MAX_UNCHANGED_S``) stays the tick's."""
        if self.refresh_running or self._drawn_signature is None:
            return  # a refresh runs (its end looks again), or the pane never read: the tick's to start
        signature = self.data_signature()
        if signature is not None and signature != self._drawn_signature:
            self.tick()

    def data_signature(self) -> tuple | None:
        """What the pane's data depends on: the generations of :attr:`READ_KINDS` (cache
        reads, no network), the filter and the namespace.  None: always re-read."""
        backend = self.tau.backend
        kinds = self.READ_KINDS or self.VIEW_KINDS
        if backend is None or not kinds:
            return None
        try:
            generations = tuple(backend.generation(kind) for kind in kinds)
            states = tuple(backend.view_state(kind).status for kind in self.VIEW_KINDS)
            connection = backend.connection_state().status
            namespace = backend.namespace
        except Exception:
            return None
        filter_text = "" if self.TABLE_FILTER else self.row_filter.text
        return (generations, states, connection, namespace, filter_text, self.extra_signature())

    def extra_signature(self) -> Any:
        """Pane state beyond the cache that changes what collect returns."""
        return None

    def needs_backend(self) -> bool:
        return True

    @work(thread=True, exclusive=True, exit_on_error=False, group="pane-refresh")
    def _collect_worker(self, generation: int, row_filter: RowFilter) -> None:
        self.post_message(self.read_pane(generation, row_filter))

    def keep_reading(self) -> None:
        """Called by :meth:`collect` between steps and in long loops: a pane that left the screen
        stops reading (at 20,000 runs a read is a second or more the pane it is for would not show)."""
        if not self._read_wanted:
            raise ReadAbandoned
        if self._reading_ahead:  # nobody waits for it: leave the processor to the keys most of the time
            worked = time.monotonic() - self._paused_at
            if worked >= READ_AHEAD_SLICE_S:
                self._rest(min(worked * READ_AHEAD_REST, READ_AHEAD_LONGEST_REST_S))
                self._paused_at = time.monotonic()
            if self.tau.first_rows_awaited:  # another pane's first rows are waited for: they come first
                self._rest(READ_AHEAD_YIELDS_AT_MOST_S, while_awaited=True)
                self._paused_at = time.monotonic()
        if self._nap_while_keys_come():  # a nap is not work: the next slice starts after it
            self._paused_at = time.monotonic()

    def _rest(self, seconds: float, while_awaited: bool = False) -> None:
        """A read ahead's rest; it ends once the pane is opened (its read is then waited for), and
        ``while_awaited``, once no pane's first rows are waited for."""
        while self._reading_ahead and seconds > 0 and (not while_awaited or self.tau.first_rows_awaited):
            nap = min(seconds, READ_AHEAD_REST_NAP_S)
            self.nap(nap)
            seconds -= nap

    def _nap_while_keys_come(self) -> float:
        """A read shares the interpreter with the UI thread: while a person is pressing keys it
        sleeps, so each key is answered at the UI thread's own speed, not at half of it.  Returns
        the seconds slept."""
        host = self.tau
        opened_with = self._opened_with_hold
        slept = give_way(lambda: host.key_hold_until if host.key_hold_until > opened_with else 0.0,
                         MAX_KEY_NAPS_S - self.read_napped_s, self.nap)
        self.read_napped_s += slept
        return slept

    @property
    def first_rows_waited_for(self) -> bool:
        """The read under way is the first this pane shows, and a person waits for it (not a read ahead)."""
        return not self._rows_shown and not self._reading_ahead

    def read_pane(self, generation: int, row_filter: RowFilter) -> Collected | CollectFailed | CollectAbandoned:
        """One refresh's read (a worker thread): the pane's data, or why it could not be read."""
        # in this worker, not before the first frame: GPU health's models load with pydantic
        from tau_tui.core.operations.gpufaults import fault_summary, gpu_problems

        self.read_napped_s = 0.0
        try:
            # read before the data: a change in between shows as stale, never as fresh
            started = time.monotonic()
            freshness = self.read_freshness()
            self.collect_freshness = freshness
            self.collect_filter = row_filter
            # the first rows, or the rest of a first read shown in parts: a person waits, every row is new
            waited_for = self.first_rows_waited_for or self.tau.first_rows_awaited_by is self
            with collections_held() if waited_for else nullcontext():
                data = self.collect()
            backend = self.tau.backend
            faults = fault_summary(gpu_problems(backend.gpu_health())) if self.SHOWS_GPU_FAULTS and backend else None
        except ReadAbandoned:
            return self.CollectAbandoned()
        except Exception as err:  # a bug or a backend failure must not kill the app
            return self.CollectFailed(f"{type(err).__name__}: {err}")
        return self.Collected(data, generation, freshness, (row_filter.tally[1], row_filter.tally[0]), faults,
                              seconds=time.monotonic() - started)

    # -- read before the first open ------------------------------------------

    def prepare_read(self, host: PaneHost) -> Collected | None:
        """A worker thread, before this pane is first shown (the app does it once after the first
        sync for its largest panes): its data read and its tables' updates planned, so opening it
        shows the rows at once.  The refresh that opening starts follows with the changes since."""
        if self.resumed_before:
            return None
        self._host = host
        if host.backend is None:
            return None
        self._table_states = {}  # never shown: every table is empty
        self._paused_at = time.monotonic()
        read = self.read_pane(0, RowFilter("") if self.TABLE_FILTER else self.row_filter.fresh())
        if not isinstance(read, self.Collected) or any(
                NOTICE_KEY in getattr(plan, "source", {}) for plan in self._plans_of(read.data)):
            return None  # a view that could not be read: nothing worth showing ahead
        return read

    @staticmethod
    def _plans_of(data: Any) -> list[TablePlan]:
        return [value for value in vars(data).values() if isinstance(value, TablePlan)] if hasattr(data, "__dict__") else []

    def start_read_ahead(self) -> None:
        """UI thread, as the app starts a read ahead: it may read, resting between steps."""
        self.read_ahead_running = True
        self._read_wanted = self._reading_ahead = not self.resumed_before

    def keep_prepared(self, backend: Any, where: tuple, read: Collected | None) -> None:
        """UI thread, when a read from :meth:`prepare_read` ends: held until this pane is shown, or,
        when the pane was opened meanwhile (its own refresh waited for it), shown now.  ``where``:
        the context and namespace it was read in (``:ctx`` and ``:ns`` keep the backend object)."""
        self.read_ahead_running = False
        self._reading_ahead = False
        shown = self.is_attached and self.app.screen is self
        self._read_wanted = shown
        if read is not None:
            self._prepared = (backend, where, read, time.monotonic())
        if shown:
            self._open_prepared()

    def _show_prepared(self) -> None:
        prepared, self._prepared = self._prepared, None
        if prepared is None or self.refreshes_applied:  # a refresh of its own came first
            return
        backend, where, read, read_at = prepared
        if backend is not self.tau.backend or where != read_place(backend):  # read where the app no longer is
            return
        self.prepared_shown += 1
        self._show_read(read)
        age = round(time.monotonic() - read_at)
        if age >= 2:
            self.set_status(Text.assemble(self._status, f" · rows read {age}s ago, refreshing"))

    def read_freshness(self) -> Freshness:
        """Connection and view states for this pane (any thread; cache reads only)."""
        return Freshness.read(self.tau.backend, self.VIEW_KINDS)

    def show_freshness(self, freshness: Freshness, gpu_faults: str | None = None) -> None:
        """Banner line in the pane and stale marking of its tables (UI thread); GPU faults
        of the cluster below it on the panes that show them."""
        self.freshness = freshness
        banner = freshness.banner()
        if gpu_faults:
            faults = Text(gpu_faults, style=style_of("warning"))
            banner = faults if banner is None else Text.assemble(banner, "\n", faults)
        try:
            widget = self.query_one("#pane-banner", Static)
        except Exception:
            return
        widget.update(banner or Text(""))
        widget.set_class(banner is not None, "-shown")
        for table in self.query(KeyedTable):
            table.set_class(freshness.stale, "-stale")

    @on(Collected)
    def _on_collected(self, message: Collected) -> None:
        self.refresh_running = False
        self._collect_seconds = message.seconds
        self._collect_finished_at = time.monotonic()
        if message.generation == self._collect_generation:  # an older refresh's data never overwrites a newer one
            self._show_read(message)
            self.refreshes_applied += 1
        self._run_deferred()

    def _show_read(self, message: Collected) -> None:
        if not message.freshness.syncing:  # rows, or why there are none; not "loading"
            if not self._rows_shown:
                self.tau.hold_background()  # the first rows: the person's next key comes first
            self._rows_shown = True
            if self.read_complete(message.data):
                self._opened_with_hold = 0.0  # later reads nap for every key
                self._no_longer_awaited()
            else:  # the rest is waited for too: its read naps only for keys from now on
                self._opened_with_hold = self.tau.key_hold_until
        with self.app.batch_update():
            self.show_freshness(message.freshness, message.gpu_faults)
            self.apply(message.data)
        self.filter_matches = self.table_match_count() if self.TABLE_FILTER else message.matched
        self.update_header()
        self.show_match_count()

    @property
    def reads_rows(self) -> bool:
        """A pane with a read of its own (:meth:`collect`), whose :meth:`apply` sets its status line."""
        return type(self).collect is not PaneScreen.collect

    def read_complete(self, data: Any) -> bool:
        """Whether a read shows all there is (a pane that shows its first rows in parts says no)."""
        return True

    @on(CollectAbandoned)
    def _on_collect_abandoned(self, message: CollectAbandoned) -> None:
        self.refresh_running = False
        self.reads_abandoned += 1
        self._drawn_signature = None  # nothing was drawn: the next tick on screen reads again
        self._run_deferred()

    @on(CollectFailed)
    def _on_collect_failed(self, message: CollectFailed) -> None:
        self.refresh_running = False
        self._no_longer_awaited()  # nothing more to wait for: the failure is shown
        self.set_status(Text(f"⚠ refresh failed: {message.error}", style="bold"))
        self._run_deferred()

    def _no_longer_awaited(self) -> None:
        """This pane's first rows are shown, or it failed or left: another pane's wait stays."""
        if self.tau.first_rows_awaited_by is self:
            self.tau.first_rows_awaited_by = None

    def _run_deferred(self) -> None:
        if self._rerun:
            self._rerun = False
            self.tick(force=True)

    def show_match_count(self) -> None:
        """``N/M`` next to the filter line while it is open (k9s shows the count in the title)."""
        matched, seen = self.filter_matches
        try:
            line = self.query_one(CommandLine)
        except Exception:
            return
        line.set_count(f"{matched}/{seen} match" if self.row_filter.text else "")

    def collect(self) -> Any:
        """Runs in a thread: read the backend cache, return plain data."""
        return None

    def apply(self, data: Any) -> None:
        """UI thread: put ``data`` on screen (keyed diffs)."""

    def plan_table(self, table_id: str, rows: Sequence[Row], notice: Text | None = None,
                   matchable: Mapping[str, Matchable] | None = None) -> TablePlan:
        """Worker thread (from :meth:`collect`): what putting ``rows`` in the table will change,
        worked out against the table as it was when this refresh started, so that :meth:`apply`
        on the UI thread only carries it out (``KeyedTable.apply_plan``)."""
        self.keep_reading()
        return plan_rows(self._table_states.get(table_id) or TableState(), rows, notice, matchable,
                         between=self.keep_reading)

    # -- filter --------------------------------------------------------------

    def apply_typed_filter(self) -> None:
        """The latest text typed in the filter line, unless enter or esc settled the filter since."""
        text, self.typed_filter = self.typed_filter, None
        if text is not None:
            self.set_filter(text, live=True)

    def set_filter(self, text: str, live: bool = False) -> None:
        """Apply a row filter.  ``live``: typed in the filter line (no warning per keystroke)."""
        if not live:
            self.typed_filter = None  # enter or esc: what was typed before is settled by this
        if text.strip() == self.row_filter.text and live:
            return
        self.row_filter = parse_filter(text)
        if self.row_filter.error and not live:
            self.notify(self.row_filter.error, severity="warning")
        self.update_header()
        if self.TABLE_FILTER:
            with self.app.batch_update():
                for table in self.query(KeyedTable):
                    table.set_row_filter(self.row_filter)
            self.filter_matches = self.table_match_count()
            self.show_match_count()
            return
        self.tick(force=True)

    def table_match_count(self) -> tuple[int, int]:
        """(rows shown, rows in all) over the tables that filter themselves."""
        counts = [table.match_count for table in self.query(KeyedTable) if table.filters_itself]
        return (sum(c[0] for c in counts), sum(c[1] for c in counts))

    def command_line_closed(self, mode: str) -> None:
        """Esc in the ``:`` / ``/`` line: in the filter line it clears the filter (k9s), the one
        typed and not applied yet too (set_filter settles it: its timer then finds nothing to
        apply, as after enter)."""
        if mode == "filter" and (self.typed_filter is not None or self.row_filter.text):
            self.set_filter("")

    def action_back(self) -> bool:
        """Esc inside the pane: clear the filter first.  Returns True if handled."""
        if self.row_filter.text:
            self.set_filter("")
            return True
        return False

    # -- readonly ------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.MUTATING_ACTIONS and self.tau.readonly:
            return False
        return True

    def on_key(self, event) -> None:
        """A key bound to a change, pressed in --readonly: say why nothing happens."""
        if not self.tau.readonly or not self.MUTATING_ACTIONS:
            return
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            action = binding.action.split("(")[0]
            if action in self.MUTATING_ACTIONS:
                event.stop()
                self.notify(f"read-only mode: {binding.description or action} is disabled ({self.tau.readonly_reason})",
                            severity="warning", timeout=4)
                return

    def active_bindings_list(self) -> list[Binding]:
        """This pane's own verbs as they are bound now (keymap applied, read-only ones gone)."""
        out = []
        for active in self.active_bindings.values():
            if active.node is self and active.binding.show:
                out.append(active.binding)
        if not out:  # nothing focused yet: read the class bindings through the keymap
            for bindings in self._bindings.key_to_bindings.values():
                for b in bindings:
                    if b.show and self.check_action(b.action.split("(")[0], ()) is not False:
                        out.append(b)
        return out

    def help_keys(self) -> list[tuple[str, str]]:
        keys = []
        for b in self.active_bindings_list():
            keys.append((self.app.get_key_display(b), b.description))
        seen = set()
        for table in self.query(KeyedTable):
            for key, text in table.sort_help():
                if key not in seen:
                    seen.add(key)
                    keys.append((key, text))
        if self.query(KeyedTable):
            keys.append(("/", "filter rows as you type (esc clears)"))
        return keys
