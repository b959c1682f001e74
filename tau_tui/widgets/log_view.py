"""A log viewer over a :class:`tau_tui.core.cluster.logspool.LogSpool` (toolong-style).

The UI thread never reads the spool file.  Only the visible rows are rendered
(Line API) from a bounded LRU cache of lines; a window worker fills the cache
around the viewport when a row misses, and an index worker reads new lines
(and, for wrap / JSON pretty-print, lays them out into rows) in the
background, posting the results.  Until a line's layout is known it counts as
one row, so the view is always scrollable.  Text is always ``rich.text.Text``
built from the raw line: nothing in a log line is interpreted as markup.
Follow mode keeps the view at the end; when paused, new lines are counted
("paused (+N new)") instead of moving the view."""

from __future__ import annotations

import bisect
import json
import re
import textwrap
from array import array
from collections import deque
from typing import TypeAlias

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, work
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from tau_tui.core.cluster.logspool.spool import LogSpool
from tau_tui.widgets.messages import LogViewFollowChanged, LogViewIndexed, LogViewLayoutDone, LogViewWindowLoaded

_PREFIX = re.compile(r"^(\[[^\]\s]+\] )")
_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z )")


def split_prefix(line: str) -> tuple[str, str]:
    """(``[pod/container] `` + timestamp prefix, rest)."""
    prefix = ""
    m = _PREFIX.match(line)
    if m:
        prefix = m.group(1)
        line = line[m.end():]
    m = _TIMESTAMP.match(line)
    if m:
        prefix += m.group(1)
        line = line[m.end():]
    return prefix, line


def pretty_json(line: str) -> list[str] | None:
    prefix, rest = split_prefix(line)
    body = rest.strip()
    if not body or body[0] not in "{[":
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    rendered = json.dumps(value, indent=2, ensure_ascii=False).split("\n")
    return [prefix + rendered[0]] + ["  " + " " * len(prefix) + r for r in rendered[1:]]


#: Lines kept in the render cache (bounded: a viewport plus margins, and the tail).
CACHE_LINES = 4096
#: Lines read around the viewport when a row misses the cache.
WINDOW_MARGIN = 200
#: Newest lines the index worker hands to the cache (what following shows).
TAIL_LINES = 512
_CHUNK = 2048


def text_console(width: int = 200) -> Console:
    return Console(width=width, no_color=True, markup=False, highlight=False, emoji=False)


def style_line(line: str, search: re.Pattern[str] | None = None) -> Text:
    text = Text(line, no_wrap=True, end="")
    prefix, _ = split_prefix(line)
    if prefix:
        text.stylize("dim", 0, len(prefix))
    if search is not None:
        text.highlight_regex(search, style="reverse")
    return text


def expand_line(line: str, width: int, wrap: bool, json_pretty: bool, console: Console,
                search: re.Pattern[str] | None = None) -> list[Text]:
    """The rows one log line takes: JSON pretty-printed, then wrapped at ``width``.
    Pure (any thread); the index worker and render_line use the same rule."""
    pretty = pretty_json(line) if json_pretty else None
    out: list[Text] = []
    for part in pretty if pretty is not None else [line]:
        rendered = style_line(part, search)
        if wrap and rendered.cell_len > width:
            out.extend(rendered.wrap(console, width, overflow="fold", no_wrap=False))
        else:
            out.append(rendered)
    return out


