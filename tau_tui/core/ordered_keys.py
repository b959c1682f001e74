"""Row keys in order, never changed, whose next version costs the rows that moved.

A pane hands its rows' order to the table, which draws line ``y`` from the ``y``-th key and finds
a key's line for the cursor, while the pane's reader makes the next read.  A list copied per read
and an index of positions rebuilt per move cost the whole table each time; :class:`OrderedKeys`
keeps the keys in chunks of at most ``2 * CHUNK`` that versions share, so a version made by a few
moves (:meth:`OrderedKeys.moved`) makes only the chunks they touched (and the chunks' offsets),
and a key's position is a look-up of its chunk and a scan of that chunk.  Imports nothing of
tau_tui but :mod:`tau_tui.core.frozen_map`."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import overload

from tau_tui.core.frozen_map import FrozenMap

#: Keys a chunk holds after a split (between 1 and twice this in use).
CHUNK = 256

#: One move: ("remove", key) or ("insert", index, key), the index counted when the move is made.
Move = tuple[str, ...] | tuple[str, int, str]


class OrderedKeys(Sequence[str]):
    __slots__ = ("_chunks", "_starts", "_len", "_chunk_of", "_number_of")

    def __init__(self, keys: Iterable[str] = ()) -> None:
        listed = list(keys)
        chunks = tuple(tuple(listed[at:at + CHUNK]) for at in range(0, len(listed), CHUNK))
        self._set(chunks, FrozenMap({key: chunk for chunk in chunks for key in chunk}))

    def _set(self, chunks: tuple[tuple[str, ...], ...], chunk_of: FrozenMap[str, tuple[str, ...]]) -> None:
        self._chunks = chunks
        starts, at = [], 0
        for chunk in chunks:
            starts.append(at)
            at += len(chunk)
        self._starts = starts
        self._len = at
        #: key -> the chunk holding it (the chunk object: a version shares those it did not touch)
        self._chunk_of = chunk_of
        self._number_of: dict[int, int] | None = None

    # -- reading ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        number = bisect_right(self._starts, index) - 1
        return self._chunks[number][index - self._starts[number]]

    def __iter__(self) -> Iterator[str]:
        return chain.from_iterable(self._chunks)

    def __contains__(self, key: object) -> bool:
        return key in self._chunk_of

    def position(self, key: str) -> int | None:
        """Where ``key`` is (None: not here): its chunk, then a scan of that chunk."""
        chunk: tuple[str, ...] | None = self._chunk_of.get(key)
        if chunk is None:
            return None
        numbers = self._number_of
        if numbers is None:
            numbers = self._number_of = {id(c): number for number, c in enumerate(self._chunks)}
        number = numbers[id(chunk)]
        return self._starts[number] + chunk.index(key)

    def key_at(self, index: int) -> str | None:
        return self[index] if 0 <= index < self._len else None

    def index(self, key: object, start: int = 0, stop: int | None = None) -> int:
        at = self.position(key) if isinstance(key, str) else None
        if at is None or at < start or (stop is not None and at >= stop):
            raise ValueError(key)
        return at

    # -- the next version --------------------------------------------------------------------------

    def moved(self, moves: Iterable[Move]) -> OrderedKeys:
        """These keys after ``moves``, made in order (as a list's ``del`` and ``insert`` would)."""
        chunks: list[Sequence[str]] = list(self._chunks)
        if not chunks:
            chunks.append(())
        number_of = {id(chunk): number for number, chunk in enumerate(self._chunks)}
        touched: dict[int, list[str]] = {}  # chunk number -> its keys, being changed
        inserted: dict[str, int] = {}  # keys put in a chunk by these moves -> its number
        chunk_of = self._chunk_of.draft()
        starts = list(self._starts) or [0]
        lengths = [len(chunk) for chunk in chunks]

        def editable(number: int) -> list[str]:
            keys = touched.get(number)
            if keys is None:
                keys = touched[number] = list(chunks[number])
            return keys

        def grown(number: int, by: int) -> None:
            lengths[number] += by
            for later in range(number + 1, len(starts)):
                starts[later] += by

        for move in moves:
            if move[0] == "remove":
                key = str(move[1])
                number = inserted.pop(key, None)
                if number is None:
                    held = chunk_of.pop(key)
                    if held is None:
                        continue  # not here
                    number = number_of[id(held)]
                editable(number).remove(key)
                grown(number, -1)
            else:
                index, key = int(move[1]), str(move[2])
                number = max(0, bisect_right(starts, index) - 1)
                if number > 0 and index == starts[number] and lengths[number - 1] < lengths[number]:
                    number -= 1  # at a boundary: the shorter chunk takes it
                editable(number).insert(index - starts[number], key)
                inserted[key] = number
                grown(number, +1)
        # the chunks touched become tuples again: a long one split, an empty one dropped
        made: list[tuple[str, ...]] = []
        placed: dict[str, tuple[str, ...]] = {}
        for number, chunk in enumerate(chunks):
            keys = touched.get(number)
            if keys is None:
                if chunk:
                    made.append(tuple(chunk))  # a chunk no move touched: the very tuple, shared
                continue
            size = CHUNK if len(keys) > 2 * CHUNK else len(keys)
            for at in range(0, len(keys), size or 1):
                part = tuple(keys[at:at + size])
                made.append(part)
                placed.update(dict.fromkeys(part, part))
        result = OrderedKeys.__new__(OrderedKeys)
        result._set(tuple(made), chunk_of.freeze().with_changes(placed))
        return result

    def __repr__(self) -> str:
        return f"OrderedKeys({list(self)!r})"
