"""Evidence records on the simulated backend: capture, the store, bundles, verification
of edited, missing and extra files, hostile archives, redaction, and the app's recorder."""

from __future__ import annotations

import io
import json
import stat
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.evidence import verify as verify_module
from tau_tui.core.operations.evidence.bundle import MANIFEST_NAME, ExportError, bundle_bytes, write_bundle
from tau_tui.core.operations.evidence.capture import capture, capture_live, live_nodes, outcome_of
from tau_tui.core.operations.evidence.cluster_identity import cluster_identity
from tau_tui.core.operations.evidence.recorder import EvidenceRecorder
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.core.operations.evidence.submission import keep_submission
from tau_tui.core.operations.evidence.verify import verify_bundle
from tau_tui.core.operations.redaction import redact_object
from tau_tui.core.operations.rundocument import read_run
from tau_tui.core.operations.runstatus import compute_run_status
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tests.scenarios import tiny_backend

FAILED = ("team-nlp", "eval-mmlu-0301")  # failed in the demo scenario
RUNNING = ("taugrid-default", "llama-70b-sft")  # running on two nodes in the demo scenario


@pytest.fixture
def demo():
    world = build_world("demo")
    backend = SimulatedBackend(world)
    yield world, backend
    backend.close()


@pytest.fixture
def store(tmp_path) -> EvidenceStore:
    return EvidenceStore(tmp_path / "data" / "tau-tui" / "evidence.sqlite3")


def capture_cli(world, backend, store, namespace, name):
    return capture_live(backend, store, namespace, name, world.now(), source="cli", cluster=cluster_identity(backend))


def exported(store, record, tmp_path) -> Path:
    return write_bundle(record, store.files(record.id), tmp_path / "bundle.tar.gz")


def rewrite(bundle: Path, edit) -> Path:
    """A copy of the bundle with its members passed through ``edit(name, data) -> [(name, data)]``."""
    out = bundle.with_name("tampered.tar.gz")
    with tarfile.open(bundle, "r:gz") as src, tarfile.open(out, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()
            for name, content in edit(member.name, data):
                info = tarfile.TarInfo(name)
                info.size = len(content)
                dst.addfile(info, io.BytesIO(content))
    return out


# -- capture -------------------------------------------------------------------


def test_a_failed_run_is_captured_with_every_part_of_its_evidence(demo, store):
    world, backend = demo
    result = capture_cli(world, backend, store, *FAILED)
    assert result.created and result.record is not None
    record = result.record
    assert (record.namespace, record.name, record.outcome, record.kind) == (*FAILED, "failed", "Job")
    files = store.files(record.id)
    assert set(files) == {"record.json", "manifests.yaml", "workload-history.json", "events.json", "nodes.json",
                          "logs/run.log"}
    doc = json.loads(files["record.json"])
    assert doc["run"]["submissionId"] == record.submission_id and doc["outcome"] == "failed"
    assert doc["finishedAt"] == record.finished_at and doc["images"] == ["ghcr.io/azure/tau-train:1.4.2"]
    assert doc["nodes"] == ["h100-node-1"]
    # What the cluster cannot give is said, never left out silently.
    assert any(gap.startswith("tau.yaml:") for gap in doc["unavailable"])
    assert any(gap.startswith("image digest:") for gap in doc["unavailable"])
    history = json.loads(files["workload-history.json"])
    assert [c["type"] for c in history[0]["conditions"]] == ["QuotaReserved", "Admitted", "Finished"]
    assert history[0]["queueWaitSeconds"] == 0.0 and history[0]["admittedAt"]
    nodes = json.loads(files["nodes.json"])
    assert nodes[0]["name"] == "h100-node-1" and nodes[0]["verdict"] == "healthy"
    assert {c["type"] for c in nodes[0]["conditions"]} >= {"GPUUnhealthy", "GPUDegraded"}
    assert files["logs/run.log"].count(b"\n") == doc["logLines"] > 100
    assert yaml.safe_load(files["manifests.yaml"])["kind"] == "Job"


def test_capture_is_idempotent_per_run_and_submission(demo, store):
    world, backend = demo
    first = capture_cli(world, backend, store, *FAILED)
    again = capture_cli(world, backend, store, *FAILED)
    assert first.created and not again.created and again.record == first.record
    assert len(store.records()) == 1 and store.writes == 1


def test_a_running_or_unknown_run_is_not_captured(demo, store):
    world, backend = demo
    running = capture_cli(world, backend, store, *RUNNING)
    assert running.record is None and "not finished" in running.message
    missing = capture_cli(world, backend, store, "team-nlp", "no-such-run")
    assert missing.record is None and "no Job or RayJob team-nlp/no-such-run" in missing.message
    assert store.records() == []


def test_store_is_private(demo, store):
    world, backend = demo
    capture_cli(world, backend, store, *FAILED)
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_submission_gives_the_record_its_tau_yaml_and_rendered_manifests(demo, store):
    world, backend = demo
    objs = read_run(backend, *FAILED)
    owner = objs.job
    manifest = {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": FAILED[1], "namespace": FAILED[0], "annotations": {"tau.azure.com/config-hash": "abc123"}},
                "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x",
                                                                 "env": [{"name": "HF_TOKEN", "value": "hf_secretvalue"}]}]}}}}
    sid = owner.labels["tau.azure.com/submission-id"]
    keep_submission(store, [manifest], sid, "name: eval\nenv:\n  WANDB_API_KEY: abcdef0123\n", "/w/tau.yaml",
                    source="cli", now=world.now())
    record = capture_cli(world, backend, store, *FAILED).record
    files = store.files(record.id)
    assert b"name: eval" in files["tau.yaml"] and b"abcdef0123" not in files["tau.yaml"]
    assert b"hf_secretvalue" not in files["manifests.yaml"] and b"HF_TOKEN" in files["manifests.yaml"]
    doc = json.loads(files["record.json"])
    assert doc["tauYaml"] == "/w/tau.yaml" and doc["manifestsSource"].startswith("rendered by tau-tui")
    assert not any(gap.startswith("tau.yaml:") for gap in doc["unavailable"])


