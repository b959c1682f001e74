"""The rows a table shows, in order, with each row's position: line ``y`` of a table whose rows are
all one line high is row ``y``, so a look-up either way costs one step, never a walk over the rows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence


class RowIndex:
    """Row keys in order and key -> position (a plain dict built in one C call)."""

    def __init__(self, keys: Sequence[str] = ()) -> None:
        self._keys = list(keys)
        self._positions = dict(zip(self._keys, range(len(self._keys)), strict=True))

    def append(self, keys: Sequence[str]) -> None:
        start = len(self._keys)
        self._keys.extend(keys)
        self._positions.update(zip(keys, range(start, start + len(keys)), strict=True))

    def position(self, key: str) -> int | None:
        return self._positions.get(key)

    def key_at(self, index: int) -> str | None:
        if 0 <= index < len(self._keys):
            return self._keys[index]
        return None

    def __contains__(self, key: object) -> bool:
        return key in self._positions

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)
