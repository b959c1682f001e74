"""The simulated cluster in a process of its own (``tau-tui --demo large``): what the contract
suite cannot see. Its end shows as stale with the reason, never as healthy; a world that cannot be
built says why; the app's cache gets a big list in bounded messages; closing the app ends it."""

from __future__ import annotations

import os

import pytest

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.changes import ConnectionStatus, ViewStatus
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogChunkRequest
from tau_tui.core.sim.cache_relay import OBJECTS_PER_MESSAGE, REPLACE, RelayedCache, relay_messages
from tau_tui.core.sim.cluster_process import SimulatedClusterProcess
from tau_tui.core.sim.process_backend import ProcessSimulatedBackend
from tau_tui.startup import backends
from tests.contract import helpers as h
from tests.contract.envs import ProcessSimEnv, wait_real

R = ResourceKind


def test_when_the_simulated_clusters_process_ends_every_view_is_stale_and_says_why():
    env = ProcessSimEnv()
    try:
        backend = env.backend()
        assert backend.view_state(R.NODE).status is ViewStatus.READY
        nodes = backend.list(R.NODE)
        assert len(nodes) == 2
        env.process.process.kill()
        assert wait_real(lambda: backend.connection_state().status is ConnectionStatus.STALE, timeout=30, interval=0.02)
        state = backend.connection_state()
        assert "the simulated cluster is unreachable" in state.message and "exit code -9" in state.message
        assert backend.view_state(R.NODE).status is ViewStatus.ERROR
        assert "unreachable" in backend.view_state(R.NODE).message
        assert [n.name for n in backend.list(R.NODE)] == [n.name for n in nodes]  # kept, marked stale
        with pytest.raises(ClusterError, match="the simulated cluster is unreachable: its process ended"):
            backend.fetch(R.NODE)
        with pytest.raises(ApiFailure, match="the simulated cluster is unreachable"):
            backend.open_container_log(LogChunkRequest("default", "p", "c"))
        result = backend.cordon("sim-gpu-0")
        assert not result.ok and "unreachable" in result.message
    finally:
        env.close()


def test_a_scenario_that_does_not_exist_is_named_with_the_ones_that_do():
    with pytest.raises(ClusterError, match=r"unknown scenario 'nope'; available: .*large"):
        SimulatedClusterProcess("tau_tui.core.sim.scenario:build_world", ["nope"], realtime=True)


def test_a_world_that_fails_to_build_says_what_failed():
    with pytest.raises(ClusterError, match="the simulated cluster failed to start: ModuleNotFoundError"):
        SimulatedClusterProcess("tau_tui.no_such_module:world", [], realtime=True)


def test_closing_the_backend_that_owns_the_process_ends_it_and_removes_its_socket():
    process = SimulatedClusterProcess("tests.contract.envs:contract_world", [], realtime=True)
    folder = os.path.dirname(process.address)
    assert oct(os.stat(folder).st_mode & 0o777) == "0o700"  # the socket's folder is the user's alone
    backend = ProcessSimulatedBackend(process, owns_process=True)
    backend.start()
    assert backend.wait_synced(30)
    assert backend.current_context == "sim-contract"
    backend.close()
    assert process.process.poll() is not None
    assert not os.path.exists(folder)


def test_a_full_list_reaches_the_app_in_messages_of_bounded_size():
    relay = RelayedCache(lambda: None)  # type: ignore[arg-type, return-value]
    relay.replace(R.WORKLOAD, [{"metadata": {"name": f"w{i}", "namespace": "ns"}} for i in range(20_500)])
    relay.apply(R.NODE, "ADDED", {"metadata": {"name": "n"}})
    ops = relay.take()
    assert ops is not None
    messages = list(relay_messages(ops))
    sizes = [sum(len(op[2]) if op[0] == REPLACE else 1 for op in m) for m in messages]
    assert len(messages) == 21 and max(sizes) <= OBJECTS_PER_MESSAGE
    assert sum(sizes) == 20_501
    assert [op[3] for m in messages for op in m if op[0] == REPLACE].count(True) == 1  # one list, ended once


