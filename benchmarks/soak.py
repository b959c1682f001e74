"""Soak: the app against benchmarks/watch_source.py for hours, the source restarted every so often.

The app (``TauApp``, read-only, the Queue pane, 160x48) runs in this process on Textual's headless
driver, against the real backend reading a watch source (benchmarks/watch_source.py, a subprocess)
through a kubeconfig, with private XDG folders and the collector tuned as ``tau-tui`` tunes it.
The source makes ``--rate`` changes/s over ``--workloads`` Workloads (half to the 8 hot rows
``aaa-bench/bench-NN``, their queue set to ``q-<seq>``; half rewriting another Workload's
QuotaReserved message) and is stopped and started again every ``--restart-every`` seconds on the
same port with the world as it left it (``--state``: each object at its resourceVersion, the watch
history starting above them all), so the app's resumed watch is answered 410 and relists: a relist
per restart, as after an API server's restart and compaction.  The changes start once the app's cache and the Queue pane hold every Workload.

Recorded:
- the process's RSS (VmRSS) every ``--rss-every`` seconds; its growth from the end of the first
  restart period (``--warmup``, 15 min by default) to the end, and the most it rose above that;
  with each sample, what it is made of (``memory``: Python's small blocks in use, the C heap's
  bytes in use and free, the objects frozen out of the collector's sight, the Workload lists so far);
- staleness of every hot change: from the moment the source's store held it (its line in the run's
  changes file) until the Queue pane's row (the table state the next frame draws, read every
  50 ms) showed that value or a newer one (benchmarks/staleness.py); those never shown are counted;
  per run and over all.  Observations go to a file as they are made and are read at the end, so
  the measuring holds no growing list beside the app;
- at the end, with the last run's changes done and the source still serving, every Workload's state
  compared with the source's (read from its list), on the screen's side: the app's cache (each
  Workload there, at the source's resourceVersion, and none else) and the Queue pane's rows (a row
  per Workload, none else, its Queue column the Workload's queue, its State column its state and,
  pending, its Why column the QuotaReserved message), looked at again until all agree or
  ``--settle`` seconds passed: the mismatches left, and how long agreeing took;
- the app's Workload relists (one per restart expected) and each source run's summary.

Run (the issue's soak: 2 hours, 200 changes/s, 20,000 Workloads, a restart every 15 minutes):
    .venv/bin/python benchmarks/soak.py --json benchmarks/results/soak.json
Smoke (3 minutes, small; keep its JSON out of results):
    .venv/bin/python benchmarks/soak.py --seconds 180 --workloads 2000 --restart-every 60 --warmup 60 \\
        --rss-every 10 --json /tmp/soak-smoke.json
Only 127.0.0.1; the source processes are stopped by their PID."""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine, machine_line  # noqa: E402
from percentiles import Summary, summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from staleness import Change, Observation, read_changes, staleness  # noqa: E402

HOT_NAMESPACE = "aaa-bench"
HOT_ROWS = 8
SOURCE_READY_S = 600.0
WHOLE_LIST_LIMIT_S = 900.0
LOOK_EVERY_S = 0.05
READY = re.compile(r"READY http://127\.0\.0\.1:(\d+) pid (\d+)")
#: Columns of the Queue pane's workloads table (screens/queue_workloads.py WORKLOAD_COLUMNS).
STATE_CELL, QUEUE_CELL, WHY_CELL = 0, 4, 7


def rss_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo2() -> Any:
    try:
        call = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    call.restype = _MallInfo2
    return call


MALLINFO2 = _mallinfo2()


def memory_detail() -> dict[str, float | int | None]:
    """What the RSS is made of, to tell live objects from memory the allocators keep: the Python
    objects' small blocks in use (pymalloc, ``sys.getallocatedblocks``), the C heap's bytes in use
    and free (glibc ``mallinfo2``: in its heaps and in mmapped chunks), the objects frozen out of
    the collector's sight (``gc.get_freeze_count``)."""
    info = MALLINFO2() if MALLINFO2 is not None else None
    mib = 1024 * 1024
    return {"python_blocks": sys.getallocatedblocks(), "frozen_objects": gc.get_freeze_count(),
            "malloc_in_use_mb": round((info.uordblks + info.hblkhd) / mib, 1) if info else None,
            "malloc_free_mb": round(info.fordblks / mib, 1) if info else None}


