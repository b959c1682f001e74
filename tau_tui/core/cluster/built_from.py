"""One build for each raw sub-object: where equal parts of raw objects are one object
(:mod:`~tau_tui.core.cluster.shared_values`), the view parts built from them are one object too."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

Built = TypeVar("Built")
#: Sources remembered at most; past it the one remembered longest is forgotten (its memory stays
#: bounded, and the parts a watch event kept from the version before, an update's pod templates,
#: are found again: a table that started again at 20,000 Workloads forgot them all every time).
BUILT_FROM_KEPT = 20_000


class BuiltFrom(Generic[Built]):
    """``build(source)``, once per source object while it is remembered.  Sources are never changed
    in place (the cache's raw objects are not); each is held while remembered, so its id names it."""

    def __init__(self, build: Callable[[Any], Built], kept: int = BUILT_FROM_KEPT) -> None:
        self._build = build
        self._kept = kept
        self._built: OrderedDict[int, tuple[Any, Built]] = OrderedDict()

    def __call__(self, source: Any) -> Built:
        if not source:
            return self._build(source)
        entry = self._built.get(id(source))
        if entry is not None and entry[0] is source:
            return entry[1]
        built = self._build(source)
        if len(self._built) >= self._kept:
            self._built.popitem(last=False)
        self._built[id(source)] = (source, built)
        return built