def test_redaction_blanks_credentials_and_keeps_secret_references():
    manifest = {"env": [{"name": "API_TOKEN", "value": "t0ps3cret"}, {"name": "EPOCHS", "value": "3"},
                        {"name": "DB", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}],
                "args": ["--password=hunter2", "Authorization: Bearer abcdefghijklmnop"], "clientSecret": "x"}
    out = json.dumps(redact_object(manifest))
    for secret in ("t0ps3cret", "hunter2", "abcdefghijklmnop"):
        assert secret not in out
    assert '{"name": "EPOCHS", "value": "<redacted>"}' in out  # env values: names only, whatever the name
    assert '"secretKeyRef": {"name": "db", "key": "password"}' in out
    assert '"clientSecret": "<redacted>"' in out


# -- bundles and verification ----------------------------------------------------


def test_bundle_verifies_and_an_edited_file_is_named(demo, store, tmp_path):
    world, backend = demo
    record = capture_cli(world, backend, store, *FAILED).record
    bundle = exported(store, record, tmp_path)
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
    result = verify_bundle(bundle, demo=True)
    assert result.ok and result.files_checked == 6 and result.record["name"] == FAILED[1]
    assert "OK: 6 files match" in result.lines()[0]

    edited = rewrite(bundle, lambda name, data: [(name, data.replace(b'"failed"', b'"succeeded"'))
                                                  if name == "record.json" else (name, data)])
    result = verify_bundle(edited, demo=True)
    assert not result.ok and [(p.path, p.problem) for p in result.problems] == [("record.json", "edited")]
    assert "edited: record.json" in "\n".join(result.lines())


def test_missing_and_extra_files_are_named(demo, store, tmp_path):
    world, backend = demo
    bundle = exported(store, capture_cli(world, backend, store, *FAILED).record, tmp_path)

    def edit(name, data):
        if name == "logs/run.log":
            return []
        if name == "events.json":
            return [(name, data), ("notes.txt", b"added later\n")]
        return [(name, data)]

    result = verify_bundle(rewrite(bundle, edit), demo=True)
    assert {(p.path, p.problem) for p in result.problems} == {("logs/run.log", "missing"), ("notes.txt", "extra")}


