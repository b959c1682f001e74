"""When a pane reads its data and how a read shares the interpreter with the keys (no Textual here).

The app's clock and change poll ask :class:`PaneReader` whether a refresh is due (the pane's data
moved, its back-off passed, no key is held).  A due refresh runs :meth:`PaneReader.read` in a worker
thread: it calls the pane's ``collect(request)`` with a :class:`ReadRequest` fixed when the read
started; ``collect`` calls ``request.keep_reading()`` between its steps, which naps while keys come,
rests a read made ahead of the pane's first open, and stops a read whose pane left the screen."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.pacing import give_way
from tau_tui.screens.freshness import Freshness
from tau_tui.startup.heap import collections_held
from tau_tui.widgets.row_filter import RowFilter
from tau_tui.widgets.table_plan import NOTICE_KEY, Matchable, Row, TablePlan, TableState, plan_rows

if TYPE_CHECKING:
    from tau_tui.core.operations.live_gpu_problems import LiveGpuProblems
    from tau_tui.screens.host import PaneHost

#: A read ahead works in slices of this many seconds and rests READ_AHEAD_REST times as long after
#: each: a quarter of one processor, so keys typed meanwhile hardly wait for the interpreter.
READ_AHEAD_SLICE_S = 0.01
READ_AHEAD_REST = 3.0
#: A rest is at most this long, in naps of READ_AHEAD_REST_NAP_S that end once the pane is opened:
#: a slice measured in wall time also counts the time the read waited for the interpreter.
READ_AHEAD_LONGEST_REST_S = 0.1
READ_AHEAD_REST_NAP_S = 0.01
#: While another pane's first rows are waited for, a read ahead rests, for at most this long each time.
READ_AHEAD_YIELDS_AT_MOST_S = 2.0
#: While keys come, a read sleeps between its steps (the interpreter released for the UI thread),
#: at most MAX_KEY_NAPS_S in all per read, so it still finishes.
MAX_KEY_NAPS_S = 1.0
#: While keys come, a refresh of a pane whose data moved waits for a pause, but never longer than
#: this after the last one started: keys held down (j to scroll, a long filter) would otherwise keep
#: the pane on what it first read, its counts and ages frozen, for as long as they come.
MAX_HELD_FOR_KEYS_S = 1.0


def read_place(backend: Any) -> tuple:
    """Where a read was made: the context and namespace (``:ctx``/``:ns`` keep the backend object)."""
    try:
        return (backend.current_context, backend.namespace)
    except Exception:
        return (None, None)


class ReadNoLongerWanted(Exception):
    """Raised in a pane's read once the pane has left the screen (:meth:`PaneReader.keep_reading`)."""


@dataclass(frozen=True)
class ReadRequest:
    """What one read of a pane works from, fixed when the read starts (a worker thread's argument)."""

    #: The filter the read applies, with its own tally (a pane whose tables filter themselves gets none).
    row_filter: RowFilter = field(default_factory=lambda: RowFilter(""))
    #: Connection and view states read before the data: the tables' notices come from it.
    freshness: Freshness = field(default_factory=Freshness)
    #: Each table's state when the read started: its plans are made against these.
    table_states: Mapping[str, TableState] = field(default_factory=dict)
    #: Called between steps and in long loops (naps for keys; stops a read nobody wants any more).
    keep_reading: Callable[[], None] = lambda: None
    #: Whether this read is the pane's first and a person waits for it (not a read ahead).
    first_rows_waited_for: Callable[[], bool] = lambda: False
    #: Whether this read is made ahead of the pane's first open (nobody waits for it yet).
    read_ahead: Callable[[], bool] = lambda: False

    def plan_table(self, table_id: str, rows: Sequence[Row], notice: Text | None = None,
                   matchable: Mapping[str, Matchable] | None = None) -> TablePlan:
        """What putting ``rows`` in the table will change, worked out against the table as it was
        when this read started, so that the pane's apply on the UI thread only carries it out."""
        self.keep_reading()
        return plan_rows(self.table_states.get(table_id) or TableState(), rows, notice, matchable,
                         between=self.keep_reading)


@dataclass(frozen=True)
class PaneRead:
    """A read's result: the pane's data and what it was read under."""

    data: Any
    generation: int
    freshness: Freshness = field(default_factory=Freshness)
    #: (rows matching the filter, rows looked at)
    matched: tuple[int, int] = (0, 0)
    gpu_faults: str | None = None
    #: The processor time the read used (its worker thread's clock): the back-off follows it, never
    #: the time the read waited for the network (a visibility call) or napped for keys.
    cpu_seconds: float = 0.0


@dataclass(frozen=True)
class ReadFailed:
    """A bug or a backend failure stopped the read: said in the pane's status line."""

    error: str


