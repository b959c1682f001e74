"""The read side of the contract, through a recording: whatever a backend saw (the simulated one
always, the real one on tier 1), its replay shows at the same times, with the same watch
semantics (ADDED, MODIFIED, DELETED in order, generations moving, views ready), and refuses
every change.  Both backends write the same format, through the cache they share."""

from __future__ import annotations

import time

from tau_tui.core.cluster.changes import ChangeType, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.recording.replay_backend import ReplayBackend
from tau_tui.core.operations.recording.writer import SessionRecorder
from tests.contract import helpers as h

R = ResourceKind


def test_a_replay_reads_back_what_the_backend_saw_in_order(env, tmp_path):
    backend = env.backend()
    assert backend.wait_synced(60)
    path = tmp_path / "contract.rec"
    recorder = SessionRecorder(backend, path, source=type(backend).__name__, flush_every_s=0.2).start()
    name = f"wpc-{env.unique_namespace('r')}"
    seen: list[tuple[float, object]] = []

    def observed() -> None:
        seen.append((backend._now().timestamp(), backend.get(R.WORKLOAD_PRIORITY_CLASS, name)))
        # the next change lands at a later time (the simulated clock moves only when told)
        advance = getattr(env, "advance", None)
        if advance is not None:
            advance(1)
        else:
            time.sleep(0.05)

    env.create(R.WORKLOAD_PRIORITY_CLASS.type, h.priority_class(name, 10))
    assert env.settle(lambda: backend.get(R.WORKLOAD_PRIORITY_CLASS, name) is not None)
    observed()
    env.patch(R.WORKLOAD_PRIORITY_CLASS.type, name, None, {"value": 20})
    assert env.settle(lambda: getattr(backend.get(R.WORKLOAD_PRIORITY_CLASS, name), "value", None) == 20)
    observed()
    env.delete(R.WORKLOAD_PRIORITY_CLASS.type, name, None)
    assert env.settle(lambda: backend.get(R.WORKLOAD_PRIORITY_CLASS, name) is None)
    observed()
    recorder.close()
    assert recorder.error is None
    assert recorder.source in ("SimulatedBackend", "ProcessSimulatedBackend", "KubernetesBackend")

    replay = ReplayBackend.open(path)
    events = h.Recorder(replay, R.WORKLOAD_PRIORITY_CLASS)  # a reader of the replay's feed from before it starts
    replay.start()
    generation = replay.generation(R.WORKLOAD_PRIORITY_CLASS)
    for t, view in seen:
        replay.seek_seconds(t)
        assert replay.get(R.WORKLOAD_PRIORITY_CLASS, name) == view
        events.poll()
        assert replay.view_state(R.WORKLOAD_PRIORITY_CLASS).status is ViewStatus.READY
    assert [e.type for e in events.of(name)] == [ChangeType.ADDED, ChangeType.MODIFIED, ChangeType.DELETED]
    assert replay.generation(R.WORKLOAD_PRIORITY_CLASS) > generation
    assert replay.current_context == backend.current_context
    refused = replay.set_stop_policy(R.CLUSTER_QUEUE, "any", "Hold")
    assert not refused.ok and "replay of contract.rec (read-only)" in refused.message
