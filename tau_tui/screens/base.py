"""What every pane shares: header, command line, footer, the refresh tick, the row filter,
contextual help and the screen-scoped command palette.

Refresh model (k9s / dolphie): the app's timer calls :meth:`PaneScreen.tick`; when its
:class:`~tau_tui.screens.pane_reader.PaneReader` says a refresh is due, one thread worker reads the
backend's cache and builds plain rows (the pane's ``collect(request)``), posts :class:`Collected`,
and :meth:`PaneScreen.apply` diffs the rows into the tables inside ``app.batch_update()`` on the UI
thread."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, cast

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.types import NoActiveAppError
from textual.widgets import Static

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.screens.freshness import Freshness
from tau_tui.screens.host import PaneHost
from tau_tui.screens.known_counts import CountedStatus, RowCount
from tau_tui.screens.messages import CollectAbandoned, Collected, CollectFailed, read_message
from tau_tui.screens.pane_palette import PaneCommands
from tau_tui.screens.pane_reader import PaneRead, PaneReader, ReadRequest, cache_signature
from tau_tui.screens.typed_filter import TypedFilter
from tau_tui.textual_compat.screen import CompatScreen, css_update_count
from tau_tui.widgets.command_line import CommandLine
from tau_tui.widgets.header_bar import HeaderBar
from tau_tui.widgets.keyed_table import KeyedTable
from tau_tui.widgets.messages import CommandLineChanged, CommandLineSubmitted
from tau_tui.widgets.pane_footer import PaneFooter
from tau_tui.widgets.replay_bar import ReplayBar
from tau_tui.widgets.row_filter import RowFilter, parse_filter
from tau_tui.widgets.status_text import style_of
from tau_tui.widgets.table_plan import TableState

#: Below this many columns panes use their narrow layout (80x24 must show every key column and value).
NARROW_WIDTH = 100


class PaneScreen(CompatScreen):
    """Base of every pane.  Subclasses set PANE/PANE_TITLE/HELP, compose :meth:`compose_body`, and
    implement :meth:`collect` (thread) and :meth:`apply` (UI thread)."""

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
    #: A refresh whose read used C seconds of processor time is followed by the next one no sooner
    #: than this many C later (unless forced): the reads share the interpreter with the UI thread, and
    #: this keeps them to about a third of it, so keys are answered while the cluster churns.  Time a
    #: read spent waiting (the network, naps for keys) held no interpreter and counts for nothing.
    REFRESH_BACKOFF = 2.0
    #: While a first list still comes in page by page (the rows shown are the part listed so far),
    #: reads are farther apart: at most a sixth of the interpreter, the rest for decoding the list.
    LISTING_BACKOFF = 5.0
    #: Show the cluster's GPU faults in the banner (the panes a user opens first: queue, runs).
    SHOWS_GPU_FAULTS = False
    #: The pane's tables filter themselves (apply gives each row's text and labels): typing in the
    #: filter line re-reads nothing; collect keeps every row.
    TABLE_FILTER = False
    #: Whether ``/`` filters something here (a pane without rows says so instead of a filter that
    #: filters nothing).
    FILTERS_ROWS = True
    COMMANDS = {PaneCommands}

    DEFAULT_CSS = """
    PaneScreen #pane-status { height: 1; padding: 0 1; color: $text-muted; }
    PaneScreen #pane-body { height: 1fr; }
    PaneScreen #pane-banner { height: auto; max-height: 4; padding: 0 1; display: none; background: $panel; }
    PaneScreen #pane-banner.-shown { display: block; }
    PaneScreen KeyedTable.-stale { tint: $warning 8%; }
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.row_filter: RowFilter = RowFilter("")
        #: Filter-line text typed but not applied yet, applied once the keys pause.
        self.filter_typing = TypedFilter(self.set_timer, self._apply_typed_filter)
        self.filter_matches: tuple[int, int] = (0, 0)
        #: When this pane reads, and how its reads share the interpreter with the keys.
        self.reader = PaneReader(self)
        #: The freshness shown (banner and stale tables).
        self.freshness = Freshness()
        #: Shown once already: shown again, it keeps its widgets' styles (:meth:`on_screen_resume`),
        #: unless what of the app they follow changed since it was suspended.
        self.resumed_before = False
        self._suspended_with: tuple | None = None
        #: Mounted by the app before its first open (PanePreparation): styled as it mounted, so its
        #: first open keeps those styles as a later one does, unless what they follow changed since.
        self.mounted_ahead = False
        self.laid_out_ahead = False
        self._status = Text("")
        self._counted: CountedStatus | None = None
        self._host: PaneHost | None = None
        try:  # made while the app runs: styled as it mounts (a CSS or theme change since still restyles it)
            self.mark_styled()
        except NoActiveAppError:
            pass

    @property
    def tau(self) -> PaneHost:
        """The hosting app, seen through what a pane may use of it."""
        if self._host is not None:  # read before it is mounted, from a thread Textual knows no app in
            return self._host
        return cast(PaneHost, self.app)

    @property
    def refresh_running(self) -> bool:
        return self.reader.refresh_running

    @property
    def refreshes_applied(self) -> int:
        """Refreshes whose reads were shown (tests and benchmarks wait for them)."""
        return self.reader.refreshes_applied

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
        # Textual marks a new mode's screen as styled only if it is mounted as the app's CSS is
        # refreshed: its widgets were just styled from the current stylesheet, so mark it.
        self.mark_styled()
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
        self.reader.left()
        self._suspended_with = self._app_look()

    def lay_out_ahead(self, size: Size) -> None:
        """UI thread, a pane mounted ahead and not shown yet: its widgets are laid out at ``size``
        and drawn once, into nothing, so that its first open finds their sizes and drawn lines made
        (the footer's keys and the tables' headers are most of a first frame)."""
        self.laid_out_ahead = True
        self.lay_out_unshown(size)

    def _app_look(self) -> tuple:
        """What of the app a pane's styles follow and its own widgets' class changes do not carry."""
        app = self.app
        return frozenset(app.classes), app.app_focus, app.theme, css_update_count(app)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown again (Textual's handler, on Screen, runs next).  Textual restyles every widget of
        a screen it resumes, and the tables then drop every row they had drawn.  A pane shown before
        keeps its styles: its widgets were restyled as their classes changed while it was away, and a
        CSS or theme change since is applied by ``switch_mode``.  When the app's own classes, focus or
        theme changed meanwhile (which restyle only the screen on top), it is restyled as before.  Its
        refresh waits for the first frame, so that the read does not share the interpreter with it."""
        if ((self.resumed_before or self.mounted_ahead) and not self.app.SUSPENDED_SCREEN_CLASS
                and self._suspended_with == self._app_look()):
            event.refresh_styles = False
        if self.reader.opened() and self.reads_rows and not self._status.plain:  # an empty table is not "none"
            self.set_status(Text(f"◌ reading {self.PANE_TITLE.lower()}…", style=style_of("pending")))
        self.resumed_before = True
        self.update_header()
        if self.reader.prepared is not None:
            # once its tables are mounted; the refresh starts after, planned against those rows
            self.call_after_refresh(self._open_prepared)
            return
        self.call_after_frame(partial(self.tick, force=True))  # the read waits for the frame

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

    def set_status(self, text: str | Text | CountedStatus) -> None:
        """The status line; one with row counts says ``5 of 14 nodes`` while a filter is on."""
        self._counted = text if isinstance(text, CountedStatus) else None
        if isinstance(text, CountedStatus):
            text = text.render(self._rows_shown)
        self._status = text if isinstance(text, Text) else Text(text)
        try:
            self.query_one("#pane-status", Static).update(self._status)
        except Exception:
            pass

    # -- refresh tick --------------------------------------------------------

    def tick(self, force: bool = False) -> None:
        """Start a refresh when this pane is on screen and its reader says one is due."""
        if not self.is_attached or self.app.screen is not self or self.reader.prepared is not None:
            return
        if not self.reader.due(force):
            return
        table_states = {table.id: table.state for table in self.query(KeyedTable) if table.id}
        self._collect_worker(self.reader.generation, self._read_filter(), table_states)

    def tick_if_moved(self) -> None:
        """The app's change poll (every 0.1 s): a refresh once a kind this pane reads moved since
        what is drawn was read; the clock's refresh (ages, ``MAX_UNCHANGED_S``) stays the tick's."""
        if self.reader.moved():
            self.tick()

    def data_signature(self) -> tuple | None:
        """What the pane's data depends on: the generations of :attr:`READ_KINDS` (cache reads, no
        network), the view and connection states, the namespace and the filter.  None: always re-read."""
        cache = cache_signature(self.tau.backend, self.READ_KINDS or self.VIEW_KINDS, self.VIEW_KINDS)
        if cache is None:
            return None
        return (*cache, "" if self.TABLE_FILTER else self.row_filter.text, self.extra_signature())

    def extra_signature(self) -> Any:
        """Pane state beyond the cache that changes what collect returns."""
        return None

    def needs_backend(self) -> bool:
        return True

    def _read_filter(self) -> RowFilter:
        return RowFilter("") if self.TABLE_FILTER else self.row_filter.fresh()

    @work(description="_collect_worker", thread=True, exclusive=True, exit_on_error=False, group="pane-refresh")
    def _collect_worker(self, generation: int, row_filter: RowFilter, table_states: Mapping[str, TableState]) -> None:
        self.post_message(read_message(self.reader.read(generation, row_filter, table_states)))

    # -- read before the first open (the app's PanePreparation) --------------

    @property
    def read_ahead_running(self) -> bool:
        return self.reader.read_ahead_running

    def prepare_read(self, host: PaneHost) -> PaneRead | None:
        """A worker thread, before this pane is first shown (the app does it once after the first
        sync for its largest panes): its data read and its tables' updates planned, so opening it
        shows the rows at once.  The refresh that opening starts follows with the changes since."""
        if self.resumed_before:
            return None
        self._host = host
        if host.backend is None:
            return None
        return self.reader.prepare(self._read_filter())

    def start_read_ahead(self) -> None:
        """UI thread, as the app starts a read ahead: it may read, resting between steps."""
        self.reader.start_ahead(self.resumed_before)

    def keep_prepared(self, backend: Any, where: tuple, read: PaneRead | None) -> None:
        """UI thread, when a read from :meth:`prepare_read` ends: held until this pane is shown, or,
        when the pane was opened meanwhile (its own refresh waited for it), shown now.  ``where``:
        the context and namespace it was read in (``:ctx`` and ``:ns`` keep the backend object)."""
        shown = self.is_attached and self.app.screen is self
        self.reader.ahead_ended(shown, backend, where, read)
        if shown:
            self._open_prepared()

    def _open_prepared(self) -> None:
        prepared = self.reader.take_prepared(self.tau.backend)
        if prepared is not None:
            read, age = prepared
            self._show_read(read)
            if round(age) >= 2:
                self.set_status(Text.assemble(self._status, f" · rows read {round(age)}s ago, refreshing"))
        self.call_after_frame(partial(self.tick, force=True))

    # -- a read's outcome (UI thread) -----------------------------------------

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
        if self.reader.collected(message.read):  # an older refresh's data never overwrites a newer one
            self._show_read(message.read)
        self._run_deferred()

    def _show_read(self, read: PaneRead) -> None:
        if not read.freshness.syncing:  # rows, or why there are none; not "loading"
            self.reader.rows_came(self.read_complete(read.data))
        with self.app.batch_update():
            self.show_freshness(read.freshness, read.gpu_faults)
            self.apply(read.data)
        self.filter_matches = self.table_match_count() if self.TABLE_FILTER else read.matched
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
        self.reader.abandoned()
        self._run_deferred()

    @on(CollectFailed)
    def _on_collect_failed(self, message: CollectFailed) -> None:
        self.reader.failed()
        self.set_status(Text(f"⚠ refresh failed: {message.error}", style="bold"))
        self._run_deferred()

    def _run_deferred(self) -> None:
        if self.reader.take_rerun():
            self.tick(force=True)

    def _rows_shown(self, count: RowCount) -> int | None:
        """The rows a status line's count sees now: None while no filter is on."""
        if not self.row_filter.text:
            return None
        if count.table_id is None:
            return self.filter_matches[0]
        tables = self.query(f"#{count.table_id}")
        table = tables.first() if tables else None
        return table.match_count[0] if isinstance(table, KeyedTable) and table.filters_itself else None

    def show_match_count(self) -> None:
        """``N/M`` next to the filter line while it is open (k9s shows the count in the title), and
        the status line's counts of the rows shown."""
        if self._counted is not None:
            self.set_status(self._counted)
        matched, seen = self.filter_matches
        try:
            line = self.query_one(CommandLine)
        except Exception:
            return
        line.set_count(f"{matched}/{seen} match" if self.row_filter.text else "")

    def collect(self, request: ReadRequest) -> Any:
        """Runs in a thread: read the backend cache, return plain data (``request``: what this read
        works from; call ``request.keep_reading()`` between steps)."""
        return None

    def apply(self, data: Any) -> None:
        """UI thread: put ``data`` on screen (keyed diffs)."""

    # -- filter --------------------------------------------------------------

    def _apply_typed_filter(self, text: str) -> None:
        self.set_filter(text, live=True)

    @property
    def typed_filter(self) -> str | None:
        """Filter-line text typed but not applied yet."""
        return self.filter_typing.text

    @on(CommandLineChanged)
    def _on_filter_typed(self, message: CommandLineChanged) -> None:
        message.stop()
        if message.mode == "filter":
            self.filter_typing.typed(message.text)

    @on(CommandLineSubmitted)
    def _on_line_submitted(self, message: CommandLineSubmitted) -> None:
        """Enter in the ``/`` line (or the Logs pane's search) is the pane's; a ``:`` command goes on
        to the app."""
        if message.mode == "command":
            return
        message.stop()
        self.line_submitted(message.mode, message.text)

    def line_submitted(self, mode: str, text: str) -> None:
        if mode == "filter":
            self.set_filter(text)

    def set_filter(self, text: str, live: bool = False) -> None:
        """Apply a row filter.  ``live``: typed in the filter line (no warning per keystroke)."""
        if not live:
            self.filter_typing.settle()  # enter or esc: what was typed before is settled by this
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

    # -- readonly and keys ---------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.MUTATING_ACTIONS and self.tau.readonly:
            return False
        return True

    def on_key(self, event) -> None:
        """A key bound to a change, pressed in --readonly: say why nothing happens.  A sort letter
        that the focused widget left alone sorts the pane's main table (k9s: the pane's keys act
        on its table wherever the focus is)."""
        if self.tau.readonly and self.MUTATING_ACTIONS and self._refuse_readonly_key(event):
            return
        table = self.main_table()
        letter = event.character
        if table is not None and letter and len(letter) == 1 and letter.isupper() and event.key == letter:
            column = table.sort_column_for_letter(letter)
            if column is not None:
                event.stop()
                event.prevent_default()
                table.sort_by(column)

    def main_table(self) -> KeyedTable | None:
        """The table the pane's sort letters act on: its first sortable one."""
        return next((table for table in self.query(KeyedTable) if table.sortable), None)

    def _refuse_readonly_key(self, event) -> bool:
        for binding in self.bindings_of_key(event.key):
            action = binding.action.split("(")[0]
            if action in self.MUTATING_ACTIONS:
                event.stop()
                self.notify(f"read-only mode: {binding.description or action} is disabled ({self.tau.readonly_reason})",
                            severity="warning", timeout=4)
                return True
        return False

    def active_bindings_list(self) -> list[Binding]:
        """This pane's own verbs as they are bound now (keymap applied, read-only ones gone)."""
        out = []
        for active in self.active_bindings.values():
            if active.node is self and active.binding.show:
                out.append(active.binding)
        if not out:  # nothing focused yet: read the class bindings through the keymap
            for b in self.all_own_bindings():
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
