"""Start the app's backend: the simulated demo cluster of a scenario, or the
cluster of a kubeconfig context.  Both run in the app's ``backend`` thread
worker (they do network and disk I/O) and either return a started backend or
raise :class:`BackendUnavailable` with the message the no-cluster screen shows."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.interfaces import ClusterBackend

if TYPE_CHECKING:  # the kubernetes client loads only for a kubeconfig's cluster, never for a demo
    from tau_tui.core.cluster.kubeconfig import RequestTimeouts


class BackendUnavailable(Exception):
    def __init__(self, message: str, offer_demo: bool, *, title: str = "No cluster", label: str = "no cluster") -> None:
        super().__init__(message)
        self.message = message
        #: Whether the no-cluster screen offers the demo cluster instead.
        self.offer_demo = offer_demo
        #: The no-cluster screen's headline and the header's connection state.
        self.title = title
        self.label = label


#: A server reached whose Kueue serves no kueue.x-k8s.io/v1beta2: the screen's headline and header state.
UNSUPPORTED_KUEUE_TITLE = "Unsupported Kueue version"
UNSUPPORTED_KUEUE_LABEL = "unsupported Kueue"


#: Set (to anything but "" or "0") to run a real-time demo's simulated cluster in the app's own process.
IN_PROCESS_ENV = "TAU_TUI_SIM_IN_PROCESS"
#: The scenario whose simulated cluster holds the MultiKueue wizard's worker fleet, which the app
#: drives in its own process (``startup/multikueue_env.py``).
FLEET_SCENARIO = "demo"


def runs_in_own_process(scenario: str, realtime: bool) -> bool:
    """A real-time demo's simulated controllers run in a process of their own, as a cluster's do,
    so they never hold the app's interpreter while a key waits (the fleet's scenario excepted)."""
    return (realtime and scenario != FLEET_SCENARIO and os.name == "posix"
            and os.environ.get(IN_PROCESS_ENV, "") in ("", "0"))


def start_demo_backend(scenario: str, namespace: str | None, realtime: bool) -> ClusterBackend:
    if runs_in_own_process(scenario, realtime):
        return _start_demo_process(scenario, namespace)
    try:
        from tau_tui.core.sim.backend import SimulatedBackend
        from tau_tui.core.sim.scenario import build_world

        world = build_world(scenario)
        if scenario == "demo":
            from tau_tui.core.operations.multikueue_steps.demo_fleet import build_demo_fleet

            build_demo_fleet(world)  # the worker worlds of the MultiKueue wizards (setup, rotate, drain)
        backend = SimulatedBackend(world, namespace=namespace, realtime=realtime)
        backend.start()
        backend.wait_synced(10)
    except Exception as err:
        raise _demo_unavailable(err, offer_demo=scenario != "demo") from err
    return backend


def _demo_unavailable(err: Exception, offer_demo: bool) -> BackendUnavailable:
    """A demo that did not start: a ClusterError's own message (another demo may still start),
    anything else named as what failed."""
    if isinstance(err, ClusterError):
        return BackendUnavailable(err.message, offer_demo=offer_demo)
    return BackendUnavailable(f"the demo cluster failed to start: {type(err).__name__}: {err}", False)


def _start_demo_process(scenario: str, namespace: str | None) -> ClusterBackend:
    from tau_tui.core.sim.cluster_process import SimulatedClusterProcess
    from tau_tui.core.sim.process_backend import ProcessSimulatedBackend

    try:
        process = SimulatedClusterProcess("tau_tui.core.sim.scenario:build_world", [scenario], realtime=True)
    except Exception as err:
        raise _demo_unavailable(err, offer_demo=True) from err
    backend = ProcessSimulatedBackend(process, namespace=namespace, owns_process=True)
    try:
        backend.start()  # its first lists come part by part, shown as they come, like a server's pages
    except Exception as err:
        backend.close()
        raise _demo_unavailable(err, offer_demo=True) from err
    return backend


def connect_kubeconfig_backend(
    context: str | None, namespace: str | None, timeouts: RequestTimeouts | None = None, all_namespaces: bool = False
) -> ClusterBackend:
    """Without ``namespace``: the context's namespace when it has one, else every namespace
    (``all_namespaces``: every namespace anyway)."""
    from tau_tui.core.cluster.kubeconfig import KubeconfigSource
    from tau_tui.core.cluster.namespace_scope import context_namespace, list_scope

    try:
        source = KubeconfigSource()
        contexts = source.contexts()
        namespace = list_scope(namespace, context_namespace(source, context), all_namespaces)
    except ClusterError as err:
        raise BackendUnavailable(err.message, True) from err
    if not contexts:
        raise BackendUnavailable("no kubeconfig found (set KUBECONFIG or create ~/.kube/config).", True)
    try:
        from tau_tui.core.cluster.real import KubernetesBackend
    except ImportError as err:
        raise BackendUnavailable(
            "this build has no Kubernetes backend yet (tau_tui.core.cluster.real is missing).", True) from err
    from tau_tui.core.cluster.kueue_api_support import UnsupportedKueueApi, refuse_unsupported_kueue

    try:
        backend = KubernetesBackend(
            context=context, namespace=namespace, all_namespaces=namespace is None, timeouts=timeouts
        )
        # Before the watches start: a Kueue without v1beta2 would leave every Kueue pane "not installed".
        refuse_unsupported_kueue(backend)
        backend.start()
    except UnsupportedKueueApi as err:
        raise BackendUnavailable(err.message, True, title=UNSUPPORTED_KUEUE_TITLE, label=UNSUPPORTED_KUEUE_LABEL) from err
    except Exception as err:
        message = getattr(err, "message", None) or str(err)
        raise BackendUnavailable(f"cannot connect: {message}", True) from err
    return backend


def start_replay_backend(path: str) -> ClusterBackend:
    """A recording played back (``--replay FILE``), paused at its start."""
    from tau_tui.core.operations.recording.format import RecordingError
    from tau_tui.core.operations.recording.replay_backend import ReplayBackend

    try:
        backend = ReplayBackend.open(path, realtime=True)
        backend.start()
    except RecordingError as err:
        raise BackendUnavailable(err.message, offer_demo=False) from err
    return backend