def workload_informer(app: Any) -> Any:
    """The app's watch of Workloads (its ``relists`` count the lists it made), or None."""
    from tau_tui.core.cluster.kinds import ResourceKind

    return next((i for i in getattr(app.backend, "_informers", [])
                 if i.kind is ResourceKind.WORKLOAD and not i.node_pods), None)


def plain(cell: Any) -> str:
    return getattr(cell, "plain", None) or str(cell)


class SourceRun:
    """One run of the watch source (a subprocess), stopped by its PID: ``seconds`` of changes, then
    ``linger`` seconds more of serving."""

    def __init__(self, args: argparse.Namespace, work: Path, number: int, port: int, seq_start: int, seconds: float,
                 wait_for_signal: bool, linger: float) -> None:
        self.number, self.seq_start, self.seconds = number, seq_start, seconds
        self.expected = int(args.rate * seconds)  # what its changer makes
        self.changes_file = work / f"changes-{number:03d}.jsonl"
        command = [sys.executable, str(REPO / "benchmarks/watch_source.py"), "--workloads", str(args.workloads),
                   "--hot-rows", str(HOT_ROWS), "--hot-share", "0.5", "--rate", str(args.rate), "--duration", str(seconds),
                   "--linger", str(linger), "--max-seconds", str(seconds + linger + SOURCE_READY_S), "--port", str(port),
                   "--state", str(work / "world.json"), "--seq-start", str(seq_start),
                   "--kubeconfig-out", str(work / "kubeconfig"), "--changes-out", str(self.changes_file)]
        if wait_for_signal:
            command.append("--wait-for-signal")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.port = 0
        self.summary: dict | None = None
        assert self.process.stdout is not None
        deadline = time.monotonic() + SOURCE_READY_S
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                raise RuntimeError(f"the watch source exited {self.process.returncode} before it served")
            ready = READY.search(line)
            if ready:
                self.port = int(ready.group(1))
                break
        self.changes_started = time.monotonic()
        self._counted_at = 0.0
        self._reader = threading.Thread(target=self._read_summary, daemon=True)
        self._reader.start()

    def _read_summary(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                self.summary = json.loads(line)

    def start_changes(self) -> None:
        self.changes_started = time.monotonic()
        self.process.send_signal(signal.SIGUSR1)

    def ended(self) -> bool:
        return self.process.poll() is not None

    def changes_done(self) -> bool:
        """Its changes are all made (it may serve on); the file is counted at most once a second."""
        now = time.monotonic()
        if self.ended():
            return True
        if now - self.changes_started < self.seconds or now - self._counted_at < 1.0:
            return False
        self._counted_at = now
        with open(self.changes_file) as lines:
            return sum(1 for _ in lines) >= self.expected

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # it stops its changes, saves the world and ends
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=10)

    @property
    def made(self) -> int:
        return int((self.summary or {}).get("changes", 0))


