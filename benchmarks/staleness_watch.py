"""Event-to-screen staleness of tau-tui on benchmarks/watch_source.py at several change rates.

Per rate: the watch source (a subprocess: ``--workloads`` Workloads, ``--hot-rows`` pending rows
``bench-NN`` in ``aaa-bench``, the changes held until SIGUSR1) and `tau-tui --readonly --pane
queue` (all namespaces; ``--namespace aaa-bench``: the hot rows' only) in its own tmux server at 160x48, connected through the kubeconfig the
source wrote.  Once the bench rows are on screen (and 3 s more), the changes start; the screen is
captured every 20 ms until the source ends.  Each hot change's staleness (benchmarks/staleness.py)
is from the moment the source's store held it (the ``at`` of its line in the changes file) until a
capture shows its ``q-<seq>`` or a newer one on its row; every hot change counts, and those never
reflected are counted.  p50/p90/p99/max by nearest rank (benchmarks/percentiles.py).  Also: the
tool's CPU (utime + stime from /proc) over the changes, per 1,000 changes made (hot and cold), its
peak RSS, and the source's own summary (achieved rate, how far it lagged, its CPU).

Run: .venv/bin/python benchmarks/staleness_watch.py [--rates 200,1000,5000] [--workloads 20000]
     [--seconds 60] [--hot-share 0.5] [--namespace aaa-bench] [--json benchmarks/results/staleness_watch.json]
Only 127.0.0.1; every process started here is stopped by its PID.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine  # noqa: E402
from percentiles import Summary, summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from staleness import Change, Observation, look_at_screen, read_changes, staleness  # noqa: E402
from tmux_screen import Screen  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HOT_PAIR = re.compile(r"\b(bench-\d\d)\b.*?\b(q-\d+)\b")
CAPTURE_S = 0.02
ROWS_LIMIT_S = 600.0
SOURCE_READY_S = 300.0


def cpu_seconds(pid: int | None) -> float:
    """utime + stime of ``pid`` (its threads included), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def start_source(args: argparse.Namespace, rate: float, work: Path) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, str(REPO / "benchmarks/watch_source.py"), "--workloads", str(args.workloads),
               "--hot-rows", str(args.hot_rows), "--hot-share", str(args.hot_share), "--rate", str(rate),
               "--duration", str(args.seconds), "--linger", "5", "--max-seconds", str(args.seconds + ROWS_LIMIT_S + 120),
               "--wait-for-signal", "--kubeconfig-out", str(work / "kubeconfig"), "--changes-out", str(work / "changes.jsonl")]
    source = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert source.stdout is not None
    deadline = time.monotonic() + SOURCE_READY_S
    line = ""
    while time.monotonic() < deadline and not line.startswith("READY"):
        line = source.stdout.readline()
        if not line and source.poll() is not None:
            raise RuntimeError(f"the watch source exited {source.returncode} before it served")
    return source, str(work / "kubeconfig")


def one_rate(args: argparse.Namespace, rate: float) -> dict:
    work = Path(tempfile.mkdtemp(prefix="tau-staleness-"))
    env = dict(os.environ, TERM="xterm-256color", HOME=str(work), XDG_CONFIG_HOME=f"{work}/config",
               XDG_STATE_HOME=f"{work}/state", XDG_DATA_HOME=f"{work}/data", XDG_CACHE_HOME=f"{work}/cache")
    source, kubeconfig = start_source(args, rate, work)
    env["KUBECONFIG"] = kubeconfig
    scope = ["-n", args.namespace] if args.namespace else []
    screen = Screen("tau-tui", [str(Path(sys.executable).parent / "tau-tui"), "--readonly", "--pane", "queue", *scope], env)
    observations: list[Observation] = []
    shown: dict[str, str] = {}
    captures, rss_peak, cpu_used = 0, 0.0, float("nan")
    try:
        started = screen.start()
        while time.monotonic() - started < ROWS_LIMIT_S and not HOT_PAIR.search(screen.capture()):
            time.sleep(0.1)
        rows_after = time.monotonic() - started
        time.sleep(3)  # settle after the first paint
        cpu_before = cpu_seconds(screen.pid)
        source.send_signal(signal.SIGUSR1)
        while source.poll() is None:
            text = screen.capture()
            now = time.monotonic()
            captures += 1
            look_at_screen(text, HOT_PAIR, shown, observations, now)
            rss_peak = max(rss_peak, screen.rss()[0])
            time.sleep(CAPTURE_S)
        cpu_used = cpu_seconds(screen.pid) - cpu_before
    finally:
        screen.stop()
        if source.poll() is None:
            source.terminate()
        try:
            source.wait(timeout=30)
        except subprocess.TimeoutExpired:
            source.kill()
            source.wait()
    assert source.stdout is not None
    summary_lines = [ln for ln in source.stdout.read().splitlines() if ln.startswith("{")]
    records = read_changes(work / "changes.jsonl")
    hot = [Change(row.split("/", 1)[1], value, at) for row, value, at in records if row.startswith("aaa-bench/")]
    result = staleness(hot, observations)
    shutil.rmtree(work, ignore_errors=True)
    return {"rate": rate, "changes_made": len(records), "hot_changes": result.changes,
            "never_reflected": result.never_reflected, "staleness_s": summarize(result.samples).as_dict(),
            "tool_cpu_s": cpu_used, "tool_cpu_s_per_1000_changes": cpu_used / len(records) * 1000 if records else None,
            "rows_on_screen_after_s": rows_after, "captures": captures, "rss_peak_mb": rss_peak,
            "source": json.loads(summary_lines[-1]) if summary_lines else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="200,1000,5000")
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--hot-rows", type=int, default=8)
    parser.add_argument("--hot-share", type=float, default=0.5)
    parser.add_argument("--namespace", help="scope tau-tui to one namespace (default: all)")
    parser.add_argument("--json", default=str(REPO / "benchmarks/results/staleness_watch.json"))
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is not installed", file=sys.stderr)
        return 2
    info = machine()
    runs = []
    for rate in (float(r) for r in args.rates.split(",")):
        print(f"[{rate:.0f} changes/s for {args.seconds:.0f} s over {args.workloads:,} Workloads]", flush=True)
        runs.append(one_rate(args, rate))
    info_after = machine()
    save_raw(args.json, {"machine": info, "machine_after": info_after, "args": vars(args), "runs": runs}, indent=2)
    print(f"\ntau-tui ({args.namespace or 'all namespaces'}) on the watch source, {info['date']}, {info['nproc']} CPU ({info['cpu']}), load {info['loadavg']:.1f}")
    for run in runs:
        stats = Summary(**run["staleness_s"])
        source = run["source"] or {}
        print(f"  {run['rate']:>6.0f}/s  staleness {stats.label()}; never reflected {run['never_reflected']:,} of "
              f"{run['hot_changes']:,} hot changes; tool CPU {run['tool_cpu_s_per_1000_changes'] or float('nan'):.3f} s "
              f"per 1,000 changes ({run['changes_made']:,} made, source at {source.get('achieved_rate', 'n/a')}/s, "
              f"lagging at most {source.get('most_behind', 'n/a')} changes); peak RSS {run['rss_peak_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