class LogView(ScrollView, can_focus=True):
    """See module docstring.  Call :meth:`poll` on a timer."""

    DEFAULT_CSS = """
    LogView { height: 1fr; background: $surface; }
    """
    HELP = "The log: arrows/PgUp/PgDn scroll (scrolling up pauses follow), End resumes following."

    FollowChanged: TypeAlias = LogViewFollowChanged
    WindowLoaded: TypeAlias = LogViewWindowLoaded
    Indexed: TypeAlias = LogViewIndexed
    LayoutDone: TypeAlias = LogViewLayoutDone

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.spool: LogSpool | None = None
        self.following = True
        self.wrap = False
        self.json_pretty = False
        self.pending_new = 0
        self.lines_seen = 0
        self.search_pattern: re.Pattern[str] | None = None
        self.hits: list[int] = []
        self.hit_index = -1
        self.placeholder = "no log open"
        #: Why an open log has no lines (the stream's errors), shown wrapped in the empty body.
        self.empty_reason = ""
        self._lines = LRUCache[int, str](CACHE_LINES)
        self._partials: dict[int, str] = {}
        self._text_console = text_console()
        self._spool_generation = 0
        #: A log opened again while paused (``t``, ``s``, ``p``, ``a``): the line to show once it is
        #: read again, and how many lines the last spool had (those are not "new").
        self._place_line: int | None = None
        self._seen_before = 0
        self._reset_layout()

    def _reset_layout(self) -> None:
        """Forget the row index (a new spool, or a different wrap/JSON/width)."""
        self._layout_generation = getattr(self, "_layout_generation", 0) + 1
        self._row_starts = array("Q")  # first row of each indexed line (expanded mode)
        self._indexed_upto = 0  # lines the index worker has read
        self._indexed_rows = 0  # rows those lines take
        self._max_width = 0
        self._layout_width = 0
        self._index_running = False
        self._relayout_from: int | None = None  # top line to keep in view once a re-layout lands
        self._window_pending: tuple[int, int] | None = None

    # -- data ----------------------------------------------------------------------

    def set_spool(self, spool: LogSpool | None, placeholder: str = "", keep_place: tuple[int, int] | None = None) -> None:
        """Show ``spool``.  ``keep_place``: (top line, lines seen) of the log this one opens again while
        paused: the view stays paused and shows that line once it is read again, and the lines the
        last log had are not counted as new."""
        self.spool = spool
        self._spool_generation += 1
        self._lines.clear()
        self._partials = {}
        self._reset_layout()
        self.lines_seen = 0
        self.pending_new = 0
        self._place_line, self._seen_before = keep_place if keep_place is not None else (None, 0)
        self.hits = []
        self.hit_index = -1
        if placeholder:
            self.placeholder = placeholder
        self.poll()
        self.refresh()

    @property
    def expanded(self) -> bool:
        return self.wrap or self.json_pretty

    @property
    def layout_pending(self) -> int:
        """Lines not laid out yet (0 when the row index is complete)."""
        return max(0, self.lines_seen - self._indexed_upto) if self.expanded else 0

    @property
    def settled(self) -> bool:
        """Every arrived line is indexed and no window read is outstanding (tests, snapshots)."""
        spool = self.spool
        if spool is None or spool.closed:
            return True
        return (not self._index_running and self._window_pending is None
                and self._indexed_upto >= spool.committed_count and self.lines_seen == spool.line_count)

    @property
    def _rows_total(self) -> int:
        # Lines the index has not reached yet count as one row each.
        return self._indexed_rows + max(0, self.lines_seen - self._indexed_upto)

    def _width(self) -> int:
        return max(10, self.scrollable_content_region.width or self.size.width or 80)

    def poll(self) -> int:
        """Take in new lines (counters only; no file I/O here); returns how many arrived."""
        spool = self.spool
        if spool is None or spool.closed:
            self.virtual_size = Size(self.size.width, 0)
            return 0
        count = spool.line_count
        committed = spool.committed_count
        arrived = max(0, count - self.lines_seen)
        if self.wrap and self._layout_width and self._width() != self._layout_width:
            self.relayout()  # wrapped rows depend on the width
            return 0
        if arrived and not self.following:
            # the lines the log had before it was opened again are not new
            self.pending_new += max(0, count - max(self.lines_seen, self._seen_before)) if self.lines_seen or self._seen_before else 0
        self.lines_seen = count
        if not self._index_running and (committed > self._indexed_upto or count > committed or self._partials):
            self._start_index()
        self._update_virtual_size()
        # following: stay at the end, also when the size settled after the last line arrived
        if self.following and (arrived or self.scroll_offset.y < self.max_scroll_y):
            self.scroll_end(animate=False, immediate=True)
        elif arrived:
            self._go_to_place()
        if arrived:
            self.refresh()
        return arrived

    def _update_virtual_size(self) -> None:
        width = self._width()
        self.virtual_size = Size(width if self.wrap else max(width, self._max_width + 1), self._rows_total)

    def _start_index(self) -> None:
        assert self.spool is not None
        self._index_running = True
        self._layout_width = self._width()
        self._index_worker(self.spool, self._layout_generation, self._indexed_upto, self._indexed_rows,
                           self._layout_width, self.wrap, self.json_pretty)

    @work(description="_index_worker", thread=True, exit_on_error=False, group="log-index")
    def _index_worker(self, spool: LogSpool, layout: int, start: int, start_row: int, width: int,
                      wrap: bool, json_pretty: bool) -> None:
        """Read committed lines from ``start`` once: widest line, the tail for the
        cache, and (wrap / JSON) each line's rows.  Whole-spool work, off the UI thread."""
        worker = get_current_worker()
        if spool.closed:
            return
        upto = spool.committed_count
        expanded = wrap or json_pretty
        console = text_console(width)
        starts = array("Q")
        row = start_row
        widest = 0
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        try:
            for base in range(start, upto, _CHUNK):
                if worker.is_cancelled:
                    return
                chunk = spool.lines(base, min(upto, base + _CHUNK))
                for line in chunk:
                    if expanded:
                        starts.append(row)
                        row += len(expand_line(line, width, wrap, json_pretty, console))
                    else:
                        row += 1
                    widest = max(widest, len(line))
                tail.extend(chunk)
            partials = spool.lines(upto, spool.line_count) if not spool.closed else []
        except (OSError, ValueError):  # the spool was closed under us
            return
        self.post_message(self.Indexed(layout, start, upto, starts, row, widest, upto - len(tail), list(tail), partials))

    def on_log_view_indexed(self, message: Indexed) -> None:
        message.stop()
        if message.layout != self._layout_generation:
            return  # laid out for an older wrap/JSON/width or another spool
        self._index_running = False
        if message.start != self._indexed_upto:
            return
        if self.expanded:
            self._row_starts.extend(message.row_starts)
        self._indexed_upto = message.upto
        self._indexed_rows = message.rows_end
        self._max_width = max(self._max_width, message.max_width)
        for offset, line in enumerate(message.tail):
            self._lines[message.tail_start + offset] = line
        self._partials = {message.upto + i: text for i, text in enumerate(message.partials)}
        self._update_virtual_size()
        if self._relayout_from is not None and self._indexed_upto >= min(self.lines_seen, self.spool.committed_count if self.spool else 0):
            top = self._relayout_from
            self._relayout_from = None
            if self.following:
                self.scroll_end(animate=False, immediate=True)
            else:
                self.scroll_to(y=self.row_of_line(top), animate=False, immediate=True)
            self.post_message(self.LayoutDone(self._indexed_upto, self._indexed_rows))
        elif self.following:
            self.scroll_end(animate=False, immediate=True)
        else:
            self._go_to_place()
        self.refresh()

    def _go_to_place(self) -> None:
        """A log opened again while paused: the view stays on the line it showed (the nearest line
        read so far, until that one is read again)."""
        line = self._place_line
        if line is None or self.following or not self.lines_seen:
            return
        if self.expanded and self._indexed_upto <= min(line, self.lines_seen - 1):
            return  # its row is known once the index reaches it
        # forced: a log just opened again has no scrollbar yet (Textual lays it out after this)
        self.scroll_to(y=self.row_of_line(min(line, self.lines_seen - 1)), animate=False, immediate=True, force=True)
        if line < self.lines_seen:
            self._place_line = None

    @property
    def top_line(self) -> int:
        """The log line at the top of the view."""
        return self.line_at_row(int(self.scroll_offset.y))[0] if self._rows_total else 0

    def set_layout(self, *, wrap: bool | None = None, json_pretty: bool | None = None) -> None:
        """Wrap or JSON pretty-print on or off: the line at the top stays at the top, and a paused
        view stays paused (the line is found under the layout it was shown with, before the change)."""
        top_line = self.top_line
        if wrap is not None:
            self.wrap = wrap
        if json_pretty is not None:
            self.json_pretty = json_pretty
        self.relayout(top_line)

    def relayout(self, top_line: int | None = None) -> None:
        """Wrap / JSON / width changed: rebuild the row index in the background (``top_line``: the
        line to keep at the top, found before the change; by default the one at the top now)."""
        if top_line is None:
            top_line = self.top_line
        self.workers.cancel_group(self, "log-index")
        pending = self.pending_new
        self._reset_layout()
        self._relayout_from = top_line
        self.pending_new = pending
        if self.spool is not None and not self.spool.closed:
            self._start_index()
        self._update_virtual_size()
        self.refresh()

    # -- the window cache ----------------------------------------------------------

    def _cached_line(self, index: int) -> str | None:
        text = self._lines.get(index)
        if text is None:
            text = self._partials.get(index)
        return text

    def _request_window(self, index: int) -> None:
        """A visible line is not cached: read the lines around the viewport (worker)."""
        spool = self.spool
        if spool is None or spool.closed:
            return
        pending = self._window_pending
        if pending is not None and pending[0] <= index < pending[1]:
            return
        top = self.line_at_row(int(self.scroll_offset.y))[0]
        start = max(0, min(index, top) - WINDOW_MARGIN)
        stop = max(index + 1, top + self.size.height) + WINDOW_MARGIN
        self._window_pending = (start, stop)
        self.call_later(self._window_worker, spool, self._spool_generation, start, stop)

    @work(description="_window_worker", thread=True, exclusive=True, exit_on_error=False, group="log-window")
    def _window_worker(self, spool: LogSpool, generation: int, start: int, stop: int) -> None:
        try:
            if spool.closed:
                return
            stop = min(stop, spool.committed_count)
            lines = spool.lines(start, stop) if start < stop else []
        except (OSError, ValueError):
            return
        self.post_message(self.WindowLoaded(generation, start, lines))

    def on_log_view_window_loaded(self, message: WindowLoaded) -> None:
        message.stop()
        self._window_pending = None
        if message.generation != self._spool_generation:
            return
        for offset, line in enumerate(message.lines):
            self._lines[message.start + offset] = line
        self.refresh()

    # -- navigation ----------------------------------------------------------------

    def row_of_line(self, line: int) -> int:
        if not self.expanded:
            return line
        if line < len(self._row_starts):
            return self._row_starts[line]
        return self._indexed_rows + (line - self._indexed_upto)

    def line_at_row(self, row: int) -> tuple[int, int]:
        """(line index, sub-row) shown at virtual ``row``."""
        if not self.expanded:
            return row, 0
        if row >= self._indexed_rows:
            return self._indexed_upto + (row - self._indexed_rows), 0
        index = max(0, bisect.bisect_right(self._row_starts, row) - 1)
        return index, row - self._row_starts[index] if self._row_starts else 0

    def set_following(self, following: bool) -> None:
        if following == self.following:
            return
        self.following = following
        if following:
            self.pending_new = 0
            self.scroll_end(animate=False, immediate=True)
        self.post_message(self.FollowChanged(following))

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.set_following(False)  # and the widget's own handler scrolls

    def action_scroll_up(self) -> None:
        self.set_following(False)
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self.set_following(False)
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self.set_following(False)
        super().action_scroll_home()

    def action_scroll_end(self) -> None:
        self.set_following(True)
        super().action_scroll_end()

    def jump_to_line(self, line: int) -> None:
        self.set_following(False)
        target = max(0, self.row_of_line(line) - self.size.height // 3)
        self.scroll_to(y=target, animate=False, immediate=True)
        self.refresh()

    def set_search(self, pattern: re.Pattern[str] | None, hits: list[int]) -> None:
        # Highlighting does not change how many rows a line takes: no re-layout.
        self.search_pattern = pattern
        self.hits = hits
        self.hit_index = -1
        self.refresh()

    def next_hit(self, backwards: bool = False) -> int | None:
        if not self.hits:
            return None
        if self.hit_index < 0:
            top_line, _ = self.line_at_row(int(self.scroll_offset.y))
            self.hit_index = bisect.bisect_left(self.hits, top_line)
            if backwards:
                self.hit_index -= 1
        else:
            self.hit_index += -1 if backwards else 1
        self.hit_index %= len(self.hits)
        line = self.hits[self.hit_index]
        self.jump_to_line(line)
        return line

    # -- rendering -----------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        spool = self.spool
        if spool is None or spool.closed:
            if y == 0:
                return Strip([Segment(self.placeholder[:width], Style(dim=True))]).extend_cell_length(width)
            return Strip.blank(width)
        if row >= self._rows_total:
            if self.empty_reason and self._rows_total == 0:
                wrapped = textwrap.wrap(self.empty_reason, max(width - 1, 10)) or [""]
                if y < len(wrapped):
                    return Strip([Segment(wrapped[y], Style(italic=True))]).extend_cell_length(width)
            return Strip.blank(width, self.rich_style)
        index, sub = self.line_at_row(row)
        text = self._cached_line(index)
        if text is None:  # not read yet: the window worker fetches it
            self._request_window(index)
            return Strip([Segment("…", Style(dim=True))]).extend_cell_length(width).apply_style(self.rich_style)
        laid_out = self.expanded and index < self._indexed_upto
        if laid_out:
            rows = expand_line(text, self._layout_width or self._width(), self.wrap, self.json_pretty,
                               self._text_console, self.search_pattern)
        else:
            rows = [style_line(text, self.search_pattern)]
        piece = rows[sub] if sub < len(rows) else Text("")
        segments = list(piece.render(self._text_console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width)
        return strip.apply_style(self.rich_style)
