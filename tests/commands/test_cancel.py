"""Cancel that tells the truth, on the simulated backend: the Job and its headless
Service go, the run reads "releasing compute" while its pods still hold GPUs, then it is gone."""

from __future__ import annotations

import json

from tau_tui.cli import main
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.submission_kinds import EXTRA_TYPES
from tau_tui.core.operations.rundocument import read_run
from tau_tui.core.operations.runstatus import compute_run_status
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world

NS, RUN = "taugrid-default", "llama-70b-sft"  # running on two nodes in the demo scenario
SERVICE = EXTRA_TYPES[("", "Service")]


def demo():
    world = build_world("demo")
    return world, SimulatedBackend(world)


def test_cancel_deletes_the_job_and_headless_service_then_releases_compute():
    world, backend = demo()
    world.store.put(SERVICE, {"apiVersion": "v1", "kind": "Service",
                              "metadata": {"name": f"{RUN}-headless", "namespace": NS}, "spec": {"clusterIP": "None"}})
    result = backend.cancel(ResourceKind.JOB, NS, RUN)
    assert result.ok and f"Service {RUN}-headless deleted" in result.message
    assert world.store.read(SERVICE, f"{RUN}-headless", NS) is None
    assert world.store.read(ResourceKind.JOB.type, RUN, NS) is None

    status = compute_run_status(read_run(backend, NS, RUN))
    assert (status.state, status.display_state) == ("releasing", "releasing compute")
    release = status.phase("Compute release")
    assert release is not None and release.status == "active" and "2 pod(s) still hold GPUs" in release.detail
    world.advance(10)
    assert compute_run_status(read_run(backend, NS, RUN)).state == "releasing"  # grace period (30 s) not over
    world.advance(25)
    assert compute_run_status(read_run(backend, NS, RUN)).state == "not_found"
    assert backend.fetch(ResourceKind.POD, NS, f"job-name={RUN}") == []


def test_cancel_without_a_headless_service_is_fine_and_dry_run_deletes_nothing():
    world, backend = demo()
    preview = backend.cancel(ResourceKind.JOB, NS, RUN, dry_run=True)
    assert preview.ok and "would be cancelled" in preview.message
    assert world.store.read(ResourceKind.JOB.type, RUN, NS) is not None
    result = backend.cancel(ResourceKind.JOB, NS, RUN)
    assert result.ok and "Service" not in result.message


def test_cli_cancel_wait_shows_releasing_then_cancelled_and_is_audited(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["cancel", RUN, "-n", NS, "--demo", "--wait", "--interval", "5s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Job {NS}/{RUN} cancelled; Kueue releases its quota"
    assert lines[1].startswith(f"{NS}/{RUN}: releasing compute: 2 pod(s) still hold GPUs on ")
    assert lines[-1] == f"{NS}/{RUN}: cancelled; compute released"
    assert not (tmp_path / "tau-tui" / "audit.jsonl").exists()  # the demo's own log, not yours:
    entries = [json.loads(line) for line in (tmp_path / "tau-tui" / "demo" / "audit.jsonl").read_text().splitlines()]
    assert [(e["verb"], e["phase"], e["ok"]) for e in entries] == [("cancel", "intent", None), ("cancel", "outcome", True)]
    assert entries[-1]["target"] == f"Job {NS}/{RUN}"


def test_cli_cancel_of_a_missing_run_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["cancel", "no-such-run", "-n", NS, "--demo"]) == 1
    assert "no Job or RayJob taugrid-default/no-such-run" in capsys.readouterr().err
    assert not (tmp_path / "tau-tui" / "audit.jsonl").exists()
    assert not (tmp_path / "tau-tui" / "demo" / "audit.jsonl").exists()


def test_cli_cancel_wait_of_a_rayjob_waits_for_its_ray_pods(tmp_path, monkeypatch, capsys):
    """A RayJob's pods carry ray.io/cluster, not job-name: they were missed, and the run read
    'cancelled; compute released' while they still held GPUs."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["cancel", "ray-rlhf-ppo", "-n", "team-nlp", "--demo", "--wait", "--interval", "5s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "RayJob team-nlp/ray-rlhf-ppo cancelled; Kueue releases its quota"
    assert lines[1].startswith("team-nlp/ray-rlhf-ppo: releasing compute: 2 pod(s) still hold GPUs on ")
    assert lines[-1] == "team-nlp/ray-rlhf-ppo: cancelled; compute released"
