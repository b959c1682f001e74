"""Benchmark session recording and replay (`--record`, `--replay`) on the `large` scenario.

20,000 Workloads, 2,000 nodes, 45,596 objects in the cache. Measures, as medians over
repetitions: the cache snapshot taken under the cache's lock when a keyframe is due (what an
informer or the UI may wait for), writing that keyframe on the recorder's thread (redaction, JSON,
gzip), the file's size, indexing the file when a replay opens it, and a replay's first seek
(decoding the keyframe and loading it into the replay's cache).

Run: .venv/bin/python benchmarks/recording_large.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine, machine_line  # noqa: E402
from percentiles import median  # noqa: E402
from raw_results import save_raw  # noqa: E402

from tau_tui.core.operations.recording.reader import RecordingReader  # noqa: E402
from tau_tui.core.operations.recording.replay_backend import ReplayBackend  # noqa: E402
from tau_tui.core.operations.recording.writer import SessionRecorder  # noqa: E402
from tau_tui.core.sim.backend import SimulatedBackend  # noqa: E402
from tau_tui.core.sim.scenario import build_world  # noqa: E402


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def one_round(directory: Path, number: int) -> dict[str, float]:
    out: dict[str, float] = {}
    world = build_world("large")
    backend = SimulatedBackend(world)
    backend.start()
    out["cache snapshot (under the cache lock)"], snapshot = timed(backend.cache.snapshot)
    out["objects"] = float(sum(len(items) for items in snapshot.raw.values()))
    path = directory / f"large-{number}.rec"
    recorder = SessionRecorder(backend, path, source="SimulatedBackend").start()
    out["keyframe written (recorder thread)"], _ = timed(recorder.close)
    out["file size (MiB)"] = path.stat().st_size / 2**20
    out["index on open"], reader = timed(lambda: RecordingReader(path))
    replay = ReplayBackend(reader)
    out["first seek (decode + load the keyframe)"], _ = timed(replay.start)
    assert len(replay.workloads()) == 20_000
    backend.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default="benchmarks/results/recording_large.json", help="raw samples (default: %(default)s)")
    args = parser.parse_args()
    before = machine()
    with tempfile.TemporaryDirectory() as directory:
        rounds = [one_round(Path(directory), n) for n in range(args.repeat)]
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        middle = median(values)
        print(f"{key:45s} median {middle:10.3f}  range {min(values):.3f}..{max(values):.3f}")
    after = machine()
    print(machine_line(before, after))
    path = save_raw(args.json, {"scenario": "large", "repeat": args.repeat, "rounds": rounds,
                                "machine": before, "machine_after": after})
    print(f"raw samples: {path}")


if __name__ == "__main__":
    main()