def test_bundle_bytes_are_reproducible_and_export_never_overwrites(demo, store, tmp_path):
    world, backend = demo
    record = capture_cli(world, backend, store, *FAILED).record
    files = store.files(record.id)
    assert bundle_bytes(record, files) == bundle_bytes(record, files)
    target = exported(store, record, tmp_path)
    with pytest.raises(ExportError, match="already exists"):
        write_bundle(record, files, target)
    with pytest.raises(ExportError, match="no such directory"):
        write_bundle(record, files, tmp_path / "nowhere" / "b.tar.gz")
    assert write_bundle(record, files, tmp_path).name.startswith("evidence-team-nlp-eval-mmlu-0301-")


def _tar(tmp_path: Path, members, name="hostile.tar.gz") -> Path:
    """A gzip'd tar of (TarInfo-tweaking function, data) pairs."""
    path = tmp_path / name
    with tarfile.open(path, "w:gz") as tar:
        for make, data in members:
            info = make()
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name):
    return lambda: tarfile.TarInfo(name)


def _link(name, target, kind):
    def make():
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, target
        return info
    return make


MANIFEST = json.dumps({"format": "tau.azure.com/evidence-bundle/v1", "record": {},
                       "files": [{"path": "a.txt", "size": 1, "sha256": "0" * 64}]}).encode()


@pytest.mark.parametrize(("members", "reason"), [
    ([(_file(MANIFEST_NAME), MANIFEST), (_file("../../etc/passwd"), b"x")], "path traversal"),
    ([(_file(MANIFEST_NAME), MANIFEST), (_file("/etc/passwd"), b"x")], "path traversal"),
    ([(_file(MANIFEST_NAME), MANIFEST), (_link("a.txt", "/etc/passwd", tarfile.SYMTYPE), None)], "symbolic link"),
    ([(_file(MANIFEST_NAME), MANIFEST), (_link("a.txt", MANIFEST_NAME, tarfile.LNKTYPE), None)], "hard link"),
    ([(_file(MANIFEST_NAME), MANIFEST), (_link("a.txt", "", tarfile.FIFOTYPE), None)], "not a regular file"),
    ([(_file(MANIFEST_NAME), MANIFEST), (_file("a.txt"), b"x"), (_file("a.txt"), b"y")], "appears twice"),
    ([(_file("a.txt"), b"x")], "no MANIFEST.json"),
    ([(_file(MANIFEST_NAME), b"{not json"), (_file("a.txt"), b"x")], "not JSON"),
    ([(_file(MANIFEST_NAME), b'{"format": "other"}')], "not a tau.azure.com/evidence-bundle/v1 manifest"),
])
def test_hostile_or_broken_archives_are_refused_with_a_reason(tmp_path, members, reason):
    result = verify_bundle(_tar(tmp_path, members))
    assert not result.ok and reason in result.refused
    assert "not verified" in result.lines()[0]


def test_a_huge_member_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(verify_module, "MAX_MEMBER_BYTES", 1000)
    result = verify_bundle(_tar(tmp_path, [(_file(MANIFEST_NAME), MANIFEST), (_file("a.txt"), b"x" * 1001)]))
    assert "over the 1000 byte limit" in result.refused


def test_too_many_members_and_too_large_a_file_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(verify_module, "MAX_MEMBERS", 3)
    many = [(_file(MANIFEST_NAME), MANIFEST)] + [(_file(f"f{i}"), b"x") for i in range(3)]
    assert "more than 3 members" in verify_bundle(_tar(tmp_path, many)).refused
    monkeypatch.setattr(verify_module, "MAX_BUNDLE_BYTES", 10)
    assert "over the 10 byte limit" in verify_bundle(_tar(tmp_path, many, "big.tar.gz")).refused


@pytest.mark.parametrize("content", [b"", b"not a tarball at all", b"\x1f\x8b\x08\x00garbage"])
def test_a_file_that_is_not_a_tar_gz_is_refused(tmp_path, content):
    path = tmp_path / "bad.tar.gz"
    path.write_bytes(content)
    result = verify_bundle(path)
    assert not result.ok and result.refused


def test_a_truncated_bundle_is_refused(demo, store, tmp_path):
    world, backend = demo
    bundle = exported(store, capture_cli(world, backend, store, *FAILED).record, tmp_path)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    result = verify_bundle(cut)
    assert not result.ok and "not a readable .tar.gz" in result.refused


def test_missing_bundle_is_named(tmp_path):
    assert verify_bundle(tmp_path / "nope.tar.gz").refused == "no such file"


# -- the app's recorder ------------------------------------------------------------


