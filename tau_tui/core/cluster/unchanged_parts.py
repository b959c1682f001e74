"""A watch event's object shares what did not change with the version it replaces.

Objects as decoded hold every value anew; the informer interned each short string of each (``share_strings``),
a walk of the whole object in the interpreter per event: the largest part of a Workloads informer's
time at 5,000 changes a second, holding the interpreter from the UI thread.  An update mostly
repeats the version the cache holds (a condition's message moved; the pod templates did not):
:func:`share_with_previous` compares the two part by part (in C, ``==``), keeps the cached part
wherever they are equal, and walks only the parts that changed, interning their strings as
``share_strings`` does, so memory stays as shared as before."""

from __future__ import annotations

from sys import intern
from typing import Any

from tau_tui.core.cluster.convert import SHARED_STRING_MAX, share_strings


def share_with_previous(new: dict[str, Any], previous: dict[str, Any] | None) -> None:
    """Replace in ``new``, in place, each part equal to ``previous``'s at the same place by that part
    (``previous`` is never changed; the cache's raw objects are not); intern the short strings of
    the rest.  No ``previous`` (a new object): :func:`share_strings`."""
    if previous is None:
        share_strings(new)
        return
    _share(new, previous)


def listed(item: dict[str, Any], cached: dict[str, Any] | None) -> dict[str, Any]:
    """A list's item as the cache should get it: the cached object itself when it is at the same
    resourceVersion (a relist after a restart mostly lists what the cache holds: the decoded copy is
    freed page by page, not held until the list's end beside the whole cache), else the item sharing
    what did not change with the cached version."""
    if cached is not None and _version(cached) == _version(item) != "":
        return cached
    share_with_previous(item, cached)
    return item


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


def _share(new: dict[str, Any], previous: dict[str, Any]) -> None:
    get = previous.get
    for key, value in new.items():  # a value replaced under its own key: the dict does not change size
        new[key] = _shared(value, get(key))


def _share_list(new: list[Any], previous: list[Any]) -> None:
    for index, value in enumerate(new):
        new[index] = _shared(value, previous[index] if index < len(previous) else None)


def _shared(value: Any, before: Any) -> Any:
    """What to hold in ``value``'s place: ``before`` when equal (and of its type), else ``value`` with
    its short strings interned, its parts shared with ``before``'s where they are equal."""
    if value == before:
        return before if before.__class__ is value.__class__ else value
    cls = value.__class__
    if cls is str:
        return intern(value) if len(value) <= SHARED_STRING_MAX else value
    if cls is dict:
        _share(value, before) if before.__class__ is dict else share_strings(value)
    elif cls is list:
        _share_list(value, before) if before.__class__ is list else share_strings(value)
    return value