@dataclass(frozen=True)
class ReadAbandoned:
    """The pane left the screen while it read: the read stopped, nothing to show."""


ReadOutcome = PaneRead | ReadFailed | ReadAbandoned


class ReadablePane(Protocol):
    """What the reader needs of its pane (PaneScreen)."""

    VIEW_KINDS: tuple[ResourceKind, ...]
    MAX_UNCHANGED_S: float
    REFRESH_BACKOFF: float
    LISTING_BACKOFF: float
    SHOWS_GPU_FAULTS: bool
    #: The freshness shown (the back-off is longer while a first list comes in).
    freshness: Freshness

    @property
    def tau(self) -> PaneHost: ...

    def collect(self, request: ReadRequest) -> Any: ...

    def data_signature(self) -> tuple | None: ...

    def needs_backend(self) -> bool: ...


def cache_signature(backend: Any, read_kinds: tuple[ResourceKind, ...],
                    view_kinds: tuple[ResourceKind, ...]) -> tuple | None:
    """The generations of ``read_kinds``, the states of ``view_kinds``, the connection's state and the
    namespace (cache reads, no network); None when they cannot be read: always re-read."""
    if backend is None or not read_kinds:
        return None
    try:
        generations = tuple(backend.generation(kind) for kind in read_kinds)
        states = tuple(backend.view_state(kind).status for kind in view_kinds)
        return (generations, states, backend.connection_state().status, backend.namespace)
    except Exception:
        return None


def table_plans(data: Any) -> list[TablePlan]:
    """The table plans a pane's data carries."""
    return [value for value in vars(data).values() if isinstance(value, TablePlan)] if hasattr(data, "__dict__") else []


