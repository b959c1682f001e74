"""A run's logs as TauGrid reads them, on the simulated cluster: a RayJob's driver output (``ray job
logs`` in its head, then its log-offload sidecar) before its head and workers; a broken driver read
loses and doubles no line.  (Following a run across its pods: test_logspool_runs.py; the real
KubeRay operator on tier 2: tests/integration/test_rayjob_kuberay_t2.py.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogRequest
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tests.scenarios import demo_backend, one_queue_scenario

DONE_WITHIN_S = 60  # a hang's bound only


@pytest.fixture(scope="module")
def demo():
    world, backend = demo_backend()
    yield world, backend
    backend.close()


def read_all(backend, request: LogRequest) -> list[str]:
    stream = backend.open_logs(request)
    try:
        assert stream.wait_done(DONE_WITHIN_S), f"the stream never ended: {stream.state} {stream.errors}"
        return stream.spool.lines()
    finally:
        stream.close(delete_spool=True)


def driver_text(world, namespace: str, job_id: str) -> list[str]:
    """The driver output as the simulated head holds it (an independent read of the same buffer)."""
    with world.lock:  # the readers' threads materialize the same buffer
        log = world.kubelet.driver_logs.logs[(namespace, job_id)]
        log.materialize(int(world.now().timestamp() * 1e9))
        data = bytes(log.data)
    return [line.split(" ", 1)[1] for line in data.decode().splitlines()]


def wait_for_lines(stream, count: int, within: float = DONE_WITHIN_S) -> bool:
    deadline = time.monotonic() + within
    while stream.spool.committed_count < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return stream.spool.committed_count >= count


def test_a_rayjobs_driver_output_comes_first_then_its_head_and_workers(demo):
    world, backend = demo
    rayjob = backend.get(ResourceKind.RAY_JOB, "ray-rlhf-ppo", "team-nlp")
    lines = read_all(backend, LogRequest("team-nlp", ray_job="ray-rlhf-ppo", all_containers=True, prefix=True))
    driver = [line for line in lines if line.startswith("[driver] ")]
    assert driver and lines[: len(driver)] == driver, "the driver's lines are not all before the containers'"
    assert driver[0] == "[driver] Connecting to existing Ray cluster at address: " + driver[0].split(": ", 1)[1]
    assert [line.removeprefix("[driver] ") for line in driver] == driver_text(world, "team-nlp", rayjob.job_id)
    rest = lines[len(driver):]
    cluster = rayjob.ray_cluster_name
    assert any(line.startswith(f"[{cluster}-head-") and "/ray-head] " in line for line in rest)
    assert any(f"[{cluster}-gpu-workers-worker-" in line and "/ray-worker] " in line for line in rest)


def test_without_containers_a_rayjob_reads_as_its_driver_output_alone(demo):
    world, backend = demo
    rayjob = backend.get(ResourceKind.RAY_JOB, "ray-rlhf-ppo", "team-nlp")
    lines = read_all(backend, LogRequest("team-nlp", ray_job="ray-rlhf-ppo", containers=False))
    assert lines == driver_text(world, "team-nlp", rayjob.job_id)
    tail = read_all(backend, LogRequest("team-nlp", ray_job="ray-rlhf-ppo", containers=False, tail_lines=3))
    assert tail == lines[-3:]


def test_a_broken_driver_read_is_read_again_without_a_line_lost_or_twice(tmp_path):
    world, backend = demo_backend()
    try:
        rayjob = backend.get(ResourceKind.RAY_JOB, "ray-rlhf-ppo", "team-nlp")
        stream = backend.open_logs(LogRequest("team-nlp", ray_job="ray-rlhf-ppo", containers=False, follow=True))
        try:
            history = len(driver_text(world, "team-nlp", rayjob.job_id))
            assert stream.spool.wait_for_lines(history, DONE_WITHIN_S)
            for _ in range(3):  # new lines (read by the follow), then a broken exec
                world.advance(20)
                expected = driver_text(world, "team-nlp", rayjob.job_id)
                assert wait_for_lines(stream, len(expected))
                world.break_log_streams()
            world.advance(20)
            expected = driver_text(world, "team-nlp", rayjob.job_id)
            assert len(expected) > history + 20
            wait_for_lines(stream, len(expected) + 1, within=2)  # a line twice would show here
            assert stream.reconnects >= 1, "the stream never broke: nothing was tested"
            assert stream.spool.lines() == expected
        finally:
            stream.close(delete_spool=True)
    finally:
        backend.close()


def test_once_the_head_ended_the_driver_output_comes_from_the_log_offload_sidecar(tmp_path: Path):
    path = tmp_path / "offload.yaml"
    path.write_text(one_queue_scenario("offload", seed=2, warmup_seconds=300, nodes=2, cpu=128, memory="1024Gi", jobs=(
        "{at: -290, kind: RayJob, name: sweep, namespace: team-a, queue: q, gpus: 1, workers: 1, durationSeconds: 60, logOffload: true}",
        "{at: -290, kind: RayJob, name: plain, namespace: team-a, queue: q, gpus: 1, workers: 1, durationSeconds: 60}",
    )))
    world = build_world(str(path))
    backend = SimulatedBackend(world, realtime=False)
    try:
        sweep = next(r for r in backend.fetch(ResourceKind.RAY_JOB, "team-a") if r.name == "sweep")
        assert sweep.job_deployment_status == "Complete"
        lines = read_all(backend, LogRequest("team-a", ray_job="sweep", containers=False))
        assert lines == driver_text(world, "team-a", sweep.job_id)
        assert lines[-1] == f"Job '{sweep.job_id}' succeeded"
        # without a sidecar, the ended head's driver output cannot be read: said, not an empty success
        stream = backend.open_logs(LogRequest("team-a", ray_job="plain", containers=False))
        assert stream.wait_done(DONE_WITHIN_S)
        assert stream.spool.lines() == []
        assert any("no log-offload sidecar" in error for error in stream.errors)
        stream.close(delete_spool=True)
    finally:
        backend.close()


def test_a_simulated_head_runs_ray_job_logs_only(demo):
    _, backend = demo
    head = next(p for p in backend.fetch(ResourceKind.POD, "team-nlp", "ray.io/node-type=head") if p.phase == "Running")
    with pytest.raises(ApiFailure) as refused:
        backend.open_pod_exec(ExecRequest("team-nlp", head.name, "ray-head", ("sh", "-c", "id")))
    assert "ray job logs JOB_ID" in refused.value.message
    with pytest.raises(ApiFailure) as unknown:
        backend.open_pod_exec(ExecRequest("team-nlp", head.name, "ray-head", ("ray", "job", "logs", "nope")))
    assert "Job nope does not exist" in unknown.value.message
