"""Event-to-screen staleness: for every change made to a row, how long until the screen showed
that value or a newer one for that row.

Every change counts.  A value overwritten before the screen drew it is not dropped: its
staleness ends when a newer value of its row is on screen (what a person sees is then at least
as fresh).  A change that no observation reflects before the run ended is counted as never
reflected, not given a time.  "Newer" is the order the changes were made in, per row (by their
time; changes at the same time in the order given).

Observations are what a look at the screen showed: (row, value, time).  They may come in any
order and may be only the looks where a row's value changed.  A value on screen is taken as the
latest change of its row that set it at or before the look; a value on screen before any change
recorded it (clocks read a little apart) is taken as that value's first change, with staleness 0.
Values the changes never set (the row's value before the run) are ignored.

Times are seconds on one clock (``time.monotonic()``: one clock for every process on a Linux
machine)."""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple


class Change(NamedTuple):
    row: str
    value: str
    at: float


class Observation(NamedTuple):
    row: str
    value: str
    at: float


@dataclass
class Staleness:
    """``samples``: seconds per change that was reflected; ``never_reflected``: changes no look
    showed (nor anything newer); ``changes``: all of them (samples + never_reflected)."""

    samples: list[float] = field(default_factory=list)
    never_reflected: int = 0
    changes: int = 0


def look_at_screen(text: str, row_value: re.Pattern[str], shown: dict[str, str],
                   observations: list[Observation], now: float) -> None:
    """One capture of the screen: an observation for each row whose value differs from the last
    one seen (``row_value`` matches a line, group 1 the row, group 2 its value)."""
    for line in text.splitlines():
        m = row_value.search(line)
        if m and shown.get(m.group(1)) != m.group(2):
            shown[m.group(1)] = m.group(2)
            observations.append(Observation(m.group(1), m.group(2), now))


def staleness(changes: Iterable[Change], observations: Iterable[Observation]) -> Staleness:
    by_row: dict[str, list[Change]] = defaultdict(list)
    for change in changes:
        by_row[change.row].append(Change(*change))
    seen_by_row: dict[str, list[Observation]] = defaultdict(list)
    for seen in observations:
        if seen.row in by_row:
            seen_by_row[seen.row].append(Observation(*seen))
    result = Staleness()
    for row, row_changes in by_row.items():
        row_changes.sort(key=lambda change: change.at)  # stable: ties keep the order given
        _row_staleness(row_changes, sorted(seen_by_row.get(row, ()), key=lambda seen: seen.at), result)
    return result


def _row_staleness(changes: list[Change], looks: list[Observation], result: Staleness) -> None:
    # Per value: the times and indices of the changes that set it, in order.
    set_at: dict[str, tuple[list[float], list[int]]] = {}
    for index, change in enumerate(changes):
        times, indices = set_at.setdefault(change.value, ([], []))
        times.append(change.at)
        indices.append(index)
    newest_shown = -1  # the newest change any look so far reflected
    pending = 0  # the first change not yet reflected
    for look in looks:
        if look.value not in set_at:
            continue
        times, indices = set_at[look.value]
        made = bisect_right(times, look.at)
        newest_shown = max(newest_shown, indices[made - 1] if made else indices[0])
        while pending <= newest_shown:
            result.samples.append(max(0.0, look.at - changes[pending].at))
            pending += 1
    result.never_reflected += len(changes) - pending
    result.changes += len(changes)


def read_changes(path: str | Path) -> list[Change]:
    """The changes a watch source wrote, one JSON object a line: ``row``, ``value``, ``at``."""
    out = []
    with open(path) as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                out.append(Change(str(record["row"]), str(record["value"]), float(record["at"])))
    return out
