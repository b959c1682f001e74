"""The rows a table shows, in order, with each row's position: line ``y`` of a table whose rows are
all one line high is row ``y``, so a look-up either way costs one step, never a walk over the rows.

Rows a pane hands over as :class:`~tau_tui.core.ordered_keys.OrderedKeys` are their own index: the
pane's next version is made by the rows that moved, so a table swaps it in and re-indexes nothing.
Any other sequence of keys is indexed here, once per order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tau_tui.core.ordered_keys import OrderedKeys


class RowIndex:
    """Row keys in order and key -> position (a plain dict built in one C call, or the pane's
    OrderedKeys as they are)."""

    def __init__(self, keys: Sequence[str] = ()) -> None:
        self._ordered = keys if isinstance(keys, OrderedKeys) else None
        self._keys: Sequence[str] = keys if self._ordered is not None else list(keys)
        self._positions: dict[str, int] | None = None if self._ordered is not None else dict(
            zip(self._keys, range(len(self._keys)), strict=True))

    @property
    def by_moves(self) -> bool:
        """Whether this index is the pane's own (made by its moves: nothing was indexed here)."""
        return self._ordered is not None

    def append(self, keys: Sequence[str]) -> None:
        if self._ordered is not None or self._positions is None:
            raise TypeError("the pane's ordered keys are never appended to: it hands over its next version")
        start = len(self._keys)
        listed = self._keys
        assert isinstance(listed, list)
        listed.extend(keys)
        self._positions.update(zip(keys, range(start, start + len(keys)), strict=True))

    def position(self, key: str) -> int | None:
        if self._ordered is not None:
            return self._ordered.position(key)
        assert self._positions is not None
        return self._positions.get(key)

    def key_at(self, index: int) -> str | None:
        if 0 <= index < len(self._keys):
            return self._keys[index]
        return None

    def __contains__(self, key: object) -> bool:
        if self._ordered is not None:
            return key in self._ordered
        assert self._positions is not None
        return key in self._positions

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)