def source_workloads(port: int) -> dict[str, dict]:
    """Every Workload the source holds now, by ``namespace/name``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/apis/kueue.x-k8s.io/v1beta2/workloads", timeout=120) as answer:
        items = json.loads(answer.read())["items"]
    return {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in items}


def mismatches(app: Any, table: Any, truth: dict[str, dict]) -> list[str]:
    """What the app's cache and the Queue pane's rows hold otherwise than the source (one line each)."""
    from tau_tui.core.cluster.convert import workload_status_word
    from tau_tui.core.cluster.kinds import ResourceKind

    out: list[str] = []
    cache = app.backend.cache
    for key, obj in truth.items():
        namespace, name = key.split("/", 1)
        view = cache.get(ResourceKind.WORKLOAD, name, namespace)
        if view is None or view.resource_version != obj["metadata"]["resourceVersion"]:
            out.append(f"cache {key}: {'missing' if view is None else 'resourceVersion ' + str(view.resource_version)} "
                       f"(source {obj['metadata']['resourceVersion']})")
        cells = table.row_cells(key)
        if cells is None:
            out.append(f"row {key}: missing")
            continue
        queue = obj["spec"].get("queueName") or "—"
        word = workload_status_word(obj)
        if plain(cells[QUEUE_CELL]) != queue:
            out.append(f"row {key}: queue {plain(cells[QUEUE_CELL])!r} (source {queue!r})")
        if word not in plain(cells[STATE_CELL]):
            out.append(f"row {key}: state {plain(cells[STATE_CELL])!r} (source {word})")
        if word == "pending":
            message = next((c.get("message", "") for c in obj["status"].get("conditions", []) if c.get("type") == "QuotaReserved"), "")
            if " ".join(message.split())[:150] not in plain(cells[WHY_CELL]):
                out.append(f"row {key}: why {plain(cells[WHY_CELL])[:80]!r}… (source message {message[-40:]!r})")
    extra_cached = len(cache.views(ResourceKind.WORKLOAD)) - len(truth)
    if extra_cached > 0:
        out.append(f"cache: {extra_cached} Workloads the source does not hold")
    extra_rows = len(table.all_keys) - len(truth)
    if extra_rows > 0:
        out.append(f"rows: {extra_rows} rows of Workloads the source does not hold")
    return out


async def soak(args: argparse.Namespace, work: Path) -> dict:
    os.environ.update(KUBECONFIG=str(work / "kubeconfig"), XDG_CONFIG_HOME=str(work / "config"),
                      XDG_STATE_HOME=str(work / "state"), XDG_DATA_HOME=str(work / "data"), XDG_CACHE_HOME=str(work / "cache"))
    from tau_tui.app import TauApp
    from tau_tui.core.cluster.kinds import ResourceKind
    from tau_tui.startup.heap import tune_collector
    from tau_tui.widgets.keyed_table import KeyedTable

    tune_collector()
    expected = args.workloads + HOT_ROWS
    periods = [args.restart_every] * int(args.seconds // args.restart_every)
    if args.seconds - sum(periods) > 1 or not periods:
        periods.append(args.seconds - sum(periods))

    def start(number: int, port: int, seq: int) -> SourceRun:
        last = number == len(periods) - 1  # it serves on after its changes while the app settles
        return SourceRun(args, work, number, port, seq, periods[number], number == 0, args.settle + 60 if last else 0.0)

    run = start(0, 0, 0)
    runs = [run]
    port = run.port
    app = TauApp(readonly=True, start_pane="queue")
    rss: list[tuple[float, float]] = []
    memory: list[dict[str, Any]] = []
    result: dict[str, Any] = {"rss_mb": rss, "memory": memory}
    async with app.run_test(size=(160, 48)) as pilot:
        started = time.monotonic()
        table = None
        while time.monotonic() - started < WHOLE_LIST_LIMIT_S:
            await pilot.pause(0.5)
            backend = app.backend
            if backend is None or backend.view_state(ResourceKind.WORKLOAD).status.value != "ready":
                continue
            tables = app.screen.query("#workloads-table")
            table = tables.first(KeyedTable) if tables else None
            if table is not None and backend.cache.count(ResourceKind.WORKLOAD) >= expected and len(table.all_keys) >= expected:
                break
        result["whole_list_after_s"] = round(time.monotonic() - started, 1)
        if table is None:
            raise RuntimeError("the Queue pane never showed the workloads table")
        await pilot.pause(3)
        began = time.monotonic()
        run.start_changes()
        shown: dict[str, str] = {}
        hot_keys = [f"{HOT_NAMESPACE}/bench-{i:02d}" for i in range(HOT_ROWS)]
        next_rss = began
        seq = 0
        with open(work / "observations.jsonl", "w") as observed:

            def look() -> float:
                """The hot rows' Queue column as the table holds it (what the next frame draws), and RSS when due."""
                nonlocal next_rss
                now = time.monotonic()
                for key in hot_keys:
                    cells = table.row_cells(key)
                    value = plain(cells[QUEUE_CELL]) if cells is not None else ""
                    if value.startswith("q-") and shown.get(key) != value:
                        shown[key] = value
                        observed.write(json.dumps([key, value, now]) + "\n")
                if now >= next_rss:
                    rss.append((round(now - began, 1), round(rss_mb(), 1)))
                    informer = workload_informer(app)
                    memory.append({"at": rss[-1][0], **memory_detail(),
                                   "workload_lists": informer.relists if informer else None})
                    next_rss += args.rss_every
                return now

            while not (run.number == len(periods) - 1 and run.changes_done()):
                look()
                if run.ended():  # a restart: the next run, on the same port, from the world as it left it
                    run.stop()
                    seq += run.made
                    run = await asyncio.to_thread(start, len(runs), port, seq)
                    runs.append(run)
                await asyncio.sleep(LOOK_EVERY_S)
            changes_ended = time.monotonic()
            result["rss_mb_at_end"] = round(rss_mb(), 1)
            truth = await asyncio.to_thread(source_workloads, port)
            while True:  # the source serves on: the app settles, and the hot rows are looked at still
                now = look()
                left = mismatches(app, table, truth)
                if not left or now - changes_ended > args.settle:
                    look()  # what agreed is on the hot rows too: their last values are observed
                    break
                await pilot.pause(1.0)
            result["final"] = {"workloads": len(truth), "mismatches": len(left), "examples": left[:20],
                               "agreed_after_s": None if left else round(time.monotonic() - changes_ended, 1)}
        informer = workload_informer(app)
        result["workload_relists"] = informer.relists if informer else None
        result["connection"] = app.backend.connection_state().label
        run.stop()
        seq += run.made
    result["source_runs"] = [{"run": r.number, "seq_start": r.seq_start, "seconds": r.seconds, **(r.summary or {})}
                             for r in runs]
    result["changes_made"] = seq
    return result


