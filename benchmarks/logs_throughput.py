"""Benchmark the log path: LogStream -> LogSpool -> LogView at 50,000 lines/s, and search of a 1 GB spool.

Scenarios (each repeated, medians reported):
  single  one container stream at RATE lines/s for SECONDS
  merged  8 container streams merged by timestamp, RATE lines/s in total (RATE/8 each)
For each: lines produced vs lines in the spool (dropped must be 0), the spool's write rate, the
time from the end of the stream (the source's last line handed over) until that last line is on
screen in a LogView (Textual, headless through App.run_test at 160x48, polled every 0.1 s as the
logs screen does), and the RSS growth of the process over the run.
search  a spool of SEARCH_GB GB (about 10 M lines of ~100 bytes) written through the spool,
        searched for a rare plain substring (case-insensitive, the logs screen's default) and for a
        regex; the spool is deleted afterwards.

The source is an in-process LogSource (the same protocol the Kubernetes backend serves): it hands
over kubelet-format lines ("<RFC3339Nano> <text>") in chunks, paced by the wall clock; if the
consumer falls behind, the source does not skip lines, it hands over the backlog, so a slow
consumer shows as lag and a lower rate, never as hidden loss.

Run: .venv/bin/python benchmarks/logs_throughput.py [--repeat 3] [--seconds 60] [--rate 50000] [--search-gb 1]
Writes benchmarks/results/logs_throughput.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine  # noqa: E402
from percentiles import median  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402

from tau_tui.core.cluster.logspool.log_requests import LogChunkRequest, LogRequest  # noqa: E402
from tau_tui.core.cluster.logspool.spool import LogSpool
from tau_tui.core.cluster.logspool.stream import LogStream
from tau_tui.core.cluster.logspool.timestamps import format_timestamp_ns
from tau_tui.widgets.log_view import LogView  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK_SECONDS = 0.01
MAX_CHUNK_LINES = 1000  # about 100 KB  # the source hands over what is due every 10 ms (urllib3 reads in similar chunks)
FILLER = "INFO trainer step done loss=0.4231 lr=3.0e-04 tokens/s=181234 grad_norm=1.07"


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class PacedSource:
    """LogSource: every container yields its due lines each CHUNK_SECONDS until `seconds` have passed."""

    def __init__(self, targets: list[tuple[str, str]], rate_per_stream: float, seconds: float):
        self.targets = targets
        self.rate = rate_per_stream
        self.seconds = seconds
        self.produced = 0
        self.last_text = ""
        self.ended_at: float | None = None
        self._lock = threading.Lock()
        self._open = len(targets)

    def resolve_log_targets(self, request: LogRequest) -> list[tuple[str, str]]:
        return self.targets

    def container_finished(self, namespace: str, pod: str, container: str) -> bool:
        return True

    def open_container_log(self, request: LogChunkRequest):
        return _PacedLog(self, request.pod)

    def _done(self, count: int, last: str) -> None:
        with self._lock:
            self.produced += count
            self._open -= 1
            if self._open == 0:
                self.last_text = last
                self.ended_at = time.monotonic()


class _PacedLog:
    def __init__(self, source: PacedSource, pod: str):
        self.source = source
        self.pod = pod
        self._closed = False

    def close(self) -> None:
        self._closed = True

    def __iter__(self):
        src = self.source
        total = int(src.rate * src.seconds)
        start = time.monotonic()
        wall_ns = time.time_ns()
        sent = 0
        last = ""
        second, stamp = -1, ""
        while sent < total and not self._closed:
            # At most MAX_CHUNK_LINES per read, as a socket read returns at most its buffer.
            due = min(total, int((time.monotonic() - start) * src.rate), sent + MAX_CHUNK_LINES)
            if due <= sent:
                time.sleep(CHUNK_SECONDS)
                continue
            parts = []
            for n in range(sent, due):
                # One timestamp per line, spaced evenly: distinct and increasing, as kubelet's are.
                secs, frac = divmod(wall_ns + int(n * 1e9 / src.rate), 1_000_000_000)
                if secs != second:
                    second, stamp = secs, format_timestamp_ns(secs * 1_000_000_000)[:19]
                last = f"{FILLER} seq={n}"
                parts.append(f"{stamp}.{frac:09d}Z {last}\n")
            sent = due
            yield "".join(parts).encode()
        src._done(sent, last)


class LogBench(App):
    """Only a LogView, polled like the logs screen polls it."""

    def compose(self) -> ComposeResult:
        yield LogView(id="log-view")

    def on_mount(self) -> None:
        self.set_interval(0.1, lambda: self.query_one(LogView).poll())


def visible_rows(view: LogView) -> list[str]:
    return ["".join(seg.text for seg in view.render_line(y)).rstrip() for y in range(view.size.height)]


async def stream_round(streams: int, rate: float, seconds: float, spool_dir: str) -> dict:
    targets = [(f"trainer-{i}", "main") for i in range(streams)]
    source = PacedSource(targets, rate / streams, seconds)
    request = LogRequest(namespace="bench", pods=tuple(p for p, _ in targets), container="main", follow=True)
    app = LogBench()
    out: dict = {}
    async with app.run_test(size=(160, 48)) as pilot:
        view = app.query_one(LogView)
        await pilot.pause(0.2)
        rss_start = rss_mb()
        rss_peak = rss_start
        stream = LogStream(source, request, targets, spool_dir=spool_dir)
        view.set_spool(stream.spool)
        started = time.monotonic()
        cpu_started = time.process_time()
        stream.start()
        samples: list[tuple[float, int]] = []
        limit = started + seconds * 3 + 60
        on_screen_at = None
        while time.monotonic() < limit:
            await asyncio.sleep(0.05)
            now = time.monotonic()
            samples.append((now, stream.spool.committed_count))
            rss_peak = max(rss_peak, rss_mb())
            if source.ended_at is not None and source.last_text:
                rows = visible_rows(view)
                if any(source.last_text in r for r in rows):
                    on_screen_at = time.monotonic()
                    break
        stream.wait_done(30)
        cpu_used = time.process_time() - cpu_started
        committed = stream.spool.committed_count
        ended = source.ended_at or time.monotonic()
        # Write rate over the streaming window (first line to the source's end).
        first = next((t for t, c in samples if c > 0), started)
        in_window = [c for t, c in samples if t <= ended]
        written_by_end = in_window[-1] if in_window else 0
        out = {
            "streams": streams,
            "rate_target": rate,
            "seconds": seconds,
            "produced": source.produced,
            "spooled": committed,
            "dropped": source.produced - committed,
            "source_seconds": ended - started,
            "achieved_source_rate": source.produced / max(1e-9, ended - started),
            "spool_write_rate": written_by_end / max(1e-9, ended - first),
            "spool_mb_per_s": stream.spool.size_bytes / max(1e-9, (ended - first)) / 1e6 * (written_by_end / max(1, committed)),
            "last_line_on_screen_after_end_s": (on_screen_at - ended) if on_screen_at else None,
            "cpu_share": cpu_used / max(1e-9, time.monotonic() - started),
            "rss_start_mb": rss_start,
            "rss_growth_mb": rss_peak - rss_start,
            "spool_bytes": stream.spool.size_bytes,
        }
        stream.close(delete_spool=True)
    return out


def search_round(gb: float, spool_dir: str) -> dict:
    spool = LogSpool(directory=spool_dir)
    target = int(gb * 1e9)
    rare = "needle-7f3a"
    batch = []
    line_no = 0
    started = time.perf_counter()
    base = "2026-11-30T12:00:00.000000000Z " + FILLER
    while spool.size_bytes < target:
        for _ in range(10_000):
            line_no += 1
            text = f"{base} seq={line_no}"
            if line_no % 1_000_003 == 0:
                text += f" {rare.upper()} found"
            batch.append(text)
        spool.append_lines(batch)
        batch.clear()
    write_s = time.perf_counter() - started
    out = {"bytes": spool.size_bytes, "lines": spool.committed_count, "write_s": write_s}
    # Drop the page cache effect honestly: both a first (possibly cold) and a second search are kept.
    for label, pattern, regex in (("plain, ignore case", rare, False), ("plain, ignore case (again)", rare, False),
                                  ("regex", r"NEEDLE-[0-9a-f]{4} found", True)):
        t0, c0 = time.perf_counter(), time.process_time()
        hits = spool.search(pattern, regex=regex)
        out[label] = {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "hits": len(hits)}
    out["expected_hits"] = line_no // 1_000_003
    spool.close(delete=True)
    return out


def summarize(values: list[float]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    med = median(values)
    return f"{med:,.3f} ({min(values):,.3f}..{max(values):,.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=50_000.0)
    parser.add_argument("--search-gb", type=float, default=1.0)
    parser.add_argument("--skip", choices=("single", "merged", "search"), action="append", default=[])
    parser.add_argument("--spool-dir", default=None, help="where spools go (default: the temp dir)")
    parser.add_argument("--one-round", choices=("single", "merged"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    spool_dir = args.spool_dir or tempfile.gettempdir()
    if args.one_round:  # a child: one stream round in a fresh process, so RSS growth is its own
        streams = 1 if args.one_round == "single" else 8
        print(json.dumps(asyncio.run(stream_round(streams, args.rate, args.seconds, spool_dir))))
        return 0
    info = machine()
    results: dict = {"machine": info, "args": vars(args), "single": [], "merged": [], "search": []}
    for _ in range(args.repeat):
        for kind in ("single", "merged"):
            if kind not in args.skip:
                child = subprocess.run([sys.executable, __file__, "--one-round", kind, "--rate", str(args.rate),
                                        "--seconds", str(args.seconds), "--spool-dir", spool_dir],
                                       capture_output=True, text=True, check=True)
                results[kind].append(json.loads(child.stdout.strip().splitlines()[-1]))
        if "search" not in args.skip:
            results["search"].append(search_round(args.search_gb, spool_dir))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "logs_throughput.json").write_text(json.dumps(results, indent=2))

    print(f"logs benchmark, {info['date']}, {info['nproc']} CPU ({info['cpu']}), Python {info['python']}, "
          f"load {info['loadavg']:.1f}; medians of {args.repeat} (min..max)")
    for key in ("single", "merged"):
        rounds = results[key]
        if not rounds:
            continue
        print(f"\n{key}: {rounds[0]['streams']} stream(s), {args.rate:,.0f} lines/s total for {args.seconds:.0f} s")
        for field, label in (("produced", "lines produced"), ("dropped", "lines dropped"),
                             ("achieved_source_rate", "lines/s handed over"),
                             ("spool_write_rate", "spool write rate, lines/s"),
                             ("spool_mb_per_s", "spool write rate, MB/s"),
                             ("last_line_on_screen_after_end_s", "last line on screen after end, s"),
                             ("cpu_share", "CPU used, cores (whole process)"),
                             ("rss_growth_mb", "RSS growth, MB")):
            print(f"  {label:36s} {summarize([r[field] for r in rounds])}")
    if results["search"]:
        rounds = results["search"]
        print(f"\nsearch: {rounds[0]['bytes'] / 1e9:.2f} GB, {rounds[0]['lines']:,} lines "
              f"(written in {summarize([r['write_s'] for r in rounds])} s)")
        for label in ("plain, ignore case", "plain, ignore case (again)", "regex"):
            print(f"  {label:36s} {summarize([r[label]['seconds'] for r in rounds])} s wall, "
                  f"{summarize([r[label]['cpu_seconds'] for r in rounds])} s CPU, "
                  f"hits {rounds[0][label]['hits']} (expected {rounds[0]['expected_hits']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