@pytest.fixture
def tiny(tmp_path):
    world, backend = tiny_backend(tmp_path)
    yield world, backend
    backend.close()


def test_recorder_captures_a_run_it_sees_finish_and_one_it_sees_cancelled(tiny, store):
    world, backend = tiny
    recorder = EvidenceRecorder(backend, store, world.now).start(thread=False)
    recorder.drain()
    assert store.records() == []  # no run has finished yet

    world.advance(40)  # "blocker" ends (45 s after its pod started); "first" starts in its place
    _settle(backend, recorder, lambda: store.records())
    [record] = store.records()
    assert (record.name, record.outcome, record.source) == ("blocker", "succeeded", "app")

    assert backend.cancel(ResourceKind.JOB, "team-a", "first").ok
    _settle(backend, recorder, lambda: len(store.records()) == 2)
    cancelled = store.find("team-a", "first")
    assert cancelled is not None and cancelled.outcome == "cancelled" and cancelled.kind == "Job"
    assert json.loads(store.files(cancelled.id)["record.json"])["nodes"] == ["gpu-0"]
    assert recorder.captured == 2 and not recorder.last_error
    recorder.close()


def _settle(backend, recorder, done, rounds: int = 300):
    """Let the backend deliver its change batches, then run what the recorder queued (bounded by rounds)."""
    import time

    for _ in range(rounds):
        recorder.drain()
        if done():
            return
        time.sleep(0.1)
    raise AssertionError("the recorder never captured the run")


def test_outcome_is_only_given_for_finished_runs(demo):
    world, backend = demo
    assert outcome_of(compute_run_status(read_run(backend, *FAILED))) == "failed"
    assert outcome_of(compute_run_status(read_run(backend, *RUNNING))) is None


def test_capture_from_cached_objects_names_unreadable_nodes(demo, store):
    world, backend = demo
    objs = read_run(backend, *FAILED)
    result = capture(backend, store, objs, "failed", world.now(), source="app", nodes=None, gpu_reports={})
    nodes = json.loads(store.files(result.record.id)["nodes.json"])
    assert nodes == [{"name": "h100-node-1", "verdict": "unknown", "reason": "nodes could not be read"}]
    assert live_nodes(backend)[0]  # the admin demo identity may list nodes


def test_a_bomb_in_the_headers_stops_at_the_unpacked_size_limit(tmp_path, monkeypatch):
    """A PAX header can claim any size; the decompressed stream is bounded before tarfile reads it."""
    monkeypatch.setattr(verify_module, "MAX_TOTAL_BYTES", 100)
    monkeypatch.setattr(verify_module, "_HEADER_ALLOWANCE", 4096)
    path = tmp_path / "bomb.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(MANIFEST_NAME)
        info.pax_headers = {"comment": "x" * 100_000}
        info.size = len(MANIFEST)
        tar.addfile(info, io.BytesIO(MANIFEST))
    result = verify_bundle(path)
    assert "unpacks to more than 4196 bytes" in result.refused


def test_recorder_reads_the_lists_once_then_only_what_changed(demo, store):
    """A tick that changes many runs is handled from one read of the cache (it was one full read
    and scan of every Workload per changed run: quadratic at 20,000 runs), and a later batch reads
    only the objects changed since (it read every Workload, pod and event per batch: at 200
    changes/s on 20,000 runs that took most of the interpreter from the keys and the panes)."""
    world, backend = demo
    backend.start()
    assert backend.wait_synced(10)
    recorder = EvidenceRecorder(backend, store, world.now).start(thread=False)
    runs = len(backend.jobs()) + len(backend.ray_jobs())
    assert runs >= 5
    recorder.drain()  # every run there is, queued by start()
    index = recorder._index
    assert (index.full_reads, index.objects_read) == (3, 0)  # Workloads, pods, events: once each
    workload = backend.workloads()[0]
    backend._api_patch(ResourceKind.WORKLOAD.type, workload.name, workload.namespace,
                       {"metadata": {"annotations": {"bench/mark": "1"}}}, False)
    assert backend.cache.wait_for(lambda: backend.get(ResourceKind.WORKLOAD, workload.name, workload.namespace)
                                  .annotations.get("bench/mark") == "1", 5)
    recorder.due.update((owner.namespace or "", owner.name) for owner in backend.jobs())  # every run looked at
    recorder.drain()
    assert index.full_reads == 3 and index.objects_read == 1
    recorder.close()


