"""A log viewer over a :class:`tau_tui.core.logspool.LogSpool` (toolong-style).

Only the visible rows are rendered (Line API); lines are read from the spool
by byte offset and cached.  Text is always ``rich.text.Text`` built from the
raw line: nothing in a log line is interpreted as markup.  Follow mode keeps
the view at the end; when paused, new lines are counted ("paused (+N new)")
instead of moving the view.  Wrap and JSON pretty-print expand one line into
several rows through a row index."""

from __future__ import annotations

import json
import re
from array import array

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tau_tui.core.logspool import LogSpool

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


class LogView(ScrollView, can_focus=True):
    """See module docstring.  Call :meth:`poll` on a timer."""

    DEFAULT_CSS = """
    LogView { height: 1fr; background: $surface; }
    """
    HELP = "The log: arrows/PgUp/PgDn scroll (scrolling up pauses follow), End resumes following."

    class FollowChanged(Message):
        def __init__(self, following: bool) -> None:
            super().__init__()
            self.following = following

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
        self._lines = LRUCache[int, str](4096)
        self._row_starts = array("Q")  # row of each line when expanded
        self._rows_total = 0
        self._expanded_committed = 0
        self._max_width = 0
        self._layout_width = 0
        self._text_console = Console(width=200, no_color=True, markup=False, highlight=False, emoji=False)
        self.placeholder = "no log open"

    # -- data ----------------------------------------------------------------------

    def set_spool(self, spool: LogSpool | None, placeholder: str = "") -> None:
        self.spool = spool
        self._lines.clear()
        self._row_starts = array("Q")
        self._rows_total = 0
        self._expanded_committed = 0
        self.lines_seen = 0
        self.pending_new = 0
        self._max_width = 0
        self.hits = []
        self.hit_index = -1
        if placeholder:
            self.placeholder = placeholder
        self.poll()
        self.refresh()

    @property
    def expanded(self) -> bool:
        return self.wrap or self.json_pretty

    def _line(self, index: int, committed: int) -> str:
        if index < committed:
            cached = self._lines.get(index)
            if cached is not None:
                return cached
        assert self.spool is not None
        try:
            text = self.spool.line(index)
        except IndexError:
            return ""
        if index < committed:
            self._lines[index] = text
        return text

    def _expand(self, text: str) -> list[Text]:
        rows: list[str] | None = pretty_json(text) if self.json_pretty else None
        lines = rows if rows is not None else [text]
        out: list[Text] = []
        width = max(10, self._layout_width or self.scrollable_content_region.width or 80)
        for line in lines:
            rendered = self._style_line(line)
            if self.wrap and rendered.cell_len > width:
                out.extend(rendered.wrap(self._text_console, width, overflow="fold", no_wrap=False))
            else:
                out.append(rendered)
        return out

    def _style_line(self, line: str) -> Text:
        text = Text(line, no_wrap=True, end="")
        prefix, _ = split_prefix(line)
        if prefix:
            text.stylize("dim", 0, len(prefix))
        if self.search_pattern is not None:
            text.highlight_regex(self.search_pattern, style="reverse")
        return text

    def poll(self) -> int:
        """Take in new lines; returns how many arrived."""
        spool = self.spool
        if spool is None or spool.closed:
            self.virtual_size = Size(self.size.width, 0)
            return 0
        count = spool.line_count
        committed = spool.committed_count
        arrived = max(0, count - self.lines_seen)
        width = self.scrollable_content_region.width or self.size.width
        if self.expanded:
            if width != self._layout_width:
                self._layout_width = width
                self._row_starts = array("Q")
                self._expanded_committed = 0
            # committed lines are final; partial lines are re-laid out each poll
            del self._row_starts[self._expanded_committed:]
            row = self._row_starts_total_before(self._expanded_committed)
            start = self._expanded_committed
            for base in range(start, count, 2048):
                chunk = spool.lines(base, min(count, base + 2048))
                for offset, line in enumerate(chunk):
                    index = base + offset
                    self._row_starts.append(row)
                    row += len(self._expand(line))
                    if index < committed:
                        self._lines[index] = line
            self._expanded_committed = min(committed, count)
            self._rows_total = row
        else:
            self._layout_width = width
            self._rows_total = count
            if arrived:
                for line in spool.lines(max(self.lines_seen, count - 200), count):
                    self._max_width = max(self._max_width, len(line))
        if arrived and self.lines_seen and not self.following:
            self.pending_new += arrived
        self.lines_seen = count
        self.virtual_size = Size(width if self.wrap else max(width, self._max_width + 1), self._rows_total)
        if self.following and arrived:
            self.scroll_end(animate=False, immediate=True)
        if arrived or count and spool.line_count != committed:
            self.refresh()
        return arrived

    def _row_starts_total_before(self, line_index: int) -> int:
        if line_index == 0 or not self._row_starts:
            return 0
        last = min(line_index, len(self._row_starts)) - 1
        assert self.spool is not None
        return self._row_starts[last] + len(self._expand(self._line(last, self.spool.committed_count)))

    def relayout(self) -> None:
        self._row_starts = array("Q")
        self._expanded_committed = 0
        self._layout_width = 0
        self.lines_seen_before = self.lines_seen
        count = self.lines_seen
        self.lines_seen = 0
        pending = self.pending_new
        self.poll()
        self.pending_new = pending
        self.lines_seen = max(self.lines_seen, count)
        self.refresh()

    # -- navigation ----------------------------------------------------------------

    def row_of_line(self, line: int) -> int:
        if not self.expanded:
            return line
        if line < len(self._row_starts):
            return self._row_starts[line]
        return self._rows_total

    def line_at_row(self, row: int) -> tuple[int, int]:
        """(line index, sub-row) shown at virtual ``row``."""
        if not self.expanded:
            return row, 0
        import bisect

        index = bisect.bisect_right(self._row_starts, row) - 1
        index = max(0, index)
        return index, row - self._row_starts[index] if self._row_starts else 0

    def set_following(self, following: bool) -> None:
        if following == self.following:
            return
        self.following = following
        if following:
            self.pending_new = 0
            self.scroll_end(animate=False, immediate=True)
        self.post_message(self.FollowChanged(following))

    def _on_mouse_scroll_up(self, event) -> None:
        self.set_following(False)

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
        self.search_pattern = pattern
        self.hits = hits
        self.hit_index = -1
        if self.expanded:
            self.relayout()
        self.refresh()

    def next_hit(self, backwards: bool = False) -> int | None:
        if not self.hits:
            return None
        if self.hit_index < 0:
            top_line, _ = self.line_at_row(int(self.scroll_offset.y))
            import bisect

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
            return Strip.blank(width, self.rich_style)
        committed = spool.committed_count
        index, sub = self.line_at_row(row)
        text = self._line(index, committed)
        rows = self._expand(text) if self.expanded else [self._style_line(text)]
        piece = rows[sub] if sub < len(rows) else Text("")
        segments = list(piece.render(self._text_console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width)
        return strip.apply_style(self.rich_style)
