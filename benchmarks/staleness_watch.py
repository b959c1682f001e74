"""Event-to-screen staleness of tau-tui and k9s on benchmarks/watch_source.py at several change rates.

Per rate, per tool (``--tools``, in turn, each with a fresh source): the watch source (a
subprocess: ``--workloads`` Workloads, ``--hot-rows`` pending rows ``bench-NN`` in ``aaa-bench``,
the changes held until SIGUSR1) and the tool in its own tmux server at 160x48, connected through
the kubeconfig the source wrote, started as benchmarks/side_by_side.py starts it: `tau-tui
--readonly --pane queue`, `k9s --readonly --command workloads.kueue.x-k8s.io` (k9s lists
Workloads as server-side Tables, which the source prints with the Kueue CRD's columns, and
re-lists every 2 s, its default refreshRate); all namespaces (``-A``), or with ``--namespace
aaa-bench`` the hot rows' only (``-n``).  Once the screen says the whole list is in (tau-tui's
counts line, k9s's title count; and 3 s more), the changes start; the screen is captured every 20 ms until the source ends.  Each hot change's
staleness (benchmarks/staleness.py) is from the moment the source's store held it (the ``at`` of
its line in the changes file) until a capture shows its ``q-<seq>`` or a newer one on its row;
every hot change counts, and those never reflected are counted.  p50/p90/p99/max by nearest rank
(benchmarks/percentiles.py).  Also: the tool's CPU (utime + stime from /proc) over the changes,
per 1,000 changes made (hot and cold), its peak RSS, and the source's own summary (achieved rate,
how far it lagged, its CPU).

Keys while the changes run (tau-tui; ``--keys-for`` names the tools): every 0.5 s, until the
changes are about to end (a key is never in flight when the source stops), `j` or `k` in
turn (the cursor steps between the focused table's first two rows and back, so no row scrolls
away), each timed from before its `tmux send-keys` until the two lines the cursor steps between
show it where the key puts it (their backgrounds, ``capture-pane -e``, as one `j` and one `k` left
them on the still screen before the changes started: tau-tui restyles each row a change touches,
so a whole-screen comparison would not see a move).  The keys change only styles, which the staleness
captures (plain text) do not read; the tool's CPU includes what it spends on them (two a second).
k9s's keys are not timed: its cursor line starts with the table's border, whose style does not
change, so the first-character background this reads does not show the cursor.

Run: .venv/bin/python benchmarks/staleness_watch.py [--rates 200,1000,5000] [--workloads 20000]
     [--seconds 60] [--tools tau-tui,k9s] [--repeat 3] [--hot-share 0.5] [--namespace aaa-bench]
     [--json benchmarks/results/staleness_watch.json]
``--repeat N``: N rounds per rate, the tools in turn within each round (so no tool runs all its
repeats first); each run is kept with its round.
k9s is the harness's build (tests/harness/binaries.py; `bash harness/build.sh k9s`); without it
only tau-tui runs.  Only 127.0.0.1; every process started here is stopped by its PID.
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
import threading
import time
from dataclasses import dataclass
from itertools import cycle
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_keys_tmux import CURSOR_LIMIT_S, POLL_S  # noqa: E402
from machine_info import machine, machine_line  # noqa: E402
from percentiles import Summary, summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from remote_link import line_backgrounds, styled  # noqa: E402
from side_by_side import listed_count, tool_commands  # noqa: E402
from staleness import Change, Observation, look_at_screen, read_changes, staleness  # noqa: E402
from tmux_screen import Screen  # noqa: E402

from tests.harness.binaries import locate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# k9s marks a changed cell with a delta ("q-82Δ"): the value ends where its digits do.
HOT_PAIR = re.compile(r"\b(bench-\d\d)\b.*?\b(q-\d+)(?!\d)")
TOOLS = ("tau-tui", "k9s")
KEY_EVERY_S = 0.5
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


@dataclass(frozen=True)
class CursorSteps:
    """Where `j` and `k` move the cursor: two adjacent screen lines, and their backgrounds with
    the cursor on the first (after `k`) and on the second (after `j`)."""

    lines: tuple[int, int]
    after: dict[str, tuple[str, str]]


def backgrounds_at(screen: Screen, lines: tuple[int, int]) -> tuple[str, str]:
    shown = line_backgrounds(styled(screen))
    return (shown[lines[0]], shown[lines[1]]) if lines[1] < len(shown) else ("?", "?")


def time_key(screen: Screen, key: str, steps: CursorSteps) -> float:
    """From before the send until the two lines show the cursor where ``key`` puts it; ``inf``
    past CURSOR_LIMIT_S.  Only those lines are read: rows the changes restyle elsewhere on the
    screen (tau-tui marks a changed row) do not hide the move."""
    sent = screen.send(key, literal=True)
    while time.monotonic() - sent < CURSOR_LIMIT_S:
        if backgrounds_at(screen, steps.lines) == steps.after[key]:
            return time.monotonic() - sent
        time.sleep(POLL_S)
    return float("inf")


def cursor_steps(screen: Screen) -> CursorSteps | None:
    """One `j` and one `k` on a still screen: the two adjacent lines `j` restyled (the cursor
    stepped down), then their backgrounds once `k` brought it back; None where no such move showed."""
    before = line_backgrounds(styled(screen))
    sent = screen.send("j", literal=True)
    while time.monotonic() - sent < CURSOR_LIMIT_S:
        after = line_backgrounds(styled(screen))
        changed = sorted(i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)
        if len(changed) == 2 and changed[1] - changed[0] == 1:
            lines = (changed[0], changed[1])
            steps = CursorSteps(lines, {"j": (after[lines[0]], after[lines[1]]), "k": (before[lines[0]], before[lines[1]])})
            return steps if time_key(screen, "k", steps) < CURSOR_LIMIT_S else None
        time.sleep(POLL_S)
    return None


class CursorKeys(threading.Thread):
    """`j` and `k` in turn every KEY_EVERY_S until stopped, each timed until the cursor moved
    (``inf`` past the limit: counted lost)."""

    def __init__(self, screen: Screen, steps: CursorSteps, until: float):
        super().__init__(daemon=True, name="cursor-keys")
        self.screen, self.steps, self.until = screen, steps, until
        self.samples: list[float] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        keys = cycle("jk")
        # no key is sent that could still wait for its cursor when the source ends: the app then
        # marks its rows stale, which restyles the lines the cursor is read from
        while not self.stopping.wait(KEY_EVERY_S) and time.monotonic() + CURSOR_LIMIT_S < self.until:
            self.samples.append(time_key(self.screen, next(keys), self.steps))

    def stop(self) -> list[float]:
        self.stopping.set()
        self.join()
        return self.samples


def one_run(args: argparse.Namespace, rate: float, tool: str, peers: dict[str, Path]) -> dict:
    work = Path(tempfile.mkdtemp(prefix="tau-staleness-"))
    source, kubeconfig = start_source(args, rate, work)
    command, env = tool_commands(kubeconfig, peers, str(work), args.namespace)[tool]
    screen = Screen(tool, command, env)
    observations: list[Observation] = []
    shown: dict[str, str] = {}
    captures, rss_peak, cpu_used, rows_after, whole_list_after = 0, 0.0, float("nan"), float("inf"), float("inf")
    keys: CursorKeys | None = None
    steps: CursorSteps | None = None
    key_samples: list[float] | None = None
    try:
        started = screen.start()
        while time.monotonic() - started < ROWS_LIMIT_S and not HOT_PAIR.search(screen.capture()):
            time.sleep(0.1)
        rows_after = time.monotonic() - started
        # Steady state: the changes start once the screen says the whole list is in (tau-tui's
        # counts line, k9s's title), so no change waits behind the first list.
        expected = args.hot_rows if args.namespace else args.workloads + args.hot_rows
        while time.monotonic() - started < ROWS_LIMIT_S and (listed_count(tool, screen.capture()) or 0) < expected:
            time.sleep(0.1)
        whole_list_after = time.monotonic() - started
        time.sleep(3)  # settle after the first paint
        steps = cursor_steps(screen) if tool in args.keys_for.split(",") else None
        cpu_before = cpu_seconds(screen.pid)
        source.send_signal(signal.SIGUSR1)
        if steps is not None:
            keys = CursorKeys(screen, steps, time.monotonic() + args.seconds)
            keys.start()
        elif tool in args.keys_for.split(","):
            print(f"  {tool}: j did not move a cursor on the still screen; keys not timed", flush=True)
        while source.poll() is None:
            text = screen.capture()
            now = time.monotonic()
            captures += 1
            look_at_screen(text, HOT_PAIR, shown, observations, now)
            rss_peak = max(rss_peak, screen.rss()[0])
            time.sleep(CAPTURE_S)
        cpu_used = cpu_seconds(screen.pid) - cpu_before
        if keys is not None:
            key_samples = keys.stop()
        rss_peak = max(rss_peak, screen.rss()[1])
    finally:
        if keys is not None and keys.is_alive():
            keys.stop()
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
    return {"tool": tool, "rate": rate, "command": command, "changes_made": len(records), "hot_changes": result.changes,
            "never_reflected": result.never_reflected, "staleness_s": summarize(result.samples).as_dict(),
            "tool_cpu_s": cpu_used, "tool_cpu_s_per_1000_changes": cpu_used / len(records) * 1000 if records else None,
            "keys_s": None if key_samples is None else summarize(key_samples).as_dict(),
            "key_samples_s": key_samples, "cursor_lines": None if steps is None else steps.lines,
            "rows_on_screen_after_s": rows_after, "whole_list_after_s": whole_list_after, "captures": captures, "rss_peak_mb": rss_peak,
            "source": json.loads(summary_lines[-1]) if summary_lines else None}


def print_table(runs: list[dict], args: argparse.Namespace, info: dict, info_after: dict) -> None:
    scope = f"-n {args.namespace}" if args.namespace else "all namespaces"
    print(f"\nstaleness on the watch source: {args.workloads:,} Workloads, {args.seconds:.0f} s per rate, {scope}")
    print(machine_line(info, info_after))
    for run in runs:
        stats = Summary(**run["staleness_s"])
        source = run["source"] or {}
        keys = "" if run["keys_s"] is None else f"; keys (j/k) {Summary(**run['keys_s']).label()}"
        print(f"  {run['rate']:>6.0f}/s {run['tool']:8} staleness {stats.label()}; never reflected {run['never_reflected']:,} of "
              f"{run['hot_changes']:,} hot changes; CPU {run['tool_cpu_s_per_1000_changes'] or float('nan'):.3f} s per 1,000 "
              f"changes ({run['changes_made']:,} made, source at {source.get('achieved_rate', 'n/a')}/s, lagging at most "
              f"{source.get('most_behind', 'n/a')} changes); peak RSS {run['rss_peak_mb']:.0f} MB{keys}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="200,1000,5000")
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--tools", default=",".join(TOOLS), help="in this order at each rate")
    parser.add_argument("--repeat", type=int, default=1, help="rounds per rate, the tools in turn within each")
    parser.add_argument("--keys-for", default="tau-tui", help="the tools whose cursor keys are timed while the changes run")
    parser.add_argument("--hot-rows", type=int, default=8)
    parser.add_argument("--hot-share", type=float, default=0.5)
    parser.add_argument("--namespace", help="scope the tools to one namespace (default: all)")
    parser.add_argument("--json", default=str(REPO / "benchmarks/results/staleness_watch.json"))
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is not installed", file=sys.stderr)
        return 2
    tools = [t for t in args.tools.split(",") if t]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools {', '.join(sorted(unknown))}; known: {', '.join(TOOLS)}")
    peers: dict[str, Path] = {}
    missing = []
    if "k9s" in tools:
        k9s = locate().k9s
        if os.access(k9s, os.X_OK):
            peers["k9s"] = k9s
        else:
            missing.append("k9s")
            tools.remove("k9s")
            print(f"k9s is not built ({k9s}): only tau-tui runs; build it with `bash harness/build.sh k9s`", flush=True)
    info = machine()
    runs = []
    for rate in (float(r) for r in args.rates.split(",")):
        for round_ in range(args.repeat):
            for tool in tools:
                print(f"[{tool}: {rate:.0f} changes/s for {args.seconds:.0f} s over {args.workloads:,} Workloads, "
                      f"round {round_ + 1} of {args.repeat}]", flush=True)
                runs.append({**one_run(args, rate, tool, peers), "round": round_})
    info_after = machine()
    save_raw(args.json, {"machine": info, "machine_after": info_after, "args": vars(args), "missing_peers": missing,
                         "peers": {name: str(path) for name, path in peers.items()}, "runs": runs}, indent=2)
    print_table(runs, args, info, info_after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
