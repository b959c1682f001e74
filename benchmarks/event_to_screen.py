"""Event to screen on `--demo large` (no Go needed): how long a Workload's change takes to reach the
queue pane's table while the cluster changes at RATE changes/s.

The app is `TauApp(demo="large")` (20,000 Workloads, 2,000 nodes, the simulated cluster in its own
process, ticking in real time) driven through Textual's pilot at 160x48 on the queue pane, all
namespaces. Once the workloads are shown, a driver merge-patches `spec.queueName` of BENCH_ROWS
pending Workloads round robin to `q-<sequence>` at RATE/s for SECONDS, from a pool of threads (the
side-by-side benchmark's change, on the simulated cluster). A write returns once its change is in
the app's cache, so the time from that return to the table is the app's own: the change poll, the
pane's read, the plan and its application on the UI thread. The table's state is looked at every
2 ms on the UI thread. Each change's staleness (benchmarks/staleness.py) is the time from the
moment its write returned until a look shows its value or a newer one in its row's Queue cell:
every change counts (one overwritten before the table showed it ends when the newer value shows),
and those no look reflected before the run ended are counted as never reflected; p50/p99/max by
nearest rank (benchmarks/percentiles.py). Also: how many refreshes the queue pane made and what each one's read cost (its
worker's processor time: the cost of a queue-pane tick under that churn), the UI thread's frame time over that minute (the longest gaps between its looks,
which is how long a key would have waited), and peak RSS.

Prints medians (nearest rank) over --repeat launches with min..max, the machine and the date; raw numbers go to
benchmarks/results/event_to_screen.json.

Run: .venv/bin/python benchmarks/event_to_screen.py [--repeat 3] [--rate 200] [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine  # noqa: E402
from percentiles import median, summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from staleness import Change, Observation, staleness  # noqa: E402

from tau_tui.app import TauApp  # noqa: E402
from tau_tui.core.cluster.kinds import ResourceKind  # noqa: E402
from tau_tui.core.operations.audit import AuditLog  # noqa: E402
from tau_tui.screens.queue import WORKLOAD_COLUMNS  # noqa: E402
from tau_tui.settings.settings_file import AppSettings, LoadedSettings  # noqa: E402
from tau_tui.startup.heap import tune_collector  # noqa: E402
from tau_tui.widgets.keyed_table import KeyedTable  # noqa: E402

BENCH_ROWS = 20
LOOK_S = 0.002
WAIT_LIMIT_S = 600.0
QUEUE_CELL = next(index for index, column in enumerate(WORKLOAD_COLUMNS) if column.key == "queue")


class CollectorPauses:
    """The garbage collector's pauses (every thread waits for them), from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []  # (generation, seconds)
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((info["generation"], time.perf_counter() - self._started))

    def start(self) -> CollectorPauses:
        gc.callbacks.append(self)
        return self

    def stop(self) -> None:
        gc.callbacks.remove(self)


class Driver(threading.Thread):
    """Merge-patches spec.queueName at ``rate``/s for ``seconds``, paced by the wall clock."""

    def __init__(self, backend, targets: list[tuple[str, str]], rate: float, seconds: float) -> None:
        super().__init__(daemon=True)
        self.backend, self.targets, self.rate, self.seconds = backend, targets, rate, seconds
        self.sent: dict[int, float] = {}
        self.row_of: dict[int, str] = {}  # the table key (namespace/name) each change went to
        self.cached: dict[int, float] = {}  # when the write returned: its change is in the app's cache
        self.errors = 0
        self.late = 0

    def run(self) -> None:
        total = int(self.rate * self.seconds)
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            for seq in range(total):
                wait = start + seq / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                elif wait < -0.5:
                    self.late += 1
                pool.submit(self._patch, seq, *self.targets[seq % len(self.targets)])

    def _patch(self, seq: int, namespace: str, name: str) -> None:
        self.row_of[seq] = f"{namespace}/{name}"
        self.sent[seq] = time.monotonic()
        try:
            self.backend._api_patch(ResourceKind.WORKLOAD.type, name, namespace, {"spec": {"queueName": f"q-{seq}"}}, False)
            self.cached[seq] = time.monotonic()
        except Exception:
            self.errors += 1


