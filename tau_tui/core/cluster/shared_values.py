"""One copy of each value that many objects repeat (a Workload's pod template, its priority class
reference, a condition's reason and message): objects as decoded hold each anew, and 100,000
Workloads repeat the same few dozen."""

from __future__ import annotations

from collections.abc import Hashable
from sys import intern
from typing import Any

from tau_tui.core.cluster.convert import SHARED_STRING_MAX

#: Distinct values remembered at most; past it the table starts again (its memory stays bounded).
SHARED_VALUES_KEPT = 50_000


class SharedValues:
    """Copies of objects in which equal dicts, lists and short strings are one object, shared with
    the copies made before.  The copies must never be changed in place (the cache's raw objects are
    not); the objects copied are left as they are."""

    def __init__(self, kept: int = SHARED_VALUES_KEPT) -> None:
        self._kept = kept
        self._seen: dict[Hashable, Any] = {}

    def copy(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` with its values shared; its metadata is its own (names, uids), so only the strings
        in it are shared."""
        return {key: self._shared(value, remember=key != "metadata")[0] for key, value in obj.items()}

    def _shared(self, value: Any, remember: bool) -> tuple[Any, Hashable]:
        cls = value.__class__
        identity: Hashable
        copied: Any
        if cls is str:
            return (intern(value) if len(value) <= SHARED_STRING_MAX else value), value
        if cls is dict:
            items = [(key, *self._shared(item, remember)) for key, item in value.items()]
            copied = {key: item for key, item, _ in items}
            identity = (dict, tuple((key, item_identity) for key, _, item_identity in items))
        elif cls is list:
            pairs = [self._shared(item, remember) for item in value]
            copied = [item for item, _ in pairs]
            identity = (list, tuple(item_identity for _, item_identity in pairs))
        else:
            try:
                hash(value)
            except TypeError:
                return value, (cls, id(value))
            return value, (cls, value)
        if not remember:
            return copied, identity
        seen = self._seen.get(identity)
        if seen is not None:
            return seen, identity
        if len(self._seen) >= self._kept:
            self._seen.clear()
        self._seen[identity] = copied
        return copied, identity
