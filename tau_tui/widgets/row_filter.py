"""The row filter of every table: ``/foo`` regex, ``/! foo`` inverted, ``/-l app=x`` labels.

A pane whose tables filter themselves (``KeyedTable.set_row_filter``) matches each row by a text
and labels it gives with the rows; other panes match in their collect.  :meth:`RowFilter.narrows`
says when a new filter can only keep rows the previous one kept (typing one more plain character),
so the table looks only at the rows still shown."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: Characters with no regex meaning outside a set: a filter made of them only is a plain literal.
_PLAIN = re.compile(r"[A-Za-z0-9 _\-/:=@#~,%]*")


@dataclass(frozen=True)
class RowFilter:
    text: str
    pattern: re.Pattern[str] | None = None
    invert: bool = False
    labels: tuple[tuple[str, str | None, bool], ...] = ()  # (key, value or None for "exists", negated)
    error: str = ""
    #: [rows seen, rows matched] by the collect that uses this filter (the match count shown).
    tally: list[int] = field(default_factory=lambda: [0, 0], compare=False, repr=False)

    def fresh(self) -> RowFilter:
        """The same filter with its own tally (one per collect)."""
        return RowFilter(self.text, self.pattern, self.invert, self.labels, self.error)

    def matches(self, row_text: str, labels: Mapping[str, str] | None = None) -> bool:
        found = self.matches_row(row_text, labels)
        self.tally[0] += 1
        self.tally[1] += found
        return found

    @property
    def active(self) -> bool:
        return bool(self.text)

    def narrows(self, previous: RowFilter) -> bool:
        """True when every row this filter keeps was kept by ``previous``: both plain literals
        (no regex meaning, not inverted, no labels) and this one extends the other, so any row
        holding this text holds the previous one."""
        if not previous.text or not self.text.startswith(previous.text):
            return False
        # a "|" or "?" added could widen it
        return plain_needle(self) is not None and plain_needle(previous) is not None

    def matches_row(self, row_text: str, labels: Mapping[str, str] | None = None) -> bool:
        """Whether a row with this text and these labels is kept (counts nothing)."""
        if self.labels:
            labels = labels or {}
            for key, value, negated in self.labels:
                have = labels.get(key)
                ok = (have is not None) if value is None else (have == value)
                if ok == negated:
                    return False
            return True
        if self.pattern is None:
            return True
        found = self.pattern.search(row_text) is not None
        return found != self.invert


def plain_needle(row_filter: RowFilter) -> str | None:
    """The lower-case literal a filter is, when it has no regex meaning (plain characters only,
    not inverted, no labels): on ASCII text, ``needle in text.lower()`` is exactly its
    case-insensitive search."""
    if row_filter.pattern is None or row_filter.labels or row_filter.invert or row_filter.error:
        return None
    return row_filter.text.lower() if _PLAIN.fullmatch(row_filter.text) else None


def folded_texts(rows: Mapping[str, tuple[str, Mapping[str, str]]]) -> dict[str, str | None]:
    """Each row's text in lower case for :func:`kept_rows` (None: not ASCII, searched by the regex)."""
    return {key: (text.lower() if text.isascii() else None) for key, (text, _) in rows.items()}


def kept_rows(row_filter: RowFilter, keys: Iterable[str], rows: Mapping[str, tuple[str, Mapping[str, str]]],
              skip: str, folded: Mapping[str, str | None] | None = None) -> set[str]:
    """The keys of ``rows`` (text, labels) that ``row_filter`` keeps, ``skip`` never.  A plain
    literal is looked for with ``in`` in the rows' ``folded`` texts (a tenth of a regex search's
    cost; typing a name is the common filter); another pattern is searched in one comprehension
    (at 20,000 rows the per-row call of :meth:`RowFilter.matches_row` costs as much as the search)."""
    no_row: tuple[str, Mapping[str, str]] = ("", {})
    pattern = row_filter.pattern
    needle = plain_needle(row_filter)
    if needle is not None and folded is not None and pattern is not None:
        search = pattern.search
        return {k for k in keys if k != skip and (
            needle in f if (f := folded.get(k, "")) is not None else search(rows.get(k, no_row)[0]) is not None)}
    if pattern is not None and not row_filter.labels and not row_filter.invert:
        search = pattern.search
        return {k for k in keys if k != skip and search(rows.get(k, no_row)[0]) is not None}
    matches = row_filter.matches_row
    return {k for k in keys if k != skip and matches(*rows.get(k, no_row))}


def parse_filter(text: str) -> RowFilter:
    """``/foo`` regex, ``/! foo`` inverted, ``/-l app=x,tier!=y,gpu`` labels."""
    text = text.strip()
    if not text:
        return RowFilter("")
    if text.startswith("-l"):
        selector = text[2:].strip()
        terms: list[tuple[str, str | None, bool]] = []
        for part in filter(None, (p.strip() for p in selector.split(","))):
            if "!=" in part:
                key, value = part.split("!=", 1)
                terms.append((key.strip(), value.strip(), True))
            elif "=" in part:
                key, value = part.split("=", 1)
                terms.append((key.strip(), value.strip().lstrip("="), False))
            elif part.startswith("!"):
                terms.append((part[1:].strip(), None, True))
            else:
                terms.append((part, None, False))
        return RowFilter(text, labels=tuple(terms))
    invert = text.startswith("!")
    body = text[1:].strip() if invert else text
    try:
        pattern = re.compile(body, re.IGNORECASE)
    except re.error as err:
        return RowFilter(text, re.compile(re.escape(body), re.IGNORECASE), invert, error=f"not a valid regex ({err}); matching it as plain text")
    return RowFilter(text, pattern, invert)
