"""A mapping that is never changed, whose next version costs its changes, not its size.

A pane's reader keeps its rows' cells, views and filter texts between reads and hands each read's
to the UI thread, which draws from them while the reader makes the next read: the reader can no
longer change what it handed over.  A copy per read costs the whole table (20,000 entries, six
times a read); a :class:`FrozenMap` instead makes its next version from a layer of the changes over
the layers it has, merged when a newer layer grows to half the next older one, so each entry is
copied O(log n) times over its life and a look-up reads O(log n) small dictionaries (at most one
after :meth:`FrozenMap.flat`, which a reader of every entry calls).  Imports nothing of tau_tui."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

#: A layer's value for a key removed in it.
_GONE: Any = object()
_ABSENT: Any = object()


class FrozenMap(Mapping[K, V], Generic[K, V]):
    __slots__ = ("_layers", "_len")
    _layers: tuple[Mapping[K, Any], ...]
    _len: int

    def __init__(self, base: Mapping[K, V] | None = None) -> None:
        """Over ``base``, which the caller hands over: it must never change it again (a plain dict
        is taken as it is, not copied)."""
        if isinstance(base, FrozenMap):
            self._layers = base._layers
            self._len = base._len
            return
        self._layers = (base,) if base else ()
        self._len = len(base) if base else 0

    # -- reading ---------------------------------------------------------------------------------

    def __getitem__(self, key: K) -> V:
        for layer in self._layers:
            value = layer.get(key, _ABSENT)
            if value is not _ABSENT:
                if value is _GONE:
                    break
                return value  # type: ignore[no-any-return]  # a layer's value is a V unless _GONE
        raise KeyError(key)

    def get(self, key: K, default: Any = None) -> Any:
        for layer in self._layers:
            value = layer.get(key, _ABSENT)
            if value is not _ABSENT:
                return default if value is _GONE else value
        return default

    def __contains__(self, key: object) -> bool:
        for layer in self._layers:
            value = layer.get(key, _ABSENT)  # type: ignore[arg-type]  # any object may be asked about
            if value is not _ABSENT:
                return value is not _GONE
        return False

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        return iter(self.flat())

    def flat(self) -> Mapping[K, V]:
        """Every entry in one dictionary (made once, then kept: it is what this map holds)."""
        layers = self._layers
        if len(layers) <= 1:
            return layers[0] if layers else {}
        merged: dict[K, Any] = {}
        for layer in reversed(layers):
            merged.update(layer)
        flat = {key: value for key, value in merged.items() if value is not _GONE}
        self._layers = (flat,)  # the same entries: any thread sees the old layers or these
        return flat

    # -- the next version --------------------------------------------------------------------------

    def with_changes(self, changed: Mapping[K, V], removed: Iterable[K] = ()) -> FrozenMap[K, V]:
        """This map with ``changed`` set and ``removed`` gone (both handed over: the new map may hold
        ``changed`` itself as a layer)."""
        top: dict[K, Any] = dict(changed)
        for key in removed:
            if key not in top:
                top[key] = _GONE
        if not top:
            return self
        length = self._len
        for key, value in top.items():
            had = key in self
            length += (value is not _GONE) - had
        layers = [top, *self._layers] if self._layers else [{k: v for k, v in top.items() if v is not _GONE}]
        while len(layers) > 1 and 2 * len(layers[0]) >= len(layers[1]):
            newer, older = layers.pop(0), layers.pop(0)
            merged = dict(older)
            merged.update(newer)
            if not layers:  # the oldest layer: a removal has nothing left to hide
                merged = {key: value for key, value in merged.items() if value is not _GONE}
            layers.insert(0, merged)
        made: FrozenMap[K, V] = FrozenMap()
        made._layers, made._len = tuple(layers), length
        return made

    def draft(self) -> Draft[K, V]:
        """A changeable view over this map, for a reader to make the next version from."""
        return Draft(self)


class Draft(Generic[K, V]):
    """The changes a reader makes to a :class:`FrozenMap` during one read: reads see them at once,
    :meth:`freeze` makes the next version."""

    __slots__ = ("base", "_changes")

    def __init__(self, base: FrozenMap[K, V]) -> None:
        self.base = base
        self._changes: dict[K, Any] = {}

    def get(self, key: K, default: Any = None) -> Any:
        value = self._changes.get(key, _ABSENT)
        if value is _ABSENT:
            return self.base.get(key, default)
        return default if value is _GONE else value

    def __contains__(self, key: K) -> bool:
        value = self._changes.get(key, _ABSENT)
        return key in self.base if value is _ABSENT else value is not _GONE

    def __setitem__(self, key: K, value: V) -> None:
        self._changes[key] = value

    def pop(self, key: K, default: Any = None) -> Any:
        value = self.get(key, _ABSENT)
        self._changes[key] = _GONE
        return default if value is _ABSENT else value

    def freeze(self) -> FrozenMap[K, V]:
        changes = self._changes
        removed = [key for key, value in changes.items() if value is _GONE]
        return self.base.with_changes({key: value for key, value in changes.items() if value is not _GONE}, removed)


def flat(mapping: Mapping[K, V]) -> Mapping[K, V]:
    """``mapping`` as one dictionary to read every entry of (a FrozenMap's :meth:`~FrozenMap.flat`)."""
    return mapping.flat() if isinstance(mapping, FrozenMap) else mapping