def test_recorder_sleeps_while_a_person_waits_and_no_longer_than_its_bound(demo, store, monkeypatch):
    """The recorder shares the interpreter with the keys and the pane on screen: while somebody
    waits it sleeps, in naps it can cut short, at most MAX_NAPS_PER_BATCH_S a batch, and it reads
    each run's objects after a nap, so what it records is what the cluster holds then.  On a clock
    of the test's (a nap moves it by its length), so the machine's speed counts for nothing."""
    from tau_tui.core.operations.evidence import recorder as recorder_module

    world, backend = demo
    backend.start()
    assert backend.wait_synced(10)
    happened: list[str] = []
    clock = {"now": 1_000.0}
    waits_until = {"at": 0.0}

    def nap(seconds: float) -> None:  # a nap moves the clock by its length, at once
        happened.append("nap")
        assert seconds <= 0.05
        clock["now"] += seconds

    monkeypatch.setattr(recorder_module, "RUNS_BETWEEN_NAPS", 1)
    recorder = EvidenceRecorder(backend, store, world.now, foreground_busy_until=lambda: waits_until["at"]).start(thread=False)
    read_index = recorder._index.current
    recorder._index.current = lambda: (happened.append("read"), read_index())[1]  # type: ignore[method-assign]
    recorder.nap = nap
    recorder.monotonic = lambda: clock["now"]
    runs = len(backend.jobs()) + len(backend.ray_jobs())
    recorder.drain()  # nobody waits: no nap; what changed (every run, the first time), then each run's objects
    assert happened == ["read"] * (1 + runs) and recorder.napped_s == 0

    def every_run_again() -> None:
        recorder.due.update((owner.namespace or "", owner.name) for owner in backend.jobs())

    happened.clear()
    every_run_again()
    waits_until["at"] = clock["now"] + 0.2  # a key's hold: the batch waits for it, then reads each run
    recorder.drain()
    assert recorder.napped_s == pytest.approx(0.2, abs=1e-9)
    assert happened[0] == "read" and set(happened[1:happened.index("read", 1)]) == {"nap"}
    assert happened.count("read") == 1 + len(backend.jobs())
    happened.clear()
    every_run_again()
    waits_until["at"] = float("inf")  # somebody waits for ever: the batch still ends after its bound
    recorder.drain()
    assert recorder.napped_s == pytest.approx(0.2 + recorder_module.MAX_NAPS_PER_BATCH_S, abs=1e-6)
    assert happened.count("read") == 1 + len(backend.jobs()) and happened[-1] == "read"
    assert recorder.statuses.computed > 0
    recorder.close()


def test_closing_the_recorder_ends_a_nap_for_a_person_at_once(demo, store):
    world, backend = demo
    backend.start()
    assert backend.wait_synced(10)
    recorder = EvidenceRecorder(backend, store, world.now, foreground_busy_until=lambda: float("inf")).start(thread=False)
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 3:
            recorder.close()  # from another thread in the app; the wait is over from the next look

    recorder.nap = nap
    recorder.drain()
    assert len(naps) == 3 and recorder.napped_s < 1.0


def test_a_read_that_fails_ends_no_recorder_and_says_why(demo, store):
    world, backend = demo
    backend.start()
    assert backend.wait_synced(10)
    recorder = EvidenceRecorder(backend, store, world.now)
    read = recorder._index.current
    calls = {"n": 0}

    def failing_once():
        calls["n"] += 1
        if calls["n"] == 1:
            raise OverflowError("date value out of range")
        return read()

    recorder._index.current = failing_once  # type: ignore[method-assign]
    recorder.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "OverflowError" not in recorder.last_error:
        time.sleep(0.05)
    assert recorder.last_error.endswith("OverflowError: date value out of range")  # why
    before = recorder.statuses.computed
    workload = backend.workloads()[0]  # a change wakes the thread: the runs the failed read left are looked at
    backend._api_patch(ResourceKind.WORKLOAD.type, workload.name, workload.namespace,
                       {"metadata": {"annotations": {"bench/mark": "1"}}}, False)
    while time.monotonic() < deadline and recorder.statuses.computed == before:
        time.sleep(0.05)
    assert recorder.statuses.computed > before  # the thread lives on
    recorder.close()
