from __future__ import annotations

import time

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tests.contract import helpers as h
from tests.contract.envs import SimEnv

R = ResourceKind


def _job(env, workers=1):
    ns = env.unique_namespace("lg")
    env.create(R.RESOURCE_FLAVOR.type, h.flavor(f"rf-{ns}"))
    env.create(R.CLUSTER_QUEUE.type, h.cluster_queue(f"cq-{ns}", f"rf-{ns}", 16))
    env.create(R.LOCAL_QUEUE.type, h.local_queue(ns, "lq", f"cq-{ns}"))
    backend = env.backend()
    assert backend.submit([h.job(ns, "j", "lq", workers=workers)])[0].ok
    assert env.settle(lambda: len([p for p in backend.pods(ns) if p.phase == "Running"]) == workers)
    return ns, backend


def _wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_broken_follow_resumes_with_every_line_once(tmp_path):
    env = SimEnv()
    ns, backend = _job(env)
    stream = backend.open_logs(LogRequest(namespace=ns, job="j", follow=True), spool_dir=str(tmp_path))
    for round_ in range(4):
        env.settle(lambda: False, timeout=5)
        assert _wait(lambda: stream.live)
        env.break_log_streams()
        assert _wait(lambda round_=round_: stream.reconnects > round_)
    env.settle(lambda: False, timeout=5)
    pod = backend.pods(ns)[0]
    log = env.world.logs[(ns, pod.name, "main", False)]
    log.materialize(int(env.world.now().timestamp()) * 10**9)
    expected = [line.split(" ", 1)[1] for line in log.data.decode().splitlines()]
    assert _wait(lambda: stream.spool.lines() == expected), (len(stream.spool.lines()), len(expected))
    assert len(expected) >= 20
    stream.close()
    env.close()


def test_partial_line_visible_and_completed(tmp_path):
    env = SimEnv()
    ns, backend = _job(env)
    pod = backend.pods(ns)[0].name
    stream = backend.open_logs(LogRequest(namespace=ns, pods=(pod,), follow=True), spool_dir=str(tmp_path))
    env.world.write_log(ns, pod, "main", "progress 40%", newline=False)
    assert _wait(lambda: stream.spool.lines()[-1:] == ["progress 40%"])
    env.world.write_log(ns, pod, "main", " ... 100%", newline=True)
    assert _wait(lambda: "progress 40% ... 100%" in stream.spool.lines())
    assert "progress 40%" not in stream.spool.lines()
    stream.close()
    env.close()


def test_tail_since_and_timestamps(tmp_path):
    env = SimEnv()
    ns, backend = _job(env)
    env.settle(lambda: False, timeout=30)
    tail = backend.open_logs(LogRequest(namespace=ns, job="j", tail_lines=3, timestamps=True), spool_dir=str(tmp_path))
    assert tail.wait_done(10)
    lines = tail.spool.lines()
    assert len(lines) == 3 and all(line[:4] == "2025" for line in lines)
    since = backend.open_logs(LogRequest(namespace=ns, job="j", since_seconds=5), spool_dir=str(tmp_path))
    assert since.wait_done(10)
    assert 4 <= len(since.spool.lines()) <= 7
    env.close()


def test_forbidden_log_access_is_reported(tmp_path):
    env = SimEnv()
    ns, _ = _job(env)
    identity = "system:serviceaccount:x:nolog"
    env.world.store.grant(identity, ("get", "list", "watch"), ["pods"], ns)
    from tau_tui.core.sim.backend import SimulatedBackend

    backend = SimulatedBackend(env.world, identity=identity, namespace=ns)
    backend.start()
    stream = backend.open_logs(LogRequest(namespace=ns, job="j"), spool_dir=str(tmp_path))
    assert stream.wait_done(30)
    assert stream.errors and "forbidden" in stream.errors[0]
    env.close()
