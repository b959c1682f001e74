"""How long the collector held every thread, written for the benchmarks when TAU_TUI_COLLECTION_LOG
names a file (nothing is recorded or written otherwise).

A collection holds the interpreter: the UI thread waits for it, so a key pressed meanwhile is answered
only after it.  The young collections are small (``startup/heap.py``); each middle and full one, and
each settle of the heap (its collection and its trim apart), appends one JSON line to the file, so
``benchmarks/app_keys_tmux.py`` can report the longest wait a key could meet."""

from __future__ import annotations

import gc
import json
import os
import time
from typing import Any

COLLECTION_LOG_ENV = "TAU_TUI_COLLECTION_LOG"

_path: str | None = None


def log_collections() -> bool:
    """Start recording when the variable names a file (once per process); whether it does."""
    global _path
    wanted = os.environ.get(COLLECTION_LOG_ENV, "")
    if not wanted or _path is not None:
        return _path is not None
    _path = wanted
    started: dict[str, float] = {}

    def note(phase: str, info: dict[str, Any]) -> None:
        if info.get("generation", 0) < 1:
            return
        if phase == "start":
            started["at"] = time.perf_counter()
        elif "at" in started:
            note_line({"collection": info["generation"], "seconds": time.perf_counter() - started.pop("at"),
                       "collected": info.get("collected", 0)})

    gc.callbacks.append(note)
    return True


def note_line(line: dict[str, Any]) -> None:
    """Append one record (no-op unless recording)."""
    if _path is None:
        return
    with open(_path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"at": time.monotonic(), **line}) + "\n")
