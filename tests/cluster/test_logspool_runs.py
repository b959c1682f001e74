"""A followed run's log stream: the run's next pod joins it (a retried Job), a container still
running when the run ends is read once more to its end, and the stream then ends: every line of
every pod lands exactly once.  A scripted source stands in for the backend; the same on a real
control plane: tests/integration/test_logs_t2.py."""

from __future__ import annotations

import threading

from tau_tui.core.cluster.logspool.log_requests import LogChunkRequest, LogRequest
from tau_tui.core.cluster.logspool.stream import LogStream
from tau_tui.core.cluster.logspool.timestamps import format_timestamp_ns, split_timestamp

BASE = 1_767_225_600 * 10**9
DONE_WITHIN_S = 30  # a hang's bound only


class RunSource:
    """A Job's pods that appear one after the other; each pod's container writes lines until told to
    stop, and a follow read stays open until the test ends the run (as a training run's would)."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.pods: list[str] = []
        self.lines: dict[str, list[bytes]] = {}
        self.finished_run = False
        self.finished_pods: set[str] = set()
        self.opens: list[LogChunkRequest] = []

    def add_pod(self, pod: str) -> None:
        with self.lock:
            self.pods.append(pod)
            self.lines[pod] = []
            self.lock.notify_all()

    def write(self, pod: str, count: int) -> None:
        with self.lock:
            start = len(self.lines[pod])
            for i in range(start, start + count):
                ns = BASE + (len(self.pods) * 1000 + i) * 10**6
                self.lines[pod].append(f"{format_timestamp_ns(ns)} {pod} line {i}".encode())
            self.lock.notify_all()

    def end_run(self) -> None:
        with self.lock:
            self.finished_run = True
            self.lock.notify_all()

    # -- the LogSource protocol -----------------------------------------------------------
    def resolve_log_targets(self, request):
        with self.lock:
            return [(pod, "main") for pod in self.pods]

    def run_finished(self, request) -> bool:
        with self.lock:
            return self.finished_run

    def container_finished(self, namespace, pod, container) -> bool:
        with self.lock:
            return pod in self.finished_pods

    def open_container_log(self, req: LogChunkRequest):
        with self.lock:
            self.opens.append(req)
        since = int(req.since_time.timestamp()) * 10**9 if req.since_time else 0
        source = self

        class Reader:
            closed = False

            def __iter__(self):
                sent = 0
                while not self.closed:
                    with source.lock:
                        lines = [line for line in source.lines[req.pod] if split_timestamp(line)[0] >= since]
                        fresh, sent = lines[sent:], len(lines)
                        ended = req.pod in source.finished_pods
                        if not fresh and req.follow and not ended:
                            source.lock.wait(0.05)
                    if fresh:
                        yield b"".join(line + b"\n" for line in fresh)
                    elif not req.follow or ended:
                        return

            def close(self):
                self.closed = True

        return Reader()


def test_a_followed_job_picks_up_its_next_pod_and_ends_with_the_run(tmp_path):
    source = RunSource()
    source.add_pod("train-a")
    source.write("train-a", 5)
    request = LogRequest("ns", job="train", follow=True, prefix=True)
    stream = LogStream(source, request, [("train-a", "main")], spool_dir=str(tmp_path), watch_run=True)
    stream.RUN_WATCH_INTERVAL = 0.05
    stream.start()
    try:
        assert stream.spool.wait_for_lines(5, DONE_WITHIN_S)
        with source.lock:
            source.finished_pods.add("train-a")  # the first pod failed; the Job makes another
        source.add_pod("train-b")
        source.write("train-b", 4)
        assert stream.spool.wait_for_lines(9, DONE_WITHIN_S), stream.spool.lines()
        source.write("train-b", 3)  # still running when the run ends: these must land too
        source.end_run()
        assert stream.wait_done(DONE_WITHIN_S), f"the stream did not end with the run: {stream.state}"
        lines = stream.spool.lines()
    finally:
        stream.close(delete_spool=True)
    expected_a = [f"[train-a] train-a line {i}" for i in range(5)]
    expected_b = [f"[train-b] train-b line {i}" for i in range(7)]
    assert [line for line in lines if line.startswith("[train-a]")] == expected_a
    assert [line for line in lines if line.startswith("[train-b]")] == expected_b
    assert len(lines) == 12
    # the running pod was read once more without follow at the run's end
    assert any(req.pod == "train-b" and not req.follow for req in source.opens)


def test_a_followed_run_with_no_pod_yet_waits_for_its_first_one(tmp_path):
    source = RunSource()
    stream = LogStream(source, LogRequest("ns", job="train", follow=True), [], spool_dir=str(tmp_path), watch_run=True)
    stream.RUN_WATCH_INTERVAL = 0.05
    stream.start()
    try:
        assert not stream.done
        source.add_pod("train-a")
        source.write("train-a", 3)
        assert stream.spool.wait_for_lines(3, DONE_WITHIN_S)
        source.end_run()
        assert stream.wait_done(DONE_WITHIN_S)
        assert stream.spool.lines() == [f"train-a line {i}" for i in range(3)]
    finally:
        stream.close(delete_spool=True)
