"""One cluster change (:class:`Mutation`), what a mutation needs from its host
(:class:`ClusterHost`), and :func:`describe_result`, the plain-text outcome the
confirm dialog and the notification show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.mutations import DrainResult, MutationResult


class ClusterHost(Protocol):
    """What a mutation builder reads from the app: the backend (None while
    disconnected) and cluster time."""

    backend: ClusterBackend | None

    def now(self) -> datetime: ...


@dataclass
class Mutation:
    """One cluster change: ``run(dry_run)`` performs it (server dry-run first)."""

    verb: str
    target: str
    title: str
    run: Callable[[bool], Any]
    namespace: str | None = None
    #: False when the server cannot dry-run it (the preview says so).
    server_dry_run: bool = True
    on_done: Callable[[bool, str], None] | None = None
    #: A richer preview than ``run(True)`` (worker thread): (ok, text, allowed).
    #: ``allowed=False`` refuses the change: the dialog shows why and offers no "yes".
    preview: Callable[[], tuple[bool, str, bool]] | None = None
    #: The dialog's way out; never the verb itself (a "Cancel" dialog must not offer "Cancel" twice).
    decline: str = "Back"
    #: What the change affects (worker thread): lines such as GPUs, memory, workloads, owners.
    affected: Callable[[], list[str]] | None = None


def describe_result(result: Any) -> tuple[bool, str]:
    """(ok, plain text) for a MutationResult, a list of them, or a DrainResult."""
    if isinstance(result, MutationResult):
        return result.ok, result.message
    if isinstance(result, DrainResult):
        lines = [f"node {result.node}: " + ("cordoned" if result.cordoned else "NOT cordoned")]
        lines += [f"  evict {ref}" for ref in result.evicted] or ["  no pods to evict"]
        lines += [f"  skip  {ref} (DaemonSet, mirror or finished)" for ref in result.skipped]
        lines += [f"  FAILED {f.name}: {f.message}" for f in result.failed]
        return result.ok, "\n".join(lines)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], str):
        return bool(result[0]), result[1]
    if isinstance(result, list):
        oks = [describe_result(r) for r in result]
        return all(ok for ok, _ in oks) and bool(oks), "\n".join(text for _, text in oks)
    return False, str(result)
