"""Record and replay, core level: the format round-trips, a seek reads one keyframe's
member (counted, not timed), a cut file replays up to its last record, secrets never reach the
file, bad files get one message naming them, and a replay refuses every change."""

from __future__ import annotations

import gzip
import json
import zlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.operations.recording import format as fmt
from tau_tui.core.operations.recording.reader import RecordingReader
from tau_tui.core.operations.recording.replay_backend import ReplayBackend
from tau_tui.core.operations.recording.replay_clock import parse_seek
from tau_tui.core.operations.recording.writer import SessionRecorder
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world

SECRET = "hf_s3cr3tT0kenValue1234567890"


def cache_state(backend) -> dict:
    """What every pane can read: each kind's raw objects and view state, the node views (GPU
    allocation and health composed in) and the connection."""
    return {
        "raw": {kind: [view.raw for view in backend.list(kind)] for kind in ResourceKind},
        "states": {kind: (backend.view_state(kind).status, backend.view_state(kind).message) for kind in ResourceKind},
        "nodes": backend.nodes(),
        "connection": backend.connection_state(),
    }


def record_demo(path: Path, *, seconds: int = 300, every: int = 50, keyframe_every_s: float = 60.0,
                with_secret: bool = False) -> tuple[dict[float, dict], SessionRecorder]:
    """Record the demo scenario on its manual clock; returns the live state at each step."""
    world = build_world("demo")
    backend = SimulatedBackend(world, realtime=False)
    backend.start()
    if with_secret:
        world.store.put(ResourceKind.JOB.type, {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "leaky", "namespace": "team-nlp",
                         "annotations": {"note": f"password={SECRET}"}},
            "spec": {"suspend": True, "template": {"spec": {"containers": [
                {"name": "main", "image": "python:3.12", "env": [{"name": "HF_TOKEN", "value": SECRET}]}]}}},
        })
    recorder = SessionRecorder(backend, path, source="SimulatedBackend", keyframe_every_s=keyframe_every_s).start()
    states = {}
    for _ in range(seconds // every):
        world.advance(every)
        for lq in backend.local_queues():  # what the queue pane asks: recorded visibility answers
            backend.pending_positions_local_queue(lq.namespace or "", lq.name)
        states[world.now().timestamp()] = cache_state(backend)
    recorder.close()
    backend.close()
    return states, recorder


def test_a_replay_reads_what_the_live_backend_held_at_every_recorded_time(tmp_path):
    states, recorder = record_demo(tmp_path / "demo.rec")
    assert recorder.error is None and recorder.keyframes_written >= 2
    replay = ReplayBackend.open(tmp_path / "demo.rec")
    replay.start()
    for t, live in states.items():
        replay.seek_seconds(t)
        assert cache_state(replay) == live, datetime.fromtimestamp(t, UTC)
    # backwards too: a seek before the position rebuilds from the keyframe before it
    first = min(states)
    replay.seek_seconds(first)
    assert cache_state(replay) == states[first]


def test_positions_replay_the_recorded_visibility_answers(tmp_path):
    world = build_world("demo")
    live = SimulatedBackend(world, realtime=False)
    live.start()
    recorder = SessionRecorder(live, tmp_path / "p.rec", source="SimulatedBackend").start()
    world.advance(30)
    reports = {(lq.namespace, lq.name): live.pending_positions_local_queue(lq.namespace or "", lq.name)
               for lq in live.local_queues()}
    recorder.close()
    replay = ReplayBackend.open(tmp_path / "p.rec")
    replay.start()
    replay.seek("end")
    for (ns, name), report in reports.items():
        again = replay.pending_positions_local_queue(ns or "", name)
        assert (again.source, again.entries, again.message) == (report.source, report.entries, report.message)
    replay.seek("start")
    answer = replay.pending_positions_local_queue("team-nlp", "jobqueue")
    assert answer.estimated and "the recording holds no visibility API answer" in answer.message


def test_a_seek_decodes_only_the_member_of_the_keyframe_before_it(tmp_path):
    states, _ = record_demo(tmp_path / "kf.rec", seconds=600, keyframe_every_s=30.0)
    reader = RecordingReader(tmp_path / "kf.rec")
    total = sum(m.records for m in reader.members)
    assert len(reader.members) >= 4
    replay = ReplayBackend(reader)
    replay.start()
    before = reader.records_decoded
    last = max(states)
    replay.seek_seconds(last)
    member = reader.members[reader.member_at(last)]
    assert reader.records_decoded - before == member.records < total / 2
    assert cache_state(replay) == states[last]


def test_a_file_cut_short_replays_up_to_its_last_complete_record(tmp_path):
    states, _ = record_demo(tmp_path / "full.rec", seconds=300)
    data = (tmp_path / "full.rec").read_bytes()
    cut = tmp_path / "cut.rec"
    cut.write_bytes(data[: int(len(data) * 0.7)])
    reader = RecordingReader(cut)
    assert reader.truncated
    replay = ReplayBackend(reader)
    replay.start()
    replay.seek("end")
    end = replay.clock.end
    assert min(states) <= end < max(states)
    # every recorded time it still holds replays as it was live
    for t in (t for t in states if t <= end):
        replay.seek_seconds(t)
        assert cache_state(replay) == states[t]


def test_an_unflushed_recording_of_a_killed_app_still_opens(tmp_path):
    """The recorder syncs the compressor often; a process killed mid-member leaves a readable prefix."""
    record_demo(tmp_path / "full.rec", seconds=120, keyframe_every_s=1000)
    data = (tmp_path / "full.rec").read_bytes()
    raw = zlib.decompress(data, wbits=31)
    assert raw.count(b"\n") > 3
    cut = tmp_path / "killed.rec"
    cut.write_bytes(data[:-9])  # no gzip trailer, the last line may be partial
    reader = RecordingReader(cut)
    assert reader.truncated and reader.members and reader.members[0].records >= 1


def test_secrets_never_reach_the_file(tmp_path):
    record_demo(tmp_path / "s.rec", seconds=100, with_secret=True)
    text = zlib.decompress((tmp_path / "s.rec").read_bytes(), wbits=31).decode()
    assert "leaky" in text  # the object is recorded ...
    assert SECRET not in text  # ... without its secrets
    assert '"HF_TOKEN","value":"<redacted>"' in text


def test_every_mutation_of_a_replay_is_refused_naming_it(tmp_path):
    record_demo(tmp_path / "m.rec", seconds=50)
    replay = ReplayBackend.open(tmp_path / "m.rec")
    replay.start()
    job = replay.jobs()[0]
    results = [
        *replay.submit([{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "namespace": "team-nlp"}}]),
        replay.cancel(ResourceKind.JOB, job.namespace or "", job.name),
        replay.annotate(ResourceKind.JOB, job.namespace or "", job.name, {"a": "b"}),
        replay.hold(ResourceKind.CLUSTER_QUEUE, "jobqueue"),
        replay.cordon("h100-node-0"), replay.uncordon("h100-node-0"), replay.annotate_node("h100-node-0", {"a": "b"}),
        *replay.drain("h100-node-0").failed,
        replay.create_multikueue_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                                         "metadata": {"name": "ac"}}),
        replay.delete_multikueue_object(ResourceKind.ADMISSION_CHECK, "ac"),
        replay.set_multikueue_config_clusters("mk", ["w1"]),
    ]
    assert all(not r.ok and "replay of m.rec (read-only)" in r.message for r in results)
    with pytest.raises(ClusterError, match="logs are not part of a recording"):
        replay.open_logs(LogRequest(namespace=job.namespace or "", job=job.name))
    with pytest.raises(ClusterError, match="replay of m.rec"):
        replay.drain_inputs("h100-node-0")
    assert replay.jobs()[0] == job  # and nothing changed


