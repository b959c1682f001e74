"""``tau-tui __complete KIND -- WORDS...``: the names a completion script offers for a value, one
per line. Hidden (no help, not in the completion scripts' command lists).

KIND is ``contexts`` (from the kubeconfig), ``namespaces`` or ``runs`` (from the cluster, or the
simulated one when the words hold ``--demo [SCENARIO]``). WORDS are what was typed so far: their
``--context``, ``-n``/``--namespace``, ``--kubeconfig`` and ``--demo`` say where to look, as they
would for the command itself. Everything is bounded by :data:`COMPLETION_BOUND_S` (imports aside); on any failure
(no kubeconfig, an unreachable server, no right to list) or past the bound, nothing is printed and
the exit code is 0, so a shell's tab never shows an error or waits long.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .completion_model import NAME_KINDS

if TYPE_CHECKING:
    from ..core.cluster.common import BaseBackend

#: Seconds a completion may take once its modules are imported: an exec credential plugin, connecting and
#: reading from the cluster, or building the simulated world (about 2 s for `--demo` on a loaded 2-CPU machine).
COMPLETION_BOUND_S = 3.0



@dataclass(frozen=True)
class Scope:
    context: str | None = None
    namespace: str | None = None
    kubeconfig: str | None = None
    demo: str | None = None


def scope_of(words: Sequence[str]) -> Scope:
    """Where the typed words point: the last of each option wins, as argparse has it."""
    from ..core.sim.scenario import scenario_names

    found: dict[str, str | None] = {}
    flags = {"--context": "context", "-n": "namespace", "--namespace": "namespace", "--kubeconfig": "kubeconfig"}
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else None
        name, _, inline = word.partition("=")
        if name in flags:
            found[flags[name]] = inline or following
        elif word.startswith("-n") and len(word) > 2 and not word.startswith("--"):
            found["namespace"] = word[2:]
        elif name == "--demo":
            found["demo"] = inline or (following if following in scenario_names() else "demo")
    return Scope(**found)


def _import_readers(kind: str, demo: bool) -> None:
    """Import what reading ``kind`` needs, outside the bound (a loaded machine can take seconds to
    import the Kubernetes client; the bound is for what the cluster or the simulated world takes)."""
    from ..core.cluster import kubeconfig  # noqa: F401

    if kind != "contexts":
        from ..core.cluster import kinds, namespace_scope  # noqa: F401
        from ..core.operations import rundocument  # noqa: F401
        from ..core.sim import scenario  # noqa: F401
        if demo:
            from ..core.sim import backend  # noqa: F401
        else:
            from ..core.cluster import real  # noqa: F401


def names_of(kind: str, scope: Scope) -> list[str]:
    from ..core.cluster.kinds import ResourceKind
    from ..core.cluster.kubeconfig import KubeconfigSource, RequestTimeouts
    from ..core.cluster.namespace_scope import context_namespace, list_scope
    from ..core.operations.rundocument import read_run_owners

    if kind == "contexts":
        return [info.name for info in KubeconfigSource(scope.kubeconfig).contexts()]
    backend: BaseBackend
    if scope.demo is not None:
        from ..core.sim.backend import SimulatedBackend
        from ..core.sim.scenario import build_world

        backend = SimulatedBackend(build_world(scope.demo), namespace=scope.namespace)
        where = scope.namespace
    else:
        from ..core.cluster.real import KubernetesBackend

        # Exec credential plugins, connecting and every read: all inside the bound.
        timeouts = RequestTimeouts(connect=COMPLETION_BOUND_S, read=COMPLETION_BOUND_S, exec_plugin=COMPLETION_BOUND_S)
        real = KubernetesBackend(scope.kubeconfig, scope.context, scope.namespace, timeouts=timeouts)
        where = list_scope(scope.namespace, context_namespace(real.source, real.current_context))
        backend = real
    if kind == "namespaces":
        return [view.name for view in backend.fetch(ResourceKind.NAMESPACE)]
    return [owner.name for owner in read_run_owners(backend, where)]


def complete_names(argv: Sequence[str]) -> int:
    """Print the names of ``argv[0]`` (a kind of NAME_KINDS) for the words after ``--``; always 0."""
    from ..startup.leaving import leave_now

    if not argv or argv[0] not in NAME_KINDS:
        return 0
    words = list(argv[1:])
    if words[:1] == ["--"]:
        words = words[1:]
    found: list[str] = []
    try:
        scope = scope_of(words)
        _import_readers(argv[0], scope.demo is not None)
    except Exception:  # noqa: BLE001  (a broken install: still nothing in the user's prompt)
        return 0

    def work() -> None:
        try:
            found.extend(names_of(argv[0], scope))
        except Exception:  # noqa: BLE001  (a completion says nothing rather than an error in the user's prompt)
            found.clear()

    worker = threading.Thread(target=work, name="tau-tui-complete", daemon=True)
    worker.start()
    worker.join(COMPLETION_BOUND_S)
    if not worker.is_alive():
        names = sorted({name for name in found if name and name.isprintable() and not any(c.isspace() for c in name)})
        if names:
            sys.stdout.write("\n".join(names) + "\n")
    sys.stdout.flush()
    if worker.is_alive():  # a request still waiting past the bound must not hold the shell
        leave_now(0)
    return 0