@pytest.mark.parametrize(("scenario", "realtime", "env", "own_process"), [
    ("large", True, "", True),
    ("faults", True, "0", True),
    ("large", True, "1", False),   # TAU_TUI_SIM_IN_PROCESS=1: the app's own process
    ("large", False, "", False),   # the headless CLI moves time itself
    ("demo", True, "", False),     # the MultiKueue wizard drives the demo's worker fleet in-process
])
def test_which_demos_run_their_simulated_cluster_in_a_process_of_their_own(monkeypatch, scenario, realtime, env, own_process):
    monkeypatch.setenv(backends.IN_PROCESS_ENV, env)
    assert backends.runs_in_own_process(scenario, realtime) is own_process


def noisy_world():
    """A world whose building prints, as a scenario's code may: the answer line must not suffer."""
    print("building the world…")
    from tests.contract.envs import contract_world

    return contract_world()


def test_what_the_world_prints_while_it_is_built_never_reaches_the_apps_pipe():
    process = SimulatedClusterProcess("tests.sim.test_process:noisy_world", [], realtime=False)
    try:
        backend = ProcessSimulatedBackend(process)
        backend.start()
        assert backend.wait_synced(30) and len(backend.list(R.NODE)) == 2
        with open(process._log_path) as log:
            assert "building the world…" in log.read()  # its log has it, the app's terminal never
        backend.close()
    finally:
        process.stop()


def test_a_client_that_fails_the_keys_challenge_ends_nothing():
    from multiprocessing.connection import AuthenticationError, Client

    env = ProcessSimEnv()
    try:
        backend = env.backend()
        with pytest.raises((AuthenticationError, EOFError, OSError)):
            Client(env.process.address, family="AF_UNIX", authkey=b"not the key")
        assert env.process.process.poll() is None
        assert backend.cordon("sim-gpu-0").ok  # the server still answers, and the write is cached
        assert backend.get(R.NODE, "sim-gpu-0").unschedulable
    finally:
        env.close()


def test_a_tap_that_fails_on_the_relay_thread_turns_the_views_stale_and_says_so():
    env = ProcessSimEnv()
    try:
        backend = env.backend()

        class Broken:
            """A session recorder's tap whose every write fails (it is told every write the relay makes)."""

            def attached(self, snapshot):
                pass

            def __getattr__(self, name):
                def fail(*_args):
                    raise ValueError("a broken tap")
                return fail

        backend.cache.attach_tap(Broken())
        env.unique_namespace("broken")
        assert wait_real(lambda: backend.connection_state().status is ConnectionStatus.STALE, timeout=30, interval=0.02)
        assert "stopped following it: ValueError: a broken tap" in backend.connection_state().message
        assert backend.view_state(R.NODE).status is ViewStatus.ERROR
        assert not backend.wait_synced(0)
    finally:
        env.close()


def test_a_broken_log_stream_says_what_broke_it():
    env = ProcessSimEnv()
    try:
        ns = env.unique_namespace("lg")
        env.create(R.RESOURCE_FLAVOR.type, h.flavor(f"rf-{ns}"))
        env.create(R.CLUSTER_QUEUE.type, h.cluster_queue(f"cq-{ns}", f"rf-{ns}", 16))
        env.create(R.LOCAL_QUEUE.type, h.local_queue(ns, "lq", f"cq-{ns}"))
        backend = env.backend()
        assert backend.submit([h.job(ns, "j", "lq")])[0].ok
        assert env.settle(lambda: any(p.phase == "Running" for p in backend.pods(ns)))
        pod = next(p for p in backend.pods(ns) if p.phase == "Running")
        stream = backend.open_container_log(LogChunkRequest(ns, pod.name, pod.containers[0], follow=True))
        chunks = iter(stream)
        assert next(chunks)
        env.break_log_streams()
        with pytest.raises(ConnectionResetError, match="simulated log stream broken"):
            for _ in range(100):
                env.advance(1)
                next(chunks)
        stream.close()
    finally:
        env.close()


def test_the_pods_of_a_large_cluster_reach_the_app_in_bounded_messages_too():
    relay = RelayedCache(lambda: None)  # type: ignore[arg-type, return-value]
    relay.replace_node_pods([{"metadata": {"name": f"p{i}", "namespace": "ns"}} for i in range(3_500)])
    messages = list(relay_messages(relay.take() or []))
    assert len(messages) == 4 and [op[2] for m in messages for op in m] == [False, False, False, True]
