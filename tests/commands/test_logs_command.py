"""`tau-tui logs RUN` on the simulated cluster (--demo): a RayJob's driver output, --all, --tail,
-f to the run's end, a missing run; and `tau-tui status RUN --events`."""

from __future__ import annotations

from pathlib import Path

from tau_tui.cli import main
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tests.scenarios import one_queue_scenario


def demo_driver_output(name: str, namespace: str) -> list[str]:
    """The RayJob's driver output as an independent build of the same demo world holds it."""
    world = build_world("demo")
    rayjob = next(r for r in SimulatedBackend(world).fetch(ResourceKind.RAY_JOB, namespace) if r.name == name)
    log = world.kubelet.driver_logs.logs[(namespace, rayjob.job_id)]
    log.materialize(int(world.now().timestamp() * 1e9))
    return [line.split(" ", 1)[1] for line in bytes(log.data).decode().splitlines()]


def test_logs_of_a_rayjob_print_its_driver_output(capsys):
    assert main(["logs", "ray-rlhf-ppo", "-n", "team-nlp", "--demo"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines == demo_driver_output("ray-rlhf-ppo", "team-nlp")
    assert lines[0].startswith("Connecting to existing Ray cluster at address: ") and len(lines) > 100
    assert err == ""


def test_logs_all_puts_the_driver_first_then_the_head_and_workers_each_prefixed(capsys):
    assert main(["logs", "ray-rlhf-ppo", "-n", "team-nlp", "--demo", "--all", "--tail", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("] ", 1)[0] for line in lines[:2]] == ["[driver", "[driver"]
    assert lines[:2] == [f"[driver] {line}" for line in demo_driver_output("ray-rlhf-ppo", "team-nlp")[-2:]]
    rest = lines[2:]
    assert len(rest) == 4  # two lines of the head's ray-head, two of the worker's ray-worker
    assert sum("-head-" in line and "/ray-head] " in line for line in rest) == 2
    assert sum("-worker-" in line and "/ray-worker] " in line for line in rest) == 2


def test_logs_of_a_job_read_its_pods_by_job_name(capsys):
    assert main(["logs", "llama-70b-sft", "-n", "taugrid-default", "--demo", "--tail", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6  # two pods (an indexed Job of 2), three lines each, prefixed by pod
    assert {line.split("] ", 1)[0].lstrip("[").rsplit("-", 1)[0] for line in lines} == {"llama-70b-sft-0", "llama-70b-sft-1"}


def test_logs_of_no_such_run_exit_1_naming_it(capsys):
    assert main(["logs", "nope", "-n", "team-nlp", "--demo"]) == 1
    assert "no Job or RayJob team-nlp/nope" in capsys.readouterr().err


def test_logs_follow_ends_when_the_run_ends(capsys, tmp_path: Path):
    path = tmp_path / "short.yaml"
    path.write_text(one_queue_scenario("short", seed=4, warmup_seconds=60, nodes=1, cpu=64, memory="512Gi", jobs=(
        "{at: -30, kind: RayJob, name: sweep, namespace: team-a, queue: q, gpus: 1, workers: 1, durationSeconds: 120}",)))
    assert main(["logs", "sweep", "-n", "team-a", "--demo", str(path), "-f"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Connecting to existing Ray cluster")
    assert lines[-1].startswith("Job 'sweep-") and lines[-1].endswith("' succeeded")
    assert len(lines) == len(set(lines))  # no line twice (each carries its iteration)


def test_status_events_lists_the_runs_events(capsys):
    assert main(["status", "ray-rlhf-ppo", "-n", "team-nlp", "--demo", "--events"]) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index("Events")
    assert out[start + 1].split() == ["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    objects = {line.split()[3] for line in out[start + 2:]}
    assert "RayJob/ray-rlhf-ppo" in objects
    assert any(o.startswith("Pod/ray-rlhf-ppo-raycluster-") for o in objects)
    assert any(o.startswith("Workload/rayjob-ray-rlhf-ppo-") for o in objects)
    assert main(["status", "ray-rlhf-ppo", "-n", "team-nlp", "--demo"]) == 0
    assert "Events" not in capsys.readouterr().out.splitlines()