def table_rows(app) -> int:
    try:
        table = app.screen.query_one("#workloads-table", KeyedTable)
    except Exception:
        return 0
    return len(table.state.cells)


async def wait_until(predicate, limit: float = WAIT_LIMIT_S) -> None:
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > limit:
            raise TimeoutError("the workloads never showed")
        await asyncio.sleep(0.05)


async def one_launch(rate: float, seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        app = TauApp(demo="large", settings=LoadedSettings(AppSettings(), Path(tmp) / "config.yaml"),
                     audit=AuditLog(Path(tmp) / "audit.jsonl"), start_pane="queue", demo_realtime=True)
        async with app.run_test(size=(160, 48)):
            await wait_until(lambda: app.backend is not None and table_rows(app) >= 1000)
            await asyncio.sleep(3)  # settle after the first paint, as the side-by-side does
            backend = app.backend
            pending = sorted((w.namespace or "", w.name) for w in backend.workloads() if w.status_word == "pending")
            targets = pending[:BENCH_ROWS]
            keys = {target: f"{target[0]}/{target[1]}" for target in targets}
            table = app.screen.query_one("#workloads-table", KeyedTable)
            missing = [key for key in keys.values() if key not in table.state.cells]
            if missing:
                raise RuntimeError(f"the table keys its rows otherwise than namespace/name: {missing[:3]}")
            driver = Driver(backend, targets, rate, seconds)
            # What each look showed per row, kept only where a row's value changed (all staleness needs).
            observations: list[Observation] = []
            shown: dict[str, str] = {}
            gaps: list[float] = []
            screen = app.screen
            applied = screen.refreshes_applied
            kept_rows = screen._workload_rows
            full_before, quick_before = kept_rows.full_reads, kept_rows.quick_reads
            reads: list[float] = []  # each refresh's read: the pane's worker's processor time, as the pane timed it
            pauses = CollectorPauses().start()
            driver.start()
            end = time.monotonic() + seconds + 5
            last = time.monotonic()
            while time.monotonic() < end:
                await asyncio.sleep(LOOK_S)
                now = time.monotonic()
                gaps.append(now - last)
                last = now
                if screen.refreshes_applied != applied:
                    applied = screen.refreshes_applied
                    reads.append(screen.reader.read_cpu_seconds)
                cells = table.state.cells
                for key in keys.values():
                    text = str(cells[key][QUEUE_CELL]) if key in cells else ""
                    if text.startswith("q-") and shown.get(key) != text:
                        shown[key] = text
                        observations.append(Observation(key, text, now))
            driver.join(timeout=60)
            pauses.stop()
            full_reads, quick_reads = kept_rows.full_reads - full_before, kept_rows.quick_reads - quick_before
            await app.action_quit()
    # Only the changes that were made (a failed write changed nothing): from the write's return
    # (in the app's cache: the app's own time) and from its send.
    from_cache = staleness((Change(driver.row_of[s], f"q-{s}", at) for s, at in driver.cached.items()), observations)
    from_sent = staleness((Change(driver.row_of[s], f"q-{s}", driver.sent[s]) for s in driver.cached), observations)
    cache_s, sent_s = summarize(from_cache.samples), summarize(from_sent.samples)
    writes = summarize(driver.cached[s] - driver.sent[s] for s in driver.cached)
    read_s, frame_s = summarize(reads), summarize(gaps)
    return {"sent": len(driver.sent), "cached": len(driver.cached), "errors": driver.errors, "late": driver.late,
            "changes_made": from_cache.changes, "never_reflected": from_cache.never_reflected,
            "achieved_rate": len(driver.sent) / seconds,
            "from_cache_p50_s": cache_s.p50, "from_cache_p99_s": cache_s.p99_or_max, "from_cache_max_s": cache_s.max,
            "from_cache_p99_note": cache_s.p99_note,
            "from_sent_p50_s": sent_s.p50, "from_sent_p99_s": sent_s.p99_or_max, "from_sent_max_s": sent_s.max,
            "write_p50_s": writes.p50, "write_p99_s": writes.p99_or_max,
            "refreshes": len(reads), "full_reads": full_reads, "quick_reads": quick_reads, "read_p50_s": read_s.p50, "read_max_s": read_s.max,
            "frame_p50_ms": frame_s.p50 * 1000 if frame_s.p50 is not None else None,
            "frame_p99_ms": frame_s.p99_or_max * 1000 if frame_s.p99_or_max is not None else None,
            "frame_max_ms": frame_s.max * 1000 if frame_s.max is not None else None,
            "gc_pauses": len(pauses.pauses), "gc_pause_total_s": sum(p for _, p in pauses.pauses),
            "gc_pause_max_s": max((p for _, p in pauses.pauses), default=0.0),
            "gc_full_pause_max_s": max((p for g, p in pauses.pauses if g == 2), default=0.0),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    tune_collector()  # what the tau-tui entry point does before it starts the app
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--json", default="benchmarks/results/event_to_screen.json")
    args = parser.parse_args()
    launches = []
    for index in range(args.repeat):
        launches.append(asyncio.run(one_launch(args.rate, args.seconds)))
        print(f"  launch {index + 1}/{args.repeat}: {json.dumps(launches[-1])}", file=sys.stderr, flush=True)
    info = machine()
    print(f"tau-tui --demo large, queue pane at 160x48, {args.rate:.0f} changes/s for {args.seconds:.0f} s; "
          f"{args.repeat} launches; {info['date']}")
    print(f"machine: {info['nproc']} CPU {info['cpu']}, Python {info['python']}, load {info['loadavg']:.1f}")
    print(f"{'measure':34s} {'median':>10s}  {'spread (min..max)':>22s}")

    def row(name: str, key: str, scale: float = 1000.0, unit: str = "ms") -> None:
        values = [launch[key] * scale for launch in launches if launch[key] is not None]
        if values:
            print(f"{name:34s} {median(values):9.1f}{unit}  {min(values):9.1f}..{max(values):.1f}{unit}")

    row("achieved changes/s", "achieved_rate", 1.0, "/s")
    row("changes made", "changes_made", 1.0, "")
    row("  never reflected on the table", "never_reflected", 1.0, "")
    row("staleness from the cache p50", "from_cache_p50_s")
    row("staleness from the cache p99", "from_cache_p99_s")
    row("staleness from the cache max", "from_cache_max_s")
    row("staleness from the write's send p50", "from_sent_p50_s")
    row("staleness from the write's send p99", "from_sent_p99_s")
    row("write (to the app's cache) p50", "write_p50_s")
    row("write (to the app's cache) p99", "write_p99_s")
    row("queue-pane refreshes in the run", "refreshes", 1.0, "")
    row("  of which read every Workload", "full_reads", 1.0, "")
    row("  of which read only the changes", "quick_reads", 1.0, "")
    row("queue-pane read (worker CPU) p50", "read_p50_s")
    row("queue-pane read (worker CPU) max", "read_max_s")
    row("UI thread frame p50", "frame_p50_ms", 1.0)
    row("UI thread frame p99", "frame_p99_ms", 1.0)
    row("UI thread frame max", "frame_max_ms", 1.0)
    row("collector pauses in the minute", "gc_pauses", 1.0, "")
    row("  their total", "gc_pause_total_s")
    row("  the longest", "gc_pause_max_s")
    row("  the longest full one", "gc_full_pause_max_s")
    row("peak RSS (app process)", "peak_rss_mb", 1.0, "MB")
    path = Path(args.json)
    save_raw(path, {"machine": info, "rate": args.rate, "seconds": args.seconds, "launches": launches})
    print(f"raw numbers: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