def _gz(path: Path, lines: list[dict]) -> Path:
    path.write_bytes(gzip.compress(b"".join(json.dumps(line).encode() + b"\n" for line in lines)))
    return path


@pytest.mark.parametrize("case, expected", [
    ("missing", "no such file"),
    ("empty", "the file is empty"),
    ("plain", "not gzip-compressed"),
    ("version", "format version 99"),
    ("foreign", "its first line is no tau-tui-recording header"),
    ("no-keyframe", "holds no complete snapshot"),
])
def test_a_bad_file_gets_one_message_naming_it(tmp_path, case, expected):
    path = tmp_path / f"{case}.rec"
    header = {"format": fmt.FORMAT, "version": fmt.VERSION}
    if case == "empty":
        path.write_bytes(b"")
    elif case == "plain":
        path.write_text('{"format": "tau-tui-recording"}\n')
    elif case == "version":
        _gz(path, [{**header, "version": 99}])
    elif case == "foreign":
        _gz(path, [{"hello": "world"}])
    elif case == "no-keyframe":
        _gz(path, [header])
    with pytest.raises(fmt.RecordingError) as err:
        RecordingReader(path)
    assert str(path) in err.value.message and expected in err.value.message


def test_the_app_command_refuses_a_bad_recording_with_exit_2_and_no_traceback(tmp_path, capsys):
    from tau_tui.cli import main

    path = tmp_path / "plain.rec"
    path.write_text("hello\n")
    assert main(["--replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "not gzip-compressed" in err and "Traceback" not in err
    existing = tmp_path / "taken.rec"
    existing.write_text("x")
    assert main(["--demo", "--record", str(existing)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_step_speed_and_seek_words(tmp_path):
    record_demo(tmp_path / "c.rec", seconds=200)
    replay = ReplayBackend.open(tmp_path / "c.rec")
    replay.start()
    clock = replay.clock
    assert clock.paused and clock.position == clock.start
    times = sorted({t for m in range(len(replay.reader.members)) for t in
                    (r["t"] for r in replay.reader.member_records(m))})
    replay.step(1)
    assert clock.position == next(t for t in times if t > clock.start)
    replay.step(1)
    second = clock.position
    replay.step(-1)
    assert clock.position < second
    assert [replay.faster() for _ in range(4)] == [2.0, 4.0, 8.0, 16.0] and replay.faster() == 16.0
    replay.play()
    before = clock.position
    replay.play_for(10)  # ten wall seconds at ×16
    assert clock.position == min(before + 160, clock.end)
    start, end = clock.start, clock.end
    assert parse_seek("09:01", start, start, end) == start + 60
    assert parse_seek("09:01:30", start, start, end) == start + 90
    assert parse_seek("+90s", start, start, end) == start + 90
    assert parse_seek("-2m", start + 200, start, end) == start + 80
    assert parse_seek("1m30s", end, start, end) == start + 90
    for bad, why in (("12:00", "outside the recording"), ("later", "cannot seek"), ("25:00", "not a time of day")):
        with pytest.raises(ValueError, match=why):
            parse_seek(bad, start, start, end)
