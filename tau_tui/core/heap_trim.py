"""Hands the C heap's free memory back to the system after a large build (glibc's ``malloc_trim``).

glibc keeps the pages that freed objects leave inside its heaps: after the first list of a large
cluster (its temporaries freed) the process would go on holding them, so its resident size stays at
the build's peak.  Trimming costs one pass over the free lists; call it from a worker thread."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any


@cache
def _malloc_trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # absent on musl
    except (OSError, AttributeError):
        return None


def return_free_memory() -> bool:
    """Give the heap's free pages back to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