class PaneReader:
    """A pane's read schedule: refreshes (ticks, back-off, key hold), the reads themselves (naps,
    rests, abandonment) and the read made before the pane's first open (prepared reads)."""

    def __init__(self, pane: ReadablePane) -> None:
        self.pane = pane
        #: The banner's GPU problems, kept from the reports that changed (made in the first read).
        self.gpu_problems: LiveGpuProblems | None = None
        # -- schedule (UI thread) --
        self.refresh_running = False
        #: The newest refresh started: an older one's data never overwrites a newer one's.
        self.generation = 0
        #: The pane's data signature when the refresh drawn last was started, and when.
        self.drawn_signature: tuple | None = None
        self.collected_at = 0.0
        #: The processor time the last refresh's read used (its worker thread's) and when it finished.
        self.read_cpu_seconds = 0.0
        self.finished_at = 0.0
        #: A forced refresh asked for while one ran: it runs once that one ends.
        self.rerun = False
        self.ticks_skipped = 0
        self.ticks_unchanged = 0
        self.ticks_backed_off = 0
        #: Refreshes the cluster's changes asked for while a key's hold ran (read once keys pause).
        self.ticks_held_for_keys = 0
        self.collects_started = 0
        self.refreshes_applied = 0
        #: Reads stopped because the pane left the screen.
        self.reads_abandoned = 0
        # -- reading (worker thread, flags set on the UI thread) --
        #: On screen, or reading ahead: a read goes on only while this holds (:meth:`keep_reading`).
        self.wanted = False
        #: A read ahead of the first open runs: it rests between steps (:meth:`keep_reading`).
        self.reading_ahead = False
        self.paused_at = 0.0
        #: Seconds the read in progress slept for keys, how it sleeps, and the clock its slices and the
        #: keys' hold are measured by (tests give their own).
        self.napped_s = 0.0
        self.nap: Callable[[float], None] = time.sleep
        self.monotonic: Callable[[], float] = time.monotonic
        #: The reading thread's processor clock (a read's back-off is in it).
        self.cpu_clock: Callable[[], float] = time.thread_time
        #: The app's key hold when the pane was opened with no rows: its read naps only for keys that
        #: came after (the one that opened it asks for that read); 0.0 once rows are shown.
        self.opened_with_hold = 0.0
        #: A read made with every view synced was shown (rows, or why there are none): not "loading".
        self.rows_shown = False
        # -- read before the first open --
        #: From the app's start of a read ahead to :meth:`ahead_ended` (UI thread).
        self.read_ahead_running = False
        #: (backend, where, read, when) from :meth:`prepare`, shown when the pane first opens.
        self.prepared: tuple[Any, tuple, PaneRead, float] | None = None
        #: Times a read made before the pane was shown was shown.
        self.prepared_shown = 0

    @property
    def host(self) -> PaneHost:
        return self.pane.tau

    # -- schedule ------------------------------------------------------------

    def due(self, force: bool = False) -> bool:
        """UI thread, the pane on screen: whether a refresh starts now (then it is counted as started).

        It re-reads only when a generation of a kind it reads moved, its filter or sort changed, or
        ``MAX_UNCHANGED_S`` passed (ages in the rows).  A tick while a refresh runs is remembered
        and, when forced, runs after it, so the newest filter is never dropped."""
        pane = self.pane
        if self.read_ahead_running:  # opened while read ahead: that read is shown, then a refresh
            return False
        if self.host.backend is None and pane.needs_backend():
            return False
        if self.refresh_running:
            self.ticks_skipped += 1
            self.rerun = self.rerun or force
            return False
        signature = pane.data_signature()
        now = time.monotonic()
        if (not force and signature is not None and signature == self.drawn_signature
                and now - self.collected_at < pane.MAX_UNCHANGED_S):
            self.ticks_unchanged += 1
            return False
        backoff = pane.LISTING_BACKOFF if pane.freshness.syncing else pane.REFRESH_BACKOFF
        if not force and now - self.finished_at < backoff * self.read_cpu_seconds:
            self.ticks_backed_off += 1
            return False
        if not force and now < self.host.key_hold_until and now - self.collected_at < MAX_HELD_FOR_KEYS_S:
            # keys come: the change poll looks again soon and reads once they pause or the hold
            # has lasted MAX_HELD_FOR_KEYS_S (a forced read, a filter or the pane's first, does not wait)
            self.ticks_held_for_keys += 1
            return False
        self.drawn_signature = signature
        self.collected_at = now
        self.refresh_running = True
        self.generation += 1
        self.collects_started += 1
        return True

    def moved(self) -> bool:
        """Whether a kind the pane reads moved since what is drawn was read (the change poll)."""
        if self.refresh_running or self.drawn_signature is None:
            return False  # a refresh runs (its end looks again), or the pane never read: the tick's to start
        signature = self.pane.data_signature()
        return signature is not None and signature != self.drawn_signature

    def collected(self, read: PaneRead) -> bool:
        """UI thread, a refresh's read came: whether to show it (no newer refresh started since)."""
        self.refresh_running = False
        self.read_cpu_seconds = read.cpu_seconds
        self.finished_at = time.monotonic()
        if read.generation != self.generation:
            return False
        self.refreshes_applied += 1
        return True

    def abandoned(self) -> None:
        """UI thread, a refresh's read stopped as the pane left: nothing drawn, the next tick reads."""
        self.refresh_running = False
        self.reads_abandoned += 1
        self.drawn_signature = None

    def failed(self) -> None:
        self.refresh_running = False
        self.no_longer_awaited()  # nothing more to wait for: the failure is shown

    def take_rerun(self) -> bool:
        rerun, self.rerun = self.rerun, False
        return rerun

    # -- the pane on screen and off ------------------------------------------

    def opened(self) -> bool:
        """UI thread, the pane shown: its read goes on, resting no more.  Returns whether its first
        rows are now waited for."""
        awaited = not self.rows_shown
        if awaited:
            self.opened_with_hold = self.host.key_hold_until
            self.host.first_rows_awaited_by = self.pane
        self.wanted = True
        self.reading_ahead = False  # opened while read ahead: that read no longer rests
        return awaited

    def left(self) -> None:
        """UI thread, the pane left the screen: its read stops at its next step."""
        self.wanted = False
        self.no_longer_awaited()

    def rows_came(self, complete: bool) -> None:
        """UI thread, a read with every view synced is shown (rows, or why there are none);
        ``complete``: all there is (a pane that shows its first rows in parts says no)."""
        if not self.rows_shown:
            self.host.hold_background()  # the first rows: the person's next key comes first
        self.rows_shown = True
        if complete:
            self.opened_with_hold = 0.0  # later reads nap for every key
            self.no_longer_awaited()
        else:  # the rest is waited for too: its read naps only for keys from now on
            self.opened_with_hold = self.host.key_hold_until

    def no_longer_awaited(self) -> None:
        """The pane's first rows are shown, or it failed or left: another pane's wait stays."""
        if self.host.first_rows_awaited_by is self.pane:
            self.host.first_rows_awaited_by = None

    @property
    def first_rows_waited_for(self) -> bool:
        """The read under way is the first the pane shows, and a person waits for it (not a read ahead)."""
        return not self.rows_shown and not self.reading_ahead

    # -- the read (a worker thread) ------------------------------------------

    def read(self, generation: int, row_filter: RowFilter, table_states: Mapping[str, TableState]) -> ReadOutcome:
        """One refresh's read: the pane's data, or why it could not be read."""
        # in the worker, not before the first frame: GPU health's models load with pydantic
        from tau_tui.core.operations.gpufaults import fault_summary
        from tau_tui.core.operations.live_gpu_problems import LiveGpuProblems

        pane = self.pane
        self.napped_s = 0.0
        try:
            # read before the data: a change in between shows as stale, never as fresh
            cpu_started = self.cpu_clock()
            freshness = Freshness.read(self.host.backend, pane.VIEW_KINDS)
            request = ReadRequest(row_filter, freshness, table_states, self.keep_reading,
                                  lambda: self.first_rows_waited_for, lambda: self.reading_ahead)
            # the first rows, or the rest of a first read shown in parts: a person waits, every row is new
            waited_for = self.first_rows_waited_for or self.host.first_rows_awaited_by is pane
            with collections_held() if waited_for else nullcontext():
                data = pane.collect(request)
            backend = self.host.backend
            faults = None
            if pane.SHOWS_GPU_FAULTS and backend:
                # the reports changed since the last read, not every node's (live_gpu_problems.py)
                self.gpu_problems = self.gpu_problems or LiveGpuProblems()
                faults = fault_summary(self.gpu_problems.current(backend))
        except ReadNoLongerWanted:
            return ReadAbandoned()
        except Exception as err:  # a bug or a backend failure must not kill the app
            return ReadFailed(f"{type(err).__name__}: {err}")
        return PaneRead(data, generation, freshness, (row_filter.tally[1], row_filter.tally[0]), faults,
                        cpu_seconds=self.cpu_clock() - cpu_started)

    def keep_reading(self) -> None:
        """Called by the pane's collect between steps and in long loops: a pane that left the screen
        stops reading (a read of a large cluster is long, and the pane it is for would not show it)."""
        if not self.wanted:
            raise ReadNoLongerWanted
        if self.reading_ahead:  # nobody waits for it: leave the processor to the keys most of the time
            worked = self.monotonic() - self.paused_at
            if worked >= READ_AHEAD_SLICE_S:
                self._rest(min(worked * READ_AHEAD_REST, READ_AHEAD_LONGEST_REST_S))
                self.paused_at = self.monotonic()
            if self.host.first_rows_awaited:  # another pane's first rows are waited for: they come first
                self._rest(READ_AHEAD_YIELDS_AT_MOST_S, while_awaited=True)
                self.paused_at = self.monotonic()
        if self._nap_while_keys_come():  # a nap is not work: the next slice starts after it
            self.paused_at = self.monotonic()

    def _rest(self, seconds: float, while_awaited: bool = False) -> None:
        """A read ahead's rest; it ends once the pane is opened (its read is then waited for), and
        ``while_awaited``, once no pane's first rows are waited for."""
        while self.reading_ahead and seconds > 0 and (not while_awaited or self.host.first_rows_awaited):
            nap = min(seconds, READ_AHEAD_REST_NAP_S)
            self.nap(nap)
            seconds -= nap

    def _nap_while_keys_come(self) -> float:
        """While a person is pressing keys the read sleeps, so each key is answered at the UI
        thread's own speed, not at half of it.  Returns the seconds slept."""
        host = self.host
        opened_with = self.opened_with_hold
        slept = give_way(lambda: host.key_hold_until if host.key_hold_until > opened_with else 0.0,
                         MAX_KEY_NAPS_S - self.napped_s, self.nap, self.monotonic)
        self.napped_s += slept
        return slept

    # -- read before the first open ------------------------------------------

    def start_ahead(self, shown_before: bool) -> None:
        """UI thread, as the app starts a read ahead: it may read, resting between steps."""
        self.read_ahead_running = True
        self.wanted = self.reading_ahead = not shown_before

    def prepare(self, row_filter: RowFilter) -> PaneRead | None:
        """A worker thread, before the pane is first shown: its data read and its tables' updates
        planned against empty tables, or None when a view could not be read (nothing worth showing)."""
        self.paused_at = time.monotonic()
        read = self.read(0, row_filter, {})  # never shown: every table is empty
        if not isinstance(read, PaneRead) or any(NOTICE_KEY in getattr(plan, "source", {})
                                                 for plan in table_plans(read.data)):
            return None
        return read

    def ahead_ended(self, shown: bool, backend: Any, where: tuple, read: PaneRead | None) -> None:
        """UI thread, a read from :meth:`prepare` ended: held until the pane is shown (``shown``: it is)."""
        self.read_ahead_running = False
        self.reading_ahead = False
        self.wanted = shown
        if read is not None:
            self.prepared = (backend, where, read, time.monotonic())

    def take_prepared(self, backend: Any) -> tuple[PaneRead, float] | None:
        """UI thread, the pane opened: the read made ahead and its age in seconds, unless a refresh
        of its own came first or it was read where the app no longer is."""
        prepared, self.prepared = self.prepared, None
        if prepared is None or self.refreshes_applied:
            return None
        read_backend, where, read, read_at = prepared
        if read_backend is not backend or where != read_place(backend):
            return None
        self.prepared_shown += 1
        return read, time.monotonic() - read_at