def summarize_staleness(work: Path, runs: list[dict]) -> dict:
    looks = []
    with open(work / "observations.jsonl") as lines:
        for line in lines:
            key, value, at = json.loads(line)
            looks.append(Observation(key, value, at))
    overall: list[float] = []
    never, changes = 0, 0
    per_run = []
    for run in runs:
        path = work / f"changes-{run['run']:03d}.jsonl"
        if not path.exists():
            continue
        hot = [Change(c.row, c.value, c.at) for c in read_changes(path) if c.row.startswith(f"{HOT_NAMESPACE}/")]
        if not hot:
            continue
        result = staleness(hot, looks)
        per_run.append({"run": run["run"], "hot_changes": result.changes, "never_reflected": result.never_reflected,
                        "staleness_s": summarize(result.samples).as_dict()})
        overall.extend(result.samples)
        never += result.never_reflected
        changes += result.changes
    return {"hot_changes": changes, "never_reflected": never, "staleness_s": summarize(overall).as_dict(), "per_run": per_run}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2 * 3600.0, help="how long the changes run (default 2 h)")
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=200.0, help="changes/s")
    parser.add_argument("--restart-every", type=float, default=900.0, help="seconds between the source's restarts")
    parser.add_argument("--warmup", type=float, default=900.0, help="RSS growth is counted from this many seconds on")
    parser.add_argument("--rss-every", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=120.0, help="seconds the final state may take to agree")
    parser.add_argument("--json", default=str(REPO / "benchmarks/results/soak.json"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tau-soak-"))
    info = machine()
    result = asyncio.run(soak(args, work))
    result.update(summarize_staleness(work, result["source_runs"]))
    rss = result["rss_mb"]
    after = [mb for at, mb in rss if at >= args.warmup]
    result["rss_growth_after_warmup_mb"] = round(after[-1] - after[0], 1) if len(after) >= 2 else None
    result["rss_rise_after_warmup_mb"] = round(max(after) - after[0], 1) if len(after) >= 2 else None
    info_after = machine()
    save_raw(args.json, {"machine": info, "machine_after": info_after, "args": vars(args), **result}, indent=1)
    stats = Summary(**result["staleness_s"])
    final = result["final"]
    print(f"\nsoak: {args.workloads:,} Workloads, {args.rate:.0f} changes/s for {args.seconds:.0f} s, the source restarted every "
          f"{args.restart_every:.0f} s ({len(result['source_runs'])} runs, {result['workload_relists']} Workload lists by the app)")
    print(machine_line(info, info_after))
    print(f"  RSS {rss[0][1] if rss else float('nan'):.0f} MB at the start of the changes, {result['rss_mb_at_end']:.0f} MB at "
          f"the end; after {args.warmup:.0f} s: growth {result['rss_growth_after_warmup_mb']} MB, rise "
          f"{result['rss_rise_after_warmup_mb']} MB (MiB as /proc reports it)")
    print(f"  staleness {stats.label()}; never reflected {result['never_reflected']:,} of {result['hot_changes']:,} hot changes")
    print(f"  final state: {final['mismatches']} mismatches of {final['workloads']:,} Workloads"
          + (f" (agreed {final['agreed_after_s']} s after the changes ended)" if final["agreed_after_s"] is not None else "")
          + "".join(f"\n    {line}" for line in final["examples"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
